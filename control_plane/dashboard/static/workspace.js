// The workspace: details and settings, members, invitations (invite, revoke), API keys
// (create with the secret shown once, list, delete), webhook endpoints (create, filter types,
// secret, delivery log, delete) and action prompt versions (docs/api.md 2.2, 2.8, 2.9).

import { api } from "./api.js";
import { clear, control, field, h, when } from "./dom.js";
import { bodyOf, clearProblems, formMessage, showProblem } from "./forms.js";

const EVENT_TYPES = ["bot.status_changed", "transcription.ready", "recording.ready",
  "action.detected", "participant.joined", "participant.left"];
const ATTEMPT = { 0: "success", 1: "pending", 2: "failed", 3: "sending" };

function table(id, heads, rows, empty) {
  return h(`table#${id}`, {}, h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: heads.length }, empty))));
}

/** A form that calls `send(body)`; errors go next to fields, success to `done(answer)`. */
function apiForm(id, ctx, fields, label, send, done) {
  const form = h(`form.fields#${id}`, { novalidate: true, onsubmit: async (event) => {
    event.preventDefault();
    clearProblems(form);
    try { await done(await send(bodyOf(form)), form); } catch (error) { showProblem(form, error); }
  } }, fields, h("div.field", {}, control(label, null, ctx.editReason)));
  form.querySelector("button").type = "submit";
  return form;
}

