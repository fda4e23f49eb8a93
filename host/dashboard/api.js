// Every call the dashboard makes to /api goes through `api`: it sends the CSRF header
// the session cookie needs, turns problem documents into ApiError with the server's
// own words, and sends the user to the login page when the session has ended.

export class ApiError extends Error {
  constructor(status, problem) {
    const detail = (problem && (problem.detail || problem.title)) || `HTTP ${status}`;
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.code = problem && problem.code;
    this.field = problem && problem.field;
  }
}

export async function api(method, path, body) {
  const init = {
    method,
    credentials: 'same-origin',
    headers: { 'accept': 'application/json', 'x-engram-csrf': '1' },
  };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, { detail: `Engram did not answer (${e.message}). Is the daemon running?` });
  }
  if (response.status === 401) {
    location.assign('/login?next=' + encodeURIComponent(location.pathname + location.search));
    throw new ApiError(401, { detail: 'Your session has ended; log in again.' });
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { detail: text };
    }
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Builds a query string from the defined, non-empty values of `params`.
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}
