//! `engram db status | migrate`: the schema version of each database of the data
//! directory, and its pending migrations applied on the operator's word rather than at
//! the daemon's next start. Both run on the files, without a daemon; `migrate` takes
//! the data directory's lock, so it refuses while a daemon (or anything else that opens
//! the databases) holds it. The migrations are the ones opening a database runs
//! (`sqlite::Schema::migrate`), each in its own transaction.
//!
//! Exit codes of `status`: 0 every database is up to date (or not created yet: the
//! first start creates it at the latest version), 4 migrations are pending (`engram db
//! migrate` applies them), 5 a database was written by a newer release (this one
//! cannot open it), 1 a database could not be read. `migrate`: 0 done (or nothing to
//! do), 1 refused or failed (nothing of a failed migration stays applied).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use serde::Serialize;

use crate::lock::DataDirLock;
use crate::paths::DataDir;
use crate::sqlite::Schema;

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Each database's schema version and the migrations this release would apply
    /// (exit 4 when some are pending, 5 when a database is newer than this release)
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Apply the pending migrations (refused while a daemon runs on the data directory)
    Migrate {
        #[arg(long)]
        json: bool,
    },
}

/// Exit code of `status` when migrations are pending.
const EXIT_PENDING: u8 = 4;
/// Exit code of `status` when a database is newer than this release.
const EXIT_NEWER: u8 = 5;

/// One database of the data directory and the schema it is written in.
struct Database {
    name: &'static str,
    path: PathBuf,
    schema: &'static Schema,
}

