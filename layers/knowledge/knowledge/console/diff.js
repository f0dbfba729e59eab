// A line diff by longest common subsequence, after trimming the common head and tail.

export const MAX_DIFF_LINES = 3000;

export function lineDiff(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head += 1;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail += 1;
  const x = a.slice(head, a.length - tail);
  const y = b.slice(head, b.length - tail);
  if (x.length > MAX_DIFF_LINES || y.length > MAX_DIFF_LINES) {
    throw new Error(`too many changed lines to diff here (more than ${MAX_DIFF_LINES})`);
  }
  const width = y.length + 1;
  const lengths = new Uint32Array((x.length + 1) * width);
  for (let i = x.length - 1; i >= 0; i -= 1) {
    for (let j = y.length - 1; j >= 0; j -= 1) {
      lengths[i * width + j] = x[i] === y[j]
        ? lengths[(i + 1) * width + j + 1] + 1
        : Math.max(lengths[(i + 1) * width + j], lengths[i * width + j + 1]);
    }
  }
  const lines = a.slice(0, head).map((text) => ({ kind: "same", text }));
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    if (x[i] === y[j]) {
      lines.push({ kind: "same", text: x[i] }); i += 1; j += 1;
    } else if (lengths[(i + 1) * width + j] >= lengths[i * width + j + 1]) {
      lines.push({ kind: "removed", text: x[i] }); i += 1;
    } else {
      lines.push({ kind: "added", text: y[j] }); j += 1;
    }
  }
  while (i < x.length) { lines.push({ kind: "removed", text: x[i] }); i += 1; }
  while (j < y.length) { lines.push({ kind: "added", text: y[j] }); j += 1; }
  for (const text of a.slice(a.length - tail)) lines.push({ kind: "same", text });
  return lines;
}
