//! Opening memory: whether it is served by the Second Brain (SQLite) or by the JSONL
//! fact store, decided once at startup (README, "The Second Brain").
//!
//! - `SECOND_BRAIN_ENABLED` set to `false` (also `0`, `no`, `off`; any case), or
//!   `memory.secondBrain.enabled: false` in `{data_dir}/config.yaml`, disables the
//!   Second Brain: either one is enough (the README names both as ways to turn it
//!   off; `true` in one does not override `false` in the other). No SQLite file or
//!   directory is created.
//! - Otherwise the database at `{data_dir}/memory/second-brain/second-brain.db` is
//!   opened; if that fails (corrupt file, unwritable directory), the error is logged
//!   loudly and memory falls back to the fact store, with the reason kept for
//!   `/api/brain/status`. Writes then go to the fact store: none are silently lost.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Memory;
use super::facts::FactsStore;
use crate::config::Config;
use crate::events::EventBus;
use crate::memory::Brain;
use crate::memory::StoreError;
use crate::storage::Storage;
use crate::time::Clock;

/// The environment variable that can turn the Second Brain off.
pub const ENV_VAR: &str = "SECOND_BRAIN_ENABLED";

/// The Second Brain's database, relative to the data directory.
pub fn brain_db_path(data_dir: &Path) -> PathBuf {
    data_dir.join("memory/second-brain/second-brain.db")
}

/// The fallback fact store, relative to the data directory.
pub fn facts_path(data_dir: &Path) -> PathBuf {
    data_dir.join("memory/facts.jsonl")
}

/// What the settings ask for, before anything is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enablement {
    Enabled,
    Disabled { reason: String },
}

/// Decides from the value of `SECOND_BRAIN_ENABLED` (`None` when unset) and the
/// config's `memory.secondBrain.enabled`. An unrecognised environment value is
/// logged and ignored.
pub fn enablement(env: Option<&str>, config_enabled: Option<bool>) -> Enablement {
    if let Some(raw) = env {
        let value = raw.trim().to_ascii_lowercase();
        match value.as_str() {
            "false" | "0" | "no" | "off" => {
                return Enablement::Disabled {
                    reason: format!("disabled by {ENV_VAR}={}", raw.trim()),
                };
            }
            "" | "true" | "1" | "yes" | "on" => {}
            _ => tracing::warn!(
                "{ENV_VAR}={raw:?} is neither true nor false; ignored (the Second Brain stays on unless config.yaml turns it off)"
            ),
        }
    }
    if config_enabled == Some(false) {
        return Enablement::Disabled {
            reason: "disabled by memory.secondBrain.enabled: false in config.yaml".to_string(),
        };
    }
    Enablement::Enabled
}

/// Opens the memory service for `data_dir`. `env` is the value of
/// `SECOND_BRAIN_ENABLED` (passed in so that tests need not touch the process
/// environment; the daemon passes `std::env::var(ENV_VAR).ok()`).
pub fn open_memory(
    data_dir: &Path,
    storage: &Storage,
    env: Option<String>,
    config: &Config,
    clock: Arc<dyn Clock>,
    events: EventBus,
) -> Memory {
    let facts = || FactsStore::new(&facts_path(data_dir), Arc::clone(&clock), events.clone());
    let memory = open_store(data_dir, storage, env, config, &clock, &events, facts);
    // An unknown kind was refused when config.yaml was read; all kinds then.
    memory.set_redaction(config.memory.redact_kinds().unwrap_or_default());
    memory
}

