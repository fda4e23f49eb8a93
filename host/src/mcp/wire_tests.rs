//! The table behind `crate::described`: every variant of every service error, with
//! the status, code and field a caller gets for it, sent through both surfaces (REST's
//! problem document, MCP's tool error), which must agree with the row and with each
//! other, detail included. An error inside another (a store's error in the memory
//! service's, in a host tool's, in the turn service's) is walked inside each of them
//! too. No detail carries what the host keeps to itself (the paths in the rows below).
//!
//! Each error's variants are listed once ([`variants!`]): the list is an exhaustive
//! match, so a new variant does not compile until it is listed, and then fails the
//! table until a row covers it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use super::Failure;
use crate::api::error::ApiError;
use crate::background::BackgroundError;
use crate::backup::BackupError;
use crate::credentials::{PersonAct, PersonRequired, UserNotAllowed};
use crate::described::Described;
use crate::gate::{Decision, GateError, ReasonCode, Verdict};
use crate::memory::MemoryError;
use crate::memory::SecretRefused;
use crate::memory::StoreError;
use crate::memory::facts::FactsError;
use crate::memory::import::ledger::LedgerError;
use crate::memory::import::{ApplyError, ImportError};
use crate::net::FetchError;
use crate::runtime::PluginError;
use crate::schedule::ScheduleError;
use crate::skills::registry::archive::ArchiveError;
use crate::skills::registry::feed::FeedError;
use crate::skills::{LibraryError, RegistryError, SkillError};
use crate::sqlite::SchemaError;
use crate::tools::ToolError;
use crate::turns::TurnError;

/// In every path and internal reason below; never in an answer.
const PRIVATE: &str = "/home/person/.local/share/engram-private";

