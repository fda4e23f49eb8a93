//! A small blocking HTTP client for the running daemon, for the commands that go
//! through its REST API (`engram memory ...`). It finds the daemon the way a user
//! would expect: `--url` (or `ENGRAM_URL`), else the `daemon.json` that `engram serve`
//! writes into the data directory, trusted only when the daemon it names (pid and URL)
//! is the one holding the directory's lock (`lock.rs`): after a kill -9 the file
//! stays, and whatever listens on its port next must not be sent the token. And the
//! token from `--token` (or
//! `ENGRAM_OPERATOR_TOKEN`), else `{data_dir}/operator-token`: the CLI is the person's,
//! so it holds the person's authority (see [`crate::credentials`]).
//!
//! Every failure is a [`ClientError`]: a problem document from the daemon keeps its
//! `code` and shows its `detail`; a daemon that is not running or not reachable says
//! which data directory (or URL) was tried, and maps to exit code 3.
//!
//! The client owns a current-thread tokio runtime and blocks on each request, so it must
//! not be called from inside another tokio runtime.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::error::PROBLEM_CONTENT_TYPE;
use crate::credentials::{AGENT_TOKEN_FILE, OPERATOR_TOKEN_ENV, OPERATOR_TOKEN_FILE};
use crate::lock::{LOCK_FILE, LockState};
use crate::server::{DAEMON_FILE, DaemonInfo};

/// Environment variable naming the daemon's base URL (same as `--url`).
pub const URL_ENV: &str = "ENGRAM_URL";

