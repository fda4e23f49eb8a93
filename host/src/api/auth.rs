//! Authentication of `/api/*` (DESIGN §6): a bearer token, or a dashboard session.
//!
//! The token is taken from `ENGRAM_TOKEN`, else read from `{data_dir}/auth-token`, else
//! generated there at first start (mode 0600, so only the user who runs Engram can read
//! it). The dashboard's login page exchanges the token for a session: a random id in an
//! HttpOnly, SameSite=Strict cookie, so page scripts never hold the token. A request
//! authenticated by that cookie that changes something must also carry
//! `X-Engram-CSRF: 1`, a header no cross-site form can set.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::error::ApiError;

pub const TOKEN_ENV: &str = "ENGRAM_TOKEN";
pub const TOKEN_FILE: &str = "auth-token";
/// Shortest token accepted from the environment or the file: anything shorter is
/// guessable over loopback in reasonable time.
const MIN_TOKEN_LEN: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{TOKEN_ENV} must be at least {MIN_TOKEN_LEN} printable ASCII characters")]
    WeakEnv,
    #[error(
        "{path}: the token must be at least {MIN_TOKEN_LEN} printable ASCII characters; delete the file to generate a new one"
    )]
    WeakFile { path: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot generate a token: {0}")]
    Random(String),
}

