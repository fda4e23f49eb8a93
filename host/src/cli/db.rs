//! `engram db status | migrate`: the schema version of each database of the data
//! directory, and its pending migrations applied on the operator's word rather than at
//! the daemon's next start. Both run on the files, without a daemon; `migrate` takes
//! the data directory's lock, so it refuses while a daemon (or anything else that opens
//! the databases) holds it. The migrations are the ones opening a database runs
//! (`sqlite::Schema::migrate`), each in its own transaction.
//!
//! With `--url postgres://...` both run on a PostgreSQL database instead (issue 32, in
//! progress: the daemon itself still serves from SQLite): each store in a schema of its
//! own, versioned with the SQLite files' numbering; `migrate` creates what is absent,
//! and a server reached by two `migrate`s at once applies each migration once.
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
use crate::pg::{PgSchema, Server};
use crate::sqlite::Schema;

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Each database's schema version and the migrations this release would apply
    /// (exit 4 when some are pending, 5 when a database is newer than this release)
    Status {
        #[arg(long)]
        json: bool,
        /// A PostgreSQL database on this machine (postgres://user@127.0.0.1:5432/engram)
        /// rather than the data directory's files
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Apply the pending migrations (refused while a daemon runs on the data directory);
    /// with --url, create or migrate the stores on a PostgreSQL database
    Migrate {
        #[arg(long)]
        json: bool,
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Copy an install's SQLite stores into an empty PostgreSQL database, every row,
    /// compared table by table before it commits (refused while a daemon runs on it)
    Copy {
        /// The data directory to copy (default: this one)
        #[arg(long, value_name = "DIR")]
        from: Option<PathBuf>,
        /// The PostgreSQL database on this machine (postgres://user@127.0.0.1/engram)
        #[arg(long, value_name = "URL")]
        to: String,
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
    /// The same store on PostgreSQL.
    pg: &'static PgSchema,
}

/// Every SQLite database of a data directory, in the order they are reported.
fn databases(data: &DataDir) -> [Database; 5] {
    [
        Database {
            name: "second-brain",
            path: crate::memory::brain_db_path(data.root()),
            schema: &crate::memory::BRAIN_SCHEMA,
            pg: &crate::memory::BRAIN_PG_SCHEMA,
        },
        Database {
            name: "audit",
            path: crate::gate::audit_path(data),
            schema: &crate::gate::AUDIT_SCHEMA,
            pg: &crate::gate::AUDIT_PG_SCHEMA,
        },
        Database {
            name: "schedules",
            path: data.schedules_file(),
            schema: &crate::schedule::schema::SCHEMA,
            pg: &crate::schedule::schema::PG_SCHEMA,
        },
        Database {
            name: "imports",
            path: data.imports_file(),
            schema: &crate::memory::import::ledger::SCHEMA,
            pg: &crate::memory::import::ledger::PG_SCHEMA,
        },
        Database {
            name: "plugins-kv",
            path: data.plugin_kv_file(),
            schema: &crate::runtime::KV_SCHEMA,
            pg: &crate::runtime::KV_PG_SCHEMA,
        },
    ]
}

/// Every store on a PostgreSQL database: the data directory's, and those only a team's
/// database has (the installed skills and plugins every daemon shares; on SQLite the
/// data directory itself is their record).
fn server_stores(data: &DataDir) -> Vec<(&'static str, &'static PgSchema)> {
    databases(data)
        .iter()
        .map(|d| (d.name, d.pg))
        .chain([("installs", &crate::installs::PG_SCHEMA)])
        .collect()
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

/// Where a store is, as `--json` names it: `"file"` or `"schema"` (with the database's
/// address, password left out).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum Place {
    File {
        file: String,
    },
    Schema {
        database: String,
        schema: &'static str,
    },
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::File { file } => f.write_str(file),
            Place::Schema { database, schema } => write!(f, "{database}, schema {schema}"),
        }
    }
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
    /// Where the store is: a file of the data directory, or a PostgreSQL schema.
    #[serde(flatten)]
    place: Place,
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
        place: Place::File {
            file: database.path.display().to_string(),
        },
        state,
        version,
        latest,
        pending,
    })
}

