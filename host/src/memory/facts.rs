//! The fallback memory store used when the Second Brain is disabled
//! (`SECOND_BRAIN_ENABLED=false`, `memory.secondBrain.enabled: false`) or its database
//! cannot be opened: plain facts in `{data_dir}/memory/facts.jsonl`, served by add,
//! get, list (newest first), a text-match search and delete. No SQLite, no extraction,
//! no consolidation, no lifecycle.
//!
//! # Record shape
//!
//! Each line is one [`MemoryRecord`] as JSON, the same shape the Second Brain stores and
//! exports, rather than a smaller "fact" struct, because:
//! - the API layer serves one shape for `/api/brain/memory` whether the Second Brain is
//!   on or off (the dashboard's memory browser and the agent's `search_memory` tool do
//!   not need a second rendering);
//! - `add` takes the same [`NewMemory`] as [`super::Brain::add`] and fills the fields the
//!   same way (default scope, confidence and importance by type, evidence `manual`), so
//!   validation is shared ([`super::store::validate_record`]: summary 1..=1000 chars,
//!   detail <= 4000, scores in 0..=1);
//! - when the Second Brain is turned back on, the facts can be moved into SQLite as they
//!   are, ids (`mem_...`) and timestamps included.
//!
//! The lifecycle fields (stale, reinforcements, superseded_by, ...) keep their initial
//! values here: nothing in disabled mode changes them.
//!
//! # Durability
//!
//! - `add` appends one line and fsyncs the file before returning; if the file is new
//!   the directory is fsynced too. An append cut short by a crash leaves a line without
//!   its newline; the next `add` starts a new line first, and readers skip such a line.
//!   A write is acknowledged (`Ok`) only once it is on disk.
//! - `delete` rewrites the file into `facts.jsonl.tmp`, fsyncs it, renames it over the
//!   file and fsyncs the directory: a reader sees the old file or the new one, never a
//!   mix. Lines this store cannot read are kept verbatim (they are not its to drop),
//!   except an over-long line and a torn last line, which are logged and dropped.
//! - Writers (in this process and in others, e.g. the CLI next to `engram serve`) are
//!   serialised by an exclusive lock on `facts.jsonl.lock`, so an append can never land
//!   in a file that a concurrent `delete` is about to replace. Readers take no lock.
//!
//! Every record carries its `user_id` and every call is scoped to one user: a user
//! never sees, finds or deletes another user's facts.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use engram_strategies::analyser;
use engram_strategies::model::MemoryType;

use crate::events::{Event, EventBus, EventKind};
use crate::memory::brain::store::validate_record;
use crate::memory::record::MemoryRecord;
use crate::memory::{Counts, StoreError};
use crate::memory::{NewMemory, SearchResult};
use crate::time::Clock;

/// Longest line read from the file; a longer one is skipped. A record of this store
/// is far smaller (summary <= 1000 chars, detail <= 4000 chars).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Most results a list or a search returns.
pub const MAX_LIMIT: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    #[error("no memory `{0}`")]
    NotFound(String),
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error(transparent)]
    SecretRefused(#[from] crate::memory::SecretRefused),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl crate::described::Described for FactsError {
    fn describe(&self) -> crate::described::Description {
        use crate::described::Description;
        match self {
            FactsError::NotFound(_) => Description::not_found(self.to_string()),
            FactsError::Invalid { field, reason } => Description::invalid_field(*field, reason),
            FactsError::SecretRefused(e) => e.describe(),
            FactsError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull => {
                Description::disk_full("fact store")
            }
            FactsError::Io { .. } => Description::internal("fact store"),
        }
    }
}

/// The JSONL fact store. Opening it creates nothing: the directory and the file are
/// created by the first `add`.
pub struct FactsStore {
    path: PathBuf,
    clock: Arc<dyn Clock>,
    /// Serialises this process's writers; the lock file serialises processes.
    write_lock: Mutex<()>,
    events: EventBus,
    /// Which secrets an add redacts (the Second Brain's rule, `brain/redact.rs`).
    redaction: crate::memory::Redaction,
}

