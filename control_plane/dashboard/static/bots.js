// Bots: the list (live status, the filters of GET /api/v1/bots, paging) and the launch form
// with every launch option of POST /api/v1/bots (docs/api.md Part 1 and 2.3).

import { api } from "./api.js";
import { clear, field, h, statusBadge, when } from "./dom.js";
import { bodyOf, clearProblems, showProblem } from "./forms.js";
import { listFilters, filterQuery } from "./filters.js";

const REFRESH_MS = 3000;

// 400 codes without errors[].loc, shown next to the field they are about.
const FIELD_OF_CODE = {
  missing_meeting_reference: "meeting_url",
  invalid_meeting_id: "native_meeting_id",
  malformed_meeting_url: "meeting_url",
  zoom_token_required: "zoom_obf_token",
  scheduled_start_in_past: "scheduled_at",
  prompt_version_not_found: "prompt_version_id",
  language_not_supported: "language",
  task_not_supported: "task",
  quota_exceeded: "platform",
};

export async function botsView(view, ctx) {
  const table = h("tbody");
  const pager = h("div.pager");
  const state = { offset: 0, limit: 50, filters: {} };
  const filters = listFilters("bots", (values) => {
    state.filters = values; state.offset = 0; refresh();
  });
  const launchSlot = h("div", {}, h("p.muted", {}, "Loading the launch options…"));
  clear(view,
    h("h1", {}, "Bots"),
    h("details.panel#launch-panel", {}, h("summary", {}, h("h2.inline", {}, "Launch a bot")),
      launchSlot),
    h("section.panel", { "aria-labelledby": "list-h" }, h("h2#list-h", {}, "Bots in this workspace"),
      filters,
      h("table#bot-list", {}, h("caption.muted", {}, "Newest first; statuses refresh every 3 s"),
        h("thead", {}, h("tr", {}, ["Bot", "Meeting name", "Platform", "Meeting ID", "Status", "Reason", "Created"]
          .map((t) => h("th", { scope: "col" }, t)))), table),
      pager));

  async function refresh() {
    const page = await api("GET", `/bots${filterQuery({ ...state.filters, limit: state.limit,
      offset: state.offset })}`, undefined, { signal: ctx.signal });
    clear(table, page.bots.length ? page.bots.map((bot) => h("tr", {},
      h("td", {}, h("a", { href: `#/bots/${bot.bot_id}` }, bot.settings?.bot_name || bot.bot_id)),
      h("td.name", {}, bot.data?.name || h("span.muted", {}, "untitled")),
      h("td", {}, bot.platform),
      h("td", {}, bot.native_meeting_id),
      h("td", {}, statusBadge(bot.status)),
      h("td", {}, bot.status_reason || ""),
      h("td", {}, when(bot.created_at)))) : h("tr", {}, h("td", { colspan: 7 }, "No bots match.")));
    clear(pager,
      h("button.secondary", { type: "button", disabled: state.offset === 0,
        onclick: () => { state.offset = Math.max(0, state.offset - state.limit); refresh(); } }, "Newer"),
      h("span.muted", {}, `${state.offset + 1}–${state.offset + page.bots.length}`),
      h("button.secondary", { type: "button", disabled: page.bots.length < state.limit,
        onclick: () => { state.offset += state.limit; refresh(); } }, "Older"));
  }
  // The list and the launch form's options (prompt versions, Zoom connections) load together.
  await Promise.all([refresh(), launchForm(ctx).then((form) => clear(launchSlot, form))]);
  const timer = setInterval(() => refresh().catch(() => {}), REFRESH_MS);
  ctx.signal.addEventListener("abort", () => clearInterval(timer));
}

const TRI = [["", "workspace default"], ["true", "on"], ["false", "off"]];

