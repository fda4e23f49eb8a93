//! Authentication of `/api/*` (README, "The REST API" and "Security model"): a bearer
//! token (the agent's or the operator's, see [`crate::credentials`]), or a dashboard
//! session.
//!
//! The dashboard's login page exchanges the operator token for a session of two
//! halves: a random id in an HttpOnly, SameSite=Strict cookie, and a random secret the
//! login hands to the page, which keeps it in `sessionStorage` and sends it as
//! `X-Engram-CSRF` on every `/api` call. Both must match. A browser sends the cookie
//! to every port of the host (cookies are not port-scoped), so a listener on another
//! local port can capture it; without the secret, which never leaves the page's own
//! origin, the cookie authenticates nothing. The same header is what no cross-site
//! form can send.
//!
//! The middleware puts the caller's [`Principal`] into the request's extensions, for
//! the handlers whose acts are the person's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::error::ApiError;
use crate::credentials::{Principal, TokenError, Tokens, Via, constant_time_eq, random_hex};

/// The dashboard's session cookie.
pub const SESSION_COOKIE: &str = "engram_session";
/// The header that carries a dashboard session's secret, on every `/api` call.
pub const SESSION_HEADER: &str = "x-engram-csrf";
/// How long a dashboard login lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// Logins kept at once; the oldest is dropped beyond this, so that repeated logins
/// cannot grow the daemon's memory.
const MAX_SESSIONS: usize = 64;

/// One login: when it started and the hash of its secret.
struct Session {
    started: Instant,
    secret: [u8; 32],
}

/// Dashboard sessions, in memory: a restart logs the dashboard out, which is the safe
/// side. Only hashes of each id and secret are kept.
#[derive(Clone, Default)]
pub struct Sessions(Arc<Mutex<HashMap<[u8; 32], Session>>>);

/// A new session's two halves: `id` for the cookie, `secret` for the page.
pub struct NewSession {
    pub id: String,
    pub secret: String,
}

