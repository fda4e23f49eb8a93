// The answer to a successful login: keep the session's secret for this tab (every
// /api call sends it; the cookie alone is worth nothing), then go where the login was
// asked to lead. The server only ever puts a path on this site in `next`.
import { keepSession } from './api.js';

const secret = document.querySelector('meta[name="engram-session"]').content;
const next = document.querySelector('meta[name="engram-next"]').content;
keepSession(secret);
location.replace(next.startsWith('/') && !next.startsWith('//') ? next : '/');
