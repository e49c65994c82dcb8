// Meetings: search (name, status, dates, ids) and a meeting's page: the stored transcript with
// downloads (txt/srt/vtt/json), recordings played in the page, screenshots, actions, the
// meeting summary, agent logs and purge behind a confirmation (docs/api.md 2.6).

import { api, apiText, ApiError } from "./api.js";
import { clear, clock, control, h, statusBadge, when } from "./dom.js";
import { filterQuery, listFilters } from "./filters.js";
import { summaryNodes } from "./summary.js";

export async function meetingsView(view, ctx) {
  const table = h("tbody");
  const pager = h("div.pager");
  const state = { offset: 0, limit: 50, filters: {} };
  const error = h("p.error", { role: "alert" });
  const filters = listFilters("meetings", (values) => {
    state.filters = values; state.offset = 0; refresh().catch(show);
  });
  function show(e) { error.textContent = `${e.message} (${e.code})`; }
  clear(view, h("h1", {}, "Meetings"), filters, error,
    h("table#meeting-list", {}, h("thead", {}, h("tr", {},
      ["Meeting", "Name", "Platform", "Status", "Participants", "Created"]
        .map((t) => h("th", { scope: "col" }, t)))), table), pager);
  async function refresh() {
    error.textContent = "";
    const page = await api("GET", `/meetings${filterQuery({ ...state.filters, limit: state.limit,
      offset: state.offset })}`, undefined, { signal: ctx.signal });
    clear(table, page.meetings.length ? page.meetings.map((m) => h("tr", {},
      h("td", {}, h("a", { href: `#/meetings/${m.id}` }, `#${m.id}`)),
      h("td", {}, m.data?.name || h("span.muted", {}, "untitled")),
      h("td", {}, m.platform), h("td", {}, statusBadge(m.status)),
      h("td", {}, (m.data?.participants || []).join(", ")),
      h("td", {}, when(m.created_at)))) : h("tr", {}, h("td", { colspan: 6 }, "No meetings match.")));
    clear(pager,
      h("button.secondary", { type: "button", disabled: state.offset === 0,
        onclick: () => { state.offset = Math.max(0, state.offset - state.limit); refresh().catch(show); } }, "Newer"),
      h("button.secondary", { type: "button", disabled: page.meetings.length < state.limit,
        onclick: () => { state.offset += state.limit; refresh().catch(show); } }, "Older"));
  }
  await refresh();
}