/// Exit code of a command that could not reach the daemon at all.
pub const EXIT_UNREACHABLE: u8 = 3;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the base URL or the token came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--url`/`ENGRAM_URL`, or `--token`/`ENGRAM_OPERATOR_TOKEN`.
    Given,
    /// `{data_dir}/daemon.json` or `{data_dir}/operator-token`.
    File(PathBuf),
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no Engram daemon is running for the data directory {data_dir} ({DAEMON_FILE} is missing there); start one with `engram serve`, or pass --url"
    )]
    NoDaemon { data_dir: PathBuf },
    #[error("{path}: {reason}; restart the daemon (`engram serve`), or pass --url")]
    DaemonFile { path: PathBuf, reason: String },
    /// `daemon.json` names a daemon that does not hold the data directory's lock.
    #[error(
        "{path} names the daemon pid {pid} at {url}, but {reason}; the token was not sent. Start one with `engram serve`, or pass --url"
    )]
    StaleDaemonFile {
        path: PathBuf,
        pid: u32,
        url: String,
        reason: String,
    },
    #[error("{}", unreachable_message(.url, .source_of_url, .reason))]
    Unreachable {
        url: String,
        source_of_url: Source,
        reason: String,
    },
    #[error("`{url}` is not a daemon URL: {reason} (expected e.g. http://127.0.0.1:7878)")]
    InvalidUrl { url: String, reason: String },
    #[error(
        "no API token: {path} is missing; set {OPERATOR_TOKEN_ENV} or pass --token (the daemon writes the file at its first start)"
    )]
    NoToken { path: PathBuf },
    #[error("cannot read the API token {path}: {reason}")]
    TokenFile { path: PathBuf, reason: String },
    /// The daemon answered with a problem document (RFC 9457).
    #[error("{}", api_message(*.status, .code, .detail, .token_source))]
    Api {
        status: u16,
        /// The problem's stable code (`not-found`, `unauthorized`, `brain-disabled`, ...).
        code: String,
        detail: String,
        field: Option<String>,
        /// Where the token that was sent came from (named when it was refused).
        token_source: Source,
    },
    /// The daemon answered with an error that is not a problem document.
    #[error("the daemon answered {status}: {body}")]
    Http { status: u16, body: String },
    /// The daemon's answer could not be read.
    #[error("unexpected answer from the daemon at {url}: {reason}")]
    Protocol { url: String, reason: String },
    #[error("cannot start the HTTP client: {0}")]
    Setup(String),
}

fn unreachable_message(url: &str, source: &Source, reason: &str) -> String {
    match source {
        Source::Given => format!("the Engram daemon at {url} is not reachable: {reason}"),
        Source::File(path) => format!(
            "the Engram daemon at {url} (from {}) is not reachable: {reason}; it is probably not running, start it with `engram serve`",
            path.display()
        ),
    }
}

fn api_message(status: u16, code: &str, detail: &str, token_source: &Source) -> String {
    let mut message = format!("{detail} ({status} {code})");
    if status == StatusCode::UNAUTHORIZED.as_u16() {
        match token_source {
            Source::Given => message.push_str(&format!(
                "; the token given by --token or {OPERATOR_TOKEN_ENV} was refused"
            )),
            Source::File(path) => message.push_str(&format!(
                "; the token read from {} was refused (the daemon may use {OPERATOR_TOKEN_ENV})",
                path.display()
            )),
        }
    }
    message
}

impl ClientError {
    /// The process exit code for this failure: 3 when the daemon could not be reached,
    /// 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            ClientError::NoDaemon { .. }
            | ClientError::DaemonFile { .. }
            | ClientError::StaleDaemonFile { .. }
            | ClientError::Unreachable { .. } => EXIT_UNREACHABLE,
            _ => 1,
        }
    }

    /// The problem code when the daemon answered with a problem document.
    pub fn problem_code(&self) -> Option<&str> {
        match self {
            ClientError::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// The base URL and token of a daemon, and where each came from.
#[derive(Clone)]
pub struct Endpoint {
    pub url: String,
    pub url_source: Source,
    pub token: String,
    pub token_source: Source,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("url_source", &self.url_source)
            .field("token", &"..")
            .field("token_source", &self.token_source)
            .finish()
    }
}

/// Whose token a command presents when none is given: `engram memory` is the person at
/// a terminal; `engram mcp`'s relay speaks for an agent, which must not hold the
/// person's authority (it could approve its own asks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acting {
    Person,
    Agent,
}

impl Acting {
    fn token_file(self) -> &'static str {
        match self {
            Acting::Person => OPERATOR_TOKEN_FILE,
            Acting::Agent => AGENT_TOKEN_FILE,
        }
    }
}

impl Endpoint {
    /// The daemon of `data_dir`, unless `url` and `token` (already taken from flags or
    /// the environment) say otherwise. The URL is looked up before the token, so a
    /// missing daemon is reported as such rather than as a missing token.
    pub fn discover(
        data_dir: &Path,
        url: Option<String>,
        token: Option<String>,
        acting: Acting,
    ) -> Result<Endpoint, ClientError> {
        let (url, url_source) = match url.filter(|u| !u.trim().is_empty()) {
            Some(url) => (url.trim().to_string(), Source::Given),
            None => {
                let path = data_dir.join(DAEMON_FILE);
                let info = read_daemon_file(data_dir, &path)?;
                check_holds_lock(data_dir, &path, &info)?;
                (info.url, Source::File(path))
            }
        };
        let (token, token_source) = match token.filter(|t| !t.trim().is_empty()) {
            Some(token) => (token.trim().to_string(), Source::Given),
            None => {
                let path = data_dir.join(acting.token_file());
                let token = match std::fs::read_to_string(&path) {
                    Ok(text) => text.trim().to_string(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(ClientError::NoToken { path });
                    }
                    Err(e) => {
                        return Err(ClientError::TokenFile {
                            path,
                            reason: e.to_string(),
                        });
                    }
                };
                (token, Source::File(path))
            }
        };
        Ok(Endpoint {
            url: url.trim_end_matches('/').to_string(),
            url_source,
            token,
            token_source,
        })
    }
}

impl Endpoint {
    /// An HTTP client for this daemon (its URL checked first): never through a proxy,
    /// connecting within 5 s, each request ended after `timeout` when given (`None`
    /// for streams that stay open, as MCP's).
    pub fn http_client(&self, timeout: Option<Duration>) -> Result<reqwest::Client, ClientError> {
        let parsed = reqwest::Url::parse(&self.url).map_err(|e| ClientError::InvalidUrl {
            url: self.url.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ClientError::InvalidUrl {
                url: self.url.clone(),
                reason: format!(
                    "the scheme must be http or https, not `{}`",
                    parsed.scheme()
                ),
            });
        }
        let mut builder = reqwest::Client::builder()
            // The daemon is local: never send its token through a proxy.
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("engram-cli/", env!("CARGO_PKG_VERSION")));
        if let Some(timeout) = timeout {
            builder = builder.timeout(timeout);
        }
        builder
            .build()
            .map_err(|e| ClientError::Setup(e.to_string()))
    }

    /// The error for a request to this daemon that failed before any answer.
    pub fn unreachable(&self, error: &reqwest::Error) -> ClientError {
        ClientError::Unreachable {
            url: self.url.clone(),
            source_of_url: self.url_source.clone(),
            reason: root_cause(error),
        }
    }
}

fn read_daemon_file(data_dir: &Path, path: &Path) -> Result<DaemonInfo, ClientError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ClientError::NoDaemon {
                data_dir: data_dir.to_path_buf(),
            });
        }
        Err(e) => {
            return Err(ClientError::DaemonFile {
                path: path.to_path_buf(),
                reason: e.to_string(),
            });
        }
    };
    serde_json::from_slice(&bytes).map_err(|e| ClientError::DaemonFile {
        path: path.to_path_buf(),
        reason: format!("not a daemon description: {e}"),
    })
}

/// Refuses a `daemon.json` whose daemon is not the one holding `data_dir`'s lock
/// (the kernel's answer, which a process that died cannot leave behind).
fn check_holds_lock(data_dir: &Path, path: &Path, info: &DaemonInfo) -> Result<(), ClientError> {
    let stale = |reason: String| ClientError::StaleDaemonFile {
        path: path.to_path_buf(),
        pid: info.pid,
        url: info.url.clone(),
        reason,
    };
    let lock = data_dir.join(LOCK_FILE);
    match crate::lock::state(data_dir) {
        Err(e) => Err(ClientError::DaemonFile {
            path: lock,
            reason: e.to_string(),
        }),
        Ok(LockState::Free) => Err(stale(format!(
            "no daemon holds {} (it has stopped, or was killed)",
            lock.display()
        ))),
        Ok(LockState::Held(None)) => Err(stale(format!(
            "the process holding {} has not said who it is yet (it is starting; try again)",
            lock.display()
        ))),
        Ok(LockState::Held(Some(holder)))
            if holder.pid == info.pid
                && holder.url.as_deref().map(|u| u.trim_end_matches('/'))
                    == Some(info.url.trim_end_matches('/')) =>
        {
            Ok(())
        }
        Ok(LockState::Held(Some(holder))) => {
            Err(stale(format!("{} is held by {holder}", lock.display())))
        }
    }
}

/// A blocking client of one daemon.
pub struct DaemonClient {
    endpoint: Endpoint,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for DaemonClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonClient")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl DaemonClient {
    pub fn new(endpoint: Endpoint) -> Result<DaemonClient, ClientError> {
        DaemonClient::with_timeout(endpoint, REQUEST_TIMEOUT)
    }

    /// A client whose requests may take up to `timeout` (imports that learn from
    /// many conversations, backups of a large data directory).
    pub fn with_timeout(
        endpoint: Endpoint,
        timeout: Duration,
    ) -> Result<DaemonClient, ClientError> {
        let http = endpoint.http_client(Some(timeout))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Setup(e.to_string()))?;
        Ok(DaemonClient {
            endpoint,
            http,
            runtime,
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// `GET path?query`, answer read as `T`.
    pub fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, ClientError> {
        let body = self.send::<()>(Method::GET, path, query, None)?;
        self.decode(path, &body)
    }

    /// `POST path?query` with an optional JSON body, answer read as `T`.
    pub fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        body: Option<&B>,
    ) -> Result<T, ClientError> {
        let answer = self.send(Method::POST, path, query, body)?;
        self.decode(path, &answer)
    }

    /// `PUT path?query` with a JSON body, answer read as `T`.
    pub fn put<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        body: &B,
    ) -> Result<T, ClientError> {
        let answer = self.send(Method::PUT, path, query, Some(body))?;
        self.decode(path, &answer)
    }

    /// `DELETE path?query`; the answer's body (empty for 204).
    pub fn delete(&self, path: &str, query: &[(&str, String)]) -> Result<Vec<u8>, ClientError> {
        self.send::<()>(Method::DELETE, path, query, None)
    }

    /// Reads a successful answer as `T`.
    pub fn decode<T: DeserializeOwned>(&self, path: &str, body: &[u8]) -> Result<T, ClientError> {
        serde_json::from_slice(body).map_err(|e| ClientError::Protocol {
            url: format!("{}{path}", self.endpoint.url),
            reason: e.to_string(),
        })
    }

    /// Sends one request and returns the body of a 2xx answer; anything else is an error.
    pub fn send<B: Serialize>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&B>,
    ) -> Result<Vec<u8>, ClientError> {
        self.send_built(method, path, query, |request| match body {
            Some(body) => request.json(body),
            None => request,
        })
    }

    /// Sends `body` as it is, with its content type (a JSONL import); as [`DaemonClient::send`].
    pub fn send_bytes(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, ClientError> {
        self.send_built(method, path, query, |request| {
            request
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(body)
        })
    }

    fn send_built(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<Vec<u8>, ClientError> {
        let url = format!("{}{path}", self.endpoint.url);
        let mut request = self
            .http
            .request(method, &url)
            .bearer_auth(&self.endpoint.token)
            .header(
                reqwest::header::ACCEPT,
                "application/json, application/problem+json",
            );
        if !query.is_empty() {
            request = request.query(query);
        }
        request = body(request);
        let unreachable = |e: reqwest::Error| {
            if e.is_connect() || e.is_timeout() {
                self.endpoint.unreachable(&e)
            } else {
                ClientError::Protocol {
                    url: url.clone(),
                    reason: error_chain(&e),
                }
            }
        };
        let (status, content_type, bytes) = self.runtime.block_on(async {
            let response = request.send().await.map_err(unreachable)?;
            let status = response.status();
            let content_type = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let bytes = response.bytes().await.map_err(unreachable)?;
            Ok::<_, ClientError>((status, content_type, bytes))
        })?;
        if status.is_success() {
            return Ok(bytes.to_vec());
        }
        Err(self.failure(status, &content_type, &bytes))
    }

    fn failure(&self, status: StatusCode, content_type: &str, body: &[u8]) -> ClientError {
        #[derive(serde::Deserialize)]
        struct Problem {
            #[serde(default)]
            code: Option<String>,
            #[serde(default)]
            detail: Option<String>,
            #[serde(default)]
            title: Option<String>,
            #[serde(default)]
            field: Option<String>,
        }
        let looks_like_problem = content_type.starts_with(PROBLEM_CONTENT_TYPE)
            || content_type.starts_with("application/json");
        if looks_like_problem && let Ok(problem) = serde_json::from_slice::<Problem>(body) {
            let code = problem.code.unwrap_or_else(|| "error".to_string());
            let detail = problem
                .detail
                .or(problem.title)
                .unwrap_or_else(|| status.to_string());
            return ClientError::Api {
                status: status.as_u16(),
                code,
                detail,
                field: problem.field,
                token_source: self.endpoint.token_source.clone(),
            };
        }
        let text = String::from_utf8_lossy(body);
        let text: String = text.trim().chars().take(300).collect();
        ClientError::Http {
            status: status.as_u16(),
            body: if text.is_empty() {
                status.to_string()
            } else {
                text
            },
        }
    }
}

/// The innermost cause (`Connection refused (os error 111)`, `operation timed out`).
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// An error and its causes on one line (reqwest's own message is often just "error
/// sending request").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_reads_the_daemon_file_and_the_token_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing =
            Endpoint::discover(dir.path(), None, None, Acting::Person).expect_err("no daemon");
        assert!(matches!(missing, ClientError::NoDaemon { .. }));
        assert_eq!(missing.exit_code(), EXIT_UNREACHABLE);
        assert!(
            missing
                .to_string()
                .contains(&dir.path().display().to_string()),
            "{missing}"
        );

        // What a daemon killed with SIGKILL leaves: the file, no lock.
        let file = format!(
            r#"{{"url":"http://127.0.0.1:4321/","pid":{}}}"#,
            std::process::id()
        );
        std::fs::write(dir.path().join(DAEMON_FILE), &file).expect("daemon file");
        let stale = Endpoint::discover(dir.path(), None, None, Acting::Person).expect_err("stale");
        assert!(
            matches!(stale, ClientError::StaleDaemonFile { .. }),
            "{stale}"
        );
        assert_eq!(stale.exit_code(), EXIT_UNREACHABLE);
        // Held, but by a daemon at another address than the file says.
        let mut lock = crate::lock::DataDirLock::acquire(dir.path(), "serve").expect("lock");
        lock.set_url("http://127.0.0.1:4322").expect("url");
        let other =
            Endpoint::discover(dir.path(), None, None, Acting::Person).expect_err("another daemon");
        assert!(other.to_string().contains("4322"), "{other}");
        lock.set_url("http://127.0.0.1:4321").expect("url");
        let no_token =
            Endpoint::discover(dir.path(), None, None, Acting::Person).expect_err("no token");
        assert!(
            matches!(no_token, ClientError::NoToken { .. }),
            "{no_token}"
        );
        assert_eq!(no_token.exit_code(), 1);

        std::fs::write(
            dir.path().join(OPERATOR_TOKEN_FILE),
            "0123456789abcdef0123\n",
        )
        .expect("token");
        let found = Endpoint::discover(dir.path(), None, None, Acting::Person).expect("endpoint");
        assert_eq!(found.url, "http://127.0.0.1:4321");
        assert_eq!(found.token, "0123456789abcdef0123");
        assert_eq!(found.url_source, Source::File(dir.path().join(DAEMON_FILE)));
        // The MCP relay speaks for an agent: it presents the agent's token, never the
        // person's.
        std::fs::write(dir.path().join(AGENT_TOKEN_FILE), "agent-token-4567\n").expect("token");
        let agent = Endpoint::discover(dir.path(), None, None, Acting::Agent).expect("endpoint");
        assert_eq!(agent.token, "agent-token-4567");
        assert_eq!(
            agent.token_source,
            Source::File(dir.path().join(AGENT_TOKEN_FILE))
        );

        let given = Endpoint::discover(
            dir.path(),
            Some("http://localhost:9".into()),
            Some("other-token".into()),
            Acting::Person,
        )
        .expect("endpoint");
        assert_eq!(given.url, "http://localhost:9");
        assert_eq!(given.token, "other-token");
        assert_eq!(given.token_source, Source::Given);
        assert!(!format!("{given:?}").contains("other-token"), "{given:?}");
    }

    #[test]
    fn a_corrupt_daemon_file_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(DAEMON_FILE), "not json").expect("daemon file");
        let error =
            Endpoint::discover(dir.path(), None, None, Acting::Person).expect_err("corrupt");
        assert!(error.to_string().contains(DAEMON_FILE), "{error}");
        assert_eq!(error.exit_code(), EXIT_UNREACHABLE);
    }

    #[test]
    fn only_http_urls_are_accepted() {
        let endpoint = |url: &str| Endpoint {
            url: url.into(),
            url_source: Source::Given,
            token: "t".into(),
            token_source: Source::Given,
        };
        assert!(matches!(
            DaemonClient::new(endpoint("ftp://127.0.0.1")),
            Err(ClientError::InvalidUrl { .. })
        ));
        assert!(matches!(
            DaemonClient::new(endpoint("127.0.0.1:7878")),
            Err(ClientError::InvalidUrl { .. })
        ));
        assert!(DaemonClient::new(endpoint("http://127.0.0.1:7878")).is_ok());
    }

    #[test]
    fn a_refused_connection_is_unreachable_and_names_the_file() {
        // A port that was just free: nothing listens on it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let file = PathBuf::from("/data/daemon.json");
        let client = DaemonClient::new(Endpoint {
            url: format!("http://127.0.0.1:{port}"),
            url_source: Source::File(file),
            token: "t".into(),
            token_source: Source::Given,
        })
        .expect("client");
        let error = client
            .get::<serde_json::Value>("/api/brain/status", &[])
            .expect_err("refused");
        assert_eq!(error.exit_code(), EXIT_UNREACHABLE, "{error}");
        let message = error.to_string();
        assert!(message.contains("/data/daemon.json"), "{message}");
        assert!(message.contains("engram serve"), "{message}");
    }

    #[test]
    fn problem_documents_show_their_detail() {
        let error = ClientError::Api {
            status: 404,
            code: "not-found".into(),
            detail: "no memory or record `mem_x`".into(),
            field: None,
            token_source: Source::Given,
        };
        assert_eq!(
            error.to_string(),
            "no memory or record `mem_x` (404 not-found)"
        );
        let refused = ClientError::Api {
            status: 401,
            code: "unauthorized".into(),
            detail: "a valid token is required".into(),
            field: None,
            token_source: Source::File("/d/operator-token".into()),
        };
        assert!(
            refused.to_string().contains("/d/operator-token"),
            "{refused}"
        );
        assert_eq!(refused.exit_code(), 1);
        assert_eq!(refused.problem_code(), Some("unauthorized"));
    }
}
