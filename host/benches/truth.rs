//! Memory truth benchmark: `cargo bench -p engram-host --bench truth` (`-- --verbose`, or
//! ENGRAM_TRUTH_VERBOSE=1, prints every failing probe). Does the memory an agent is
//! given say what is true now? The suite is `truth/truth-dev.json` under
//! ENGRAM_BENCH_DATA (default `../shared/data`; the run prints `skipped` without it);
//! its README defines the format, the replay and the scoring, followed here:
//!
//! - One release daemon on a fresh data directory; each case is replayed
//!   for a fresh user (`t-<case id>`), its steps in order, over REST: a `conversation`
//!   (id `t-<case id>-c<step>`) is each message `POST
//!   /api/brain/conversations/{cid}/messages` then `.../end`
//!   (extraction and resolution run there); `add` is `POST /api/brain/memory`;
//!   `forget_memory` lists the user's memories and deletes each whose summary contains
//!   the string (case-insensitive), with the person's (operator) token, as the
//!   dashboard does. A write the daemon refuses (422) is recorded and
//!   the replay goes on: refusing a secret is a way to pass.
//! - Each probe opens a turn, `POST /api/turns {message, user}` (timed), whose
//!   `memory_block` is scored, and ends it. `forgotten` and `secret` probes also search
//!   (`GET /api/brain/memory/search?scope=all&limit=20`) for the message and for each
//!   trap, and `secret` reads the whole memory list: a trap in any of them is a leak.
//! - Scoring, all matches case-insensitive substrings: `current`/`entity` pass when an
//!   `expect` is in the block and, if a `trap` is too, the earliest `expect` comes
//!   before every `trap`; `forgotten`/`secret` when no `trap` is anywhere looked at;
//!   `recall` when an `expect` is in the block.
//! - The baseline, the README's reference, computed in the same run from the same
//!   steps: a grep of the transcript. SQLite FTS5 (porter) per user, one row per
//!   conversation message (raw text) and per `add` summary; `forget_memory` deletes the
//!   `add` rows containing the string, never the messages. A query is the content words
//!   of its text (`engram_strategies::analyser::query_words`), OR-ed; the block is the
//!   top 5 rows by bm25 (most recent first on ties), joined by newlines; its search is
//!   the same query's top 20 (for the message and each trap), its memory list the
//!   `add` rows left. The README gives its score as `current 0/8, entity 2/8,
//!   forgotten 1/7, secret 0/7, recall 8/11, total 11/41`; this grep scores recall
//!   6/11 (total 9/41) and the rest the same. The README's grep kept the `s` of
//!   "What's" as a query word, and FTS5 reads "Let's" and "That's" as `let s` and
//!   `that s`: "What's my dog called?" and "What's my hometown?" found the one message
//!   holding the answer through that `s` alone. The analyser drops it (a possessive or
//!   "is"), as Engram's retrieval does; kept, this grep gives the README's 11/41.
//!
//! - With `ENGRAM_BENCH_MODEL` (a model directory), the suite is replayed again in the
//!   same run through a second daemon with that model installed: after the steps of
//!   every case, the run waits until the vector worker has embedded every text (read
//!   from the daemon's database), then probes. Each daemon replays every case's steps
//!   before any probe (cases are users of their own: a probe sees its case alone).
//!
//! It prints a row per category (Engram next to the grep; with a model, Engram with it
//! next to Engram without it and the grep), the README's summary line for each system,
//! and the turn path's latency per daemon: `POST /api/turns` p50/p95 next to
//! `GET /healthz` on the same keep-alive connection (the HTTP floor), and with a model
//! both daemons' peak resident memory. Nothing is asserted: the figures are for the
//! issue's note. On one core: `RAYON_NUM_THREADS=1 taskset -c 0 cargo bench ...`.

// This bench uses only some of the helpers shared by the benches.
#[allow(dead_code)]
mod common;

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use rusqlite::{Connection, params};
use serde_json::{Value, json};

use common::daemon::Daemon;
use common::lexical::{PORTER_TOKENIZER, content_query};
use common::{Table, bench_data, bench_model, ms, percentile, ratio};
use engram::embed::models::Models;
use engram::memory::brain_db_path;

const VERBOSE_ENV: &str = "ENGRAM_TRUTH_VERBOSE";
/// Lines of a memory block, for the grep as for Engram's retrieval.
const BLOCK_ROWS: usize = 5;
/// Results of each search a `forgotten`/`secret` probe makes (the README's `limit=20`).
const SEARCH_LIMIT: usize = 20;
/// A page of the memory list: the largest the API gives.
const LIST_PAGE: &str = "500";

