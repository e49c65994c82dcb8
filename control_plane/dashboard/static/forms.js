// Showing the API's problem bodies next to the fields they name (docs/api.md 2.1: errors[].loc
// is ["body"|"query", field, ...]) and reading forms into JSON bodies.

import { clear, h } from "./dom.js";

/**
 * Clear old messages, then put each error of `error` next to its field; codes that carry no loc
 * go to the field `byCode` names, else to `fallback`, else to the form's own message.
 */
export function showProblem(form, error, byCode = {}, fallback = null) {
  clearProblems(form);
  const errors = error.errors && error.errors.length ? error.errors
    : [{ loc: byCode[error.code] ? ["body", byCode[error.code]] : [], msg: error.message }];
  let shown = false;
  for (const item of errors) {
    const loc = item.loc || [];
    const names = loc.filter((part, index) => index > 0 && typeof part === "string").reverse();
    if (loc.length === 0 && fallback) names.push(fallback);
    const slot = (n) => form.querySelector(`[data-error-for="${CSS.escape(n)}"]`);
    const name = names.find(slot);
    const target = name && slot(name);
    if (target) {
      target.textContent = `${item.msg}${error.code ? ` (${error.code})` : ""}`;
      const input = form.querySelector(`[name="${CSS.escape(name)}"], [data-group="${CSS.escape(name)}"]`);
      if (input) input.setAttribute("aria-invalid", "true");
      if (!shown && input) input.focus();
      shown = true;
    }
  }
  if (!shown) formMessage(form, `${error.message} (${error.code || error.status})`, true);
}

export function clearProblems(form) {
  for (const node of form.querySelectorAll(".field-error")) node.textContent = "";
  for (const node of form.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
  const message = form.querySelector(".form-message");
  if (message) message.remove();
}

export function formMessage(form, text, isError = false) {
  let node = form.querySelector(".form-message");
  if (!node) {
    node = h("p.form-message", { role: isError ? "alert" : "status" });
    form.prepend(node);
  }
  node.className = `form-message ${isError ? "error" : "notice"}`;
  clear(node, text);
}

/** The form's values as a JSON body: empty text dropped, numbers as numbers, tri-states too. */
export function bodyOf(form) {
  const body = {};
  for (const el of form.elements) {
    if (!el.name || el.disabled || el.type === "submit" || el.dataset.skip) continue;
    if (el.type === "checkbox") {
      if (el.dataset.group) {
        if (el.checked) (body[el.dataset.group] ||= []).push(el.value);
      } else body[el.name] = el.checked;
      continue;
    }
    const value = el.value.trim();
    if (value === "") continue;
    if (el.dataset.kind === "bool") body[el.name] = value === "true";
    else if (el.type === "number" || el.dataset.kind === "int") body[el.name] = Number(value);
    else if (el.type === "datetime-local") body[el.name] = new Date(value).toISOString();
    else body[el.name] = value;
  }
  return body;
}
