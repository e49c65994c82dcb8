// The list filters shared by bots and meetings (query of GET /api/v1/bots and /meetings).

import { query } from "./api.js";
import { field, h } from "./dom.js";

const STATUSES = ["", "scheduled", "requested", "joining", "awaiting_admission", "active",
  "stopping", "completed", "failed", "cancelled"];

export function listFilters(prefix, onChange) {
  const form = h(`form.inline#${prefix}-filters`, { novalidate: true, role: "search",
    "aria-label": `Filter ${prefix}`, onsubmit: (event) => {
      event.preventDefault();
      const values = {};
      for (const el of form.elements) if (el.name) values[el.name] = el.value.trim();
      if (values.date_from) values.date_from = new Date(values.date_from).toISOString();
      if (values.date_to) values.date_to = new Date(values.date_to).toISOString();
      onChange(values);
    } },
  field("name", "Meeting name", { prefix: "q-", kind: "search" }),
  field("status", "Status", { prefix: "q-", kind: "select", options: STATUSES.map((s) => [s, s || "any"]) }),
  field("bot_id", "Bot ID", { prefix: "q-" }),
  field("meeting_id", "Meeting ID (number)", { prefix: "q-" }),
  field("date_from", "Created from", { prefix: "q-", kind: "datetime-local" }),
  field("date_to", "Created to", { prefix: "q-", kind: "datetime-local" }),
  h("div.field", {}, h("button", { type: "submit" }, "Filter")));
  return form;
}

export function filterQuery(values) { return query(values); }
