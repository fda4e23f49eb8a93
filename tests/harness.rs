//! What every end-to-end test in tests/tests/*.rs needs: the real `engram` binary,
//! started as a user starts it, and a minimal HTTP/1.1 client over loopback (written
//! out here rather than pulled in, so that the tests speak exactly the bytes a client
//! sends and depend on nothing of the daemon's own stack).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// STAND-INs for the outside services (no network or model on the test machines): the
/// OpenAI-compatible endpoint the host's tests use too, and the Telegram Bot API.
pub mod standin;

/// A throwaway PostgreSQL cluster, a database per test (skipped without PostgreSQL,
/// required under CI).
pub mod pg;

/// The agent's token the tests give the daemon through `ENGRAM_TOKEN`.
pub const TOKEN: &str = "e2e-test-token-0123456789abcdef";
/// The person's token the tests give the daemon through `ENGRAM_OPERATOR_TOKEN`: the
/// dashboard's login, approvals, clearing everything.
pub const OPERATOR_TOKEN: &str = "e2e-operator-token-0123456789abcdef";

/// A config.yaml whose agent may act for the users `default`, `alice` and `bob`
/// (`agent.users`; unset, it acts for `default` only): for tests of users kept apart.
pub const AGENT_FOR_THREE: &str = "agent:\n  users: [default, alice, bob]\n";

/// The binary cargo built for this workspace (`cargo test` at the root builds it).
pub fn engram_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let bin = dir.join(format!("engram{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo test` from the workspace root",
        bin.display()
    );
    bin
}

/// `engram --data-dir <data>` with quiet logs, ready for more arguments. Inside
/// [`on_postgres`] its databases are on the test PostgreSQL cluster, one database per
/// data directory (`ENGRAM_DATABASE_URL`).
pub fn engram(data: &Path) -> Command {
    let mut command = Command::new(engram_bin());
    command
        .arg("--data-dir")
        .arg(data)
        .env("ENGRAM_LOG", "warn")
        .env_remove("ENGRAM_TOKEN")
        .env_remove("ENGRAM_OPERATOR_TOKEN")
        .env_remove("ENGRAM_URL")
        .env_remove("ENGRAM_DATABASE_URL")
        .env_remove("SECOND_BRAIN_ENABLED");
    if ON_POSTGRES.with(std::cell::Cell::get) {
        let url = pg::database_url_for(data).expect("on_postgres checked the cluster");
        command.env("ENGRAM_DATABASE_URL", url);
    }
    command
}

thread_local! {
    static ON_POSTGRES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `test` with every daemon and CLI it starts through [`engram`] (on this thread)
/// keeping its databases on PostgreSQL: how a suite runs its tests on both backends.
/// Without PostgreSQL it prints SKIPPED and returns (under CI it fails), as
/// [`pg::database`] does.
pub fn on_postgres(name: &str, test: impl FnOnce()) {
    if pg::database(name).is_none() {
        return;
    }
    ON_POSTGRES.with(|on| on.set(true));
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            ON_POSTGRES.with(|on| on.set(false));
        }
    }
    let _off = Off;
    test();
}

/// Whether the test running on this thread keeps its databases on PostgreSQL.
pub fn is_on_postgres() -> bool {
    ON_POSTGRES.with(std::cell::Cell::get)
}

/// Runs the named tests (`#[test]` functions of the file) on PostgreSQL too, as
/// `on_postgres::<name>` ([`on_postgres`]); as written they run on SQLite, the data
/// directory's files. Invoked once per file.
#[macro_export]
macro_rules! also_on_postgres {
    ($($name:ident),* $(,)?) => {
        mod on_postgres {
            $(
                #[test]
                fn $name() {
                    $crate::on_postgres(stringify!($name), super::$name);
                }
            )*
        }
    };
}

/// Speaks HTTP/1.1 to a daemon, one connection per request (`Connection: close`).
#[derive(Debug, Clone)]
pub struct Client {
    pub addr: String,
    pub token: String,
}

