//! Bearer-token authentication of `/api/*` (DESIGN §6). The token is taken from
//! `ENGRAM_TOKEN`, else read from `{data_dir}/auth-token`, else generated there at first
//! start (mode 0600, so only the user who runs Engram can read it).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

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
    fn matches(&self, candidate: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), candidate.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

fn acceptable(token: &str) -> bool {
    token.len() >= MIN_TOKEN_LEN && token.bytes().all(|b| b.is_ascii_graphic())
}

/// Middleware: refuses a request without the token before any handler sees it.
pub async fn require_token(State(token): State<Token>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match presented {
        Some(candidate) if token.matches(candidate) => next.run(request).await,
        _ => ApiError::unauthorized().into_response(),
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
    fn comparison_needs_the_exact_token() {
        let token = Token::new("0123456789abcdef");
        assert!(token.matches("0123456789abcdef"));
        assert!(!token.matches("0123456789abcdeF"));
        assert!(!token.matches("0123456789abcde"));
        assert!(!token.matches(""));
    }
}