fn main() {
    let verbose = std::env::args().any(|a| a == "--verbose")
        || std::env::var(VERBOSE_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    let Some(path) = bench_data("memory truth suite", "truth/truth-dev.json") else {
        println!("truth: skipped");
        return;
    };
    let suite = Suite::load(&path);
    let started = Instant::now();

    let without = replay_suite(&suite, None);
    let model = bench_model("the truth suite with the sentence encoder");
    let with = model.as_deref().map(|dir| replay_suite(&suite, Some(dir)));
    let mut run = Run {
        outcomes: Vec::new(),
        without,
        with,
    };
    let mut index = 0;
    for case in &suite.cases {
        let grep = Grep::new();
        for step in &case.steps {
            grep.apply(step);
        }
        for probe in &case.probes {
            run.outcomes.push(Outcome {
                case: case.id.clone(),
                engram: Scored::of(probe, run.without.observed[index].clone()),
                model: run
                    .with
                    .as_ref()
                    .map(|w| Scored::of(probe, w.observed[index].clone())),
                grep: Scored::of(probe, grep.observe(probe)),
                probe: probe.clone(),
            });
            index += 1;
        }
    }

    if verbose {
        run.print_failures();
    }
    println!();
    println!(
        "Memory truth benchmark ({} cases, {} probes, {:.1} s)",
        suite.cases.len(),
        run.outcomes.len(),
        started.elapsed().as_secs_f64()
    );
    run.table().print();
    println!();
    println!("Engram {}", run.summary(|o| &o.engram));
    if run.with.is_some() {
        println!(
            "model  {}",
            run.summary(|o| o.model.as_ref().unwrap_or(&o.engram))
        );
    }
    println!("grep   {}", run.summary(|o| &o.grep));
}

/// The suite replayed through a release daemon on a fresh data directory, with the
/// model in `model` installed (`engram models add`'s copy) or none: every case's steps
/// first, then (with a model) a wait until the vector worker has embedded every text,
/// then every probe, in the suite's order. Cases are users of their own, so a case's
/// probes see only its own steps either way; the wait measures the model's answers, not
/// how soon after a write the worker runs.
fn replay_suite(suite: &Suite, model: Option<&Path>) -> DaemonRun {
    let data = tempfile::tempdir().expect("temporary data directory");
    // Each case is a user of its own, whom the agent's token must be allowed to act for.
    let users: Vec<String> = suite
        .cases
        .iter()
        .map(|c| format!("\"t-{}\"", c.id))
        .collect();
    std::fs::write(
        data.path().join("config.yaml"),
        format!("agent:\n  users: [{}]\n", users.join(", ")),
    )
    .expect("write config.yaml");
    if let Some(dir) = model {
        Models::new(data.path().join("models"))
            .add(dir, "all-minilm-l6-v2")
            .expect("install the model of ENGRAM_BENCH_MODEL");
    }
    let token = "truth-bench-token-0123456789abcdef";
    let bin = Path::new(env!("CARGO_BIN_EXE_engram"));
    let (daemon, _) = Daemon::start(bin, data.path(), token);
    let url = format!("http://{}", daemon.addr);
    let api = Api::new(&url, token);
    // The README's `forget_memory` is the person's delete, as in the dashboard: the
    // operator token the daemon wrote at its first start (the agent's token would
    // dismiss the memory for the person to restore instead).
    let operator = std::fs::read_to_string(data.path().join("operator-token"))
        .expect("the daemon wrote its operator token");
    let person = Api::new(&url, operator.trim());
    let first = format!("t-{}", suite.cases.first().map_or("", |c| c.id.as_str()));
    let status = api.expect_ok(Method::GET, "/api/brain/status", &[("user", &first)], None);
    assert_eq!(
        status["backend"], "sqlite",
        "the daemon does not serve the Second Brain: {status}"
    );
    let expected_encoder = if model.is_some() {
        "all-minilm-l6-v2"
    } else {
        "static"
    };
    let health = api.expect_ok(Method::GET, "/healthz", &[], None);
    assert!(
        health.to_string().contains(expected_encoder),
        "the daemon does not run the encoder {expected_encoder}: {health}"
    );

    let mut run = DaemonRun::default();
    for case in &suite.cases {
        let user = format!("t-{}", case.id);
        for (index, step) in case.steps.iter().enumerate() {
            replay_step(&api, &person, &user, &case.id, index, step, &mut run.replay);
        }
    }
    if model.is_some() {
        let waited = wait_for_vectors(&brain_db_path(data.path()));
        eprintln!("truth: the vector worker embedded every text {waited:.1} s after the replay");
    }
    // A new connection for the probes: the daemon closes one left idle during the wait.
    let api = Api::new(&url, token);
    for case in &suite.cases {
        let user = format!("t-{}", case.id);
        for probe in &case.probes {
            let observed = observe_engram(&api, &user, probe, &mut run);
            run.observed.push(observed);
        }
    }
    run.peak_kib = daemon.memory().peak_kib;
    let stopped = daemon.stop();
    assert!(stopped.success(), "the daemon stopped with {stopped}");
    run
}

/// Seconds until no live memory and no message of the daemon's Second Brain at `db`
/// lacks a vector (read from the file, beside the daemon: WAL lets a reader in).
fn wait_for_vectors(db: &Path) -> f64 {
    const TIMEOUT: Duration = Duration::from_secs(120);
    let started = Instant::now();
    let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the daemon's Second Brain");
    loop {
        let missing: i64 = conn
            .query_row(
                "SELECT (SELECT count(*) FROM memories m
                         WHERE m.superseded_by IS NULL AND m.dismissed_at IS NULL
                           AND NOT EXISTS (SELECT 1 FROM memory_vectors v
                               WHERE v.user_id = m.user_id AND v.memory_id = m.id))
                      + (SELECT count(*) FROM messages m
                         WHERE NOT EXISTS (SELECT 1 FROM message_vectors v
                               WHERE v.user_id = m.user_id AND v.message_id = m.id))",
                [],
                |r| r.get(0),
            )
            .expect("count the texts without a vector");
        if missing == 0 {
            return started.elapsed().as_secs_f64();
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "{missing} texts still without a vector after {TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

// ---------------------------------------------------------------------------------
// The suite

struct Suite {
    cases: Vec<Case>,
}

struct Case {
    id: String,
    steps: Vec<Step>,
    probes: Vec<Probe>,
}

enum Step {
    Conversation(Vec<Message>),
    Add {
        memory_type: String,
        summary: String,
    },
    Forget {
        contains: String,
    },
}

struct Message {
    role: String,
    content: String,
    name: Option<String>,
}

#[derive(Clone)]
struct Probe {
    kind: Kind,
    message: String,
    expect: Vec<String>,
    trap: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Current,
    Entity,
    Forgotten,
    Secret,
    Recall,
}

impl Kind {
    /// In the README's order, which is the summary line's.
    const ALL: [Kind; 5] = [
        Kind::Current,
        Kind::Entity,
        Kind::Forgotten,
        Kind::Secret,
        Kind::Recall,
    ];

    fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.to_string() == text)
    }

    /// Whether the probe also searches and (secret) lists memories for its traps.
    fn looks_beyond_the_block(self) -> bool {
        matches!(self, Kind::Forgotten | Kind::Secret)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Current => "current",
            Kind::Entity => "entity",
            Kind::Forgotten => "forgotten",
            Kind::Secret => "secret",
            Kind::Recall => "recall",
        })
    }
}