export async function meetingView(view, ctx, meetingId) {
  let meeting;
  try {
    meeting = await api("GET", `/meetings/${encodeURIComponent(meetingId)}`, undefined,
      { signal: ctx.signal });
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 422)) {
      clear(view, h("h1", {}, "Not found"),
        h("p", { role: "alert" }, `No meeting ${meetingId} in this workspace.`));
      return;
    }
    throw error;
  }
  const transcript = await api("GET", `/meetings/${meeting.id}/transcript`).catch(() => ({ segments: [] }));
  const message = h("p#meeting-message", { role: "status" });

  function download(format) {
    return h("button.secondary", { type: "button", "data-format": format, onclick: async () => {
      try {
        const { text, type } = await apiText(`/meetings/${meeting.id}/transcript?format=${format}`);
        const url = URL.createObjectURL(new Blob([text], { type }));
        const link = h("a", { href: url, download: `meeting-${meeting.id}.${format}` });
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
      } catch (error) { message.textContent = error.message; }
    } }, format);
  }

  const purgeSlot = h("div#purge");
  function purgeReason() {
    if (!ctx.canEdit) return ctx.editReason;
    if (!["completed", "failed", "cancelled"].includes(meeting.status)) {
      return `The meeting is ${meeting.status}; purge needs it finished`;
    }
    return meeting.redacted ? "Already purged" : "";
  }
  function purgeAsk() {
    clear(purgeSlot, control("Purge meeting…", () => clear(purgeSlot,
      h("p", { role: "alert" }, "Delete the transcript, recordings, screenshots, chat and "
        + "actions of this meeting for good?"),
      h("button.danger#confirm-purge", { type: "button", onclick: async () => {
        try {
          await api("DELETE", `/meetings/${meeting.id}`);
          location.hash = `#/meetings/${meeting.id}?purged`;
        } catch (error) { message.textContent = `${error.message} (${error.code})`; purgeAsk(); }
      } }, "Yes, purge"), " ",
      h("button.secondary", { type: "button", onclick: purgeAsk }, "Cancel")), purgeReason(), ".danger"));
  }
  purgeAsk();

  const media = (rec) => (rec.content_type.startsWith("video/") ? "video" : "audio");
  clear(view,
    h("h1", {}, `Meeting #${meeting.id} `, statusBadge(meeting.status)),
    h("p", {}, meeting.data?.name || "untitled", " · ", meeting.platform, " · ",
      meeting.native_meeting_id, " · ", h("a", { href: `#/bots/${meeting.bot_id}` }, "bot page"),
      meeting.redacted ? " · purged" : ""),
    message,
    h("section.panel", { "aria-labelledby": "mt-h" }, h("h2#mt-h", {}, "Transcript"),
      h("p", {}, `${meeting.transcript.segment_count} segments · languages `
        + `${meeting.transcript.languages.join(", ") || "—"} · ${meeting.transcript.tier}`
        + `${meeting.transcript.ready ? "" : " · not final yet"}`),
      h("div", { role: "group", "aria-label": "Download the transcript" }, "Download: ",
        ["txt", "srt", "vtt", "json"].map(download)),
      h("div.transcript#stored-transcript", { tabindex: "0", role: "region", "aria-label": "Stored transcript" },
        transcript.segments.map((s) => h("p.line", {}, h("span.muted", {}, `[${clock(s.start)}] `),
          h("span.who", {}, `${s.speaker || "Unknown speaker"}: `), s.text)))),
    h("section.panel", { "aria-labelledby": "rc-h" }, h("h2#rc-h", {}, "Recordings"),
      meeting.recordings.length ? meeting.recordings.map((rec) => h("div.recording", {},
        h("p", {}, `${rec.format}, ${clock(rec.duration_s)}, ${Math.round(rec.size_bytes / 1024)} KiB`),
        h(media(rec), { controls: true, preload: "metadata", src: rec.url,
          "aria-label": `Recording (${rec.format})`, width: media(rec) === "video" ? 640 : null })))
        : h("p.muted", {}, "No recording.")),
    h("section.panel", { "aria-labelledby": "sc-h" }, h("h2#sc-h", {}, "Screenshots"),
      meeting.screenshots.length ? meeting.screenshots.map((s) => h("img.shot", { src: s.url,
        alt: `Screenshot taken ${when(s.captured_at)}` })) : h("p.muted", {}, "No screenshots.")),
    h("section.panel", { "aria-labelledby": "ma-h" }, h("h2#ma-h", {}, "Actions"),
      meeting.actions.length ? h("ul", {}, meeting.actions.map((a) => h("li", {},
        h("strong", {}, a.type.replace("_", " ")), ": ", a.text, a.owner ? ` (owner ${a.owner})` : "",
        a.due ? `, due ${a.due}` : ""))) : h("p.muted", {}, "No actions detected.")),
    h("section.panel", { "aria-labelledby": "ms-h" }, h("h2#ms-h", {}, "Summary"),
      h("div#stored-summary", {}, summaryNodes(meeting.summary))),
    meeting.logs.length ? h("section.panel", {}, h("h2", {}, "Agent log"),
      meeting.logs.map((l) => h("a", { href: l.url }, `agent log (${l.size_bytes} bytes)`))) : null,
    h("section.panel", { "aria-labelledby": "pg-h" }, h("h2#pg-h", {}, "Purge"), purgeSlot));
}