pub fn run(data: DataDir, command: DbCommand) -> anyhow::Result<ExitCode> {
    match command {
        DbCommand::Status { json, url: None } => status(&data, json),
        DbCommand::Migrate { json, url: None } => migrate(&data, json),
        DbCommand::Status {
            json,
            url: Some(url),
        } => status_on_server(&data, &url, json),
        DbCommand::Migrate {
            json,
            url: Some(url),
        } => migrate_on_server(&data, &url, json),
        DbCommand::Copy { from, to, json } => {
            copy(&from.map(DataDir::new).unwrap_or(data), &to, json)
        }
    }
}

fn status(data: &DataDir, json: bool) -> anyhow::Result<ExitCode> {
    let statuses = databases(data)
        .iter()
        .map(status_of)
        .collect::<anyhow::Result<Vec<_>>>()?;
    report_status(&statuses, json)
}

/// Each store's state on the PostgreSQL database at `url`.
fn status_on_server(data: &DataDir, url: &str, json: bool) -> anyhow::Result<ExitCode> {
    let mut server = crate::pg::connect(url)?;
    let statuses = server_stores(data)
        .into_iter()
        .map(|(name, schema)| server_status_of(&mut server, name, schema))
        .collect::<anyhow::Result<Vec<_>>>()?;
    report_status(&statuses, json)
}

fn server_status_of(
    server: &mut Server,
    name: &'static str,
    schema: &'static PgSchema,
) -> anyhow::Result<DatabaseStatus> {
    let version = server.version(schema)?;
    let latest = schema.latest();
    let pending: Vec<PendingMigration> = schema
        .pending(version)
        .into_iter()
        .map(|(version, description)| PendingMigration {
            version,
            description,
        })
        .collect();
    let state = match version {
        None => State::Absent,
        Some(v) if v > latest => State::Newer,
        Some(_) if pending.is_empty() => State::Current,
        Some(_) => State::Pending,
    };
    Ok(DatabaseStatus {
        name,
        place: Place::Schema {
            database: server.shown().to_string(),
            schema: schema.namespace,
        },
        state,
        version,
        latest,
        pending,
    })
}

fn report_status(statuses: &[DatabaseStatus], json: bool) -> anyhow::Result<ExitCode> {
    let count = |state| statuses.iter().filter(|s| s.state == state).count();
    let (pending, newer) = (count(State::Pending), count(State::Newer));
    if json {
        print_json(&serde_json::json!({
            "databases": statuses,
            "pending": pending,
            "newer": newer,
        }))?;
    } else {
        for status in statuses {
            println!("{}: {}", status.name, status.place);
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
        State::Absent => match status.place {
            Place::File { .. } => {
                format!("not created yet (the first start creates it at version {latest})")
            }
            Place::Schema { .. } => {
                format!(
                    "not created yet (`engram db migrate --url` creates it at version {latest})"
                )
            }
        },
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

/// All or nothing: no store is touched while one was written by a newer release.
fn refuse_newer(statuses: &[DatabaseStatus], done: &str) -> anyhow::Result<()> {
    match statuses.iter().find(|s| s.state == State::Newer) {
        Some(newer) => anyhow::bail!(
            "{} ({}) has schema version {}, newer than this engram supports ({}): it was written by a newer release; upgrade engram. Nothing was {done}.",
            newer.name,
            newer.place,
            newer.version.unwrap_or_default(),
            newer.latest
        ),
        None => Ok(()),
    }
}

/// What `migrate --json` prints for each database it changed.
#[derive(Debug, Serialize)]
struct Migrated {
    name: &'static str,
    #[serde(flatten)]
    place: Place,
    /// `None`: created by this migrate (PostgreSQL only: a file is created by the
    /// daemon's first start).
    from: Option<i64>,
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
    refuse_newer(&statuses, "migrated")?;
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
            place: Place::File { file },
            from: Some(from),
            to: database.schema.latest(),
            applied: status.pending,
        });
    }
    report_migrated(&migrated, json)
}

/// Creates or migrates every store on the PostgreSQL database at `url`. A store newer
/// than this release stops it before anything is changed; a failed migration leaves
/// its store at the version before it (each migration is one transaction).
fn migrate_on_server(data: &DataDir, url: &str, json: bool) -> anyhow::Result<ExitCode> {
    let mut server = crate::pg::connect(url)?;
    let stores = server_stores(data);
    let statuses = stores
        .iter()
        .map(|(name, schema)| server_status_of(&mut server, name, schema))
        .collect::<anyhow::Result<Vec<_>>>()?;
    refuse_newer(&statuses, "migrated")?;
    let mut migrated = Vec::new();
    for ((name, schema), status) in stores.into_iter().zip(statuses) {
        if status.pending.is_empty() {
            continue;
        }
        // Another migrate may apply some meanwhile: this one reports what it applied.
        let applied = server.migrate(schema)?;
        if applied.steps.is_empty() {
            continue;
        }
        migrated.push(Migrated {
            name,
            place: status.place,
            from: applied.from,
            to: schema.latest(),
            applied: applied
                .steps
                .into_iter()
                .map(|(version, description)| PendingMigration {
                    version,
                    description,
                })
                .collect(),
        });
    }
    report_migrated(&migrated, json)
}