export async function workspaceView(view, ctx) {
  const wid = ctx.me.workspace_id;
  const base = `/workspaces/${wid}`;
  const sections = {
    details: h("section.panel#ws-details"), members: h("section.panel#ws-members"),
    invitations: h("section.panel#ws-invitations"), keys: h("section.panel#ws-keys"),
    webhooks: h("section.panel#ws-webhooks"), prompts: h("section.panel#ws-prompts"),
  };
  clear(view, h("h1", {}, "Workspace"), Object.values(sections));
  const fail = (node, title) => (error) => clear(node, h("h2", {}, title),
    h("p.error", { role: "alert" }, `${error.message} (${error.code})`));

  async function details() {
    const [ws, prompts] = await Promise.all([api("GET", base), api("GET", "/action-prompts")]);
    const s = ws.settings;
    const form = apiForm("ws-settings", ctx, [
      field("name", "Workspace name", { prefix: "ws-", value: ws.name }),
      field("recording_enabled", "Record by default", { prefix: "ws-", kind: "checkbox", checked: s.recording_enabled }),
      field("transcribe_enabled", "Transcribe by default", { prefix: "ws-", kind: "checkbox", checked: s.transcribe_enabled }),
      field("default_prompt_version_id", "Default action prompt", { prefix: "ws-", kind: "select", options: [
        ["", "system default"], ...prompts.map((p) => [p.id, `${p.name} v${p.version}`])] }),
      field("max_meeting_duration_seconds", "Max meeting duration (s)", { prefix: "ws-", kind: "number",
        min: 60, max: 86400, value: s.max_meeting_duration_seconds, hint: "60 to 86400" }),
    ], "Save settings", (body) => {
      const { name, ...settings } = body;
      settings.default_prompt_version_id = settings.default_prompt_version_id || null;
      return api("PATCH", base, { name, settings });
    }, (_, f) => formMessage(f, "Saved."));
    form.elements.default_prompt_version_id.value = s.default_prompt_version_id || "";
    clear(sections.details, h("h2", {}, "Details and settings"),
      h("p", {}, `${ws.name} · ${ws.member_count} members · created ${when(ws.created_at)} · id ${ws.id}`),
      form);
  }

  async function members() {
    const list = await api("GET", `${base}/members`);
    clear(sections.members, h("h2", {}, "Members"), table("member-list", ["Name", "E-mail", "Role", "Joined"],
      list.map((m) => h("tr", {}, h("td", {}, m.name), h("td", {}, m.email), h("td", {}, m.role),
        h("td", {}, when(m.joined_at)))), "No members."));
  }

  async function invitations() {
    const list = await api("GET", `${base}/invitations`);
    const token = h("div#invite-token", { "aria-live": "polite" });
    clear(sections.invitations, h("h2", {}, "Invitations"),
      table("invitation-list", ["E-mail", "Role", "Expires", ""], list.map((i) => h("tr", {},
        h("td", {}, i.email), h("td", {}, i.role), h("td", {}, when(i.expires_at)),
        h("td", {}, control("Revoke", async () => {
          try { await api("DELETE", `${base}/invitations/${i.id}`); invitations(); } catch (e) { fail(sections.invitations, "Invitations")(e); }
        }, ctx.editReason, ".secondary")))), "No pending invitations."),
      h("h3", {}, "Invite"),
      apiForm("invite", ctx, [
        field("email", "E-mail", { prefix: "inv-", kind: "email" }),
        field("role", "Role", { prefix: "inv-", kind: "select", options: [["member", "member"], ["owner", "owner"]] }),
      ], "Invite", (body) => api("POST", `${base}/invitations`, body), async (made) => {
        await invitations();
        clear(sections.invitations.querySelector("#invite-token"), secretBox("Invitation token (shown once)", made.token));
      }), token);
  }

  async function keys() {
    const list = await api("GET", "/api-keys");
    clear(sections.keys, h("h2", {}, "API keys"),
      table("key-list", ["Name", "Prefix", "Permission", "Created", "Last used", "Expires", ""],
        list.map((k) => h("tr", {}, h("td", {}, k.name), h("td", {}, h("code", {}, k.prefix)),
          h("td", {}, k.permission), h("td", {}, when(k.created_at)), h("td", {}, when(k.last_used_at)),
          h("td", {}, k.expires_at ? when(k.expires_at) : "never"),
          h("td", {}, control("Delete", async () => {
            try { await api("DELETE", `/api-keys/${k.id}`); keys(); } catch (e) { fail(sections.keys, "API keys")(e); }
          }, ctx.editReason || (k.prefix === ctx.me.prefix ? "This is the key you signed in with" : ""),
          ".secondary")))), "No keys."),
      h("h3", {}, "Create a key"),
      apiForm("key-create", ctx, [
        field("name", "Name", { prefix: "key-", maxlength: 200 }),
        field("permission", "Permission", { prefix: "key-", kind: "select", options: [["edit", "edit"], ["read", "read"]] }),
        field("expires_at", "Expires", { prefix: "key-", kind: "datetime-local", hint: "Empty: never" }),
      ], "Create key", (body) => api("POST", "/api-keys", body), async (made) => {
        await keys();
        sections.keys.append(secretBox(`New key "${made.name}" (shown once: copy it now)`, made.key));
      }));
  }

  async function webhooks() {
    let list;
    try { list = await api("GET", `${base}/webhooks`); } catch (error) {
      return fail(sections.webhooks, "Webhook endpoints")(error);
    }
    const detail = h("div#webhook-detail", { "aria-live": "polite" });
    const types = (prefix, chosen = []) => h("fieldset", {}, h("legend", {}, "Event types (none: all)"),
      EVENT_TYPES.map((t) => h("label", {}, h("input", { type: "checkbox", name: `${prefix}${t}`, value: t,
        "data-group": "filter_types", checked: chosen.includes(t) }), ` ${t} `)),
      h("p.field-error", { "data-error-for": "filter_types" }));
    clear(sections.webhooks, h("h2", {}, "Webhook endpoints"),
      table("webhook-list", ["URL", "Description", "Event types", "State", ""], list.map((ep) => h("tr", {},
        h("td", {}, ep.url), h("td", {}, ep.description || ""), h("td", {}, ep.filter_types.join(", ") || "all"),
        h("td", {}, ep.disabled ? "disabled" : "enabled"),
        h("td", {},
          control("Edit", () => editEndpoint(ep), ctx.editReason, ".secondary"),
          control("Secret", async () => {
            try { const s = await api("GET", `${base}/webhooks/${ep.id}/secret`); clear(detail, secretBox("Signing secret", s.key)); } catch (e) { clear(detail, h("p.error", { role: "alert" }, e.message)); }
          }, ctx.editReason, ".secondary"),
          control("Delivery log", () => showLog(ep), "", ".secondary"),
          control("Delete", async () => {
            try { await api("DELETE", `${base}/webhooks/${ep.id}`); webhooks(); } catch (e) { clear(detail, h("p.error", { role: "alert" }, e.message)); }
          }, ctx.editReason, ".secondary")))), "No endpoints."),
      detail,
      h("h3", {}, "Add an endpoint"),
      apiForm("webhook-create", ctx, [
        field("url", "URL", { prefix: "wh-", kind: "url", placeholder: "https://example.com/hooks" }),
        field("description", "Description", { prefix: "wh-" }),
        types("new-"),
      ], "Add endpoint", (body) => api("POST", `${base}/webhooks`, body), () => webhooks()));

    function editEndpoint(ep) {
      clear(detail, h("h3", {}, `Edit ${ep.url}`), apiForm("webhook-edit", ctx, [
        field("url", "URL", { prefix: "whe-", kind: "url", value: ep.url }),
        field("description", "Description", { prefix: "whe-", value: ep.description || "" }),
        types("edit-", ep.filter_types),
      ], "Save endpoint", (body) => api("PATCH", `${base}/webhooks/${ep.id}`,
        { filter_types: [], ...body }), () => webhooks()));
    }
    async function showLog(ep) {
      try {
        const attempts = await api("GET", `${base}/webhooks/${ep.id}/logs?limit=50`);
        clear(detail, h("h3", {}, `Delivery log of ${ep.url}`), table("delivery-log",
          ["When", "Status", "Response code", "Message", "Duration"], attempts.map((a) => h("tr", {},
            h("td", {}, when(a.timestamp)), h("td", {}, ATTEMPT[a.status] ?? a.status),
            h("td", {}, a.response_status_code || "no answer"), h("td", {}, h("code", {}, a.msg_id || "")),
            h("td", {}, a.response_duration_ms != null ? `${a.response_duration_ms} ms` : ""))), "No deliveries yet."));
      } catch (e) { clear(detail, h("p.error", { role: "alert" }, `${e.message} (${e.code})`)); }
    }
  }

  async function prompts() {
    const list = await api("GET", "/action-prompts");
    clear(sections.prompts, h("h2", {}, "Action prompt versions"),
      table("prompt-list", ["Name", "Version", "Model", "Created", "Instructions"], list.map((p) => h("tr", {},
        h("td", {}, p.name), h("td", {}, p.version), h("td", {}, p.model || "agent default"),
        h("td", {}, when(p.created_at)), h("td", {}, p.instructions.slice(0, 160)))), "No prompt versions."),
      h("h3", {}, "New version"),
      apiForm("prompt-create", ctx, [
        field("name", "Name", { prefix: "pr-", maxlength: 200, hint: "The same name makes the next version" }),
        field("model", "Model", { prefix: "pr-", placeholder: "agent default" }),
        field("instructions", "Instructions", { prefix: "pr-", kind: "textarea" }),
      ], "Save version", (body) => api("POST", "/action-prompts", body), () => { prompts(); details(); }));
  }

  await Promise.all([
    details().catch(fail(sections.details, "Details and settings")),
    members().catch(fail(sections.members, "Members")),
    invitations().catch(fail(sections.invitations, "Invitations")),
    keys().catch(fail(sections.keys, "API keys")),
    webhooks(),
    prompts().catch(fail(sections.prompts, "Action prompt versions")),
  ]);
}

function secretBox(label, secret) {
  const id = `s-${Math.random().toString(36).slice(2, 8)}`;
  const status = h("span.muted", { role: "status" });
  return h("div.secret-box", {}, h("p", { id }, label),
    h("p.secret", { id: `${id}-value`, "data-secret": "1" }, secret), " ",
    h("button.secondary", { type: "button", onclick: async () => {
      try { await navigator.clipboard.writeText(secret); status.textContent = "Copied."; } catch {
        const range = document.createRange();
        range.selectNodeContents(document.getElementById(`${id}-value`));
        getSelection().removeAllRanges(); getSelection().addRange(range);
        status.textContent = "Selected: press Ctrl+C to copy.";
      }
    } }, "Copy"), " ", status);
}