impl Client {
    /// An authenticated request; `body` is sent as JSON when it is not empty.
    pub fn call(&self, method: &str, path: &str, body: &str) -> Response {
        self.try_call(method, path, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// As [`Client::call`], but a connection failure is returned, not a panic.
    pub fn try_call(&self, method: &str, path: &str, body: &str) -> std::io::Result<Response> {
        let content_type = (!body.is_empty()).then_some("application/json");
        self.try_request(
            method,
            path,
            Some(&self.token),
            content_type,
            body.as_bytes(),
        )
    }

    pub fn try_request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: &[u8],
    ) -> std::io::Result<Response> {
        let authorization = token.map(|token| format!("Bearer {token}"));
        let mut headers = Vec::new();
        if let Some(authorization) = &authorization {
            headers.push(("Authorization", authorization.as_str()));
        }
        if let Some(content_type) = content_type {
            headers.push(("Content-Type", content_type));
        }
        self.try_request_with(method, path, &headers, body)
    }

    /// A request with exactly these headers (besides Host, Connection and
    /// Content-Length): no token unless one is among them.
    pub fn try_request_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        let mut stream = TcpStream::connect(&self.addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        // The daemon may answer (413) and close before reading a large body.
        let _ = stream.write_all(body);
        let mut raw = Vec::new();
        // A daemon refusing a large body may reset the connection after answering:
        // what was read before the reset is the answer.
        if let Err(e) = stream.read_to_end(&mut raw)
            && raw.is_empty()
        {
            return Err(e);
        }
        parse_response(&raw).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("incomplete response: {:?}", String::from_utf8_lossy(&raw)),
            )
        })
    }
}

/// An MCP session on a daemon's `/mcp` (streamable HTTP, handshake-era: `initialize`,
/// then `notifications/initialized`, JSON answers), for tests that hold MCP's answers
/// against REST's.
pub struct McpSession {
    client: Client,
    session: String,
    next_id: std::cell::Cell<u64>,
}

impl McpSession {
    /// Opens a session with the bearer token `token`.
    pub fn open(addr: &str, token: &str) -> McpSession {
        let client = Client {
            addr: addr.to_string(),
            token: token.to_string(),
        };
        let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "e2e", "version": "1"}}});
        let response = McpSession::post(&client, None, &initialize);
        assert_eq!(response.status, 200, "initialize: {}", response.text());
        let session = response
            .header("mcp-session-id")
            .expect("an Mcp-Session-Id")
            .to_string();
        let initialized =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        McpSession::post(&client, Some(&session), &initialized);
        McpSession {
            client,
            session,
            next_id: std::cell::Cell::new(1),
        }
    }

    fn post(client: &Client, session: Option<&str>, message: &Value) -> Response {
        let authorization = format!("Bearer {}", client.token);
        let mut headers = vec![
            ("Authorization", authorization.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session));
        }
        client
            .try_request_with("POST", "/mcp", &headers, message.to_string().as_bytes())
            .unwrap_or_else(|e| panic!("POST /mcp: {e}"))
    }

    /// Calls `tool` with `arguments`: the call's result (`structuredContent`,
    /// `isError`, ...).
    pub fn call(&self, tool: &str, arguments: Value) -> Value {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let response = McpSession::post(&self.client, Some(&self.session), &request);
        assert_eq!(response.status, 200, "{tool}: {}", response.text());
        let body = response.text();
        let answer: Value = serde_json::from_str(&body)
            .ok()
            .or_else(|| {
                body.lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .find_map(|data| serde_json::from_str(data.trim()).ok())
            })
            .unwrap_or_else(|| panic!("{tool}: no JSON-RPC answer in {body}"));
        answer["result"].clone()
    }

    /// As [`McpSession::call`], asserting a tool error with `code`: its structured
    /// content `{code, detail}`.
    pub fn refused(&self, tool: &str, arguments: Value, code: &str) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], Value::Bool(true), "{tool}: {result}");
        assert_eq!(
            result["structuredContent"]["code"], code,
            "{tool}: {result}"
        );
        result["structuredContent"].clone()
    }
}

/// A running `engram serve`, killed when dropped.
pub struct Daemon {
    pub child: Child,
    pub addr: String,
    /// Sent as the bearer token by [`Daemon::call`].
    pub token: String,
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

impl Daemon {
    /// Starts `command serve --listen 127.0.0.1:0` with [`TOKEN`] and
    /// [`OPERATOR_TOKEN`] and waits for its listening line.
    pub fn start(command: &mut Command) -> Daemon {
        Daemon::start_with_token(
            command
                .env("ENGRAM_TOKEN", TOKEN)
                .env("ENGRAM_OPERATOR_TOKEN", OPERATOR_TOKEN),
            TOKEN,
        )
    }

