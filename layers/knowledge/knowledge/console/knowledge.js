// Knowledge: bases → items → an item's revisions (current, published, drafts), its content paged with
// the addressed read, and a line diff between two revisions.
import { all, ApiError, get, post, segment } from "/console/api.js";
import { lineDiff } from "/console/diff.js";
import { clear, errorBox, field, formatTime, h } from "/console/dom.js";

const PAGE_CHARS = 2000;
const READ_CHARS = 10000;
const DIFF_MAX_CHARS = 400000;

function table(headers, rows) {
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name)))), h("tbody", {}, rows));
}

async function bases(view) {
  view.append(h("h2", {}, "Knowledge bases"));
  const list = await all("/v1/knowledge-bases", "knowledge_bases");
  if (!list.length) { view.append(h("p", { class: "muted" }, "No knowledge base you can read.")); return; }
  view.append(table(["Name", "Id", "Scope", "Status", "Version"], list.map((base) => h("tr", {},
    h("td", {}, h("a", { href: `#/knowledge/base/${segment(base.knowledge_base_id)}` }, base.name)),
    h("td", { class: "id" }, base.knowledge_base_id), h("td", {}, base.scope), h("td", {}, base.status), h("td", {}, String(base.version))))));
}

async function items(view, baseId) {
  view.append(h("p", {}, h("a", { href: "#/knowledge" }, "← bases")), h("h2", {}, `Items of ${baseId}`));
  const list = await all(`/v1/knowledge-bases/${segment(baseId)}/items`, "items");
  if (!list.length) { view.append(h("p", { class: "muted" }, "No items.")); return; }
  view.append(table(["Title", "Status", "Current revision", "Indexed", "External id"], list.map((item) => h("tr", {},
    h("td", {}, h("a", { href: `#/knowledge/item/${segment(item.knowledge_item_id)}` }, item.title)),
    h("td", {}, item.status), h("td", { class: "id" }, item.current_revision_id || "— (no published revision)"),
    h("td", {}, item.indexed_revision_id === item.current_revision_id ? "yes" : "not yet"), h("td", {}, item.external_id || "—")))));
}

function revisionBadge(revision) {
  if (revision.is_current) return h("span", { class: "badge current" }, "current");
  if (revision.published_at) return h("span", { class: "badge published" }, "published");
  return h("span", { class: "badge draft" }, "draft");
}

async function read(itemId, revisionId, offset, limit) {
  return post("/v1/tools/search_knowledge", { knowledge_item_id: itemId, knowledge_revision_id: revisionId, offset, limit_chars: limit });
}

async function wholeContent(itemId, revisionId) {
  let offset = 0;
  let text = "";
  for (;;) {
    const answer = await read(itemId, revisionId, offset, READ_CHARS);
    text += answer.content;
    offset = answer.content_offset + answer.content.length;
    if (!answer.content_truncated || !answer.content.length) return text;
    if (text.length > DIFF_MAX_CHARS) throw new Error(`revision longer than ${DIFF_MAX_CHARS} characters: too long to diff here`);
  }
}

function contentPager(itemId, revisionId) {
  const box = h("section", { class: "content", "aria-labelledby": "content-title" });
  let offset = 0;
  async function show() {
    clear(box).append(h("h3", { id: "content-title" }, `Content of ${revisionId}`));
    try {
      const answer = await read(itemId, revisionId, offset, PAGE_CHARS);
      const end = answer.content_offset + answer.content.length;
      const previous = h("button", { type: "button", id: "content-previous", disabled: answer.content_offset === 0,
        onclick: () => { offset = Math.max(0, answer.content_offset - PAGE_CHARS); show(); } }, "← Previous");
      const next = h("button", { type: "button", id: "content-next", disabled: !answer.content_truncated,
        onclick: () => { offset = end; show(); } }, "Next →");
      box.append(
        h("p", { class: "meta", id: "content-position" }, `characters ${answer.content_offset}–${end} of ${answer.content_total_chars}`),
        h("pre", { class: "document", tabindex: "0" }, answer.content),
        h("div", { class: "buttons" }, previous, next));
    } catch (error) {
      box.append(errorBox(error));
    }
  }
  show();
  return box;
}

function diffView(lines) {
  const added = lines.filter((line) => line.kind === "added").length;
  const removed = lines.filter((line) => line.kind === "removed").length;
  return h("div", { class: "diff" },
    h("p", { class: "meta", id: "diff-summary" }, `${added} lines added, ${removed} removed`),
    h("pre", { class: "diff-lines", tabindex: "0" }, lines.map((line) =>
      h("span", { class: `line ${line.kind}` }, `${line.kind === "added" ? "+ " : line.kind === "removed" ? "- " : "  "}${line.text}\n`))));
}

async function item(view, itemId) {
  const detail = await get(`/v1/knowledge-items/${segment(itemId)}`);
  const revisions = await all(`/v1/knowledge-items/${segment(itemId)}/revisions`, "revisions");
  view.append(
    h("p", {}, h("a", { href: `#/knowledge/base/${segment(detail.knowledge_base_id)}` }, "← items")),
    h("h2", {}, detail.title),
    h("p", { class: "meta" }, `item ${detail.knowledge_item_id} · ${detail.status} · version ${detail.version} · indexed revision ${detail.indexed_revision_id || "none"}`));
  const contentBox = h("div", {});
  const chosen = revisions.find((revision) => revision.is_current) || revisions[0];
  const showContent = (revisionId) => clear(contentBox).append(contentPager(itemId, revisionId));
  view.append(h("h3", {}, "Revisions"), table(["Revision", "State", "Title", "Characters", "Created", "Published", ""],
    revisions.map((revision) => h("tr", {},
      h("td", { class: "id" }, revision.knowledge_revision_id), h("td", {}, revisionBadge(revision)), h("td", {}, revision.title),
      h("td", {}, String(revision.total_chars)), h("td", {}, formatTime(revision.created_at)), h("td", {}, formatTime(revision.published_at)),
      h("td", {}, h("button", { type: "button", onclick: () => showContent(revision.knowledge_revision_id) }, "Read"))))));
  if (revisions.length > 1) {
    const options = () => revisions.map((revision) => h("option", { value: revision.knowledge_revision_id }, `${revision.knowledge_revision_id} (${revision.is_current ? "current" : revision.published_at ? "published" : "draft"})`));
    const before = h("select", { id: "diff-before" }, options());
    const after = h("select", { id: "diff-after" }, options());
    before.selectedIndex = Math.min(1, revisions.length - 1);
    after.selectedIndex = 0;
    const out = h("div", { id: "diff-out" });
    view.append(h("h3", {}, "Diff between two revisions"), h("form", { class: "diff-form", onsubmit: async (event) => {
      event.preventDefault();
      clear(out).append(h("p", { class: "muted" }, "Reading both revisions…"));
      try {
        const [left, right] = await Promise.all([wholeContent(itemId, before.value), wholeContent(itemId, after.value)]);
        clear(out).append(diffView(lineDiff(left, right)));
      } catch (error) {
        clear(out).append(errorBox(error));
      }
    } }, field("From", before), field("To", after), h("button", { type: "submit", id: "diff-run" }, "Diff")), out);
  }
  view.append(contentBox);
  if (chosen) showContent(chosen.knowledge_revision_id);
}

export async function render(view, path) {
  try {
    if (path[0] === "base" && path[1]) await items(view, path[1]);
    else if (path[0] === "item" && path[1]) await item(view, path[1]);
    else await bases(view);
  } catch (error) {
    view.append(errorBox(error instanceof ApiError ? error : { message: String(error) }));
  }
}