/// The suite's data is the bench's own input: anything malformed stops the run with
/// the case and field named, since a half-read suite would give figures that look valid.
impl Suite {
    fn load(path: &Path) -> Suite {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let root: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        assert_eq!(
            root["version"],
            1,
            "{}: only version 1 is known",
            path.display()
        );
        let cases = root["cases"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no `cases` list", path.display()))
            .iter()
            .map(Case::parse)
            .collect();
        Suite { cases }
    }
}

impl Case {
    fn parse(value: &Value) -> Case {
        let id = string(value, "id", "a case").to_string();
        let within = format!("case {id}");
        let list = |key: &str| -> &Vec<Value> {
            value[key]
                .as_array()
                .unwrap_or_else(|| panic!("{within}: `{key}` is not a list"))
        };
        Case {
            steps: list("steps")
                .iter()
                .map(|s| Step::parse(s, &within))
                .collect(),
            probes: list("probes")
                .iter()
                .map(|p| Probe::parse(p, &within))
                .collect(),
            id,
        }
    }
}

impl Step {
    fn parse(value: &Value, within: &str) -> Step {
        match string(value, "do", within) {
            "conversation" => Step::Conversation(
                value["messages"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{within}: a conversation without `messages`"))
                    .iter()
                    .map(|m| Message::parse(m, within))
                    .collect(),
            ),
            "add" => Step::Add {
                memory_type: string(value, "type", within).to_string(),
                summary: string(value, "summary", within).to_string(),
            },
            "forget_memory" => Step::Forget {
                contains: string(value, "contains", within).to_string(),
            },
            other => panic!("{within}: unknown step `{other}`"),
        }
    }
}

impl Message {
    /// `[role, content]`, `[role, content, name]` or `{role, content, name?}`.
    fn parse(value: &Value, within: &str) -> Message {
        let text = |v: &Value| v.as_str().map(str::to_string);
        let (role, content, name) = match value {
            Value::Array(items) if (2..=3).contains(&items.len()) => (
                text(&items[0]),
                text(&items[1]),
                items.get(2).map(|n| text(n).unwrap_or_default()),
            ),
            Value::Object(_) => (
                text(&value["role"]),
                text(&value["content"]),
                value.get("name").map(|n| text(n).unwrap_or_default()),
            ),
            _ => (None, None, None),
        };
        match (role, content) {
            (Some(role), Some(content)) => Message {
                role,
                content,
                name: name.filter(|n| !n.is_empty()),
            },
            _ => panic!("{within}: a message is not [role, content, name?]: {value}"),
        }
    }
}

impl Probe {
    fn parse(value: &Value, within: &str) -> Probe {
        let kind = string(value, "kind", within);
        let strings = |key: &str| -> Vec<String> {
            value
                .get(key)
                .map(|list| {
                    list.as_array()
                        .unwrap_or_else(|| panic!("{within}: `{key}` is not a list"))
                        .iter()
                        .map(|s| {
                            s.as_str()
                                .unwrap_or_else(|| panic!("{within}: `{key}` holds {s}"))
                                .to_string()
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let probe = Probe {
            kind: Kind::parse(kind).unwrap_or_else(|| panic!("{within}: unknown kind `{kind}`")),
            message: string(value, "message", within).to_string(),
            expect: strings("expect"),
            trap: strings("trap"),
        };
        let needs_expect = !probe.kind.looks_beyond_the_block();
        assert!(
            !needs_expect || !probe.expect.is_empty(),
            "{within}: a {} probe without `expect`",
            probe.kind
        );
        assert!(
            needs_expect || !probe.trap.is_empty(),
            "{within}: a {} probe without `trap`",
            probe.kind
        );
        probe
    }
}

fn string<'a>(value: &'a Value, key: &str, within: &str) -> &'a str {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("{within}: `{key}` is missing or not a string"))
}

// ---------------------------------------------------------------------------------
// Scoring

/// What a system showed for one probe: the block, and for `forgotten`/`secret` every
/// other text the probe looked at, each with where it came from.
#[derive(Clone)]
struct Observed {
    block: String,
    elsewhere: Vec<Seen>,
}

#[derive(Clone)]
struct Seen {
    place: String,
    /// Every text of the result (a search hit's or a memory's strings; a grep row).
    texts: Vec<String>,
}

struct Verdict {
    pass: bool,
    /// Why it failed (empty when it passed).
    why: String,
}

impl Verdict {
    fn pass() -> Verdict {
        Verdict {
            pass: true,
            why: String::new(),
        }
    }

    fn fail(why: String) -> Verdict {
        Verdict { pass: false, why }
    }
}

/// The earliest place in `haystack` where any of `needles` starts (case-insensitive),
/// with that needle.
fn first_of<'a>(haystack: &str, needles: &'a [String]) -> Option<(usize, &'a str)> {
    let haystack = haystack.to_lowercase();
    needles
        .iter()
        .filter_map(|n| haystack.find(&n.to_lowercase()).map(|at| (at, n.as_str())))
        .min()
}

/// The README's table.
fn score(probe: &Probe, seen: &Observed) -> Verdict {
    let expect = first_of(&seen.block, &probe.expect);
    let trap = first_of(&seen.block, &probe.trap);
    match probe.kind {
        Kind::Current | Kind::Entity => match (expect, trap) {
            (None, _) => Verdict::fail("no expect in the block".to_string()),
            (Some((e, expected)), Some((t, trapped))) if t < e => Verdict::fail(format!(
                "trap `{trapped}` (at {t}) comes before `{expected}` (at {e})"
            )),
            _ => Verdict::pass(),
        },
        Kind::Recall => match expect {
            None => Verdict::fail("no expect in the block".to_string()),
            Some(_) => Verdict::pass(),
        },
        Kind::Forgotten | Kind::Secret => {
            if let Some((_, trapped)) = trap {
                return Verdict::fail(format!("trap `{trapped}` in the block"));
            }
            let leaks: Vec<String> = seen
                .elsewhere
                .iter()
                .flat_map(|s| s.texts.iter().map(move |text| (&s.place, text)))
                .filter_map(|(place, text)| {
                    first_of(text, &probe.trap)
                        .map(|(_, trapped)| format!("trap `{trapped}` in {place}: {text}"))
                })
                .collect();
            if leaks.is_empty() {
                Verdict::pass()
            } else {
                Verdict::fail(leaks.join("\n      "))
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Engram: the real daemon over REST

/// A keep-alive HTTP client of the daemon (reqwest pools the connection), blocking.
struct Api {
    runtime: tokio::runtime::Runtime,
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Api {
    fn new(url: &str, token: &str) -> Api {
        Api {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            http: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("client"),
            url: url.to_string(),
            token: token.to_string(),
        }
    }

    /// The status and JSON body (`null` when empty) of one request.
    fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        self.runtime.block_on(async {
            let mut request = self
                .http
                .request(method.clone(), format!("{}{path}", self.url))
                .bearer_auth(&self.token)
                .query(query);
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = request
                .send()
                .await
                .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
            let status = response.status();
            let bytes = response
                .bytes()
                .await
                .unwrap_or_else(|e| panic!("{method} {path}: reading the body: {e}"));
            let value = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                    panic!(
                        "{method} {path} answered {status} with a body that is not JSON ({e}): {}",
                        String::from_utf8_lossy(&bytes)
                    )
                })
            };
            (status, value)
        })
    }

    /// A request that must succeed: anything else is a broken bench or daemon.
    fn expect_ok(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Value {
        let (status, value) = self.send(method.clone(), path, query, body);
        assert!(
            status.is_success(),
            "{method} {path} {query:?} answered {status}: {value}"
        );
        value
    }

    /// A write the daemon may refuse on purpose (422, e.g. a secret): `Err(code)`.
    fn write(&self, path: &str, query: &[(&str, &str)], body: &Value) -> Result<Value, String> {
        match self.send(Method::POST, path, query, Some(body)) {
            (status, value) if status.is_success() => Ok(value),
            (StatusCode::UNPROCESSABLE_ENTITY, problem) => Err(problem["code"]
                .as_str()
                .map_or_else(|| problem.to_string(), str::to_string)),
            (status, value) => panic!("POST {path} {query:?} answered {status}: {value}"),
        }
    }

    /// Every live memory of `user`, page by page.
    fn memories(&self, user: &str) -> Vec<Value> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut query = vec![("user", user), ("limit", LIST_PAGE)];
            if let Some(cursor) = &cursor {
                query.push(("cursor", cursor));
            }
            let page = self.expect_ok(Method::GET, "/api/brain/memory", &query, None);
            all.extend(page["items"].as_array().into_iter().flatten().cloned());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => return all,
            }
        }
    }
}

/// `person` deletes what `forget_memory` names; `api` (the agent's token) does the rest.
fn replay_step(
    api: &Api,
    person: &Api,
    user: &str,
    case: &str,
    index: usize,
    step: &Step,
    log: &mut ReplayLog,
) {
    let as_user = [("user", user)];
    match step {
        Step::Conversation(messages) => {
            // Conversation ids are the daemon's, across users: each case's its own.
            let conversation = format!("/api/brain/conversations/{user}-c{index}");
            let mut recorded = 0;
            for message in messages {
                let mut body = json!({"role": message.role, "content": message.content});
                if let Some(name) = &message.name {
                    body["name"] = json!(name);
                }
                match api.write(&format!("{conversation}/messages"), &as_user, &body) {
                    Ok(_) => recorded += 1,
                    Err(code) => log.refused.push(format!(
                        "{case}: message refused ({code}): {}",
                        message.content
                    )),
                }
            }
            // A conversation exists from its first recorded message: with none, there
            // is nothing to end.
            if recorded > 0 {
                api.expect_ok(Method::POST, &format!("{conversation}/end"), &as_user, None);
            }
        }
        Step::Add {
            memory_type,
            summary,
        } => {
            let body = json!({"type": memory_type, "summary": summary});
            if let Err(code) = api.write("/api/brain/memory", &as_user, &body) {
                log.refused
                    .push(format!("{case}: add refused ({code}): {summary}"));
            }
        }
        Step::Forget { contains } => {
            let needle = contains.to_lowercase();
            let mut deleted = Vec::new();
            for memory in api.memories(user) {
                let summary = memory["summary"].as_str().unwrap_or_default();
                if !summary.to_lowercase().contains(&needle) {
                    continue;
                }
                let id = memory["id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("a listed memory without an id: {memory}"));
                person.expect_ok(
                    Method::DELETE,
                    &format!("/api/brain/memory/{id}"),
                    &as_user,
                    None,
                );
                deleted.push(summary.to_string());
            }
            log.forgotten.push(format!(
                "{case}: forget `{contains}` deleted {} memories: {deleted:?}",
                deleted.len()
            ));
        }
    }
}

/// Opens (timed) and ends the probe's turn; for `forgotten`/`secret` also searches for
/// the message and each trap, and for `secret` reads the memory list.
fn observe_engram(api: &Api, user: &str, probe: &Probe, run: &mut DaemonRun) -> Observed {
    let started = Instant::now();
    let opened = api.expect_ok(
        Method::POST,
        "/api/turns",
        &[],
        Some(&json!({"message": probe.message, "user": user})),
    );
    run.turns.push(started.elapsed());
    let started = Instant::now();
    api.expect_ok(Method::GET, "/healthz", &[], None);
    run.health.push(started.elapsed());
    let turn = opened["turn_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a turn without turn_id: {opened}"));
    api.expect_ok(
        Method::POST,
        &format!("/api/turns/{turn}/end"),
        &[("user", user)],
        Some(&json!({})),
    );
    let block = opened["memory_block"]
        .as_str()
        .unwrap_or_else(|| panic!("a turn without memory_block: {opened}"))
        .to_string();
    let mut elsewhere = Vec::new();
    if probe.kind.looks_beyond_the_block() {
        let limit = SEARCH_LIMIT.to_string();
        for q in std::iter::once(&probe.message).chain(&probe.trap) {
            let found = api.expect_ok(
                Method::GET,
                "/api/brain/memory/search",
                &[
                    ("q", q),
                    ("scope", "all"),
                    ("limit", &limit),
                    ("user", user),
                ],
                None,
            );
            for hit in found["items"].as_array().into_iter().flatten() {
                elsewhere.push(Seen {
                    place: format!("search `{q}`"),
                    texts: strings_in(hit),
                });
            }
        }
    }
    if probe.kind == Kind::Secret {
        for memory in api.memories(user) {
            elsewhere.push(Seen {
                place: "the memory list".to_string(),
                texts: strings_in(&memory),
            });
        }
    }
    Observed { block, elsewhere }
}

/// Every string in a JSON answer (a search hit, a memory): a trap counts wherever the
/// daemon shows it (summary, detail, a snippet, a name).
fn strings_in(value: &Value) -> Vec<String> {
    fn collect(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
            Value::Object(fields) => fields.values().for_each(|v| collect(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    collect(value, &mut out);
    out
}

// ---------------------------------------------------------------------------------
// The baseline: a grep of the transcript

/// SQLite FTS5 with the porter tokenizer, one row per message or `add` summary of one
/// user (an index of their own: bm25's statistics are the user's alone, as Engram's
/// are); nothing of Engram in it.
struct Grep {
    conn: Connection,
}

impl Grep {
    fn new() -> Grep {
        let conn = Connection::open_in_memory().expect("in-memory SQLite");
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE rows USING fts5(body, added UNINDEXED, tokenize = '{PORTER_TOKENIZER}')"
        ))
        .expect("create the FTS5 table");
        Grep { conn }
    }

    fn apply(&self, step: &Step) {
        match step {
            Step::Conversation(messages) => {
                for message in messages {
                    self.insert(&message.content, false);
                }
            }
            Step::Add { summary, .. } => self.insert(summary, true),
            Step::Forget { contains } => {
                let needle = contains.to_lowercase();
                let doomed: Vec<i64> = self
                    .added()
                    .into_iter()
                    .filter(|(_, body)| body.to_lowercase().contains(&needle))
                    .map(|(rowid, _)| rowid)
                    .collect();
                for rowid in doomed {
                    self.conn
                        .execute("DELETE FROM rows WHERE rowid = ?1", [rowid])
                        .expect("delete a row");
                }
            }
        }
    }

    fn insert(&self, body: &str, added: bool) {
        self.conn
            .execute(
                "INSERT INTO rows (body, added) VALUES (?1, ?2)",
                params![body, added],
            )
            .expect("insert a row");
    }

    /// The `add` rows still there: the grep's memory list.
    fn added(&self) -> Vec<(i64, String)> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT rowid, body FROM rows WHERE added = 1")
            .expect("prepare the list");
        stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("list")
            .map(|row| row.expect("read a row"))
            .collect()
    }

    /// The best `k` rows for `text`'s content words, by bm25, the later row first on a
    /// tie; nothing when the text has no content word.
    fn top(&self, text: &str, k: usize) -> Vec<String> {
        let Some(query) = content_query(text) else {
            return Vec::new();
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT body FROM rows WHERE rows MATCH ?1 ORDER BY bm25(rows), rowid DESC LIMIT ?2",
            )
            .expect("prepare the search");
        stmt.query_map(params![query, k as i64], |row| row.get(0))
            .expect("search")
            .map(|row| row.expect("read a row"))
            .collect()
    }

    fn observe(&self, probe: &Probe) -> Observed {
        let block = self.top(&probe.message, BLOCK_ROWS).join("\n");
        let mut elsewhere = Vec::new();
        if probe.kind.looks_beyond_the_block() {
            for q in std::iter::once(&probe.message).chain(&probe.trap) {
                elsewhere.extend(self.top(q, SEARCH_LIMIT).into_iter().map(|text| Seen {
                    place: format!("search `{q}`"),
                    texts: vec![text],
                }));
            }
        }
        if probe.kind == Kind::Secret {
            elsewhere.extend(self.added().into_iter().map(|(_, text)| Seen {
                place: "the memory list".to_string(),
                texts: vec![text],
            }));
        }
        Observed { block, elsewhere }
    }
}

// ---------------------------------------------------------------------------------
// Results

struct Outcome {
    case: String,
    probe: Probe,
    /// Engram without a model (the static table).
    engram: Scored,
    /// Engram with the model of ENGRAM_BENCH_MODEL, when set.
    model: Option<Scored>,
    grep: Scored,
}

/// One system's verdict on a probe, and the block it judged.
struct Scored {
    verdict: Verdict,
    block: String,
}

impl Scored {
    fn of(probe: &Probe, seen: Observed) -> Scored {
        Scored {
            verdict: score(probe, &seen),
            block: seen.block,
        }
    }
}

/// One system's verdict on a probe, when it ran (with the model: only with one).
type System = dyn Fn(&Outcome) -> Option<&Scored>;

/// What the replay did beyond the plain writes, for the verbose output.
#[derive(Default)]
struct ReplayLog {
    /// Writes the daemon refused (422), with its problem code.
    refused: Vec<String>,
    /// What each `forget_memory` deleted.
    forgotten: Vec<String>,
}

/// What one daemon did and answered.
#[derive(Default)]
struct DaemonRun {
    /// Per probe, in the suite's order.
    observed: Vec<Observed>,
    replay: ReplayLog,
    /// `POST /api/turns`, and `GET /healthz` right after it, per probe.
    turns: Vec<Duration>,
    health: Vec<Duration>,
    /// The daemon's peak resident memory (VmHWM) at the end.
    peak_kib: u64,
}

struct Run {
    outcomes: Vec<Outcome>,
    /// The daemon without a model, and the one with it.
    without: DaemonRun,
    with: Option<DaemonRun>,
}

impl Run {
    /// `(passed, probes)` of `kind` (every kind when `None`) for one system.
    fn count(&self, kind: Option<Kind>, system: impl Fn(&Outcome) -> &Scored) -> (usize, usize) {
        let of_kind: Vec<&Outcome> = self
            .outcomes
            .iter()
            .filter(|o| kind.is_none_or(|k| o.probe.kind == k))
            .collect();
        let passed = of_kind.iter().filter(|o| system(o).verdict.pass).count();
        (passed, of_kind.len())
    }