    /// Starts `command serve` as on a first start: no token in the environment, so the
    /// daemon generates both into `{data}/auth-token` and `{data}/operator-token`;
    /// [`Daemon::call`] then uses the agent's.
    pub fn start_first_run(command: &mut Command, data: &Path) -> Daemon {
        let mut daemon = Daemon::start_with_token(
            command
                .env_remove("ENGRAM_TOKEN")
                .env_remove("ENGRAM_OPERATOR_TOKEN"),
            "",
        );
        daemon.token = std::fs::read_to_string(data.join("auth-token"))
            .expect("the daemon wrote its token")
            .trim()
            .to_string();
        daemon
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// As [`Daemon::start`], with the daemon's log (stderr) written to `log`.
    pub fn start_logging_to(command: &mut Command, log: &Path) -> Daemon {
        let file = std::fs::File::create(log).expect("create the log file");
        let (child, addr) = spawn_listening(
            command
                .env("ENGRAM_TOKEN", TOKEN)
                .args(["serve", "--listen", "127.0.0.1:0"]),
            Stdio::from(file),
        );
        Daemon {
            child,
            addr,
            token: TOKEN.to_string(),
        }
    }

    /// Starts `command serve`; `token` is what [`Daemon::call`] will present.
    pub fn start_with_token(command: &mut Command, token: &str) -> Daemon {
        let (child, addr) = spawn_listening(
            command.args(["serve", "--listen", "127.0.0.1:0"]),
            Stdio::inherit(),
        );
        Daemon {
            child,
            addr,
            token: token.to_string(),
        }
    }

    /// A client for this daemon that can be moved to other threads.
    pub fn client(&self) -> Client {
        Client {
            addr: self.addr.clone(),
            token: self.token.clone(),
        }
    }

    /// A client holding the person's authority: [`OPERATOR_TOKEN`] (for a daemon
    /// started with [`Daemon::start`]).
    pub fn person(&self) -> Client {
        Client {
            addr: self.addr.clone(),
            token: OPERATOR_TOKEN.to_string(),
        }
    }

    /// An authenticated request; `body` is sent as JSON when it is not empty.
    pub fn call(&self, method: &str, path: &str, body: &str) -> Response {
        self.client().call(method, path, body)
    }

    /// The person grants the installed skill `slug` the tools its SKILL.md asks for, as
    /// it is now (`POST /api/skills/{slug}/confirm-tools` with the operator token): a
    /// built-in or a skill found on disk grants nothing until then.
    pub fn grant_tools(&self, slug: &str) -> Value {
        let skill = ok(self.get(&format!("/api/skills/{slug}")), 200);
        let file = skill["file_sha256"].as_str().expect("file_sha256");
        ok(
            self.person().call(
                "POST",
                &format!("/api/skills/{slug}/confirm-tools"),
                &serde_json::json!({ "file_sha256": file }).to_string(),
            ),
            200,
        )
    }

    pub fn get(&self, path: &str) -> Response {
        self.call("GET", path, "")
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Response {
        self.client()
            .try_request(method, path, token, content_type, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// Opens a connection for a streaming GET (server-sent events) and returns it after
    /// the response head.
    pub fn open_stream(&self, path: &str) -> BufReader<TcpStream> {
        let mut stream = TcpStream::connect(&self.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nAccept: text/event-stream\r\n\r\n",
            self.addr, self.token
        )
        .expect("write");
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).expect("status line");
        assert!(status.contains(" 200 "), "event stream: {status}");
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("header");
            if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        reader
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
    }

    /// Sends SIGTERM and waits (bounded) for the exit.
    pub fn stop(mut self) -> ExitStatus {
        self.terminate();
        self.wait(Duration::from_secs(30))
    }

    /// Waits for the process to exit, killing it and failing after `limit`.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("engram did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Parses a complete HTTP/1.1 response (identity or chunked body); `None` when the
/// head is incomplete.
pub fn parse_response(raw: &[u8]) -> Option<Response> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Some(Response {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
            return body;
        };
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&rest[..end])
                .split(';')
                .next()
                .unwrap_or("0")
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            return body;
        }
        let start = end + 2;
        body.extend_from_slice(&rest[start..(start + size).min(rest.len())]);
        rest = &rest[(start + size + 2).min(rest.len())..];
    }
}

/// Reads server-sent events until one named `name` arrives; returns its data as JSON.
pub fn next_event(reader: &mut BufReader<TcpStream>, name: &str) -> Value {
    let mut event = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).expect("event stream line");
        assert!(n > 0, "event stream closed while waiting for {name}");
        // Chunk-size lines of the chunked encoding carry no event text.
        let line = line.trim_end();
        if let Some(value) = line.strip_prefix("event:") {
            event = value.trim().to_string();
        } else if let Some(data) = line.strip_prefix("data:")
            && event == name
        {
            return serde_json::from_str(data.trim()).expect("event data is JSON");
        }
    }
}