async function launchForm(ctx) {
  const [prompts, connections] = await Promise.all([
    api("GET", "/action-prompts").catch(() => []),
    api("GET", "/workspace/integrations/zoom/connections").catch(() => []),
  ]);
  const form = h("form.fields#launch", { novalidate: true, onsubmit: async (event) => {
    event.preventDefault();
    clearProblems(form);
    const body = bodyOf(form);
    try {
      const bot = await api("POST", "/bots", body);
      location.hash = `#/bots/${bot.bot_id}`;
    } catch (error) {
      showProblem(form, error, FIELD_OF_CODE, "platform");
    }
  } },
  field("platform", "Platform", { kind: "select", required: true, options: [
    ["google_meet", "Google Meet"], ["zoom", "Zoom"], ["teams", "Microsoft Teams"]] }),
  field("meeting_url", "Meeting URL", { kind: "url", placeholder: "https://meet.google.com/abc-defg-hij",
    hint: "Or give the meeting ID instead." }),
  field("native_meeting_id", "Meeting ID", { hint: "Meet abc-defg-hij; Zoom 9–11 digits; Teams 10–15 digits" }),
  field("bot_name", "Bot name", { placeholder: "meetbot", maxlength: 100 }),
  field("language", "Language", { placeholder: "automatic", hint: "Code such as en, de, fr" }),
  field("task", "Task", { kind: "select", options: [["", "transcribe (default)"],
    ["transcribe", "transcribe"], ["translate", "translate to English"]] }),
  field("transcription_tier", "Transcription tier", { kind: "select", options: [
    ["", "realtime (default)"], ["realtime", "realtime"], ["deferred", "deferred"]] }),
  field("recording_enabled", "Recording", { kind: "select", options: TRI, "data-kind": "bool" }),
  field("transcribe_enabled", "Transcription", { kind: "select", options: TRI, "data-kind": "bool" }),
  h("fieldset.field", {}, h("legend", {}, "Capture modes"),
    h("label", {}, h("input", { type: "checkbox", name: "capture_audio", value: "audio",
      "data-group": "capture_modes" }), " audio"),
    h("label", {}, h("input", { type: "checkbox", name: "capture_video", value: "video",
      "data-group": "capture_modes" }), " video"),
    h("span.hint", {}, "None ticked: audio"),
    h("p.field-error", { id: "f-capture_modes-error", "data-error-for": "capture_modes",
      "aria-live": "polite" })),
  field("recording_format", "Recording format", { kind: "select", options: [
    ["", "mp4 (default)"], ["mp4", "mp4"], ["mp3", "mp3"], ["webm", "webm"]] }),
  field("voice_agent_enabled", "Voice agent (speak, chat, screen share)", { kind: "checkbox", checked: true }),
  field("default_avatar_url", "Avatar image URL", { kind: "url" }),
  field("enable_actions", "Detect actions", { kind: "checkbox" }),
  field("prompt_version_id", "Action prompt version", { kind: "select", options: [
    ["", "workspace default"], ...prompts.map((p) => [p.id, `${p.name} v${p.version}`])] }),
  field("scheduled_at", "Schedule for", { kind: "datetime-local", hint: "Empty: launch now (your local time)" }),
  field("passcode", "Passcode", { hint: "Some Teams and Zoom meetings" }),
  field("zoom_obf_token", "Zoom OBF token", { hint: "Zoom: this or a stored connection (a token is minted from it at launch)" }),
  field("zoom_connection_id", "Zoom connection", { kind: "select", "data-kind": "int", options: [
    ["", connections.length ? "newest usable" : "none stored"],
    ...connections.map((c) => [String(c.id), c.email || c.zoom_user_id])] }),
  field("left_alone_timeout_seconds", "Left-alone timeout (s)", { kind: "number", min: 10, max: 3600,
    placeholder: "10", hint: "10 to 3600" }),
  field("startup_alone_timeout_seconds", "Startup-alone timeout (s)", { kind: "number", min: 60,
    max: 7200, placeholder: "1200", hint: "60 to 7200" }),
  field("admission_timeout_seconds", "Admission timeout (s)", { kind: "number", min: 30, max: 600,
    placeholder: "300", hint: "30 to 600" }),
  field("max_meeting_duration_seconds", "Max meeting duration (s)", { kind: "number", min: 60,
    max: 86400, placeholder: "workspace default", hint: "60 to 86400" }),
  h("div.field", {}, h("button", { type: "submit", disabled: !ctx.canEdit,
    "aria-describedby": ctx.canEdit ? null : "launch-why" }, "Launch bot"),
  ctx.canEdit ? null : h("span.reason#launch-why", {}, ctx.editReason)));
  return form;
}