impl Sessions {
    /// Opens a session (64 hex characters each for the id and the secret).
    pub fn start(&self) -> Result<NewSession, TokenError> {
        let id = random_hex()?;
        let secret = random_hex()?;
        let now = Instant::now();
        let mut sessions = self.lock();
        sessions.retain(|_, session| now.duration_since(session.started) < SESSION_TTL);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.started)
                .map(|(k, _)| *k)
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            hash(&id),
            Session {
                started: now,
                secret: hash(&secret),
            },
        );
        Ok(NewSession { id, secret })
    }

    /// Whether `id` names an open session (whatever the secret): enough to be shown a
    /// page's shell, never to read or change data.
    pub fn is_open(&self, id: &str) -> bool {
        self.secret_of(id).is_some()
    }

    /// Whether `id` names an open session whose secret is `secret`.
    pub fn is_valid(&self, id: &str, secret: &str) -> bool {
        self.secret_of(id)
            .is_some_and(|expected| constant_time_eq(&expected, &hash(secret)))
    }

    fn secret_of(&self, id: &str) -> Option<[u8; 32]> {
        let key = hash(id);
        let mut sessions = self.lock();
        match sessions.get(&key) {
            Some(session) if session.started.elapsed() < SESSION_TTL => Some(session.secret),
            Some(_) => {
                sessions.remove(&key);
                None
            }
            None => None,
        }
    }

    pub fn end(&self, id: &str) {
        self.lock().remove(&hash(id));
    }

    /// Whether the request's cookie names an open session (see [`Sessions::is_open`]).
    pub fn cookie_is_open(&self, headers: &HeaderMap) -> bool {
        session_cookie(headers).is_some_and(|id| self.is_open(id))
    }

    /// Whether the request carries both halves of an open session.
    pub fn authenticates(&self, headers: &HeaderMap) -> bool {
        let secret = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
        match (session_cookie(headers), secret) {
            (Some(id), Some(secret)) => self.is_valid(id, secret),
            _ => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Session>> {
        // The map holds no invariant a panicking holder could break.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn hash(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

/// The value of the session cookie, if the request carries one.
pub fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

/// Who may call `/api`: the holders of the two tokens, and logged-in dashboards.
#[derive(Clone)]
pub struct Auth {
    pub tokens: Tokens,
    pub sessions: Sessions,
}

impl Auth {
    /// The caller a request's credentials name, if any: a bearer token decides alone
    /// (a wrong one is no one, whatever else the request carries).
    pub fn principal(&self, headers: &HeaderMap) -> Option<Principal> {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        match bearer {
            Some(candidate) => self.tokens.identify(candidate),
            None => self
                .sessions
                .authenticates(headers)
                .then_some(Principal::Person(Via::Dashboard)),
        }
    }
}

/// Middleware: refuses an unauthenticated request before any handler sees it, and
/// hands the caller's [`Principal`] to the handlers. An authenticated request's
/// connection is never closed to make room for another (see `connections.rs`).
pub async fn require_auth(State(auth): State<Auth>, mut request: Request, next: Next) -> Response {
    match auth.principal(request.headers()) {
        Some(principal) => {
            if let Some(trust) = request.extensions().get::<crate::connections::Trust>() {
                trust.grant();
            }
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        None => ApiError::unauthorized().into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::Token;

    fn headers(cookie: Option<&str>, secret: Option<&str>, bearer: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(id) = cookie {
            let cookie = format!("theme=dark; {SESSION_COOKIE}={id}; other=1");
            headers.insert(header::COOKIE, cookie.parse().expect("header"));
        }
        if let Some(secret) = secret {
            headers.insert(SESSION_HEADER, secret.parse().expect("header"));
        }
        if let Some(token) = bearer {
            let value = format!("Bearer {token}");
            headers.insert(header::AUTHORIZATION, value.parse().expect("header"));
        }
        headers
    }

    #[test]
    fn a_session_needs_its_cookie_and_its_secret_together() {
        let sessions = Sessions::default();
        let first = sessions.start().expect("start");
        let second = sessions.start().expect("start");
        assert_ne!(first.id, second.id);
        assert_ne!(first.id, first.secret);
        assert_eq!((first.id.len(), first.secret.len()), (64, 64));
        assert!(sessions.is_valid(&first.id, &first.secret));
        assert!(!sessions.is_valid(&first.id, &second.secret));
        assert!(!sessions.is_valid("not-a-session", &first.secret));

        let both = headers(Some(&first.id), Some(&first.secret), None);
        assert!(sessions.authenticates(&both));
        // The cookie alone, or with a made-up or another session's secret: nothing.
        assert!(!sessions.authenticates(&headers(Some(&first.id), None, None)));
        assert!(!sessions.authenticates(&headers(Some(&first.id), Some("1"), None)));
        assert!(!sessions.authenticates(&headers(Some(&first.id), Some(&second.secret), None)));
        assert!(sessions.cookie_is_open(&headers(Some(&first.id), None, None)));

        sessions.end(&first.id);
        assert!(!sessions.authenticates(&both));
        assert!(!sessions.cookie_is_open(&both));
        assert!(sessions.is_valid(&second.id, &second.secret));
    }

    #[test]
    fn logins_beyond_the_cap_drop_the_oldest() {
        let sessions = Sessions::default();
        let oldest = sessions.start().expect("start");
        let rest: Vec<NewSession> = (1..MAX_SESSIONS)
            .map(|_| sessions.start().expect("start"))
            .collect();
        assert!(sessions.is_open(&oldest.id));
        let newest = sessions.start().expect("start");
        assert!(!sessions.is_open(&oldest.id));
        assert!(sessions.is_open(&newest.id));
        assert!(rest.iter().all(|s| sessions.is_valid(&s.id, &s.secret)));
    }

    #[test]
    fn the_principal_is_the_token_holder_or_the_logged_in_person() {
        let auth = Auth {
            tokens: Tokens {
                agent: Token::new("0123456789abcdef-agent"),
                operator: Token::new("0123456789abcdef-person"),
            },
            sessions: Sessions::default(),
        };
        let session = auth.sessions.start().expect("start");
        assert_eq!(
            auth.principal(&headers(None, None, Some("0123456789abcdef-agent"))),
            Some(Principal::Agent)
        );
        assert_eq!(
            auth.principal(&headers(None, None, Some("0123456789abcdef-person"))),
            Some(Principal::Person(Via::OperatorToken))
        );
        assert_eq!(
            auth.principal(&headers(Some(&session.id), Some(&session.secret), None)),
            Some(Principal::Person(Via::Dashboard))
        );
        // A wrong bearer token is no one, even beside a valid session.
        assert_eq!(
            auth.principal(&headers(
                Some(&session.id),
                Some(&session.secret),
                Some("wrong-token-0123456789")
            )),
            None
        );
        assert_eq!(
            auth.principal(&headers(Some(&session.id), None, None)),
            None
        );
    }
}
