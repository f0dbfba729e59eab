// Building DOM nodes from data. Every value becomes a text node or a property: nothing here ever
// parses markup, so note and document text (attacker-controlled) always renders as text.

export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      element.className = value;
    } else if (name in element && typeof value !== "string") {
      element[name] = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

export function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function clear(element) {
  element.replaceChildren();
  return element;
}

export function field(label, input) {
  if (!input.id) input.id = `f-${Math.random().toString(36).slice(2, 9)}`;
  return h("div", { class: "field" }, h("label", { for: input.id }, label), input);
}

export function copyable(title, text) {
  const pre = h("pre", { class: "code", tabindex: "0" }, text);
  const status = h("span", { class: "muted", role: "status" });
  const button = h("button", {
    type: "button",
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(text);
        status.textContent = "copied";
      } catch {
        const range = document.createRange();
        range.selectNodeContents(pre);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        status.textContent = "selected: press Ctrl+C";
      }
    },
  }, `Copy ${title}`);
  return h("div", { class: "copyable" }, h("h4", {}, title), pre, button, " ", status);
}

export function meter(value, label) {
  const clamped = Math.max(0, Math.min(1, Number(value) || 0));
  return h("meter", { min: 0, max: 1, value: clamped, title: label, "aria-label": label });
}

export function errorBox(error) {
  const text = error && error.code ? `${error.code}: ${error.message}` : String(error && error.message || error);
  return h("p", { class: "error", role: "alert" }, text);
}

export function formatTime(value) {
  if (!value) return "—";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toISOString().replace(".000Z", "Z");
}
