// A bot's SSE stream through the control plane's relay (docs/api.md 2.7). EventSource cannot
// send the Bearer token, so the stream is read with fetch and parsed here.

import { api, ApiError } from "./api.js";

const LIVE = new Set(["requested", "joining", "awaiting_admission", "active"]);

/**
 * Follow bot `botId` until `signal` aborts or `isFinal()` says the bot is done: subscribe, read
 * frames, resubscribe after an early end with the last event id (the first read replays the
 * meeting from the start, Last-Event-ID 0). onEvent(name, data, id) gets every event;
 * onState(text) says what the stream is doing.
 */
export async function follow(botId, { signal, onEvent, onState, isFinal }) {
  let last = 0;
  while (!signal.aborted && !isFinal()) {
    let grant;
    try {
      onState("connecting");
      grant = await api("POST", `/bots/${botId}/subscribe`, undefined, { signal });
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && error.status === 404 && error.code === "bot_not_active") {
        onState("waiting for the bot");
        await sleep(2000, signal);
        continue;
      }
      onState(`stream unavailable: ${error.message}`);
      await sleep(3000, signal);
      continue;
    }
    try {
      const response = await fetch(grant.url, {
        signal,
        headers: { Authorization: `Bearer ${grant.token}`, "Last-Event-ID": String(last) },
      });
      if (!response.ok) { await sleep(2000, signal); continue; }
      onState("live");
      for await (const frame of frames(response.body)) {
        if (frame.id) last = Number(frame.id);
        if (frame.event && frame.data) onEvent(frame.event, JSON.parse(frame.data), last);
      }
      onState("ended");
    } catch (error) {
      if (signal.aborted) return;
      onState("reconnecting");
    }
    await sleep(1000, signal);
  }
}

export function isLive(status) { return LIVE.has(status); }

async function* frames(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let frame = {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let index;
    while ((index = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, index).replace(/\r$/, "");
      buffer = buffer.slice(index + 1);
      if (line === "") {
        if (Object.keys(frame).length) yield frame;
        frame = {};
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        const data = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        frame[name] = name === "data" && frame.data ? `${frame.data}\n${data}` : data;
      }
    }
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}
