// Every call the dashboard makes to /api goes through `api` (and `events` for the
// event stream): it sends the session's secret, which the login left in this tab's
// sessionStorage, as the header the session cookie is worthless without; turns
// problem documents into ApiError with the server's own words; and sends the user to
// the login page when the session has ended or this tab has none.

const SESSION_KEY = 'engram-session';
const SESSION_HEADER = 'x-engram-csrf';

// Called by the login's answer page only.
export function keepSession(secret) {
  sessionStorage.setItem(SESSION_KEY, secret);
}

function sessionSecret() {
  const secret = sessionStorage.getItem(SESSION_KEY);
  if (!secret) toLogin();
  return secret || '';
}

function toLogin() {
  sessionStorage.removeItem(SESSION_KEY);
  location.assign('/login?next=' + encodeURIComponent(location.pathname + location.search));
}

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
    headers: { 'accept': 'application/json', [SESSION_HEADER]: sessionSecret() },
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
    toLogin();
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

// Ends the session (the server checks its secret too), then shows the login page.
export async function logOut() {
  try {
    await fetch('/logout', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { [SESSION_HEADER]: sessionSecret() },
    });
  } finally {
    sessionStorage.removeItem(SESSION_KEY);
    location.assign('/login');
  }
}

// Follows GET /api/events (server-sent events) with the session's header, which an
// EventSource cannot send: `onEvent(name, data)` for each event until `close()`.
// A dropped stream is opened again after a pause.
export function events(onEvent) {
  const controller = new AbortController();
  const follow = async () => {
    while (!controller.signal.aborted) {
      try {
        const response = await fetch('/api/events', {
          credentials: 'same-origin',
          headers: { 'accept': 'text/event-stream', [SESSION_HEADER]: sessionSecret() },
          signal: controller.signal,
        });
        if (response.status === 401) {
          toLogin();
          return;
        }
        if (response.ok && response.body) await readEvents(response.body, onEvent);
      } catch (e) {
        if (controller.signal.aborted) return;
      }
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
  };
  follow();
  return { close: () => controller.abort() };
}

// Reads an event stream: blank-line separated blocks of `event:` and `data:` lines.
async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) name = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) onEvent(name, data.join('\n'));
    }
  }
}