/// A command's standard output read as JSON; fails naming what it printed instead
/// (and its standard error) when it is not.
pub fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Runs `command` to its end and returns what it printed; kills it and fails if it is
/// still running after `limit` (a command that should refuse to start must not hang a
/// test by serving instead).
pub fn output_within(command: &mut Command, limit: Duration) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// Spawns `command` and reads its first line, `listening on http://ADDR` (what
/// `engram serve` and `engram registry serve` print once bound): the child and ADDR.
fn spawn_listening(command: &mut Command, stderr: Stdio) -> (Child, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the listening line");
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    (child, addr)
}

/// Asserts the status and returns the JSON body (`null` for an empty one).
/// The entry of `value[list]` whose `key` is `wanted` ("the `items` entry whose `slug`
/// is `weather`"), or a panic that shows what was listed.
pub fn listed<'a>(value: &'a Value, list: &str, key: &str, wanted: &str) -> &'a Value {
    value[list]
        .as_array()
        .unwrap_or_else(|| panic!("no `{list}` list in {value}"))
        .iter()
        .find(|entry| entry[key] == wanted)
        .unwrap_or_else(|| panic!("no `{list}` entry with {key} {wanted:?} in {value}"))
}

pub fn ok(response: Response, status: u16) -> Value {
    assert_eq!(
        response.status,
        status,
        "unexpected status, body: {}",
        response.text()
    );
    if response.body.is_empty() {
        Value::Null
    } else {
        response.json()
    }
}

/// Asserts an RFC 9457 problem document with `status` and `code`; returns it.
pub fn problem(response: Response, status: u16, code: &str) -> Value {
    assert_eq!(response.status, status, "body: {}", response.text());
    assert_eq!(
        response.header("content-type"),
        Some("application/problem+json"),
        "{}",
        response.text()
    );
    let doc = response.json();
    assert_eq!(doc["code"], code, "{doc}");
    assert_eq!(doc["status"], status);
    for field in ["type", "title", "detail"] {
        assert!(doc[field].is_string(), "problem without {field}: {doc}");
    }
    doc
}

/// The Python interpreter of the test suite's virtualenv, `target/test-venv` (`.ci/run`
/// creates it and installs `tests/requirements.txt` into it: the MCP Python SDK and
/// Schemathesis); `ENGRAM_TEST_PYTHON` names another one. The tests that call this are
/// `#[ignore]` where `tests/build.rs` found none (never under CI, `CI` set); where they
/// run, a missing interpreter fails them.
pub fn test_python(test: &str) -> PathBuf {
    let python = match std::env::var_os("ENGRAM_TEST_PYTHON") {
        Some(python) => PathBuf::from(python),
        None => engram_bin()
            .parent()
            .and_then(Path::parent)
            .map(|target| target.join("test-venv").join("bin").join("python"))
            .unwrap_or_default(),
    };
    assert!(
        python.is_file(),
        "{test} needs target/test-venv (python3 -m venv target/test-venv && target/test-venv/bin/pip install -r tests/requirements.txt; .ci/run does it); where it is missing, `touch tests/build.rs` marks the test ignored"
    );
    python
}

/// The repository's test data, `tests/fixtures` (what is there and its licences: its
/// README).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// A process that printed `listening on http://ADDR` as its first line, killed when
/// dropped (`engram registry serve`, or any command given to [`Listening::start`]).
pub struct Listening {
    pub child: Child,
    pub addr: String,
}

impl Listening {
    /// Spawns `command` (all arguments given) and waits for its listening line.
    pub fn start(command: &mut Command) -> Listening {
        let (child, addr) = spawn_listening(command, Stdio::inherit());
        Listening { child, addr }
    }

    /// `engram registry serve <dir> --listen 127.0.0.1:0`.
    pub fn registry(dir: &Path) -> Listening {
        let mut command = Command::new(engram_bin());
        command
            .env("ENGRAM_LOG", "warn")
            .args(["registry", "serve"])
            .arg(dir)
            .args(["--listen", "127.0.0.1:0"]);
        Listening::start(&mut command)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A plain GET (no token).
    pub fn get(&self, path: &str) -> Response {
        Client {
            addr: self.addr.clone(),
            token: String::new(),
        }
        .try_request("GET", path, None, None, b"")
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// Kills the process and waits for it.
    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