fn open_store(
    data_dir: &Path,
    storage: &Storage,
    env: Option<String>,
    config: &Config,
    clock: &Arc<dyn Clock>,
    events: &EventBus,
    facts: impl Fn() -> FactsStore,
) -> Memory {
    match enablement(env.as_deref(), config.memory.second_brain.enabled) {
        Enablement::Disabled { reason } => {
            tracing::info!("Second Brain {reason}; memory uses the fact store");
            Memory::from_facts(facts(), reason)
        }
        Enablement::Enabled => {
            let (opened, place) = match storage {
                Storage::Files => {
                    let path = brain_db_path(data_dir);
                    let opened = Brain::open(&path, Arc::clone(clock), events.clone());
                    (opened, path.display().to_string())
                }
                Storage::Postgres { url, shown } => {
                    let opened = Brain::postgres(url, Arc::clone(clock), events.clone());
                    (opened, shown.clone())
                }
            };
            match opened {
                Ok(brain) => Memory::from_brain(brain),
                Err(e) => {
                    let detail = match e {
                        StoreError::Open { reason, .. } => reason,
                        other => other.to_string(),
                    };
                    let reason = format!("cannot open {place}: {detail}");
                    tracing::error!(
                        "Second Brain unavailable, {reason}; memory falls back to the fact store at {} until this is fixed",
                        facts_path(data_dir).display()
                    );
                    Memory::from_facts(facts(), reason)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::NewMemory;
    use crate::time::ManualClock;
    use engram_strategies::model::MemoryType;

    fn clock() -> Arc<dyn Clock> {
        Arc::new(ManualClock::new(1_790_000_000_000))
    }

    fn config(enabled: Option<bool>) -> Config {
        let mut config = Config::default();
        config.memory.second_brain.enabled = enabled;
        config
    }

    fn list(limit: usize) -> crate::memory::ListFilter {
        crate::memory::ListFilter {
            conscious: None,
            memory_type: None,
            limit,
            cursor: None,
        }
    }

    fn fact(summary: &str) -> NewMemory {
        NewMemory::new(MemoryType::Preference, summary)
    }

    #[test]
    fn enablement_follows_the_env_and_the_config() {
        let disabled = |reason: &str| Enablement::Disabled {
            reason: reason.to_string(),
        };
        let by_env = "disabled by SECOND_BRAIN_ENABLED=false";
        let by_config = "disabled by memory.secondBrain.enabled: false in config.yaml";
        assert_eq!(enablement(None, None), Enablement::Enabled);
        assert_eq!(enablement(None, Some(true)), Enablement::Enabled);
        assert_eq!(enablement(Some("true"), None), Enablement::Enabled);
        assert_eq!(enablement(Some(""), None), Enablement::Enabled);
        assert_eq!(enablement(Some("false"), None), disabled(by_env));
        assert_eq!(enablement(Some(" false\n"), Some(true)), disabled(by_env));
        assert_eq!(
            enablement(Some("FALSE"), None),
            disabled("disabled by SECOND_BRAIN_ENABLED=FALSE")
        );
        assert_eq!(
            enablement(Some("0"), None),
            disabled("disabled by SECOND_BRAIN_ENABLED=0")
        );
        assert_eq!(enablement(None, Some(false)), disabled(by_config));
        // Either switch turns it off; `true` in one does not override `false` in the
        // other.
        assert_eq!(enablement(Some("true"), Some(false)), disabled(by_config));
        // Garbage is ignored, not read as a switch.
        assert_eq!(enablement(Some("maybe"), None), Enablement::Enabled);
        assert_eq!(enablement(Some("maybe"), Some(false)), disabled(by_config));
    }

    #[test]
    fn enabled_by_default_opens_the_sqlite_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memory = open_memory(
            dir.path(),
            &Storage::Files,
            None,
            &config(None),
            clock(),
            EventBus::default(),
        );
        let brain = memory.brain().expect("the Second Brain");
        assert_eq!(
            brain.store().path(),
            Some(brain_db_path(dir.path()).as_path())
        );
        assert!(brain_db_path(dir.path()).is_file());
        assert_eq!(memory.disabled_reason(), None);
        assert!(!facts_path(dir.path()).exists());
    }

    #[test]
    fn disabled_by_env_creates_no_sqlite_file_and_serves_facts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memory = open_memory(
            dir.path(),
            &Storage::Files,
            Some("false".into()),
            &config(None),
            clock(),
            EventBus::default(),
        );
        assert_eq!(
            memory.disabled_reason(),
            Some("disabled by SECOND_BRAIN_ENABLED=false")
        );
        let facts = &memory;
        // Nothing is created by opening ...
        assert!(!dir.path().join("memory").exists());
        // ... and using the fact store creates its file only.
        let added = facts
            .add("default", fact("User likes tea"))
            .expect("add")
            .record;
        assert_eq!(
            facts.search("default", "tea", 5).expect("search")[0].record,
            added
        );
        facts
            .delete(
                "default",
                &added.id,
                false,
                crate::memory::Forgetter::Person,
            )
            .expect("delete");
        assert!(facts_path(dir.path()).is_file());
        let db = brain_db_path(dir.path());
        assert!(!db.exists());
        assert!(!db.parent().expect("parent").exists());
    }

    #[test]
    fn disabled_by_config_creates_no_sqlite_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let parsed =
            Config::parse("memory:\n  secondBrain:\n    enabled: false\n").expect("config");
        let memory = open_memory(
            dir.path(),
            &Storage::Files,
            Some("true".into()),
            &parsed,
            clock(),
            EventBus::default(),
        );
        assert_eq!(
            memory.disabled_reason(),
            Some("disabled by memory.secondBrain.enabled: false in config.yaml")
        );
        memory.add("default", fact("User likes tea")).expect("add");
        let db = brain_db_path(dir.path());
        assert!(!db.exists());
        assert!(!db.parent().expect("parent").exists());
    }

    #[test]
    fn a_corrupt_database_falls_back_to_facts_and_is_left_untouched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = brain_db_path(dir.path());
        std::fs::create_dir_all(db.parent().expect("parent")).expect("mkdir");
        let garbage: Vec<u8> = (0..16_384u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        std::fs::write(&db, &garbage).expect("write garbage");

        let memory = open_memory(
            dir.path(),
            &Storage::Files,
            None,
            &config(Some(true)),
            clock(),
            EventBus::default(),
        );
        let reason = memory.disabled_reason().expect("fell back").to_string();
        assert!(
            reason.starts_with(&format!("cannot open {}: ", db.display())),
            "{reason}"
        );
        assert!(reason.contains("not a database"), "{reason}");
        // Writes still land somewhere durable ...
        let facts = &memory;
        let added = facts
            .add("default", fact("User likes tea"))
            .expect("add")
            .record;
        assert_eq!(facts.get("default", &added.id).expect("get"), added);
        // ... and the broken database is not "repaired" by overwriting it.
        drop(memory);
        assert_eq!(std::fs::read(&db).expect("read"), garbage);
    }

    #[test]
    fn an_unwritable_location_falls_back_to_facts() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The database's directory is a regular file, so it cannot be created (this
        // holds even when the tests run as root, unlike a read-only directory).
        let db = brain_db_path(dir.path());
        let parent = db.parent().expect("parent");
        std::fs::create_dir_all(parent.parent().expect("memory dir")).expect("mkdir");
        std::fs::write(parent, b"not a directory").expect("write");

        let memory = open_memory(
            dir.path(),
            &Storage::Files,
            None,
            &config(None),
            clock(),
            EventBus::default(),
        );
        let reason = memory.disabled_reason().expect("fell back").to_string();
        assert!(
            reason.starts_with(&format!("cannot open {}: ", db.display())),
            "{reason}"
        );
        let facts = &memory;
        let added = facts
            .add("default", fact("User likes tea"))
            .expect("add")
            .record;
        assert_eq!(
            facts.list("default", &list(5)).expect("list").items,
            [added]
        );
        assert!(parent.is_file());
    }

    #[test]
    fn a_fact_store_that_cannot_be_written_reports_the_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Both the database and the fact store live under `memory/`, here a file.
        std::fs::write(dir.path().join("memory"), b"not a directory").expect("write");
        let memory = open_memory(
            dir.path(),
            &Storage::Files,
            None,
            &config(None),
            clock(),
            EventBus::default(),
        );
        assert!(
            memory
                .disabled_reason()
                .expect("fell back")
                .starts_with("cannot open ")
        );
        let facts = &memory;
        // The write fails loudly instead of being dropped.
        assert!(facts.add("default", fact("User likes tea")).is_err());
        assert!(facts.list("default", &list(5)).is_err());
    }
}
