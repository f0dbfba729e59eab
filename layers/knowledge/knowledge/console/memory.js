// Memory: the caller's notes as a path tree with type, scope and owner; a note's versions and its
// supersedes chain; pins in order; search_memory with scores; and the recall_context pack as the
// agent will see it, with its token budget and every dropped note's reason.
import { all, ApiError, get, post, query, segment } from "/console/api.js";
import { clear, errorBox, field, formatTime, h, meter } from "/console/dom.js";

const MEMORY_TYPES = ["", "fact", "preference", "decision", "event", "working", "identity"];
const SCOPES = ["", "private", "team", "tenant"];

function select(name, values) {
  return h("select", { name }, values.map((value) => h("option", { value }, value || "any")));
}

function noteLine(note) {
  return h("div", { class: "note", "data-note": note.note_id },
    h("p", { class: "note-content" }, note.content),
    h("p", { class: "meta" },
      `${note.memory_type} · ${note.scope} · owner ${note.owner_id} · v${note.version} · importance ${note.importance}`,
      note.pinned ? h("span", { class: "badge current" }, "pinned") : null,
      note.superseded_by ? h("span", { class: "badge draft" }, `superseded by ${note.superseded_by}`) : null,
      " ", h("a", { href: `#/memory/note/${segment(note.note_id)}` }, "versions and chain")));
}

function tree(notes) {
  const root = { children: new Map(), notes: [] };
  for (const note of notes) {
    let node = root;
    for (const part of note.path.split("/").filter(Boolean)) {
      if (!node.children.has(part)) node.children.set(part, { children: new Map(), notes: [] });
      node = node.children.get(part);
    }
    node.notes.push(note);
  }
  const render = (node, path) => h("ul", { class: "tree" },
    node.notes.map((note) => h("li", {}, noteLine(note))),
    [...node.children.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, child]) => h("li", {},
      h("details", { open: true }, h("summary", {}, `${path}${name}/`), render(child, `${path}${name}/`)))));
  return h("div", { class: "tree-root" }, h("p", { class: "meta" }, "/"), render(root, "/"));
}

async function notesPanel() {
  const box = h("section", { "aria-labelledby": "notes-title" }, h("h3", { id: "notes-title" }, "Notes by path"));
  const prefix = h("input", { type: "text", name: "path_prefix", placeholder: "/" });
  const type = select("memory_type", MEMORY_TYPES);
  const scope = select("scope", SCOPES);
  const superseded = h("input", { type: "checkbox", name: "include_superseded" });
  const out = h("div", { id: "notes-tree" });
  async function load() {
    clear(out);
    try {
      const answer = await get(`/v1/notes${query({ path_prefix: prefix.value, memory_type: type.value, scope: scope.value, include_superseded: superseded.checked ? "true" : "" })}`);
      out.append(answer.notes.length ? tree(answer.notes) : h("p", { class: "muted" }, "No notes (a note written a moment ago appears once indexed)."));
    } catch (error) {
      out.append(errorBox(error));
    }
  }
  box.append(h("form", { class: "inline", onsubmit: (event) => { event.preventDefault(); load(); } },
    field("Path prefix", prefix), field("Type", type), field("Scope", scope), field("Include superseded", superseded),
    h("button", { type: "submit" }, "List")), out);
  load();
  return box;
}

async function pinsPanel() {
  const box = h("section", { "aria-labelledby": "pins-title" }, h("h3", { id: "pins-title" }, "Pins in order"));
  try {
    const pins = await all("/v1/pins", "pins");
    box.append(pins.length
      ? h("ol", { class: "pins" }, pins.map((pin) => h("li", {}, `order ${pin.order}: `,
        h("a", { href: `#/memory/note/${segment(pin.note_id)}` }, pin.note_id),
        pin.reason ? ` — ${pin.reason}` : "", pin.expires_at ? ` (until ${formatTime(pin.expires_at)})` : "")))
      : h("p", { class: "muted" }, "No pins."));
  } catch (error) {
    box.append(errorBox(error));
  }
  return box;
}