fn report_migrated(migrated: &[Migrated], json: bool) -> anyhow::Result<ExitCode> {
    if json {
        print_json(&serde_json::json!({ "migrated": migrated }))?;
    } else if migrated.is_empty() {
        println!("nothing to migrate: every database is up to date");
    } else {
        for m in migrated {
            match m.from {
                Some(from) => println!("{}: {}: version {from} -> {}", m.name, m.place, m.to),
                None => println!("{}: {}: created at version {}", m.name, m.place, m.to),
            }
            for migration in &m.applied {
                println!("  {:>4}  {}", migration.version, migration.description);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `copy --json` prints for each store it copied.
#[derive(Debug, Serialize)]
struct StoreCopied {
    name: &'static str,
    file: String,
    schema: &'static str,
    tables: Vec<crate::pg::TableCopied>,
}

/// Copies every store of `data` into the empty stores of the database at `to`, after
/// migrating (creating) them there; all of it in one transaction on the server.
fn copy(data: &DataDir, to: &str, json: bool) -> anyhow::Result<ExitCode> {
    // No daemon writes while the rows are read: the copy is one moment of the install.
    let _lock = DataDirLock::acquire(data.root(), "db copy")?;
    let databases = databases(data);
    let mut sources = Vec::new();
    for database in &databases {
        let status = status_of(database)?;
        match status.state {
            State::Absent => continue,
            State::Current => {}
            // The tables on both sides are the same at the same version only.
            State::Pending => anyhow::bail!(
                "{} ({}) is at version {} of {}: run `engram db migrate` first. Nothing was copied.",
                database.name,
                status.place,
                status.version.unwrap_or_default(),
                status.latest
            ),
            State::Newer => refuse_newer(std::slice::from_ref(&status), "copied")?,
        }
        let conn = rusqlite::Connection::open_with_flags(
            &database.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .with_context(|| format!("cannot open {}", database.path.display()))?;
        sources.push((database, conn));
    }
    let mut server = crate::pg::connect(to)?;
    for database in &databases {
        server.migrate(database.pg)?;
    }
    let stores: Vec<(&PgSchema, &rusqlite::Connection)> =
        sources.iter().map(|(d, conn)| (d.pg, conn)).collect();
    let copied = server.copy_from_sqlite(&stores)?;
    // The transcript's index on PostgreSQL is the host's to write, from the copied
    // messages, after the copy has committed: it indexes what has no postings, so a
    // failure leaves the rest for the next call.
    crate::memory::index_copied_transcript(to).map_err(|e| {
        anyhow::anyhow!(
            "the rows are copied, but the transcript's search index was not written: {e}"
        )
    })?;
    let report: Vec<StoreCopied> = sources
        .iter()
        .zip(copied)
        .map(|((database, _), tables)| StoreCopied {
            name: database.name,
            file: database.path.display().to_string(),
            schema: database.pg.namespace,
            tables,
        })
        .collect();
    if json {
        print_json(&serde_json::json!({ "to": server.shown(), "copied": report }))?;
    } else {
        for store in &report {
            let rows: u64 = store.tables.iter().map(|t| t.rows).sum();
            println!(
                "{}: {} -> {}, schema {}: {rows} rows in {} tables, each compared",
                store.name,
                store.file,
                server.shown(),
                store.schema,
                store.tables.len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One numbering: a migration written for one backend only fails here.
    #[test]
    fn every_store_has_the_same_version_on_both_backends() {
        let data = DataDir::new(PathBuf::from("/nonexistent"));
        for database in databases(&data) {
            assert_eq!(
                database.pg.latest(),
                database.schema.latest(),
                "{}: PostgreSQL at {}, SQLite at {}",
                database.name,
                database.pg.latest(),
                database.schema.latest()
            );
            assert_eq!(database.pg.what, database.schema.what, "{}", database.name);
        }
    }
}