/// `name(e)`: which variant `e` is, and every variant there is (a unit variant is
/// written `Name {}`).
macro_rules! variants {
    ($name:ident: $ty:ident { $($variant:ident $fields:tt),* $(,)? }) => {
        fn $name(e: &$ty) -> (&'static str, &'static [&'static str]) {
            const ALL: &[&str] = &[$(stringify!($variant)),*];
            let variant = match e {
                $($ty::$variant $fields => stringify!($variant)),*
            };
            (variant, ALL)
        }
    };
}

variants!(store: StoreError {
    NotFound(_), NoConversation(_), OtherUsers { .. }, Invalid { .. }, SecretRefused(_),
    Import { .. }, Dangling(_), Open { .. }, Schema(_), Index(_), Encoder(_), Sqlite(_),
    Sql(_), SqliteOnly {}, GroupFailed(_),
});
variants!(facts: FactsError { NotFound(_), Invalid { .. }, SecretRefused(_), Io { .. } });
variants!(memory: MemoryError { BrainDisabled { .. }, Brain(_), Facts(_), Lane(_) });
variants!(gate: GateError {
    UnknownTurn(_), TurnEnded(_), TurnExpired(_), UnknownTool(_), NotApprovable { .. },
    PersonRequired(_), Invalid { .. }, TooManyTurns { .. }, CallerAtCap { .. },
    AgentDeleteLimit { .. }, Open { .. }, Schema(_), Sql(_),
});
variants!(fetch: FetchError {
    BadUrl { .. }, Scheme { .. }, PrivateAddress { .. }, Resolve { .. }, Network { .. },
    Timeout { .. }, Status { .. }, TooLarge { .. }, TooManyRedirects { .. }, BadRedirect { .. },
    Sink { .. },
});
variants!(library: LibraryError {
    Invalid(_), Io { .. }, InvalidId { .. }, NotFound(_), Inactive(_), IndexCorrupt { .. },
    PackagePath { .. }, PackageTooLarge { .. }, SlugTaken { .. }, PathTaken { .. },
    OutsideRoot { .. }, ToolsUnconfirmed { .. }, SkillChanged { .. },
});
variants!(registry: RegistryError {
    BadRegistry { .. }, Fetch(_), Offline { .. }, Feed { .. }, NotInRegistry { .. },
    Ambiguous { .. }, ShaMismatch { .. }, Integrity { .. }, Archive { .. }, Detail { .. },
    NotASkill { .. }, Library(_), Internal(_),
});
variants!(tool: ToolError {
    UnknownArg { .. }, InvalidArg { .. }, NoSkillInvoked {}, NoSuchFile(_), OutsideSkillDir(_),
    Fetch(_), NoRuntime(_), NoTimeLeft(_), Memory(_), Library(_), Install(_),
    SkillExists { .. }, Io { .. },
});
variants!(turn: TurnError {
    Invalid { .. }, SkillMissing(_), SkillInactive(_), Skills(_), Gate(_), Refused { .. },
    NotAHostTool(_), Tool(_), NoSkillInvoked {}, UnknownScript { .. }, ScriptInvalid { .. },
    ScriptFailed(_), ScriptStopped { .. }, Script(_), Memory(_),
});
variants!(schedule: ScheduleError { Invalid { .. }, Open { .. }, Schema(_), Sql(_) });
variants!(import: ApplyError { Invalid(_), Memory(_), Ledger(_), LearningPaused {} });
variants!(backup: BackupError { Io { .. }, Sqlite { .. } });

fn secret_refused(_: &SecretRefused) -> (&'static str, &'static [&'static str]) {
    ("SecretRefused", &["SecretRefused"])
}

fn user_not_allowed(_: &UserNotAllowed) -> (&'static str, &'static [&'static str]) {
    ("UserNotAllowed", &["UserNotAllowed"])
}

fn person_required(_: &PersonRequired) -> (&'static str, &'static [&'static str]) {
    ("PersonRequired", &["PersonRequired"])
}

/// What a caller gets: the status, the code, the field at fault.
type Expected = (u16, &'static str, Option<&'static str>);

/// The rows walked so far, by error type: the variants they covered.
#[derive(Default)]
struct Table {
    covered: BTreeMap<&'static str, (BTreeSet<&'static str>, &'static [&'static str])>,
    rows: usize,
}

impl Table {
    /// One row: `make` makes the error (each surface takes its own: errors are not
    /// `Clone`), `expected` is what both surfaces must answer.
    fn row<E: Described + std::fmt::Debug>(
        &mut self,
        variant: fn(&E) -> (&'static str, &'static [&'static str]),
        make: impl Fn() -> E,
        expected: Expected,
    ) {
        let error = make();
        let (name, all) = variant(&error);
        let entry = self
            .covered
            .entry(std::any::type_name::<E>())
            .or_insert_with(|| (BTreeSet::new(), all));
        entry.0.insert(name);
        self.rows += 1;
        let row = format!("{error:?}");
        let described = error.describe();

        let rest = ApiError::from(make()).problem();
        assert_eq!(
            (rest.status, rest.code.as_str(), rest.field.as_deref()),
            expected,
            "REST: {row}"
        );
        assert_eq!(
            rest.problem_type,
            format!("urn:engram:problem:{}", rest.code)
        );

        let result = Failure::from(make()).into_result();
        assert_eq!(result.is_error, Some(true), "MCP: {row}");
        let mcp = result.structured_content.expect("structured content");
        assert_eq!(
            (
                mcp["status"].as_u64().and_then(|s| u16::try_from(s).ok()),
                mcp["code"].as_str(),
                mcp.get("field").and_then(Value::as_str),
            ),
            (Some(expected.0), Some(expected.1), expected.2),
            "MCP: {row}"
        );
        assert_eq!(mcp["detail"].as_str(), Some(rest.detail.as_str()), "{row}");

        assert!(
            !rest.detail.contains(PRIVATE),
            "{row}: the detail shows what the host keeps: {}",
            rest.detail
        );
        // The host's own failures, and only they, are logged and answered generically.
        assert_eq!(
            described.is_internal(),
            matches!(
                expected.1,
                "internal" | "insufficient-storage" | "database-unavailable"
            ),
            "{row}"
        );
        if !described.is_internal() {
            assert!(!rest.detail.contains("internal error"), "{row}");
        }
    }

    /// Every variant of every error type walked has a row.
    fn assert_complete(&self) {
        for (error, (seen, all)) in &self.covered {
            let all: BTreeSet<&str> = all.iter().copied().collect();
            let missing: Vec<_> = all.difference(seen).collect();
            assert!(missing.is_empty(), "{error}: no row for {missing:?}");
        }
    }

    /// A memory error, on its own and inside the host tools', the turn service's and
    /// an import's.
    fn memory(&mut self, make: impl Fn() -> MemoryError, expected: Expected) {
        self.row(memory, &make, expected);
        self.row(import, || ApplyError::Memory(make()), expected);
        self.row(tool, || ToolError::Memory(make()), expected);
        self.row(turn, || TurnError::Memory(make()), expected);
        self.row(
            turn,
            || TurnError::Tool(ToolError::Memory(make())),
            expected,
        );
    }

    /// A store error, on its own and inside everything that carries it.
    fn store(&mut self, make: impl Fn() -> StoreError, expected: Expected) {
        self.row(store, &make, expected);
        self.memory(|| MemoryError::Brain(make()), expected);
    }

    fn facts(&mut self, make: impl Fn() -> FactsError, expected: Expected) {
        self.row(facts, &make, expected);
        self.memory(|| MemoryError::Facts(make()), expected);
    }

    fn library(&mut self, make: impl Fn() -> LibraryError, expected: Expected) {
        self.row(library, &make, expected);
        self.registry(|| RegistryError::Library(make()), expected);
        self.row(tool, || ToolError::Library(make()), expected);
        self.row(turn, || TurnError::Skills(make()), expected);
    }

    fn registry(&mut self, make: impl Fn() -> RegistryError, expected: Expected) {
        self.row(registry, &make, expected);
        self.row(tool, || ToolError::Install(make()), expected);
    }

    fn gate(&mut self, make: impl Fn() -> GateError, expected: Expected) {
        self.row(gate, &make, expected);
        self.row(turn, || TurnError::Gate(make()), expected);
    }

    /// A fetch error as `fetch_url` reports it, and as a registry install does.
    fn fetch(&mut self, make: impl Fn() -> FetchError, by_tool: Expected, by_registry: u16) {
        self.row(fetch, &make, by_tool);
        self.row(tool, || ToolError::Fetch(make()), by_tool);
        self.row(turn, || TurnError::Tool(ToolError::Fetch(make())), by_tool);
        self.registry(
            || RegistryError::Fetch(make()),
            (by_registry, by_tool.1, None),
        );
    }

    fn tool(&mut self, make: impl Fn() -> ToolError, expected: Expected) {
        self.row(tool, &make, expected);
        self.row(turn, || TurnError::Tool(make()), expected);
    }
}

fn private_path() -> PathBuf {
    PathBuf::from(PRIVATE).join("memory")
}

fn io(kind: std::io::ErrorKind) -> std::io::Error {
    std::io::Error::new(kind, format!("{PRIVATE}: failed"))
}

fn disk_full() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
        Some("database or disk is full".into()),
    )
}

fn sql_failure() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
        Some(format!("{PRIVATE}/second-brain.db is malformed")),
    )
}