/// Every SQLite database of a data directory, in the order they are reported.
fn databases(data: &DataDir) -> [Database; 5] {
    [
        Database {
            name: "second-brain",
            path: crate::memory::brain_db_path(data.root()),
            schema: &crate::memory::BRAIN_SCHEMA,
        },
        Database {
            name: "audit",
            path: crate::gate::audit_path(data),
            schema: &crate::gate::AUDIT_SCHEMA,
        },
        Database {
            name: "schedules",
            path: data.schedules_file(),
            schema: &crate::schedule::schema::SCHEMA,
        },
        Database {
            name: "imports",
            path: data.imports_file(),
            schema: &crate::memory::import::ledger::SCHEMA,
        },
        Database {
            name: "plugins-kv",
            path: data.plugin_kv_file(),
            schema: &crate::runtime::KV_SCHEMA,
        },
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum State {
    /// Not created yet: the first open creates it at the latest version.
    Absent,
    Current,
    Pending,
    /// Written by a newer release: this one refuses to open it.
    Newer,
}

#[derive(Debug, Serialize)]
struct PendingMigration {
    version: i64,
    description: &'static str,
}

/// What `status --json` prints for each database (a stable shape).
#[derive(Debug, Serialize)]
struct DatabaseStatus {
    name: &'static str,
    file: String,
    state: State,
    /// `None` when the file does not exist.
    version: Option<i64>,
    latest: i64,
    pending: Vec<PendingMigration>,
}

fn status_of(database: &Database) -> anyhow::Result<DatabaseStatus> {
    let version = crate::sqlite::read_schema_version(&database.path)
        .with_context(|| format!("cannot read {}", database.path.display()))?;
    let latest = database.schema.latest();
    let (state, pending) = match version {
        None => (State::Absent, Vec::new()),
        Some(v) if v > latest => (State::Newer, Vec::new()),
        Some(v) => {
            let pending: Vec<PendingMigration> = database
                .schema
                .pending(v)
                .map(|(version, migration)| PendingMigration {
                    version,
                    description: migration.description,
                })
                .collect();
            let state = if pending.is_empty() {
                State::Current
            } else {
                State::Pending
            };
            (state, pending)
        }
    };
    Ok(DatabaseStatus {
        name: database.name,
        file: database.path.display().to_string(),
        state,
        version,
        latest,
        pending,
    })
}

pub fn run(data: DataDir, command: DbCommand) -> anyhow::Result<ExitCode> {
    match command {
        DbCommand::Status { json } => status(&data, json),
        DbCommand::Migrate { json } => migrate(&data, json),
    }
}

fn status(data: &DataDir, json: bool) -> anyhow::Result<ExitCode> {
    let statuses = databases(data)
        .iter()
        .map(status_of)
        .collect::<anyhow::Result<Vec<_>>>()?;
    let count = |state| statuses.iter().filter(|s| s.state == state).count();
    let (pending, newer) = (count(State::Pending), count(State::Newer));
    if json {
        print_json(&serde_json::json!({
            "databases": statuses,
            "pending": pending,
            "newer": newer,
        }))?;
    } else {
        for status in &statuses {
            println!("{}: {}", status.name, status.file);
            println!("  {}", describe(status));
            for migration in &status.pending {
                println!("  {:>4}  {}", migration.version, migration.description);
            }
        }
        if pending > 0 && newer == 0 {
            println!("`engram db migrate` applies the pending migrations");
        }
    }
    Ok(if newer > 0 {
        ExitCode::from(EXIT_NEWER)
    } else if pending > 0 {
        ExitCode::from(EXIT_PENDING)
    } else {
        ExitCode::SUCCESS
    })
}

/// One line on a database's state, for a person.
fn describe(status: &DatabaseStatus) -> String {
    let latest = status.latest;
    let version = status.version.unwrap_or_default();
    match status.state {
        State::Absent => {
            format!("not created yet (the first start creates it at version {latest})")
        }
        State::Current => format!("version {version}, up to date"),
        State::Pending => format!(
            "version {version} of {latest}: {} migration(s) pending",
            status.pending.len()
        ),
        State::Newer => format!(
            "version {version}, newer than this release knows ({latest}): written by a newer engram, which this one cannot open; upgrade engram"
        ),
    }
}

/// What `migrate --json` prints for each database it changed.
#[derive(Debug, Serialize)]
struct Migrated {
    name: &'static str,
    file: String,
    from: i64,
    to: i64,
    applied: Vec<PendingMigration>,
}

fn migrate(data: &DataDir, json: bool) -> anyhow::Result<ExitCode> {
    // Before any database is opened: a daemon running on this directory keeps its
    // databases to itself.
    let _lock = DataDirLock::acquire(data.root(), "db migrate")?;
    let databases = databases(data);
    let statuses = databases
        .iter()
        .map(status_of)
        .collect::<anyhow::Result<Vec<_>>>()?;
    // All or nothing on this count: no database is touched when one cannot be opened.
    if let Some(newer) = statuses.iter().find(|s| s.state == State::Newer) {
        anyhow::bail!(
            "{} ({}) has schema version {}, newer than this engram supports ({}): it was written by a newer release; upgrade engram. Nothing was migrated.",
            newer.name,
            newer.file,
            newer.version.unwrap_or_default(),
            newer.latest
        );
    }
    let mut migrated = Vec::new();
    for (database, status) in databases.iter().zip(statuses) {
        let (State::Pending, Some(from)) = (status.state, status.version) else {
            continue;
        };
        let file = database.path.display().to_string();
        let mut conn = crate::sqlite::open_wal(&database.path, "FULL")
            .map_err(|e| anyhow::anyhow!("cannot open {file}: {e}"))?;
        if let Err(error) = database.schema.migrate(&mut conn) {
            let now = crate::sqlite::schema_version(&conn).unwrap_or(from);
            let failed = database
                .schema
                .pending(now)
                .next()
                .map_or(String::new(), |(n, m)| {
                    format!(" migration {n} ({})", m.description)
                });
            anyhow::bail!(
                "{} ({file}):{failed} failed: {error}; the database stays at version {now}, with nothing of the failed migration applied",
                database.name
            );
        }
        migrated.push(Migrated {
            name: database.name,
            file,
            from,
            to: database.schema.latest(),
            applied: status.pending,
        });
    }
    if json {
        print_json(&serde_json::json!({ "migrated": migrated }))?;
    } else if migrated.is_empty() {
        println!("nothing to migrate: every database is up to date");
    } else {
        for m in &migrated {
            println!("{}: {}: version {} -> {}", m.name, m.file, m.from, m.to);
            for migration in &m.applied {
                println!("  {:>4}  {}", migration.version, migration.description);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