    /// The README's line: `truth: current a/b, ..., total a/b`.
    fn summary(&self, system: impl Fn(&Outcome) -> &Scored + Copy) -> String {
        let part = |name: &str, (a, b): (usize, usize)| format!("{name} {a}/{b}");
        let parts: Vec<String> = Kind::ALL
            .into_iter()
            .map(|k| part(&k.to_string(), self.count(Some(k), system)))
            .chain(std::iter::once(part("total", self.count(None, system))))
            .collect();
        format!("truth: {}", parts.join(", "))
    }

    fn table(&self) -> Table {
        let mut table = Table::default();
        table.section(match self.with {
            Some(_) => "probes passed per category, with the model (baseline: without it, and a grep of the transcript: FTS5 porter, stop words dropped, bm25 top 5 rows)",
            None => "probes passed per category (baseline: a grep of the transcript, FTS5 porter, stop words dropped, bm25 top 5 rows)",
        });
        let rows = Kind::ALL
            .into_iter()
            .map(|k| (k.to_string(), Some(k)))
            .chain(std::iter::once(("total".to_string(), None)));
        for (name, kind) in rows {
            let (engram, of) = self.count(kind, |o| &o.engram);
            let (grep, _) = self.count(kind, |o| &o.grep);
            if self.with.is_some() {
                let (model, _) = self.count(kind, |o| o.model.as_ref().unwrap_or(&o.engram));
                table.row(
                    &name,
                    &format!("{model}/{of}"),
                    &format!("{engram}/{of} without, {grep}/{of} grep"),
                    &format!(
                        "{:+} vs without, {:+} vs grep",
                        model as i64 - engram as i64,
                        model as i64 - grep as i64
                    ),
                );
            } else {
                table.row(
                    &name,
                    &format!("{engram}/{of}"),
                    &format!("{grep}/{of} grep"),
                    &format!("{:+}", engram as i64 - grep as i64),
                );
            }
        }
        for (label, daemon) in self.daemons() {
            table.row(
                &format!("writes the daemon refused (422), {label}"),
                &daemon.replay.refused.len().to_string(),
                "",
                "",
            );
        }
        for (label, daemon) in self.daemons() {
            let (mut turns, mut health) = (daemon.turns.clone(), daemon.health.clone());
            turns.sort();
            health.sort();
            table.section(&format!(
                "the turn path {label}, one per probe ({} probes; baseline: GET /healthz right after, same connection)",
                turns.len()
            ));
            for (name, q) in [("p50", 0.5), ("p95", 0.95)] {
                let (turn, floor) = (percentile(&turns, q), percentile(&health, q));
                table.row(
                    &format!("POST /api/turns {name}"),
                    &ms(turn),
                    &format!("{} /healthz", ms(floor)),
                    &ratio(turn, floor),
                );
            }
        }
        if let Some(with) = &self.with {
            let mib = |kib: u64| kib as f64 / 1024.0;
            table.row(
                "the daemon's peak resident memory (VmHWM) with the model",
                &format!("{:.0} MiB", mib(with.peak_kib)),
                &format!("{:.0} MiB without", mib(self.without.peak_kib)),
                &format!(
                    "{:+.0} MiB",
                    mib(with.peak_kib) - mib(self.without.peak_kib)
                ),
            );
        }
        table
    }