/// One line as read, without its newline.
struct RawLine {
    bytes: Vec<u8>,
    /// Ended with `\n`. Only the last line of the file can lack it: an append cut short.
    terminated: bool,
    /// Longer than [`MAX_LINE_BYTES`]; `bytes` is empty and the rest was skipped.
    too_long: bool,
}

impl FactsStore {
    /// A store over `path` (normally `{data_dir}/memory/facts.jsonl`).
    pub fn new(path: &Path, clock: Arc<dyn Clock>, events: EventBus) -> FactsStore {
        FactsStore {
            path: path.to_path_buf(),
            clock,
            write_lock: Mutex::new(()),
            events,
            redaction: crate::memory::Redaction::default(),
        }
    }

    /// Announces a committed change, as the Second Brain's store does for its history.
    fn announce(&self, kind: EventKind, user: &str, id: &str, change: &str) {
        self.events.publish(Event {
            kind,
            user: user.to_string(),
            data: serde_json::json!({ "id": id, "change": change }),
        });
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a fact for `user` and returns it once it is on disk.
    pub fn add(&self, user: &str, new: NewMemory) -> Result<MemoryRecord, FactsError> {
        let now = self.clock.now_ms();
        let (new, _) = new.redacted(self.redaction.kinds())?;
        let record = new.into_record(user, now);
        validate_record(&record).map_err(|e| match e {
            StoreError::Invalid { field, reason } => FactsError::Invalid { field, reason },
            other => FactsError::Invalid {
                field: "memory",
                reason: other.to_string(),
            },
        })?;
        let mut line = serde_json::to_vec(&record).map_err(|e| FactsError::Invalid {
            field: "memory",
            reason: e.to_string(),
        })?;
        line.push(b'\n');
        if line.len() > MAX_LINE_BYTES {
            return Err(FactsError::Invalid {
                field: "memory",
                reason: format!("record longer than {MAX_LINE_BYTES} bytes"),
            });
        }
        let _guard = self.lock()?;
        self.append(&line)?;
        self.announce(EventKind::MemoryCreated, user, &record.id, "ADD");
        Ok(record)
    }

    /// Which secrets an add redacts.
    pub fn redaction(&self) -> &crate::memory::Redaction {
        &self.redaction
    }

    /// One fact of `user`.
    pub fn get(&self, user: &str, id: &str) -> Result<MemoryRecord, FactsError> {
        let mut found = None;
        self.each_record(|r| {
            if r.user_id == user && r.id == id {
                found = Some(r);
            }
        })?;
        found.ok_or_else(|| FactsError::NotFound(id.to_string()))
    }

    /// The user's facts, newest first (by `created_at`, then by position in the file),
    /// optionally of one type; `limit` is clamped to 1..=[`MAX_LIMIT`].
    pub fn list(
        &self,
        user: &str,
        memory_type: Option<MemoryType>,
        limit: usize,
    ) -> Result<Vec<MemoryRecord>, FactsError> {
        let mut records = Vec::new();
        self.each_record(|r| {
            if r.user_id == user && memory_type.is_none_or(|t| r.memory_type == t) {
                records.push(r);
            }
        })?;
        // Reversed file order is insertion order, newest first; the stable sort keeps
        // it among facts created in the same millisecond.
        records.reverse();
        records.sort_by_key(|r| std::cmp::Reverse(r.created_at));
        records.truncate(limit.clamp(1, MAX_LIMIT));
        Ok(records)
    }

    /// The user's facts by type and by scope.
    pub fn counts(&self, user: &str) -> Result<Counts, FactsError> {
        let mut counts = Counts::default();
        self.each_record(|r| {
            if r.user_id == user {
                counts.add(r.memory_type.as_str(), r.scope.as_str(), 1);
            }
        })?;
        Ok(counts)
    }

    /// Text-match search over the summaries and details of the user's facts,
    /// case-insensitive. A query word matches a word of the fact when they are equal or
    /// share a stem ("running" finds "runs"). Facts are ranked by how many distinct query
    /// words they match, then newest first; facts matching none are left out. Common
    /// function words ("the", "is", ...) are ignored unless the query has nothing else.
    /// `limit` is clamped to 1..=[`MAX_LIMIT`].
    pub fn search(
        &self,
        user: &str,
        text: &str,
        limit: usize,
    ) -> Result<Vec<SearchResult>, FactsError> {
        let terms = query_terms(text);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let mut hits: Vec<(usize, usize, MemoryRecord)> = Vec::new();
        let mut position = 0;
        self.each_record(|r| {
            position += 1;
            if r.user_id != user {
                return;
            }
            let matched = matched_terms(&terms, &r);
            if matched > 0 {
                hits.push((matched, position, r));
            }
        })?;
        hits.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(b.2.created_at.cmp(&a.2.created_at))
                .then(b.1.cmp(&a.1))
        });
        Ok(hits
            .into_iter()
            .take(limit.clamp(1, MAX_LIMIT))
            .map(|(_, _, record)| SearchResult {
                conscious: record.scope.is_conscious(),
                record,
            })
            .collect())
    }

    /// Removes the user's fact `id` for good (the file is rewritten without it).
    pub fn delete(&self, user: &str, id: &str) -> Result<(), FactsError> {
        // No file, no fact; and a delete must not create the directory or lock file.
        if !self.path.exists() {
            return Err(FactsError::NotFound(id.to_string()));
        }
        let _guard = self.lock()?;
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(FactsError::NotFound(id.to_string()));
            }
            Err(e) => return Err(self.io(e)),
        };
        let mut reader = BufReader::new(file);
        let mut kept: Vec<u8> = Vec::new();
        let mut removed = false;
        while let Some(line) = next_line(&mut reader, MAX_LINE_BYTES).map_err(|e| self.io(e))? {
            if line.too_long {
                tracing::warn!(
                    "{}: dropping a line longer than {MAX_LINE_BYTES} bytes",
                    self.path.display()
                );
                continue;
            }
            match serde_json::from_slice::<MemoryRecord>(&line.bytes) {
                Ok(r) if r.user_id == user && r.id == id => {
                    removed = true;
                    continue;
                }
                Ok(_) => {}
                Err(_) if !line.terminated => {
                    tracing::warn!(
                        "{}: dropping an incomplete last line (an append cut short)",
                        self.path.display()
                    );
                    continue;
                }
                Err(e) => tracing::warn!(
                    "{}: keeping a line that is not a memory record: {e}",
                    self.path.display()
                ),
            }
            kept.extend_from_slice(&line.bytes);
            kept.push(b'\n');
        }
        if !removed {
            return Err(FactsError::NotFound(id.to_string()));
        }
        self.replace(&kept)?;
        self.announce(EventKind::MemoryDeleted, user, id, "DELETE");
        Ok(())
    }

    /// Calls `f` with every readable record in file order. A missing file has none.
    fn each_record(&self, mut f: impl FnMut(MemoryRecord)) -> Result<(), FactsError> {
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.io(e)),
        };
        let mut reader = BufReader::new(file);
        let mut number = 0usize;
        while let Some(line) = next_line(&mut reader, MAX_LINE_BYTES).map_err(|e| self.io(e))? {
            number += 1;
            if line.too_long {
                tracing::warn!(
                    "{} line {number}: longer than {MAX_LINE_BYTES} bytes, skipped",
                    self.path.display()
                );
                continue;
            }
            if line.bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<MemoryRecord>(&line.bytes) {
                Ok(record) => f(record),
                // The last line without its newline: an append in progress or cut short.
                Err(_) if !line.terminated => {}
                Err(e) => tracing::warn!(
                    "{} line {number}: not a memory record, skipped: {e}",
                    self.path.display()
                ),
            }
        }
        Ok(())
    }

    /// Appends `line` (which ends with `\n`) and fsyncs. Caller holds the lock.
    fn append(&self, line: &[u8]) -> Result<(), FactsError> {
        let created = !self.path.exists();
        let mut file = open_private(
            OpenOptions::new().read(true).append(true).create(true),
            &self.path,
        )
        .map_err(|e| self.io(e))?;
        let len = file.metadata().map_err(|e| self.io(e))?.len();
        let mut buf = Vec::with_capacity(line.len() + 1);
        if len > 0 {
            // A previous append cut short left a line without its newline: end it, so
            // this record starts a line of its own.
            let mut last = [0u8; 1];
            file.seek(SeekFrom::End(-1)).map_err(|e| self.io(e))?;
            file.read_exact(&mut last).map_err(|e| self.io(e))?;
            if last[0] != b'\n' {
                buf.push(b'\n');
            }
        }
        buf.extend_from_slice(line);
        file.write_all(&buf).map_err(|e| self.io(e))?;
        file.sync_data().map_err(|e| self.io(e))?;
        if created {
            self.sync_dir()?;
        }
        Ok(())
    }

    /// Replaces the file with `contents`, atomically. Caller holds the lock.
    fn replace(&self, contents: &[u8]) -> Result<(), FactsError> {
        let tmp = self.sibling("tmp");
        let result = (|| {
            let mut file = open_private(
                OpenOptions::new().write(true).create(true).truncate(true),
                &tmp,
            )?;
            file.write_all(contents)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(FactsError::Io {
                path: tmp,
                source: e,
            });
        }
        self.sync_dir()
    }

    /// Takes the writers' lock: the in-process mutex, then an exclusive lock on
    /// `facts.jsonl.lock` (released when the returned guard drops). Creates the
    /// directory if needed.
    fn lock(&self) -> Result<(std::sync::MutexGuard<'_, ()>, File), FactsError> {
        // A panic under the lock leaves at worst a torn last line, which is handled.
        let guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.is_dir()
        {
            std::fs::create_dir_all(dir).map_err(|e| FactsError::Io {
                path: dir.to_path_buf(),
                source: e,
            })?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            }
        }
        let lock_path = self.sibling("lock");
        let file = open_private(
            OpenOptions::new().read(true).write(true).create(true),
            &lock_path,
        )
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| FactsError::Io {
            path: lock_path,
            source: e,
        })?;
        Ok((guard, file))
    }

    /// `facts.jsonl.<suffix>` next to the file.
    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".");
        name.push(suffix);
        PathBuf::from(name)
    }

    /// Makes a created or renamed directory entry durable.
    fn sync_dir(&self) -> Result<(), FactsError> {
        #[cfg(unix)]
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| FactsError::Io {
                    path: dir.to_path_buf(),
                    source: e,
                })?;
        }
        Ok(())
    }

    fn io(&self, source: std::io::Error) -> FactsError {
        FactsError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// Opens with mode 0600 when creating (the facts are private to the user).
fn open_private(options: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Reads one line of at most `max` bytes (newline excluded). A longer line is consumed
/// to its end and reported as `too_long`. `None` at the end of the input.
fn next_line(reader: &mut impl BufRead, max: usize) -> std::io::Result<Option<RawLine>> {
    let mut line = RawLine {
        bytes: Vec::new(),
        terminated: false,
        too_long: false,
    };
    let mut read_any = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(read_any.then_some(line));
        }
        read_any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if !line.too_long {
            if line.bytes.len() + chunk.len() > max {
                line.too_long = true;
                line.bytes = Vec::new();
            } else {
                line.bytes.extend_from_slice(chunk);
            }
        }
        let used = newline.map_or(available.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            line.terminated = true;
            return Ok(Some(line));
        }
    }
}

