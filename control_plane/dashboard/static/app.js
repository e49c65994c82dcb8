// The dashboard's shell: sign-in, the hash router (#/bots, #/bots/<id>, #/meetings,
// #/meetings/<id>, #/workspace) and the context every view gets.

import { api, ApiError, session, whoami } from "./api.js";
import { clear, h, field } from "./dom.js";
import { showProblem } from "./forms.js";
import { botsView } from "./bots.js";
import { botView } from "./bot.js";
import { meetingsView, meetingView } from "./meetings.js";
import { workspaceView } from "./workspace.js";

const view = document.getElementById("view");
let current = null; // AbortController of the view on screen
let me = null;

const READ_ONLY = "Needs an API key with edit permission (this key is read-only)";

function signInView() {
  document.getElementById("nav").hidden = true;
  document.getElementById("signout").hidden = true;
  document.getElementById("whoami").textContent = "";
  const form = h("form.fields#signin", { novalidate: true, onsubmit: async (event) => {
    event.preventDefault();
    const key = form.elements.api_key.value.trim();
    session.key = key;
    try {
      me = await whoami();
    } catch (error) {
      session.key = "";
      showProblem(form, error, { invalid_api_key: "api_key", api_key_expired: "api_key" },
        "api_key");
      return;
    }
    if (!location.hash || location.hash === "#/signin") location.hash = "#/bots";
    else route();
  } },
  field("api_key", "API key", { kind: "password", autocomplete: "off", required: true,
    hint: "Kept in this tab's session storage only; closing the tab signs you out." }),
  h("div.field", {}, h("button", { type: "submit" }, "Sign in")));
  clear(view, h("h1", {}, "Sign in"),
    h("p", {}, "Sign in with a workspace API key (mbk_…). A read key sees everything; "
      + "controls that change something need an edit key."), form);
  form.elements.api_key.focus();
}

async function route() {
  if (current) current.abort();
  current = new AbortController();
  if (!session.key) return signInView();
  if (!me) {
    try { me = await whoami(); } catch (error) {
      if (error instanceof ApiError && error.status === 401) { session.key = ""; return signInView(); }
      throw error;
    }
  }
  document.getElementById("nav").hidden = false;
  document.getElementById("signout").hidden = false;
  document.getElementById("whoami").textContent =
    `key ${me.prefix}… · ${me.permission === "read" ? "read only" : "edit"}`;
  const hash = location.hash.replace(/^#/, "") || "/bots";
  const parts = hash.split("?")[0].split("/").filter(Boolean);
  for (const link of document.querySelectorAll("#nav a")) {
    const active = `/${parts[0]}` === link.getAttribute("href").slice(1);
    if (active) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  const ctx = {
    me, signal: current.signal, canEdit: me.permission !== "read",
    editReason: me.permission === "read" ? READ_ONLY : "",
  };
  clear(view, h("p", {}, "Loading…"));
  try {
    if (parts[0] === "bots" && parts[1]) await botView(view, ctx, decodeURIComponent(parts[1]));
    else if (parts[0] === "meetings" && parts[1]) await meetingView(view, ctx, parts[1]);
    else if (parts[0] === "meetings") await meetingsView(view, ctx);
    else if (parts[0] === "workspace") await workspaceView(view, ctx);
    else await botsView(view, ctx);
  } catch (error) {
    if (ctx.signal.aborted) return;
    clear(view, h("h1", {}, error.status === 404 ? "Not found" : "Something went wrong"),
      h("p.error", { role: "alert" }, error.message));
  }
  window.scrollTo(0, 0);
  view.focus({ preventScroll: true });
}

// The skip link must not change the hash: the hash is the router's.
document.querySelector(".skip").addEventListener("click", (event) => {
  event.preventDefault();
  view.focus();
});
document.getElementById("signout").addEventListener("click", () => {
  session.key = "";
  me = null;
  location.hash = "#/signin";
  route();
});
window.addEventListener("hashchange", route);
route();