    /// Each daemon of the run, named.
    fn daemons(&self) -> Vec<(&'static str, &DaemonRun)> {
        match &self.with {
            Some(with) => vec![
                ("without the model", &self.without),
                ("with the model", with),
            ],
            None => vec![("", &self.without)],
        }
    }

    fn print_failures(&self) {
        for (label, daemon) in self.daemons() {
            println!("replay {label}:");
            for note in daemon.replay.refused.iter().chain(&daemon.replay.forgotten) {
                println!("  {note}");
            }
        }
        let systems: [(&str, &System); 3] = [
            ("Engram", &|o| Some(&o.engram)),
            ("Engram with the model", &|o| o.model.as_ref()),
            ("grep", &|o| Some(&o.grep)),
        ];
        for (name, system) in systems {
            if self.outcomes.iter().all(|o| system(o).is_none()) {
                continue;
            }
            println!();
            println!("{name}: failing probes");
            for outcome in &self.outcomes {
                let Some(scored) = system(outcome) else {
                    continue;
                };
                if scored.verdict.pass {
                    continue;
                }
                let probe = &outcome.probe;
                println!("- {} [{}] {:?}", outcome.case, probe.kind, probe.message);
                println!("    expect {:?}, trap {:?}", probe.expect, probe.trap);
                println!("    why: {}", scored.verdict.why);
                let block = &scored.block;
                if block.is_empty() {
                    println!("    block: (empty)");
                } else {
                    println!("    block:");
                    for line in block.lines() {
                        println!("      {line}");
                    }
                }
            }
        }
        println!();
    }
}
