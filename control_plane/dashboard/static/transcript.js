// The live transcript: partial segments are replaced by their final (same id), a final with
// empty text withdraws its partials, lines show the speaker, and the pane follows new lines
// unless the user has scrolled up (then a button jumps back to the newest line).

import { clock, h } from "./dom.js";

const NEAR_BOTTOM_PX = 40;

export function transcriptPane() {
  const box = h("div.transcript#transcript", { role: "log", "aria-label": "Live transcript",
    tabindex: "0" });
  const jump = h("button.secondary#jump", { type: "button", hidden: true }, "Jump to latest");
  const lines = new Map();
  let follow = true;
  box.addEventListener("scroll", () => {
    follow = box.scrollTop + box.clientHeight >= box.scrollHeight - NEAR_BOTTOM_PX;
    jump.hidden = follow;
  });
  jump.addEventListener("click", () => { follow = true; jump.hidden = true; stick(); });
  function stick() { if (follow) box.scrollTop = box.scrollHeight; }

  function segment(seg) {
    const old = lines.get(seg.id);
    if (seg.completed && !seg.text) {
      if (old) { old.remove(); lines.delete(seg.id); }
      return;
    }
    const line = h(`p.line${seg.completed ? "" : ".partial"}`, { "data-id": seg.id },
      h("span.muted", {}, `[${clock(seg.start)}] `),
      h("span.who", {}, `${seg.speaker || "Unknown speaker"}: `), seg.text);
    if (old) old.replaceWith(line); else box.append(line);
    lines.set(seg.id, line);
    stick();
  }
  function note(text) { box.append(h("p.line.muted", {}, text)); stick(); }
  return { node: h("div", {}, box, jump), segment, note };
}
