// A bot's page: status timeline, participants, the live transcript, detected actions, the
// meeting summary, chat, and the live commands (docs/api.md 2.5); everything the bot cannot do
// now is disabled with the reason. Live data comes from the stream relay (stream.js), replayed
// from the start; the summary arrives on it as `summary_ready` after the meeting (2.7, 2.14).

import { api, ApiError } from "./api.js";
import { clear, clock, control, field, h, statusBadge, when } from "./dom.js";
import { bodyOf, clearProblems, formMessage, showProblem } from "./forms.js";
import { follow, isLive } from "./stream.js";
import { summaryNodes } from "./summary.js";
import { transcriptPane } from "./transcript.js";

const FINAL = new Set(["completed", "failed", "cancelled"]);
const POLL_MS = 3000;

export async function botView(view, ctx, botId) {
  let bot;
  try {
    bot = await api("GET", `/bots/${encodeURIComponent(botId)}`, undefined, { signal: ctx.signal });
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 422)) {
      clear(view, h("h1", {}, "Not found"),
        h("p", { role: "alert" }, `No bot ${botId} in this workspace.`),
        h("p", {}, h("a", { href: "#/bots" }, "Back to the bots")));
      return;
    }
    throw error;
  }
  const unsupported = new Map(); // command → reason from a 422 capability_not_supported
  const heading = h("h1");
  const summary = h("dl.summary");
  const timeline = h("ol.timeline#timeline", { "aria-label": "Status timeline" });
  const people = h("ul#participants");
  const actions = h("ul#actions", {}, h("li.muted.none", {}, "None yet."));
  const meetingSummary = h("div#meeting-summary", { "aria-live": "polite" },
    h("p.muted", {}, bot.settings?.enable_actions
      ? "Written after the meeting ends; it appears here when it is ready."
      : "None: the bot does not detect actions (enable_actions off)."));
  const controls = h("div#controls");
  const shot = h("div#screenshot", { "aria-live": "polite" });
  const streamState = h("span.muted#stream-state", { role: "status" });
  const transcript = transcriptPane();
  const chat = chatPane(ctx, botId, () => bot, reasonFor);
  const seenStatus = new Set();

  function addStatus(status, reason, at) {
    const key = `${status}|${reason}`;
    if (seenStatus.has(key)) return;
    seenStatus.add(key);
    timeline.append(h("li", {}, statusBadge(status), " ", reason || "", " ",
      h("span.muted", {}, when(at))));
  }

  function reasonFor(command, { voice = false } = {}) {
    if (!ctx.canEdit) return ctx.editReason;
    if (bot.status !== "active") return `The bot is ${bot.status}; this needs it active`;
    if (voice && bot.settings && bot.settings.voice_agent_enabled === false) {
      return "The voice agent is off for this bot (voice_agent_enabled false)";
    }
    return unsupported.get(command) || "";
  }

  async function run(command, method, path, body, onDone) {
    try {
      const answer = await api(method, `/bots/${botId}${path}`, body);
      if (onDone) onDone(answer);
      return answer;
    } catch (error) {
      if (error.code === "capability_not_supported") {
        unsupported.set(command, `${bot.platform} cannot do this: ${error.message}`);
        renderControls();
      }
      throw error;
    }
  }

  function commandForm(id, label, fields, command, send, { voice = false } = {}) {
    const reason = reasonFor(command, { voice });
    const form = h(`form.inline#${id}`, { novalidate: true, onsubmit: async (event) => {
      event.preventDefault();
      clearProblems(form);
      try {
        await send(bodyOf(form));
        formMessage(form, "Done.");
      } catch (error) { showProblem(form, error); }
    } }, fields, h("div.field", {}, control(label, null, reason)));
    const button = form.querySelector("button");
    button.type = "submit";
    for (const el of form.elements) if (el !== button) el.disabled = !!reason;
    return form;
  }

  function renderControls() {
    clear(controls,
      h("div", {},
        control("Take screenshot", async () => {
          try {
            const picture = await run("screenshot", "POST", "/screenshot");
            clear(shot, h("img.shot", { src: picture.url, width: picture.width, height: picture.height,
              alt: `Screenshot of the bot's view at ${when(picture.captured_at)}` }));
          } catch (error) { clear(shot, h("p.error", { role: "alert" }, error.message)); }
        }, reasonFor("screenshot")),
        control("Raise hand", act("Hand raised", "hand", "POST", "/hand"), reasonFor("hand")),
        control("Lower hand", act("Hand lowered", "hand", "DELETE", "/hand"), reasonFor("hand")),
        control("Reset avatar", act("Avatar reset", "avatar", "DELETE", "/avatar"), reasonFor("avatar")),
        control("Stop speaking", act("Stopped speaking", "speak", "DELETE", "/speak"),
          reasonFor("speak", { voice: true })),
        control("Stop sharing", act("Stopped sharing", "screen", "DELETE", "/screen"),
          reasonFor("screen", { voice: true })),
        control("Stop bot", () => stopBot(), stopReason(), ".danger")),
      shot,
      h("h3", {}, "Speak"),
      commandForm("speak", "Speak", [
        field("text", "Text to say", { maxlength: 4096 }),
        field("voice", "Voice", { placeholder: "joe" }),
        field("interrupt", "Interrupt what it is saying", { kind: "checkbox" }),
      ], "speak", (body) => run("speak", "POST", "/speak", body), { voice: true }),
      h("h3", {}, "Share screen"),
      commandForm("share", "Share", [
        field("kind", "Source", { kind: "select", "data-skip": "1", options: [
          ["url", "web page"], ["image_url", "image"], ["video_url", "video"]] }),
        field("source", "Source URL", { kind: "url", "data-skip": "1" }),
      ], "screen", () => {
        const form = controls.querySelector("#share");
        return run("screen", "POST", "/screen",
          { [form.elements.kind.value]: form.elements.source.value.trim() });
      }, { voice: true }),
      h("h3", {}, "Avatar"),
      commandForm("avatar", "Set avatar", [field("image_url", "Image URL", { kind: "url" })],
        "avatar", (body) => run("avatar", "PUT", "/avatar", body)),
    );
  }

  function stopReason() {
    if (!ctx.canEdit) return ctx.editReason;
    if (FINAL.has(bot.status)) return `The bot is already ${bot.status}`;
    if (bot.status === "stopping") return "The bot is already stopping";
    return "";
  }

  async function stopBot() {
    try {
      bot = await api("DELETE", `/bots/${botId}`);
      update();
    } catch (error) { report(error); }
  }

  const errorLine = h("p.error#bot-error", { role: "alert" });
  const noticeLine = h("p.notice#bot-notice", { role: "status" });
  function report(error) {
    noticeLine.textContent = "";
    errorLine.textContent = `${error.message} (${error.code})`;
  }
  function act(done, command, method, path) {
    return () => run(command, method, path).then(() => {
      errorLine.textContent = "";
      noticeLine.textContent = `${done}.`;
    }, report);
  }

  function update() {
    clear(heading, `${bot.settings?.bot_name || "Bot"} `, statusBadge(bot.status));
    clear(summary,
      h("dt", {}, "Bot ID"), h("dd", {}, bot.bot_id),
      h("dt", {}, "Platform"), h("dd", {}, bot.platform),
      h("dt", {}, "Meeting"), h("dd", {}, h("a", { href: bot.constructed_meeting_url, rel: "noreferrer",
        target: "_blank" }, bot.native_meeting_id), " · ",
      h("a#meeting-link", { href: `#/meetings/${bot.id}` }, `meeting record #${bot.id}`)),
      h("dt", {}, "Status reason"), h("dd", {}, bot.status_reason || "—"),
      h("dt", {}, "Started / ended"), h("dd", {}, `${when(bot.start_time)} / ${when(bot.end_time)}`));
    addStatus(bot.status, bot.status_reason, bot.updated_at);
    renderControls();
    chat.render();
  }

  clear(view, heading, summary, errorLine, noticeLine,
    h("div.grid", {},
      h("div", {},
        h("section.panel", { "aria-labelledby": "tr-h" }, h("h2#tr-h", {}, "Live transcript ", streamState),
          transcript.node),
        h("section.panel", { "aria-labelledby": "ctl-h" }, h("h2#ctl-h", {}, "Controls"), controls)),
      h("div", {},
        h("section.panel", { "aria-labelledby": "tl-h" }, h("h2#tl-h", {}, "Status"), timeline),
        h("section.panel", { "aria-labelledby": "pp-h" }, h("h2#pp-h", {}, "Participants"), people),
        h("section.panel", { "aria-labelledby": "ac-h" }, h("h2#ac-h", {}, "Detected actions"), actions),
        h("section.panel", { "aria-labelledby": "su-h" }, h("h2#su-h", {}, "Meeting summary"),
          meetingSummary),
        h("section.panel", { "aria-labelledby": "ch-h" }, h("h2#ch-h", {}, "Chat"), chat.node))));
  update();

  function showPeople(names) {
    clear(people, names.length ? names.map((n) => h("li", {}, n)) : h("li.muted", {}, "nobody yet"));
  }
  api("GET", `/bots/${botId}/participants`).then((p) => showPeople(p.participants)).catch(() => {});

  function showSummary(written) {
    clear(meetingSummary, summaryNodes(written), h("p", {},
      h("a#summary-link", { href: `#/meetings/${bot.id}` }, "The summary on the meeting record")));
  }

  const onEvent = (name, data) => {
    if (name === "transcript_segment") transcript.segment(data);
    else if (name === "bot_status") {
      addStatus(data.status, data.status_reason, data.timestamp);
      if (data.status !== bot.status) { bot = { ...bot, status: data.status, status_reason: data.status_reason }; update(); }
    } else if (name === "participant_update") showPeople(data.participants);
    else if (name === "action_detected") {
      actions.querySelector(".none")?.remove();
      actions.append(h("li", {}, h("strong", {}, data.type.replace("_", " ")), ": ", data.text,
        data.owner ? ` (owner ${data.owner})` : "", data.due ? `, due ${data.due}` : ""));
    } else if (name === "summary_ready") showSummary(data);
    else if (name === "recording_ready") {
      transcript.note(`Recording ready (${data.format}, ${clock(data.duration_s)})`);
    } else if (name === "speak_started" || name === "speak_finished") {
      const what = name === "speak_started" ? "The bot started speaking"
        : data.interrupted ? "The bot was interrupted" : "The bot finished speaking";
      transcript.note(`${what}${data.error ? ` (${data.error})` : ""}`);
    }
  };
  if (isLive(bot.status) || bot.status === "stopping") {
    follow(botId, { signal: ctx.signal, onEvent, isFinal: () => FINAL.has(bot.status),
      onState: (text) => { streamState.textContent = `(${text})`; } });
  } else {
    streamState.textContent = bot.status === "scheduled"
      ? `(starts when the bot launches, ${when(bot.scheduled_at)})`
      : "(not live: the stored transcript is on the meeting page)";
  }
  const timer = setInterval(async () => {
    try {
      const fresh = await api("GET", `/bots/${botId}`, undefined, { signal: ctx.signal });
      const changed = ["status", "start_time", "end_time"].some((k) => fresh[k] !== bot[k]);
      bot = fresh;
      if (changed) update();
      chat.refresh();
    } catch { /* next round */ }
  }, POLL_MS);
  ctx.signal.addEventListener("abort", () => clearInterval(timer));
}

function chatPane(ctx, botId, getBot, reasonFor) {
  const list = h("ul#chat-list");
  const slot = h("div");
  const node = h("div", {}, list, slot);
  async function refresh() {
    if (["scheduled", "requested", "cancelled"].includes(getBot().status)) return;
    try {
      const chat = await api("GET", `/bots/${botId}/chat`);
      clear(list, chat.messages.map((m) => h("li", {}, h("strong", {}, m.sender || "?"),
        m.from_bot ? " (bot)" : "", ": ", m.text)));
    } catch { /* not joined yet */ }
  }
  function render() {
    const reason = reasonFor("chat", { voice: true });
    const form = h("form.inline#chat-send", { novalidate: true, onsubmit: async (event) => {
      event.preventDefault();
      clearProblems(form);
      try {
        await api("POST", `/bots/${botId}/chat`, bodyOf(form));
        form.reset();
        refresh();
      } catch (error) { showProblem(form, error, {}, "text"); }
    } }, field("text", "Message", { prefix: "chat-", maxlength: 4096, disabled: !!reason }),
    h("div.field", {}, control("Send", null, reason)));
    form.querySelector("button").type = "submit";
    clear(slot, form);
    refresh();
  }
  return { node, refresh, render };
}
