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

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::error::ApiError;
use crate::credentials::{Principal, TokenError, Tokens, Via, constant_time_eq, random_hex};
use crate::sql::{Actor, Database, SqlError};
use crate::time::{Clock, SystemClock};

/// The dashboard's session cookie.
pub const SESSION_COOKIE: &str = "engram_session";
/// The header that carries a dashboard session's secret, on every `/api` call.
pub const SESSION_HEADER: &str = "x-engram-csrf";
/// How long a dashboard login lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// Logins kept at once; the oldest is dropped beyond this, so that repeated logins
/// cannot grow the store.
const MAX_SESSIONS: i64 = 64;

/// Dashboard sessions, in the gate's database (`sessions`): a login through one daemon
/// works through every daemon on one database, and outlives a restart for the rest of
/// its 12 hours. Only the sha256 of each id and secret is kept. Whatever goes wrong
/// reading them is no session: the dashboard asks for the login again.
#[derive(Clone)]
pub struct Sessions {
    db: Arc<Database>,
    clock: Arc<dyn Clock>,
}

/// A new session's two halves: `id` for the cookie, `secret` for the page.
pub struct NewSession {
    pub id: String,
    pub secret: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Random(#[from] TokenError),
    #[error("the sessions' store: {0}")]
    Store(#[from] SqlError),
}

impl Sessions {
    /// The sessions in `db`, the gate's database (migrated).
    pub fn new(db: Arc<Database>) -> Sessions {
        Sessions::with_clock(db, Arc::new(SystemClock))
    }

    pub fn with_clock(db: Arc<Database>, clock: Arc<dyn Clock>) -> Sessions {
        Sessions { db, clock }
    }

    /// Opens a session (64 hex characters each for the id and the secret).
    pub fn start(&self) -> Result<NewSession, SessionError> {
        let id = random_hex()?;
        let secret = random_hex()?;
        let now = self.clock.now_ms();
        self.db.write(Actor::System, |tx| {
            tx.execute(
                "DELETE FROM sessions WHERE started_at <= ?1",
                &[(now - ttl_ms()).into()],
            )?;
            let open: i64 = tx.query_one("SELECT count(*) FROM sessions", &[], |row| row.get(0))?;
            if open >= MAX_SESSIONS {
                tx.execute(
                    "DELETE FROM sessions WHERE id IN
                     (SELECT id FROM sessions ORDER BY started_at, id LIMIT ?1)",
                    &[(open - MAX_SESSIONS + 1).into()],
                )?;
            }
            tx.execute(
                "INSERT INTO sessions (id, secret, started_at) VALUES (?1, ?2, ?3)",
                &[(&hash(&id)).into(), (&hash(&secret)).into(), now.into()],
            )
        })?;
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
            .is_some_and(|expected| constant_time_eq(expected.as_bytes(), hash(secret).as_bytes()))
    }

    fn secret_of(&self, id: &str) -> Option<String> {
        let started_after = self.clock.now_ms() - ttl_ms();
        let found = self.db.read(Actor::System, |tx| {
            tx.query_opt(
                "SELECT secret FROM sessions WHERE id = ?1 AND started_at > ?2",
                &[(&hash(id)).into(), started_after.into()],
                |row| row.get::<String>(0),
            )
        });
        found.unwrap_or_else(|e: SqlError| {
            tracing::error!("cannot read the dashboard's sessions, so none is open: {e}");
            None
        })
    }

    /// Ends the session `id`, on every daemon.
    pub fn end(&self, id: &str) -> Result<(), SessionError> {
        self.db.write(Actor::System, |tx| {
            tx.execute("DELETE FROM sessions WHERE id = ?1", &[(&hash(id)).into()])
        })?;
        Ok(())
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
}

fn ttl_ms() -> i64 {
    SESSION_TTL.as_millis() as i64
}

/// The sha256 of a session's id or secret, in hex: what the store keeps.
fn hash(half: &str) -> String {
    hex::encode(Sha256::digest(half.as_bytes()))
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
    use crate::time::ManualClock;

    /// Sessions in a fresh gate database in memory, on `clock`.
    fn sessions_on(clock: &ManualClock) -> Sessions {
        let mut conn = rusqlite::Connection::open_in_memory().expect("sqlite");
        crate::gate::AUDIT_SCHEMA
            .migrate(&mut conn)
            .expect("migrate");
        Sessions::with_clock(Arc::new(Database::sqlite(conn)), Arc::new(clock.clone()))
    }

    fn sessions() -> Sessions {
        sessions_on(&ManualClock::new(1_700_000_000_000))
    }

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
        let sessions = sessions();
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

        sessions.end(&first.id).expect("end");
        assert!(!sessions.authenticates(&both));
        assert!(!sessions.cookie_is_open(&both));
        assert!(sessions.is_valid(&second.id, &second.secret));
    }

    #[test]
    fn logins_beyond_the_cap_drop_the_oldest() {
        let clock = ManualClock::new(1_700_000_000_000);
        let sessions = sessions_on(&clock);
        let oldest = sessions.start().expect("start");
        let rest: Vec<NewSession> = (1..MAX_SESSIONS)
            .map(|_| {
                clock.advance(1);
                sessions.start().expect("start")
            })
            .collect();
        clock.advance(1);
        assert!(sessions.is_open(&oldest.id));
        let newest = sessions.start().expect("start");
        assert!(!sessions.is_open(&oldest.id));
        assert!(sessions.is_open(&newest.id));
        assert!(rest.iter().all(|s| sessions.is_valid(&s.id, &s.secret)));
    }

    #[test]
    fn a_session_ends_after_its_lifetime_and_is_seen_by_every_holder_of_the_store() {
        let clock = ManualClock::new(1_700_000_000_000);
        let sessions = sessions_on(&clock);
        // Another daemon's view of the same database.
        let other = Sessions::with_clock(sessions.db.clone(), Arc::new(clock.clone()));
        let session = sessions.start().expect("start");
        assert!(other.is_valid(&session.id, &session.secret));
        clock.advance(ttl_ms() - 1);
        assert!(other.is_open(&session.id));
        clock.advance(1);
        assert!(!other.is_open(&session.id));
        assert!(!sessions.is_valid(&session.id, &session.secret));
        // Only hashes are stored: neither half appears in the table.
        let stored: Vec<String> = sessions
            .db
            .read(Actor::System, |tx| {
                tx.query("SELECT id || secret FROM sessions", &[], |r| r.get(0))
            })
            .expect("read");
        assert_eq!(stored.len(), 1);
        assert!(!stored[0].contains(&session.id) && !stored[0].contains(&session.secret));
    }

    #[test]
    fn the_principal_is_the_token_holder_or_the_logged_in_person() {
        let auth = Auth {
            tokens: Tokens {
                agent: Token::new("0123456789abcdef-agent"),
                operator: Token::new("0123456789abcdef-person"),
            },
            sessions: sessions(),
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
