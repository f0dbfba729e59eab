// Tokens (knowledge:admin): the tokens the caller may revoke with their lineage, minting with a
// scope picker (the new token is shown once), and revoking (its descendants go with it).
import { all, ApiError, call, post, segment } from "/console/api.js";
import { clear, errorBox, field, formatTime, h } from "/console/dom.js";

const PERMISSIONS = ["knowledge:read", "knowledge:write", "knowledge:admin", "memory:read", "memory:write", "memory:share", "memory:admin", "platform:admin"];

function lineage(token, byId) {
  const chain = [];
  let issuer = token.issuer_token_id;
  while (issuer && chain.length < 20) {
    chain.push(issuer);
    issuer = byId.get(issuer)?.issuer_token_id;
  }
  return chain.length ? chain.join(" ← ") : "root";
}

function list(tokens, refresh) {
  const byId = new Map(tokens.map((token) => [token.token_id, token]));
  return h("table", { id: "tokens-table" },
    h("thead", {}, h("tr", {}, ["Token id", "Subject", "Scopes", "Issued by (lineage)", "Descendants", "Expires", "State", ""].map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, tokens.map((token) => {
      const descendants = tokens.filter((other) => lineage(other, byId).split(" ← ").includes(token.token_id)).length;
      const state = token.revoked ? (token.revoked_ancestor_token_id ? `revoked with ${token.revoked_ancestor_token_id}` : "revoked") : "active";
      return h("tr", { "data-token": token.token_id },
        h("td", { class: "id" }, token.token_id), h("td", {}, token.subject_id), h("td", {}, token.scopes.join(" ")),
        h("td", { class: "id" }, lineage(token, byId)), h("td", {}, String(descendants)), h("td", {}, formatTime(token.expires_at)), h("td", {}, state),
        h("td", {}, token.revoked ? null : h("button", { type: "button", class: "danger", onclick: async () => {
          if (!window.confirm(`Revoke ${token.token_id} and its ${descendants} descendant token(s)?`)) return;
          try { await call("DELETE", `/v1/tokens/${segment(token.token_id)}`); refresh(); } catch (error) { window.alert(`${error.code}: ${error.message}`); }
        } }, "Revoke")));
    })));
}

export async function render(view) {
  view.append(h("h2", {}, "Tokens"));
  const listBox = h("div", {});
  // Refreshes may overlap (a mint while the first listing loads): only the latest one draws.
  let latest = 0;
  async function refresh() {
    const mine = ++latest;
    let shown;
    try {
      shown = list(await all("/v1/tokens", "tokens"), refresh);
    } catch (error) {
      shown = errorBox(error instanceof ApiError ? error : { message: String(error) });
    }
    if (mine !== latest) return;
    clear(listBox);
    listBox.append(shown);
  }
  const subject = h("input", { type: "text", name: "subject_id", required: true });
  const teams = h("input", { type: "text", name: "team_ids", placeholder: "comma separated" });
  const bases = h("input", { type: "text", name: "knowledge_base_ids", placeholder: "comma separated; empty: every base" });
  const expires = h("input", { type: "number", name: "expires_in", min: 1, placeholder: "seconds" });
  const boxes = PERMISSIONS.map((permission) => h("label", { class: "check" }, h("input", { type: "checkbox", value: permission, name: "scopes" }), ` ${permission}`));
  const minted = h("div", { id: "minted" });
  const split = (text) => text.split(",").map((part) => part.trim()).filter(Boolean);
  view.append(h("form", { class: "mint", onsubmit: async (event) => {
    event.preventDefault();
    clear(minted);
    const scopes = boxes.map((label) => label.firstChild).filter((input) => input.checked).map((input) => input.value);
    const body = { subject_id: subject.value, scopes, team_ids: split(teams.value) };
    if (split(bases.value).length) body.knowledge_base_ids = split(bases.value);
    if (expires.value) body.expires_in = Number(expires.value);
    try {
      const answer = await post("/v1/tokens", body);
      const shown = h("input", { type: "text", readonly: true, value: answer.token, id: "minted-token", "aria-label": "New token" });
      minted.append(h("p", { role: "status" }, `Minted ${answer.token_id}. It is shown once: copy it now.`), shown);
      refresh();
    } catch (error) {
      minted.append(errorBox(error));
    }
  } }, h("h3", {}, "Mint a token"), field("Subject id", subject),
    h("fieldset", {}, h("legend", {}, "Scopes"), boxes), field("Team ids", teams), field("Knowledge base ids", bases), field("Expires in", expires),
    h("button", { type: "submit" }, "Mint")), minted, h("h3", {}, "Tokens you may revoke"), listBox);
  await refresh();
}