/// A query word and its stem.
struct Term {
    word: String,
    stem: String,
}

/// The distinct words of the query (lower-cased), without function words when
/// anything else is left.
fn query_terms(text: &str) -> Vec<Term> {
    let mut words = analyser::words(text);
    words.sort();
    words.dedup();
    let content: Vec<String> = words
        .iter()
        .filter(|w| !analyser::is_stop_word(w) && !analyser::is_request_phrasing(w))
        .cloned()
        .collect();
    let words = if content.is_empty() { words } else { content };
    words
        .into_iter()
        .map(|word| Term {
            stem: analyser::stem(&word),
            word,
        })
        .collect()
}

/// How many of the terms occur in the record's summary or detail.
fn matched_terms(terms: &[Term], record: &MemoryRecord) -> usize {
    let mut words = analyser::words(&record.summary);
    if let Some(detail) = &record.detail {
        words.extend(analyser::words(detail));
    }
    let stems: Vec<String> = words.iter().map(|w| analyser::stem(w)).collect();
    terms
        .iter()
        .filter(|t| words.contains(&t.word) || stems.contains(&t.stem))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::ManualClock;
    use engram_strategies::model::{Evidence, Scope};

    const START: i64 = 1_790_000_000_000;

    fn store(dir: &Path) -> (FactsStore, ManualClock) {
        let clock = ManualClock::new(START);
        let store = FactsStore::new(
            &dir.join("memory/facts.jsonl"),
            Arc::new(clock.clone()),
            EventBus::default(),
        );
        (store, clock)
    }

    fn summaries(records: &[MemoryRecord]) -> Vec<&str> {
        records.iter().map(|r| r.summary.as_str()).collect()
    }

    #[test]
    fn opening_creates_nothing_and_an_empty_store_reads_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, _) = store(dir.path());
        assert!(facts.list("default", None, 50).expect("list").is_empty());
        assert!(
            facts
                .search("default", "tea", 50)
                .expect("search")
                .is_empty()
        );
        assert!(matches!(
            facts.delete("default", "mem_x"),
            Err(FactsError::NotFound(_))
        ));
        assert!(!dir.path().join("memory").exists());
    }

    #[test]
    fn add_stores_a_manual_record_with_the_type_defaults_and_get_reads_it_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, _) = store(dir.path());
        let added = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Goal, "  User wants to run a marathon "),
            )
            .expect("add");
        assert!(added.id.starts_with("mem_"));
        assert_eq!(added.summary, "User wants to run a marathon");
        assert_eq!(added.scope, Scope::Active);
        assert_eq!(added.evidence, Evidence::Manual);
        assert_eq!(added.created_at, START);
        assert_eq!(facts.get("default", &added.id).expect("get"), added);
        // The file holds exactly one JSON line per fact.
        let text = std::fs::read_to_string(facts.path()).expect("read");
        assert_eq!(text.lines().count(), 1);
        assert!(text.ends_with('\n'));
        // A second store over the same file (another process) sees it.
        let (again, _) = store(dir.path());
        assert_eq!(again.get("default", &added.id).expect("get"), added);
    }

    #[test]
    fn invalid_facts_are_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, _) = store(dir.path());
        for (memory, field) in [
            (NewMemory::new(MemoryType::Preference, "   "), "summary"),
            (
                NewMemory::new(MemoryType::Preference, "x".repeat(1001)),
                "summary",
            ),
            (
                NewMemory {
                    confidence: Some(1.5),
                    ..NewMemory::new(MemoryType::Preference, "User likes tea")
                },
                "confidence",
            ),
            (
                NewMemory {
                    detail: Some("d".repeat(4001)),
                    ..NewMemory::new(MemoryType::Preference, "User likes tea")
                },
                "detail",
            ),
        ] {
            match facts.add("default", memory) {
                Err(FactsError::Invalid { field: got, .. }) => assert_eq!(got, field),
                other => panic!("expected {field} to be refused, got {other:?}"),
            }
        }
        assert!(!facts.path().exists());
        // 1000 characters (multi-byte ones included) is the limit, not over it.
        facts
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "é".repeat(1000)),
            )
            .expect("1000 chars");
    }

    #[test]
    fn list_is_newest_first_limited_and_filtered_by_type() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, clock) = store(dir.path());
        facts
            .add("default", NewMemory::new(MemoryType::Preference, "first"))
            .expect("add");
        clock.advance(1_000);
        facts
            .add("default", NewMemory::new(MemoryType::Goal, "second"))
            .expect("add");
        // Same millisecond: insertion order decides.
        facts
            .add("default", NewMemory::new(MemoryType::Preference, "third"))
            .expect("add");
        let all = facts.list("default", None, 50).expect("list");
        assert_eq!(summaries(&all), ["third", "second", "first"]);
        let two = facts.list("default", None, 2).expect("list");
        assert_eq!(summaries(&two), ["third", "second"]);
        let goals = facts
            .list("default", Some(MemoryType::Goal), 50)
            .expect("list");
        assert_eq!(summaries(&goals), ["second"]);
        // limit 0 is clamped to 1, a huge one to MAX_LIMIT.
        assert_eq!(facts.list("default", None, 0).expect("list").len(), 1);
        assert_eq!(
            facts.list("default", None, usize::MAX).expect("list").len(),
            3
        );
    }

    #[test]
    fn search_is_case_insensitive_and_ranks_by_words_matched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, clock) = store(dir.path());
        let coffee = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes COFFEE"),
            )
            .expect("add");
        clock.advance(1);
        let both = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Habit, "User drinks coffee every Morning"),
            )
            .expect("add");
        clock.advance(1);
        let morning = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Habit, "User runs in the morning"),
            )
            .expect("add");
        clock.advance(1);
        facts
            .add(
                "default",
                NewMemory::new(MemoryType::Project, "User builds a boat"),
            )
            .expect("add");

        let ids = |q: &str| -> Vec<String> {
            facts
                .search("default", q, 50)
                .expect("search")
                .into_iter()
                .map(|r| r.record.id)
                .collect()
        };
        // Two words matched beat one; among equals, newest first.
        assert_eq!(
            ids("coffee in the MORNING"),
            [both.id.clone(), morning.id.clone(), coffee.id.clone()]
        );
        assert_eq!(ids("Coffee"), [both.id.clone(), coffee.id.clone()]);
        // Stems: "running" finds "runs".
        assert_eq!(ids("running"), std::slice::from_ref(&morning.id));
        // No match, an empty query, punctuation only: nothing.
        assert!(ids("tea").is_empty());
        assert!(ids("").is_empty());
        assert!(ids("?!").is_empty());
        // Function words alone still search.
        assert_eq!(ids("the"), std::slice::from_ref(&morning.id));
        // The detail is searched too, and results say their tier.
        let detailed = facts
            .add(
                "default",
                NewMemory {
                    detail: Some("Sourdough, baked on Sundays".into()),
                    ..NewMemory::new(MemoryType::Habit, "User bakes bread")
                },
            )
            .expect("add");
        let found = facts.search("default", "sourdough", 5).expect("search");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].record, detailed);
        assert!(found[0].conscious);
        assert_eq!(facts.search("default", "user", 2).expect("search").len(), 2);
    }

    #[test]
    fn no_call_crosses_users() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, _) = store(dir.path());
        let alice = facts
            .add(
                "alice",
                NewMemory::new(MemoryType::Preference, "User likes tea"),
            )
            .expect("add");
        let bob = facts
            .add(
                "bob",
                NewMemory::new(MemoryType::Preference, "User likes tea too"),
            )
            .expect("add");
        assert_eq!(
            facts.list("alice", None, 50).expect("list"),
            std::slice::from_ref(&alice)
        );
        assert_eq!(
            facts.list("bob", None, 50).expect("list"),
            std::slice::from_ref(&bob)
        );
        let found = facts.search("alice", "tea", 50).expect("search");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].record.id, alice.id);
        assert!(matches!(
            facts.get("alice", &bob.id),
            Err(FactsError::NotFound(_))
        ));
        let before = std::fs::read(facts.path()).expect("read");
        assert!(matches!(
            facts.delete("alice", &bob.id),
            Err(FactsError::NotFound(_))
        ));
        assert_eq!(std::fs::read(facts.path()).expect("read"), before);
        assert_eq!(facts.get("bob", &bob.id).expect("get"), bob);
        assert!(facts.list("carol", None, 50).expect("list").is_empty());
    }

    #[test]
    fn delete_removes_only_that_fact_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, _) = store(dir.path());
        let keep = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes tea"),
            )
            .expect("add");
        let gone = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes cake"),
            )
            .expect("add");
        facts.delete("default", &gone.id).expect("delete");
        assert!(matches!(
            facts.get("default", &gone.id),
            Err(FactsError::NotFound(_))
        ));
        assert!(
            facts
                .search("default", "cake", 5)
                .expect("search")
                .is_empty()
        );
        assert_eq!(
            facts.list("default", None, 50).expect("list"),
            std::slice::from_ref(&keep)
        );
        assert!(matches!(
            facts.delete("default", &gone.id),
            Err(FactsError::NotFound(_))
        ));
        let names: Vec<String> = std::fs::read_dir(dir.path().join("memory"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
        // Adding after a delete appends to the rewritten file.
        let later = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes pie"),
            )
            .expect("add");
        assert_eq!(
            facts.list("default", None, 50).expect("list"),
            [later, keep]
        );
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_the_next_add_starts_a_new_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, _) = store(dir.path());
        let first = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes tea"),
            )
            .expect("add");
        // A crash in the middle of an append: half a record, no newline.
        let mut file = OpenOptions::new()
            .append(true)
            .open(facts.path())
            .expect("open");
        file.write_all(br#"{"id":"mem_torn","user_id":"def"#)
            .expect("write");
        drop(file);
        assert_eq!(
            facts.list("default", None, 50).expect("list"),
            std::slice::from_ref(&first)
        );
        let second = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes cake"),
            )
            .expect("add");
        assert_eq!(
            facts.list("default", None, 50).expect("list"),
            [second.clone(), first.clone()]
        );
        // A delete drops nothing readable; the torn fragment is now a complete (bad)
        // line, which is kept verbatim.
        facts.delete("default", &first.id).expect("delete");
        assert_eq!(facts.list("default", None, 50).expect("list"), [second]);
        let text = std::fs::read_to_string(facts.path()).expect("read");
        assert!(text.contains("mem_torn"));
    }

    #[test]
    fn over_long_and_foreign_lines_are_skipped_without_losing_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, _) = store(dir.path());
        let first = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes tea"),
            )
            .expect("add");
        let mut file = OpenOptions::new()
            .append(true)
            .open(facts.path())
            .expect("open");
        file.write_all(&vec![b'x'; MAX_LINE_BYTES * 3])
            .expect("write");
        file.write_all(b"\nnot json\n\n").expect("write");
        drop(file);
        let second = facts
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes cake"),
            )
            .expect("add");
        assert_eq!(
            facts.list("default", None, 50).expect("list"),
            [second.clone(), first.clone()]
        );
        facts.delete("default", &first.id).expect("delete");
        let text = std::fs::read_to_string(facts.path()).expect("read");
        assert!(text.len() < MAX_LINE_BYTES, "the over-long line is dropped");
        assert!(text.contains("not json"), "a foreign line is kept");
        assert_eq!(facts.list("default", None, 50).expect("list"), [second]);
    }

    #[test]
    fn next_line_bounds_lines_and_reports_the_missing_newline() {
        let input = b"abc\n\nxxxxxxxxxx\ntail";
        let mut reader = BufReader::with_capacity(4, &input[..]);
        let mut lines = Vec::new();
        while let Some(line) = next_line(&mut reader, 5).expect("read") {
            lines.push((
                String::from_utf8(line.bytes).expect("utf-8"),
                line.terminated,
                line.too_long,
            ));
        }
        assert_eq!(
            lines,
            [
                ("abc".to_string(), true, false),
                (String::new(), true, false),
                (String::new(), true, true),
                ("tail".to_string(), false, false),
            ]
        );
    }

    #[test]
    fn concurrent_adds_from_threads_all_land_on_their_own_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (facts, _) = store(dir.path());
        let facts = Arc::new(facts);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let facts = Arc::clone(&facts);
                std::thread::spawn(move || {
                    (0..25)
                        .map(|i| {
                            facts
                                .add(
                                    "default",
                                    NewMemory::new(MemoryType::Episode, format!("event {t} {i}")),
                                )
                                .expect("add")
                                .id
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let ids: Vec<String> = threads
            .into_iter()
            .flat_map(|t| t.join().expect("thread"))
            .collect();
        let listed = facts.list("default", None, 500).expect("list");
        assert_eq!(listed.len(), 100);
        for id in &ids {
            facts
                .get("default", id)
                .expect("every acknowledged add is there");
        }
    }
}