fn schema_too_new() -> SchemaError {
    SchemaError::TooNew {
        what: "the database",
        found: 99,
        supported: 4,
    }
}

const INTERNAL: Expected = (500, "internal", None);
const DISK_FULL: Expected = (507, "insufficient-storage", None);
const UNAVAILABLE: Expected = (503, "database-unavailable", None);

#[test]
fn every_variant_of_every_service_error_reaches_rest_and_mcp_alike() {
    let mut t = Table::default();

    // ---- the Second Brain and the fact store, inside the memory service ----
    t.store(
        || StoreError::NotFound("mem_x".into()),
        (404, "not-found", None),
    );
    t.store(
        || StoreError::NoConversation("c1".into()),
        (404, "not-found", None),
    );
    t.store(
        || StoreError::OtherUsers {
            what: "conversation",
            id: "c1".into(),
        },
        (409, "owned-by-another-user", None),
    );
    t.store(
        || StoreError::Invalid {
            field: "conversation_id",
            reason: "must be 1 to 128 characters".into(),
        },
        (422, "invalid-field", Some("conversation_id")),
    );
    let secret = || SecretRefused {
        kinds: "password".into(),
    };
    t.row(
        secret_refused,
        secret,
        (422, "secret-refused", Some("summary")),
    );
    t.store(
        || StoreError::SecretRefused(secret()),
        (422, "secret-refused", Some("summary")),
    );
    t.store(
        || StoreError::Import {
            line: 3,
            reason: "not JSON".into(),
        },
        (422, "invalid-import", None),
    );
    t.store(
        || StoreError::Dangling("a link names a missing person".into()),
        (409, "unknown-reference", None),
    );
    t.store(
        || StoreError::Open {
            path: private_path(),
            reason: "permission denied".into(),
        },
        INTERNAL,
    );
    t.store(|| StoreError::Schema(schema_too_new()), INTERNAL);
    t.store(|| StoreError::index_failure(sql_failure()), INTERNAL);
    t.store(
        || StoreError::Encoder(crate::embed::encoder::EncoderError::Run(PRIVATE.into())),
        INTERNAL,
    );
    t.store(|| StoreError::Sqlite(disk_full()), DISK_FULL);
    t.store(|| StoreError::Sqlite(sql_failure()), INTERNAL);
    t.store(
        || StoreError::Sql(crate::sql::SqlError::Sqlite(disk_full())),
        DISK_FULL,
    );
    t.store(
        || StoreError::Sql(crate::sql::SqlError::Unavailable(PRIVATE.into())),
        UNAVAILABLE,
    );
    t.store(|| StoreError::SqliteOnly, INTERNAL);
    t.store(|| StoreError::GroupFailed(PRIVATE.into()), INTERNAL);

    t.facts(
        || FactsError::NotFound("mem_x".into()),
        (404, "not-found", None),
    );
    t.facts(
        || FactsError::Invalid {
            field: "summary",
            reason: "must not be empty".into(),
        },
        (422, "invalid-field", Some("summary")),
    );
    t.facts(
        || FactsError::SecretRefused(secret()),
        (422, "secret-refused", Some("summary")),
    );
    t.facts(
        || FactsError::Io {
            path: private_path(),
            source: io(std::io::ErrorKind::StorageFull),
        },
        DISK_FULL,
    );
    t.facts(
        || FactsError::Io {
            path: private_path(),
            source: io(std::io::ErrorKind::PermissionDenied),
        },
        INTERNAL,
    );
    t.memory(
        || MemoryError::BrainDisabled {
            reason: "memory.secondBrain.enabled is false".into(),
        },
        (409, "brain-disabled", None),
    );
    t.memory(
        || MemoryError::Lane(BackgroundError::Panicked(PRIVATE.into())),
        INTERNAL,
    );

    // ---- the skills library and the registry ----
    t.library(
        || LibraryError::Invalid(SkillError::NameMissing),
        (422, "name-missing", None),
    );
    t.library(
        || {
            LibraryError::Invalid(SkillError::MissingFile {
                dir: format!("{PRIVATE}/skills/tea"),
            })
        },
        (422, "skill-md-missing", None),
    );
    t.library(
        || LibraryError::Io {
            path: private_path(),
            source: io(std::io::ErrorKind::PermissionDenied),
        },
        INTERNAL,
    );
    t.library(
        || LibraryError::Io {
            path: private_path(),
            source: io(std::io::ErrorKind::StorageFull),
        },
        DISK_FULL,
    );
    t.library(
        || LibraryError::InvalidId {
            id: "Bad Name".into(),
            reason: "not a slug".into(),
        },
        (422, "invalid-id", Some("name")),
    );
    t.library(
        || LibraryError::NotFound("tea".into()),
        (404, "not-found", None),
    );
    t.library(
        || LibraryError::Inactive("tea".into()),
        (409, "inactive", None),
    );
    t.library(
        || LibraryError::IndexCorrupt {
            path: private_path(),
            reason: "not JSON".into(),
        },
        (409, "index-corrupt", None),
    );
    t.library(
        || LibraryError::PackagePath {
            path: "../x".into(),
            reason: "leaves the skill".into(),
        },
        (422, "package-path", None),
    );
    t.library(
        || LibraryError::PackageTooLarge {
            reason: "over 8 MiB".into(),
        },
        (422, "package-too-large", None),
    );
    t.library(
        || LibraryError::SlugTaken {
            slug: "tea".into(),
            existing: "cat/tea".into(),
        },
        (409, "slug-taken", None),
    );
    t.library(
        || LibraryError::PathTaken {
            path: private_path(),
        },
        (409, "path-taken", None),
    );
    t.library(
        || LibraryError::OutsideRoot {
            path: private_path(),
        },
        (409, "outside-root", None),
    );
    t.library(
        || LibraryError::ToolsUnconfirmed {
            slug: "tea".into(),
            tools: vec!["fetch_url".into()],
            before: Vec::new(),
        },
        (409, "tools-unconfirmed", None),
    );
    t.library(
        || LibraryError::SkillChanged {
            slug: "tea".into(),
            current: "ab12".into(),
        },
        (409, "skill-changed", None),
    );

    let registry_url = "https://registry.example";
    t.registry(
        || RegistryError::BadRegistry {
            url: "ftp://x".into(),
            reason: "not http(s)".into(),
        },
        (502, "bad-registry-url", None),
    );
    t.registry(
        || RegistryError::Offline {
            registry: registry_url.into(),
            source: FetchError::Network {
                url: registry_url.into(),
                reason: "refused".into(),
            },
        },
        (502, "registry-unreachable", None),
    );
    t.registry(
        || RegistryError::Feed {
            registry: registry_url.into(),
            source: FeedError::TooLarge,
        },
        (502, "feed-invalid", None),
    );
    t.registry(
        || RegistryError::NotInRegistry {
            id: "cat/tea".into(),
            registry: registry_url.into(),
        },
        (404, "not-in-registry", None),
    );
    t.registry(
        || RegistryError::Ambiguous {
            slug: "tea".into(),
            candidates: vec!["a/tea".into(), "b/tea".into()],
        },
        (422, "ambiguous-id", None),
    );
    t.registry(
        || RegistryError::ShaMismatch {
            id: "cat/tea".into(),
            registry: registry_url.into(),
            expected: "aa".into(),
            actual: "bb".into(),
        },
        (502, "sha-mismatch", None),
    );
    t.registry(
        || RegistryError::Integrity {
            id: "cat/tea".into(),
            registry: registry_url.into(),
            reason: "a file differs".into(),
        },
        (502, "integrity-mismatch", None),
    );
    t.registry(
        || RegistryError::Archive {
            id: "cat/tea".into(),
            source: ArchiveError::Invalid("not gzip".into()),
        },
        (502, "archive-invalid", None),
    );
    t.registry(
        || RegistryError::Detail {
            id: "cat/tea".into(),
            reason: "no files".into(),
        },
        (502, "detail-invalid", None),
    );
    t.registry(
        || RegistryError::NotASkill {
            url: "https://example.com/x".into(),
            reason: "no frontmatter".into(),
        },
        (422, "not-a-skill", None),
    );
    t.registry(|| RegistryError::Internal(PRIVATE.into()), INTERNAL);

    // ---- fetches: a URL refused is the request's fault; the far side's is 502,
    // except a bad answer to a registry install, which is the URL's ----
    let url = || "https://example.com/x".to_string();
    t.fetch(
        || FetchError::BadUrl {
            url: "::".into(),
            reason: "relative URL without a base".into(),
        },
        (422, "bad-url", None),
        422,
    );
    t.fetch(
        || FetchError::Scheme { url: url() },
        (422, "url-scheme", None),
        422,
    );
    t.fetch(
        || FetchError::PrivateAddress {
            url: url(),
            host: "example.com".into(),
            addr: [127, 0, 0, 1].into(),
        },
        (422, "private-address", None),
        422,
    );
    t.fetch(
        || FetchError::Resolve {
            url: url(),
            host: "example.com".into(),
            reason: "no such host".into(),
        },
        (502, "unreachable", None),
        502,
    );
    t.fetch(
        || FetchError::Network {
            url: url(),
            reason: "connection refused".into(),
        },
        (502, "unreachable", None),
        502,
    );
    t.fetch(
        || FetchError::Timeout {
            url: url(),
            timeout: std::time::Duration::from_secs(10),
        },
        (502, "timeout", None),
        502,
    );
    t.fetch(
        || FetchError::Status {
            url: url(),
            status: 404,
        },
        (502, "http-status", None),
        502,
    );
    t.fetch(
        || FetchError::TooLarge {
            url: url(),
            limit: 1024,
        },
        (502, "too-large", None),
        422,
    );
    t.fetch(
        || FetchError::TooManyRedirects { url: url() },
        (502, "too-many-redirects", None),
        422,
    );
    t.fetch(
        || FetchError::BadRedirect {
            url: url(),
            reason: "to file:".into(),
        },
        (502, "bad-redirect", None),
        422,
    );
    t.fetch(
        || FetchError::Sink {
            url: url(),
            reason: format!("{PRIVATE}/models/.part: no space left"),
        },
        (500, "internal", None),
        500,
    );

    // ---- the host tools ----
    t.tool(
        || ToolError::UnknownArg {
            field: "args.colour".into(),
        },
        (400, "unknown-field", Some("args.colour")),
    );
    t.tool(
        || ToolError::InvalidArg {
            field: "args.q".into(),
            reason: "must not be empty".into(),
        },
        (422, "invalid-field", Some("args.q")),
    );
    t.tool(
        || ToolError::NoSkillInvoked,
        (409, "no-skill-invoked", None),
    );
    t.tool(
        || ToolError::NoSuchFile("references/x.md".into()),
        (404, "not-found", None),
    );
    t.tool(
        || ToolError::OutsideSkillDir("../../auth-token".into()),
        (403, "outside-skill-dir", None),
    );
    t.tool(
        || ToolError::NoRuntime("fetch_url"),
        (503, "tool-unavailable", None),
    );
    t.tool(
        || ToolError::NoTimeLeft("fetch_url"),
        (504, "no-time-left", None),
    );
    t.tool(
        || ToolError::SkillExists {
            slug: "tea".into(),
            version: Some("1.0.0".into()),
        },
        (409, "already-installed", None),
    );
    t.tool(
        || ToolError::Io {
            context: "reading a skill file",
            source: io(std::io::ErrorKind::PermissionDenied),
        },
        INTERNAL,
    );

    // ---- the gate, inside the turn service ----
    t.gate(
        || GateError::UnknownTurn("turn_x".into()),
        (404, "unknown-turn", None),
    );
    t.gate(
        || GateError::TurnEnded("turn_x".into()),
        (409, "turn-ended", None),
    );
    t.gate(
        || GateError::TurnExpired("turn_x".into()),
        (409, "turn-expired", None),
    );
    t.gate(
        || GateError::UnknownTool("zap".into()),
        (422, "unknown-tool", Some("tool")),
    );
    t.gate(
        || GateError::NotApprovable {
            tool: "fetch_url".into(),
            code: ReasonCode::OperatorDeny,
            reason: "the operator denies it".into(),
        },
        (409, "operator-deny", None),
    );
    let person = || PersonRequired {
        act: PersonAct::Approve,
    };
    t.row(person_required, person, (403, "person-required", None));
    t.gate(
        || GateError::PersonRequired(person()),
        (403, "person-required", None),
    );
    t.gate(
        || GateError::Invalid {
            field: "conversation_id",
            reason: "must be 1 to 128 characters".into(),
        },
        (422, "invalid-field", Some("conversation_id")),
    );
    t.gate(
        || GateError::TooManyTurns { open: 10_000 },
        (503, "too-many-turns", None),
    );
    t.gate(
        || GateError::CallerAtCap {
            caller: "agent".into(),
            cap: 64,
        },
        (429, "too-many-turns", None),
    );
    t.gate(
        || GateError::AgentDeleteLimit {
            per_hour: 20,
            retry_after_secs: 1_800,
        },
        (429, "agent-delete-limit", None),
    );
    t.gate(
        || GateError::Open {
            path: private_path(),
            reason: "permission denied".into(),
        },
        INTERNAL,
    );
    t.gate(|| GateError::Schema(schema_too_new()), INTERNAL);
    t.gate(|| GateError::Sql(sql_failure().into()), INTERNAL);
    t.gate(
        || GateError::Sql(crate::sql::SqlError::Unavailable(PRIVATE.into())),
        UNAVAILABLE,
    );

    // ---- the turn service's own ----
    t.row(
        turn,
        || TurnError::Invalid {
            field: "message",
            reason: "must not be empty".into(),
        },
        (422, "invalid-field", Some("message")),
    );
    t.row(
        turn,
        || TurnError::SkillMissing("tea".into()),
        (404, "not-found", None),
    );
    t.row(
        turn,
        || TurnError::SkillInactive("tea".into()),
        (409, "inactive", None),
    );
    let refused = |verdict, code| {
        move || TurnError::Refused {
            turn_id: Some("turn_x".into()),
            tool: "fetch_url".into(),
            decision: Decision::new(verdict, code, "because"),
        }
    };
    let (deny, ask) = (Verdict::Deny, Verdict::Ask);
    for (made, expected) in [
        (
            refused(deny, ReasonCode::NotInAllowedTools),
            (403, "not-in-allowed-tools", None),
        ),
        (
            refused(ask, ReasonCode::PolicyAsk),
            (403, "approval-required", None),
        ),
        (
            refused(deny, ReasonCode::UnknownTurn),
            (404, "unknown-turn", None),
        ),
        (
            refused(deny, ReasonCode::TurnEnded),
            (409, "turn-ended", None),
        ),
        (
            refused(deny, ReasonCode::TurnExpired),
            (409, "turn-expired", None),
        ),
    ] {
        t.row(turn, made, expected);
    }
    t.row(
        turn,
        || TurnError::NotAHostTool("cd".into()),
        (422, "not-a-host-tool", None),
    );
    t.row(
        turn,
        || TurnError::NoSkillInvoked,
        (409, "no-skill-invoked", None),
    );
    t.row(
        turn,
        || TurnError::UnknownScript {
            skill: "tea".into(),
            name: "brew".into(),
        },
        (404, "unknown-script", None),
    );
    t.row(
        turn,
        || TurnError::ScriptInvalid {
            skill: "tea".into(),
            name: "brew".into(),
            reason: "not a skill-tool component".into(),
        },
        (422, "script-invalid", None),
    );
    t.row(
        turn,
        || TurnError::ScriptFailed("no such file".into()),
        (422, "script-failed", None),
    );
    t.row(
        turn,
        || TurnError::ScriptStopped {
            skill: "tea".into(),
            name: "brew".into(),
            reason: "out of time".into(),
        },
        (422, "script-trapped", None),
    );
    t.row(
        turn,
        || {
            TurnError::Script(PluginError::Io {
                path: private_path(),
                source: io(std::io::ErrorKind::PermissionDenied),
            })
        },
        INTERNAL,
    );

    // ---- schedules, and who may act ----
    t.row(
        schedule,
        || ScheduleError::Invalid {
            field: "every",
            reason: "at least 60".into(),
        },
        (422, "invalid-field", Some("every")),
    );
    t.row(
        schedule,
        || ScheduleError::Open {
            path: private_path(),
            reason: "permission denied".into(),
        },
        INTERNAL,
    );
    t.row(
        schedule,
        || ScheduleError::Schema(schema_too_new()),
        INTERNAL,
    );
    t.row(
        schedule,
        || ScheduleError::Sql(sql_failure().into()),
        INTERNAL,
    );
    t.row(
        schedule,
        || ScheduleError::Sql(crate::sql::SqlError::Unavailable(PRIVATE.into())),
        UNAVAILABLE,
    );
    // ---- imports and backups ----
    t.row(
        import,
        || ApplyError::Invalid(ImportError::new("conversation 3", "no messages")),
        (422, "invalid-import", None),
    );
    t.row(
        import,
        || ApplyError::Ledger(LedgerError::Open(PRIVATE.into())),
        INTERNAL,
    );
    t.row(
        import,
        || ApplyError::LearningPaused,
        (409, "learning-paused", None),
    );
    t.row(
        backup,
        || BackupError::Io {
            path: private_path(),
            source: io(std::io::ErrorKind::StorageFull),
        },
        DISK_FULL,
    );
    t.row(
        backup,
        || BackupError::Io {
            path: private_path(),
            source: io(std::io::ErrorKind::PermissionDenied),
        },
        INTERNAL,
    );
    t.row(
        backup,
        || BackupError::Sqlite {
            path: private_path(),
            source: sql_failure(),
        },
        INTERNAL,
    );
    t.row(
        user_not_allowed,
        || UserNotAllowed {
            user: "mallory".into(),
            allowed: vec!["default".into()],
        },
        (403, "user-not-allowed", None),
    );

    t.assert_complete();
    assert_eq!(t.covered.len(), 15, "error types walked");
    assert!(t.rows > 250, "{} rows", t.rows);
}

#[test]
fn an_argument_of_a_host_tool_is_named_as_the_mcp_tool_names_it() {
    let failure = Failure::from_host_args(ToolError::InvalidArg {
        field: "args.q".into(),
        reason: "must not be empty".into(),
    });
    assert_eq!(
        (
            failure.code,
            failure.field.as_deref(),
            failure.detail.as_str()
        ),
        ("invalid-field", Some("q"), "q: must not be empty")
    );
    let unknown = Failure::from_host_args(ToolError::UnknownArg {
        field: "args.colour".into(),
    });
    assert_eq!(
        (
            unknown.code,
            unknown.field.as_deref(),
            unknown.detail.as_str()
        ),
        ("unknown-field", Some("colour"), "colour: unknown field")
    );
}