/// The token `/api/*` requires.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    pub fn new(value: &str) -> Token {
        Token(Arc::from(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The token for a daemon over `data_dir`: `env` (the value of `ENGRAM_TOKEN`) if
    /// given, else the token file, created on first use.
    pub fn load_or_create(data_dir: &Path, env: Option<String>) -> Result<Token, TokenError> {
        if let Some(value) = env {
            let value = value.trim();
            return if acceptable(value) {
                Ok(Token::new(value))
            } else {
                Err(TokenError::WeakEnv)
            };
        }
        let path = data_dir.join(TOKEN_FILE);
        let io = |source| TokenError::Io {
            path: path.display().to_string(),
            source,
        };
        match std::fs::read_to_string(&path) {
            Ok(text) if acceptable(text.trim()) => return Ok(Token::new(text.trim())),
            Ok(_) => {
                return Err(TokenError::WeakFile {
                    path: path.display().to_string(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let token = hex::encode(bytes);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&path) {
            Ok(mut file) => {
                file.write_all(token.as_bytes()).map_err(io)?;
                file.sync_all().map_err(io)?;
                tracing::info!("generated an API token in {}", path.display());
                Ok(Token::new(&token))
            }
            // Another process created it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Token::load_or_create(data_dir, None)
            }
            Err(e) => Err(io(e)),
        }
    }

    /// Compares in time independent of where the first difference is.
    pub fn matches(&self, candidate: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), candidate.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

fn acceptable(token: &str) -> bool {
    token.len() >= MIN_TOKEN_LEN && token.bytes().all(|b| b.is_ascii_graphic())
}

/// The dashboard's session cookie.
pub const SESSION_COOKIE: &str = "engram_session";
/// The header a cookie-authenticated request that changes something must carry.
pub const CSRF_HEADER: &str = "x-engram-csrf";
/// How long a dashboard login lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// Logins kept at once; the oldest is dropped beyond this, so that repeated logins
/// cannot grow the daemon's memory.
const MAX_SESSIONS: usize = 64;

/// Dashboard sessions, in memory: a restart logs the dashboard out, which is the safe
/// side. Only a hash of each id is kept.
#[derive(Clone, Default)]
pub struct Sessions(Arc<Mutex<HashMap<[u8; 32], Instant>>>);

impl Sessions {
    /// Opens a session and returns its id (64 hex characters) for the cookie.
    pub fn start(&self) -> Result<String, TokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let id = hex::encode(bytes);
        let now = Instant::now();
        let mut sessions = self.lock();
        sessions.retain(|_, started| now.duration_since(*started) < SESSION_TTL);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.iter().min_by_key(|(_, t)| **t).map(|(k, _)| *k)
        {
            sessions.remove(&oldest);
        }
        sessions.insert(hash(&id), now);
        Ok(id)
    }

    pub fn is_valid(&self, id: &str) -> bool {
        let key = hash(id);
        let mut sessions = self.lock();
        match sessions.get(&key) {
            Some(started) if started.elapsed() < SESSION_TTL => true,
            Some(_) => {
                sessions.remove(&key);
                false
            }
            None => false,
        }
    }

    pub fn end(&self, id: &str) {
        self.lock().remove(&hash(id));
    }

    /// The session a request's cookie names, if it is open.
    pub fn from_headers<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        session_cookie(headers).filter(|id| self.is_valid(id))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Instant>> {
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

/// Who may call `/api`: the token holder, or a logged-in dashboard.
#[derive(Clone)]
pub struct Auth {
    pub token: Token,
    pub sessions: Sessions,
}

/// Middleware: refuses an unauthenticated request before any handler sees it.
pub async fn require_auth(State(auth): State<Auth>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if bearer.is_some_and(|candidate| auth.token.matches(candidate)) {
        return next.run(request).await;
    }
    if auth.sessions.from_headers(headers).is_none() {
        return ApiError::unauthorized().into_response();
    }
    let safe = matches!(*request.method(), Method::GET | Method::HEAD);
    let marked = headers.get(CSRF_HEADER).is_some_and(|v| v == "1");
    if safe || marked {
        next.run(request).await
    } else {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf-header-missing",
            "a request authenticated by the dashboard cookie that changes something must carry `X-Engram-CSRF: 1`",
        )
        .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_start_creates_a_private_token_file_and_reuses_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = Token::load_or_create(dir.path(), None).expect("create");
        assert_eq!(first.as_str().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(TOKEN_FILE))
                .expect("token file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = Token::load_or_create(dir.path(), None).expect("reuse");
        assert_eq!(again.as_str(), first.as_str());
    }

    #[test]
    fn the_environment_overrides_the_file_and_must_be_strong() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token =
            Token::load_or_create(dir.path(), Some("0123456789abcdef-env".into())).expect("env");
        assert_eq!(token.as_str(), "0123456789abcdef-env");
        assert!(!dir.path().join(TOKEN_FILE).exists());
        assert!(matches!(
            Token::load_or_create(dir.path(), Some("short".into())),
            Err(TokenError::WeakEnv)
        ));
    }

    #[test]
    fn sessions_are_random_revocable_and_read_from_the_cookie_header() {
        let sessions = Sessions::default();
        let first = sessions.start().expect("start");
        let second = sessions.start().expect("start");
        assert_ne!(first, second);
        assert_eq!(first.len(), 64);
        assert!(sessions.is_valid(&first));
        assert!(!sessions.is_valid("not-a-session"));

        let mut headers = HeaderMap::new();
        let cookie = format!("theme=dark; {SESSION_COOKIE}={first}; other=1");
        headers.insert(header::COOKIE, cookie.parse().expect("header"));
        assert_eq!(sessions.from_headers(&headers), Some(first.as_str()));

        sessions.end(&first);
        assert!(!sessions.is_valid(&first));
        assert_eq!(sessions.from_headers(&headers), None);
        assert!(sessions.is_valid(&second));
    }

    #[test]
    fn logins_beyond_the_cap_drop_the_oldest() {
        let sessions = Sessions::default();
        let oldest = sessions.start().expect("start");
        let rest: Vec<String> = (1..MAX_SESSIONS)
            .map(|_| sessions.start().expect("start"))
            .collect();
        assert!(sessions.is_valid(&oldest));
        let newest = sessions.start().expect("start");
        assert!(!sessions.is_valid(&oldest));
        assert!(sessions.is_valid(&newest));
        assert!(rest.iter().all(|id| sessions.is_valid(id)));
    }

    #[test]
    fn comparison_needs_the_exact_token() {
        let token = Token::new("0123456789abcdef");
        assert!(token.matches("0123456789abcdef"));
        assert!(!token.matches("0123456789abcdeF"));
        assert!(!token.matches("0123456789abcde"));
        assert!(!token.matches(""));
    }
}
