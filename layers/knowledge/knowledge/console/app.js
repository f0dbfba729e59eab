// The console's shell: sign-in with a bearer token (kept in sessionStorage), and a hash router over
// the views. Every view is a client of this origin's REST API.
import { get, setToken, token } from "/console/api.js";
import { clear, errorBox, h } from "/console/dom.js";
import * as knowledge from "/console/knowledge.js";
import * as memory from "/console/memory.js";
import * as search from "/console/search.js";
import * as tokens from "/console/tokens.js";
import * as usage from "/console/usage.js";

const VIEWS = { search, knowledge, memory, tokens, usage };

const view = document.getElementById("view");
const nav = document.getElementById("nav");
const signIn = document.getElementById("sign-in");

function signedOut(message) {
  setToken(null);
  nav.hidden = true;
  clear(view);
  signIn.hidden = false;
  document.getElementById("sign-in-error").textContent = message || "";
  document.getElementById("token-input").focus();
}

async function route() {
  if (!token()) { signedOut(); return; }
  signIn.hidden = true;
  nav.hidden = false;
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const name = VIEWS[parts[0]] ? parts[0] : "search";
  for (const link of nav.querySelectorAll("a")) {
    if (link.getAttribute("href") === `#/${name}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  clear(view);
  try {
    await VIEWS[name].render(view, parts.slice(1));
  } catch (error) {
    view.append(errorBox(error));
  }
  document.title = `${name} · Knowledge console`;
}

document.getElementById("sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("token-input");
  setToken(input.value.trim());
  input.value = "";
  try {
    await get("/v1/pins?limit=1").catch(async (error) => {
      // a token without memory scopes is still a token: check it on a knowledge route instead
      if (error.status === 403) return get("/v1/knowledge-bases?limit=1");
      throw error;
    });
  } catch (error) {
    if (error.status === 401) { signedOut("That token was refused (401): check it and try again."); return; }
  }
  route();
});

document.getElementById("sign-out").addEventListener("click", () => { signedOut("Signed out."); location.hash = ""; });
window.addEventListener("hashchange", route);
route();
