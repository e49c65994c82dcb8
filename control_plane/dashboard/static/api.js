// The public API from the browser: every call carries the signed-in key (X-API-Key);
// failures become ApiError with the problem+json body's code, detail and errors (docs/api.md 2.1).

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || "http_error";
    this.errors = problem.errors || [];
  }
}

const KEY = "meetbot.apiKey";

export const session = {
  get key() { return sessionStorage.getItem(KEY) || ""; },
  set key(value) {
    if (value) sessionStorage.setItem(KEY, value);
    else sessionStorage.removeItem(KEY);
  },
};

async function problemOf(response) {
  try { return await response.json(); } catch { return { detail: response.statusText }; }
}

/** JSON call: resolves the parsed body (null for 204), rejects with ApiError. */
export async function api(method, path, body, { signal } = {}) {
  const headers = { "X-API-Key": session.key };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(`/api/v1${path}`, {
    method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new ApiError(response.status, await problemOf(response));
  if (response.status === 204) return null;
  return response.json();
}

/** A text body (transcript downloads). */
export async function apiText(path) {
  const response = await fetch(`/api/v1${path}`, { headers: { "X-API-Key": session.key } });
  if (!response.ok) throw new ApiError(response.status, await problemOf(response));
  return { text: await response.text(), type: response.headers.get("Content-Type") || "text/plain" };
}

/** Query string from an object, dropping empty values. */
export function query(params) {
  const entries = Object.entries(params).filter(([, v]) => v !== "" && v !== null && v !== undefined);
  return entries.length ? `?${new URLSearchParams(entries)}` : "";
}

/**
 * Who the key is: {workspace_id, permission, name, prefix}. The key's own row is found among
 * GET /api-keys by its prefix (the first 12 characters, docs/api.md 2.1).
 */
export async function whoami() {
  const keys = await api("GET", "/api-keys");
  const prefix = session.key.slice(0, 12);
  const mine = keys.find((k) => k.prefix === prefix) || keys[0];
  if (!mine) return { workspace_id: null, permission: "edit", name: "", prefix };
  return mine;
}
