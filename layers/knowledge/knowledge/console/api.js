// The REST API of this origin, called with the bearer token kept in sessionStorage.

const TOKEN_KEY = "knowledge-console-token";

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export async function call(method, path, body) {
  const headers = { Accept: "application/json" };
  const bearer = token();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
  });
  if (response.status === 204) return null;
  let answer = null;
  try {
    answer = await response.json();
  } catch {
    answer = null;
  }
  if (!response.ok) {
    const error = (answer && answer.error) || {};
    throw new ApiError(response.status, error.code || `http_${response.status}`,
      error.message || response.statusText || "request failed", error.details);
  }
  return answer;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body ?? {});

export function query(parameters) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

export const segment = (value) => encodeURIComponent(value);

// Every page of a listing route: answers carry `next_token` until the last page.
export async function all(path, key, parameters = {}) {
  const entries = [];
  let next = null;
  do {
    const answer = await get(path + query({ ...parameters, next_token: next }));
    entries.push(...answer[key]);
    next = answer.next_token;
  } while (next);
  return entries;
}