function searchPanel() {
  const input = h("input", { type: "search", name: "query", required: true });
  const out = h("div", { id: "memory-results" });
  return h("section", { "aria-labelledby": "memory-search-title" }, h("h3", { id: "memory-search-title" }, "search_memory"),
    h("form", { class: "inline", onsubmit: async (event) => {
      event.preventDefault();
      clear(out);
      try {
        const answer = await post("/v1/tools/search_memory", { query: input.value, explain: true });
        const pending = answer.pending_index && answer.pending_index.writes
          ? h("p", { class: "muted" }, `${answer.pending_index.writes} of your notes are not indexed yet.`) : null;
        out.append(pending, answer.results.length ? h("ol", { class: "results" }, answer.results.map((result) => h("li", { class: "result" },
          noteLine(result),
          h("p", { class: "meta" }, meter(result.score, "fused score"), ` score ${Number(result.score).toFixed(4)}`,
            result.scores ? ` · lexical ${result.scores.lexical ?? "—"} (rank ${result.scores.lexical_rank ?? "—"}) · semantic ${result.scores.semantic ?? "—"} (rank ${result.scores.semantic_rank ?? "—"})` : ""))))
          : h("p", { class: "muted" }, "No memories."));
      } catch (error) {
        out.append(errorBox(error));
      }
    } }, field("Query", input), h("button", { type: "submit" }, "Search memory")), out);
}

function recallPanel() {
  const input = h("input", { type: "search", name: "query", placeholder: "optional: the task at hand" });
  const budget = h("input", { type: "number", name: "max_tokens", min: 64, max: 8000, value: "800" });
  const out = h("div", { id: "recall-out" });
  return h("section", { "aria-labelledby": "recall-title" }, h("h3", { id: "recall-title" }, "recall_context preview"),
    h("form", { class: "inline", onsubmit: async (event) => {
      event.preventDefault();
      clear(out);
      try {
        const body = { max_tokens: Number(budget.value) };
        if (input.value.trim()) body.query = input.value;
        const pack = await post("/v1/tools/recall_context", body);
        const used = pack.budget.used_tokens;
        const max = pack.budget.max_tokens;
        out.append(
          h("div", { class: "budget" }, h("label", { for: "budget-bar" }, `Token budget: ${used} of ${max} used (${pack.budget.tokenizer})`),
            h("progress", { id: "budget-bar", max, value: used }, `${used} / ${max}`)),
          h("h4", {}, "The pack as the agent sees it"),
          h("pre", { class: "document pack", id: "pack-text", tabindex: "0" }, pack.text || "(empty pack)"),
          h("h4", {}, `Included (${pack.items.length})`),
          h("ol", { class: "pack-items" }, pack.items.map((item) => h("li", {},
            `${item.note_id} · ${item.tokens} tokens · ${item.pinned ? "pinned" : `score ${Number(item.score ?? 0).toFixed(3)}`} · ${item.own ? "own" : `shared by ${item.owner_id}`}`))),
          h("h4", {}, `Dropped (${pack.coverage.dropped.length} of ${pack.coverage.candidates} candidates)`),
          pack.coverage.dropped.length
            ? h("ul", { class: "dropped", id: "dropped" }, pack.coverage.dropped.map((drop) => h("li", {}, `${drop.note_id}: ${drop.reason}`)))
            : h("p", { class: "muted" }, "Nothing dropped."));
      } catch (error) {
        out.append(errorBox(error));
      }
    } }, field("Query", input), field("Max tokens", budget), h("button", { type: "submit", id: "build-pack" }, "Build pack")), out);
}

async function noteDetail(view, noteId) {
  view.append(h("p", {}, h("a", { href: "#/memory" }, "← memory")), h("h2", {}, `Note ${noteId}`));
  const note = await get(`/v1/notes/${segment(noteId)}`);
  view.append(noteLine(note));
  const chain = [];
  let cursor = note;
  const seen = new Set([note.note_id]);
  while (cursor.supersedes && cursor.supersedes.length && chain.length < 20) {
    const older = cursor.supersedes[0];
    if (seen.has(older)) break;
    seen.add(older);
    try { cursor = await get(`/v1/notes/${segment(older)}`); } catch { break; }
    chain.push(cursor);
  }
  view.append(h("h3", {}, "Supersedes chain"), chain.length
    ? h("ol", { class: "chain" }, chain.map((older) => h("li", {}, noteLine(older))))
    : h("p", { class: "muted" }, note.superseded_by ? `Superseded by ${note.superseded_by}.` : "Supersedes no note."));
  const versions = await all(`/v1/notes/${segment(noteId)}/versions`, "versions");
  view.append(h("h3", {}, `Versions (${versions.length}, newest first)`), h("ol", { class: "versions" }, versions.map((version) => h("li", {},
    h("p", { class: "note-content" }, version.content), h("p", { class: "meta" }, `v${version.version} · ${version.status} · ${formatTime(version.updated_at)}`)))));
}

export async function render(view, path) {
  try {
    if (path[0] === "note" && path[1]) { await noteDetail(view, path[1]); return; }
    view.append(h("h2", {}, "Memory"));
    view.append(recallPanel(), searchPanel(), await pinsPanel(), await notesPanel());
  } catch (error) {
    view.append(errorBox(error instanceof ApiError ? error : { message: String(error) }));
  }
}
