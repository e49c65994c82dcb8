// The meeting summary (docs/api.md 2.14) as the bot's page (from the stream's `summary_ready`)
// and the meeting's page (from the record's `summary`) show it.

import { h, when } from "./dom.js";

/** The nodes of a summary in any state; null (none: actions off or purged) says so. */
export function summaryNodes(summary) {
  if (!summary) return h("p.muted", {}, "No summary: the bot did not detect actions, or the meeting was purged.");
  if (summary.status === "pending") return h("p.muted", {}, "Being written: it follows the end of the meeting.");
  if (summary.status === "failed") return h("p.error", {}, `Not written: ${summary.error || "the model failed"}`);
  const list = (items, line) => (items.length ? h("ul", {}, items.map((item) => h("li", {}, line(item)))) : null);
  return [
    h("p", {}, summary.summary),
    summary.decisions.length ? h("h3", {}, "Decisions") : null,
    list(summary.decisions, (d) => d.text),
    summary.action_items.length ? h("h3", {}, "Action items") : null,
    list(summary.action_items, (a) => [a.text, a.owner ? ` (owner ${a.owner})` : "",
      a.due ? `, due ${a.due}` : ""]),
    h("p.muted", {}, `Written ${when(summary.ready_at)} by ${summary.model}`),
  ];
}
