// Search playground: one query in a chosen mode and alpha, or the four modes side by side, with each
// result's lexical and semantic raw / normalized scores and ranks, the legs report, and the request
// as curl and as an MCP call.
import { ApiError, post } from "/console/api.js";
import { clear, copyable, errorBox, field, h, meter } from "/console/dom.js";

export const MODES = ["hybrid", "lexical", "semantic", "rrf"];

function legScores(scores, leg) {
  const raw = scores[leg];
  if (raw === null || raw === undefined) {
    return h("div", { class: `leg ${leg}` }, h("span", { class: "leg-name" }, leg), h("span", { class: "muted" }, "not returned by this leg"));
  }
  const normalized = scores[`${leg}_normalized`];
  const rank = scores[`${leg}_rank`];
  return h("div", { class: `leg ${leg}`, "data-leg": leg },
    h("span", { class: "leg-name" }, leg),
    meter(normalized ?? 0, `${leg} normalized score`),
    h("span", { class: "figure", "data-field": `${leg}-raw` }, `raw ${Number(raw).toFixed(4)}`),
    h("span", { class: "figure", "data-field": `${leg}-normalized` }, `norm ${normalized === null || normalized === undefined ? "—" : Number(normalized).toFixed(3)}`),
    h("span", { class: "figure", "data-field": `${leg}-rank` }, `rank ${rank ?? "—"}`));
}

function locatorText(locator) {
  const parts = [`chars ${locator.offset}–${locator.offset + locator.length}`];
  if (locator.page) parts.push(`page ${locator.page}`);
  if (locator.sheet) parts.push(`sheet ${locator.sheet}`);
  if (locator.rows) parts.push(`rows ${locator.rows.first}–${locator.rows.last}`);
  if (locator.section) parts.push(`section ${locator.section}`);
  return parts.join(", ");
}

export function resultCard(result, position, open) {
  return h("li", { class: "result", "data-item": result.knowledge_item_id },
    h("div", { class: "result-head" },
      h("span", { class: "rank" }, `#${position}`),
      open
        ? h("a", { href: `#/knowledge/item/${encodeURIComponent(result.knowledge_item_id)}` }, result.title)
        : h("strong", {}, result.title),
      h("span", { class: "figure final", "data-field": "final" }, `final ${Number(result.scores.final).toFixed(4)}`)),
    h("p", { class: "excerpt" }, result.excerpt),
    h("p", { class: "meta" }, `locator: ${locatorText(result.locator)}`),
    h("p", { class: "meta" }, `citation: ${result.citation}`),
    h("div", { class: "scores" }, legScores(result.scores, "lexical"), legScores(result.scores, "semantic")));
}

function legsReport(legs) {
  const rows = [];
  if (legs.lexical) {
    rows.push(h("li", { "data-leg-report": "lexical" },
      legs.lexical.terms === 0
        ? "lexical: no lexical terms in the query (every word is a stop word or punctuation)"
        : `lexical: ${legs.lexical.terms} terms, ${legs.lexical.candidates} candidates`));
  }
  if (legs.semantic) rows.push(h("li", { "data-leg-report": "semantic" }, `semantic: ${legs.semantic.candidates} candidates`));
  return h("ul", { class: "legs" }, rows.length ? rows : h("li", {}, "no leg ran"));
}

function curlOf(argumentsSent) {
  const body = JSON.stringify(argumentsSent);
  return `curl -s ${location.origin}/v1/tools/search_knowledge \\\n  -H "Authorization: Bearer $KNOWLEDGE_TOKEN" \\\n  -H "Content-Type: application/json" \\\n  -d '${body.replaceAll("'", "'\\''")}'`;
}

function mcpOf(argumentsSent) {
  return JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search_knowledge", arguments: argumentsSent } }, null, 2);
}

function answerView(answer, argumentsSent) {
  return h("div", { class: "answer", "data-mode": answer.mode },
    h("h3", {}, `${answer.mode} (alpha ${answer.alpha})${answer.degraded ? " — degraded to lexical" : ""}`),
    legsReport(answer.legs || {}),
    answer.results.length
      ? h("ol", { class: "results" }, answer.results.map((result, index) => resultCard(result, index + 1, true)))
      : h("p", { class: "muted" }, "No results."),
    argumentsSent ? h("div", { class: "requests" }, copyable("curl", curlOf(argumentsSent)), copyable("MCP call", mcpOf(argumentsSent))) : null);
}

export function render(view) {
  const queryInput = h("input", { type: "search", name: "query", required: true, maxlength: 2000 });
  const mode = h("select", { name: "mode" }, MODES.map((name) => h("option", { value: name }, name)));
  const alphaOutput = h("output", {}, "0.5");
  const alpha = h("input", { type: "range", name: "alpha", min: 0, max: 1, step: 0.05, value: "0.5",
    oninput: () => { alphaOutput.textContent = alpha.value; } });
  const maxResults = h("input", { type: "number", name: "max_results", min: 1, max: 50, value: "5" });
  const base = h("input", { type: "text", name: "knowledge_base_id", placeholder: "all bases you can read" });
  const out = h("div", { id: "search-answer" });

  function argumentsFor(chosenMode) {
    const sent = { query: queryInput.value, mode: chosenMode, alpha: Number(alpha.value), max_results: Number(maxResults.value) };
    if (base.value.trim()) sent.knowledge_base_id = base.value.trim();
    return sent;
  }

  async function run(modes) {
    clear(out).append(h("p", { class: "muted" }, "Searching…"));
    try {
      const answers = await Promise.all(modes.map((name) => post("/v1/tools/search_knowledge", argumentsFor(name))));
      clear(out);
      if (modes.length === 1) out.append(answerView(answers[0], argumentsFor(modes[0])));
      else out.append(h("div", { class: "side-by-side" }, answers.map((answer) => answerView(answer, null))));
    } catch (error) {
      clear(out).append(errorBox(error instanceof ApiError ? error : { message: String(error) }));
    }
  }

  const form = h("form", { class: "search-form", onsubmit: (event) => { event.preventDefault(); run([mode.value]); } },
    field("Query", queryInput),
    field("Mode", mode),
    h("div", { class: "field" }, h("label", { for: "alpha" }, "Alpha (lexical weight)"), alpha, alphaOutput),
    field("Max results", maxResults),
    field("Knowledge base id", base),
    h("div", { class: "buttons" },
      h("button", { type: "submit" }, "Search"),
      h("button", { type: "button", id: "compare-modes", onclick: () => { if (form.reportValidity()) run(MODES); } }, "Four modes side by side")));
  alpha.id = "alpha";
  view.append(h("h2", {}, "Search playground"), form, out);
}
