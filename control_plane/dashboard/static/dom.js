// Small DOM helpers: element building (text only, never innerHTML) and formatting.

/** h("tag.class#id", {attr: value, onclick: fn}, ...children) → element. */
export function h(spec, attrs = {}, ...children) {
  const [, tag, rest] = spec.match(/^([a-z0-9]+)(.*)$/);
  const node = document.createElement(tag);
  for (const part of rest.match(/[.#][^.#]+/g) || []) {
    if (part[0] === ".") node.classList.add(part.slice(1));
    else node.id = part.slice(1);
  }
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "value") node.value = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

export function when(value) {
  if (!value) return "—";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

export function clock(seconds) {
  const s = Math.max(0, Math.floor(seconds || 0));
  const two = (n) => String(n).padStart(2, "0");
  return `${two(Math.floor(s / 3600))}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}`;
}

export function statusBadge(status) {
  return h(`span.status.status-${status}`, {}, status);
}

/** A labelled form field; kind: input type, "select" (options [[value, label]]) or "textarea". */
export function field(name, label, { kind = "text", options = [], hint, prefix = "", ...attrs } = {}) {
  const id = `f-${prefix}${name}`;
  const describedBy = [`${id}-error`, hint ? `${id}-hint` : null].filter(Boolean).join(" ");
  let control;
  if (kind === "select") {
    control = h("select", { id, name, "aria-describedby": describedBy, ...attrs },
      options.map(([value, text]) => h("option", { value }, text)));
  } else if (kind === "textarea") {
    control = h("textarea", { id, name, "aria-describedby": describedBy, ...attrs });
  } else {
    control = h("input", { id, name, type: kind, "aria-describedby": describedBy, ...attrs });
  }
  const check = kind === "checkbox";
  return h(`div.field${check ? ".check" : ""}`, {},
    check ? [control, h("label", { for: id }, label)] : [h("label", { for: id }, label), control],
    hint ? h("span.hint", { id: `${id}-hint` }, hint) : null,
    h("p.field-error", { id: `${id}-error`, "data-error-for": name, "aria-live": "polite" }));
}

/**
 * A button that needs something (an edit key, an active bot): disabled with its reason shown
 * next to it (and as its accessible description) when reason is a non-empty string.
 */
export function control(label, onclick, reason, cls = "") {
  const id = `c-${Math.random().toString(36).slice(2, 9)}`;
  const button = h(`button${cls}`, { type: "button", onclick, disabled: !!reason,
    "aria-describedby": reason ? `${id}-why` : null, title: reason || null }, label);
  return h("span.control", {}, button, reason ? h("span.reason", { id: `${id}-why` }, reason) : null);
}
