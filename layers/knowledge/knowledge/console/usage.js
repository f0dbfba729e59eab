// Usage and quotas of the caller's tenant, when the API offers GET /v1/usage.
import { ApiError, get } from "/console/api.js";
import { errorBox, formatTime, h } from "/console/dom.js";

const size = (bytes) => (bytes >= 1048576 ? `${(bytes / 1048576).toFixed(1)} MiB` : bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${bytes} bytes`);
const number = (value) => (value === null || value === undefined ? "no limit" : Number(value).toLocaleString("en"));

export async function render(view) {
  view.append(h("h2", {}, "Usage and quotas"));
  let usage;
  try {
    usage = await get("/v1/usage");
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      view.append(h("p", { class: "muted" }, "This deployment does not offer usage figures."));
      return;
    }
    view.append(errorBox(error));
    return;
  }
  const stored = usage.stored;
  view.append(
    h("p", { class: "meta" }, `tenant ${usage.tenant_id}, measured ${formatTime(usage.measured_at)}`),
    h("h3", {}, "Stored"),
    h("p", { id: "usage-stored" }, `${number(stored.total)} stored (${number(stored.items)} items, ${number(stored.notes)} notes) of ${number(stored.limit)}; ${size(stored.content_bytes ?? 0)} of content`,
      stored.limit ? h("progress", { max: stored.limit, value: stored.total, "aria-label": "stored against the quota" }) : null),
    h("h3", {}, "Rates"),
    h("table", {}, h("thead", {}, h("tr", {}, ["Quota", "Limit per second", "Used", "Remaining", "Full again in"].map((name) => h("th", { scope: "col" }, name)))),
      h("tbody", {}, usage.rates.map((rate) => h("tr", {}, h("td", {}, rate.quota), h("td", {}, number(rate.limit)),
        h("td", {}, rate.used ?? "—"), h("td", {}, rate.remaining ?? "—"), h("td", {}, rate.reset_seconds === null ? "—" : `${rate.reset_seconds} s`))))));
}
