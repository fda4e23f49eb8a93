//! What every PostgreSQL store of Engram shares (issue 32), as `sqlite.rs` is for the
//! SQLite files: connecting to the server an operator names, and each store's schema
//! versioned with the **same numbering** as its SQLite file, so that "version 9" means
//! the same tables on both backends.
//!
//! A store lives in a PostgreSQL schema of its own (`brain`, `audit`, ...: one
//! database holds them all), created at once at the version its SQLite file had when
//! the PostgreSQL form was written (a server has no history to replay); every later
//! migration is written for both backends. `engram.schema_versions` records each store's
//! version; migrations take an advisory lock, so two daemons or CLIs starting together
//! apply each one once, each in its own transaction.
//!
//! Tenant isolation is the database's too: every table of a store that holds a
//! `user_id` is under row-level security, forced even for its owner. A transaction
//! acts for one person as [`USER_ROLE`] with [`USER_SETTING`] set to that person, and
//! sees and writes that person's rows only, whatever its query forgets; cross-user
//! paths (maintenance, the operator's export) act as [`SYSTEM_ROLE`]. The login role
//! that migrates owns the tables and, forced, sees nothing by itself.

use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

mod copy;

pub use copy::TableCopied;
use postgres::config::{Host, SslMode};
use postgres::{Client, Config, NoTls, Transaction};

pub use crate::sqlite::Migration;

/// The role a transaction acting for one person takes (`SET LOCAL ROLE`).
pub const USER_ROLE: &str = "engram_user";
/// The role of the paths that read or change every person's rows.
pub const SYSTEM_ROLE: &str = "engram_system";
/// The setting a person's transaction names its person in
/// (`set_config('engram.user', $1, true)`).
pub const USER_SETTING: &str = "engram.user";
/// Engram's own schema, for what belongs to no store.
const OWN_SCHEMA: &str = "engram";
/// Each store's version, one row per store.
const VERSIONS: &str = "engram.schema_versions";
/// The advisory lock every migration step holds ("engram" in ASCII).
const MIGRATION_LOCK: i64 = 0x656e_6772_616d;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error("{0}")]
    Url(String),
    #[error("cannot connect to {url}: {}", describe(.error))]
    Connect { url: String, error: postgres::Error },
    #[error(
        "{what} has schema version {found}, newer than this engram supports ({supported}); upgrade engram"
    )]
    TooNew {
        what: &'static str,
        found: i64,
        supported: i64,
    },
    #[error("{what}: {}", describe(.error))]
    Sql {
        what: String,
        error: postgres::Error,
    },
    #[error("copy: {0}")]
    Copy(String),
}

/// The server's own message (and its hint) rather than the client's "db error".
fn describe(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => match db.hint() {
            Some(hint) => format!("{} ({hint})", db.message()),
            None => db.message().to_string(),
        },
        None => error.to_string(),
    }
}

fn sql(what: impl Into<String>) -> impl FnOnce(postgres::Error) -> PgError {
    let what = what.into();
    move |error| PgError::Sql { what, error }
}

/// A store's schema on PostgreSQL.
#[derive(Debug)]
pub struct PgSchema {
    /// For people: "the Second Brain database".
    pub what: &'static str,
    /// The PostgreSQL schema the store's tables live in.
    pub namespace: &'static str,
    /// The version [`PgSchema::create`] stands for: the SQLite file's version when it
    /// was written.
    pub created_at: i64,
    /// The store's tables at [`PgSchema::created_at`], created in one transaction.
    pub create: &'static str,
    /// Migrations after it, numbered from `created_at + 1`.
    pub later: &'static [Migration],
    /// The tables holding a `user_id` column: under row-level security.
    pub user_tables: &'static [&'static str],
}

impl PgSchema {
    pub const fn latest(&self) -> i64 {
        self.created_at + self.later.len() as i64
    }

    /// What migrating from `version` (`None`: nothing created yet) would apply, with
    /// the version each step produces.
    pub fn pending(&self, version: Option<i64>) -> Vec<(i64, &'static str)> {
        let mut steps = Vec::new();
        if version.is_none() {
            steps.push((
                self.created_at,
                "the store's tables, created at this version",
            ));
        }
        let from = version.unwrap_or(self.created_at);
        for (index, migration) in self.later.iter().enumerate() {
            let number = self.created_at + 1 + index as i64;
            if number > from {
                steps.push((number, migration.description));
            }
        }
        steps
    }

    fn step(&self, number: i64) -> &'static str {
        if number == self.created_at {
            self.create
        } else {
            self.later[(number - self.created_at - 1) as usize].sql
        }
    }
}

/// A connection to the server, and the address it was made to (without a password).
pub struct Server {
    client: Client,
    shown: String,
}

/// Connects to `url` (`postgres://user:password@host:port/database` or libpq's
/// `key=value` form). Only a server on this machine is accepted: this release speaks
/// to PostgreSQL without TLS, and would otherwise send the password and every memory
/// in clear across the network.
pub fn connect(url: &str) -> Result<Server, PgError> {
    let config = Config::from_str(url)
        .map_err(|e| PgError::Url(format!("not a PostgreSQL address: {e}")))?;
    let shown = shown(&config);
    let client = connect_with(config)?;
    Ok(Server { client, shown })
}

/// Checks, without connecting, that `url` names a PostgreSQL server this release
/// connects to (one on this machine: see [`connect_with`]); what it names, without a
/// password, for messages.
pub fn check_url(url: &str) -> Result<String, PgError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(PgError::Url(
            "give a postgres://user@host/database address".to_string(),
        ));
    }
    let config = Config::from_str(url)
        .map_err(|e| PgError::Url(format!("not a PostgreSQL address: {e}")))?;
    check(&config)?;
    Ok(shown(&config))
}

/// Connects as `config` says, to a server on this machine only (see [`connect`]).
pub fn connect_with(mut config: Config) -> Result<Client, PgError> {
    check(&config)?;
    let shown = shown(&config);
    config.connect_timeout(CONNECT_TIMEOUT);
    config
        .connect(NoTls)
        .map_err(|error| PgError::Connect { url: shown, error })
}

/// What [`connect_with`] accepts: a server on loopback or a unix socket, no TLS asked.
fn check(config: &Config) -> Result<(), PgError> {
    let shown = shown(config);
    if config.get_ssl_mode() == SslMode::Require {
        return Err(PgError::Url(format!(
            "{shown}: sslmode=require, but this release connects to PostgreSQL without TLS (a server on this machine only)"
        )));
    }
    if config.get_hosts().is_empty() {
        return Err(PgError::Url(format!(
            "{shown}: no host (give host=127.0.0.1 or a unix socket directory)"
        )));
    }
    for host in config.get_hosts() {
        if let Host::Tcp(name) = host
            && !is_loopback(name)
        {
            return Err(PgError::Url(format!(
                "{name}: not this machine; this release connects to PostgreSQL without TLS, so only a server on loopback or a unix socket is accepted"
            )));
        }
    }
    if config.get_hostaddrs().iter().any(|a| !a.is_loopback()) {
        return Err(PgError::Url(format!(
            "{shown}: hostaddr is not a loopback address; this release connects to PostgreSQL without TLS"
        )));
    }
    Ok(())
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `postgres://user@host:port/database`, never the password.
fn shown(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config
        .get_ports()
        .first()
        .map_or(String::new(), |p| format!(":{p}"));
    let user = config.get_user().map_or(String::new(), |u| format!("{u}@"));
    let database = config.get_dbname().unwrap_or_default();
    format!("postgres://{user}{}{port}/{database}", hosts.join(","))
}

impl Server {
    /// Where this connection goes, for people (no password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The store's version on the server; `None` when it was never created there.
    pub fn version(&mut self, schema: &PgSchema) -> Result<Option<i64>, PgError> {
        read_version(&mut self.client, schema)
    }

    /// Applies the store's pending steps, each in its own transaction under the
    /// migration lock, and says what this call applied (another process may have
    /// applied some or all of them meanwhile). A store newer than this release is
    /// refused and left as it is.
    pub fn migrate(&mut self, schema: &PgSchema) -> Result<Applied, PgError> {
        let found = self.version(schema)?;
        check_supported(schema, found)?;
        let mut applied = Applied {
            from: found,
            steps: Vec::new(),
        };
        for (number, description) in schema.pending(found) {
            let mut tx = self
                .client
                .transaction()
                .map_err(sql("cannot begin a transaction"))?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .map_err(sql("cannot take the migration lock"))?;
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {OWN_SCHEMA};
                 CREATE TABLE IF NOT EXISTS {VERSIONS} (
                    store TEXT PRIMARY KEY,
                    version BIGINT NOT NULL,
                    migrated_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )"
            ))
            .map_err(sql(format!("cannot create {VERSIONS}")))?;
            // Another process may have migrated while this one waited for the lock.
            let now = read_version(&mut tx, schema)?;
            check_supported(schema, now)?;
            if now.is_some_and(|v| v >= number) {
                continue;
            }
            if applied.steps.is_empty() {
                applied.from = now;
            }
            let what = format!("{} (migration {number})", schema.what);
            ensure_roles(&mut tx)?;
            let namespace = schema.namespace;
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {namespace}; SET LOCAL search_path TO {namespace}, public"
            ))
            .map_err(sql(what.clone()))?;
            tx.batch_execute(schema.step(number))
                .map_err(sql(what.clone()))?;
            protect(&mut tx, schema).map_err(sql(what.clone()))?;
            tx.execute(
                &format!(
                    "INSERT INTO {VERSIONS} (store, version) VALUES ($1, $2)
                     ON CONFLICT (store) DO UPDATE SET version = $2, migrated_at = now()"
                ),
                &[&namespace, &number],
            )
            .map_err(sql(what.clone()))?;
            tx.commit().map_err(sql(what))?;
            applied.steps.push((number, description));
        }
        Ok(applied)
    }
}

/// What one [`Server::migrate`] applied.
#[derive(Debug)]
pub struct Applied {
    /// The version before the first step applied (`None`: the store was created).
    pub from: Option<i64>,
    /// Each step applied, with the version it produced.
    pub steps: Vec<(i64, &'static str)>,
}

fn check_supported(schema: &PgSchema, found: Option<i64>) -> Result<(), PgError> {
    match found {
        Some(found) if found > schema.latest() => Err(PgError::TooNew {
            what: schema.what,
            found,
            supported: schema.latest(),
        }),
        _ => Ok(()),
    }
}

fn read_version(
    client: &mut impl postgres::GenericClient,
    schema: &PgSchema,
) -> Result<Option<i64>, PgError> {
    let what = format!("cannot read {}'s version", schema.what);
    let exists: bool = client
        .query_one(
            &format!("SELECT to_regclass('{VERSIONS}') IS NOT NULL"),
            &[],
        )
        .map_err(sql(what.clone()))?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let row = client
        .query_opt(
            &format!("SELECT version FROM {VERSIONS} WHERE store = $1"),
            &[&schema.namespace],
        )
        .map_err(sql(what))?;
    Ok(row.map(|r| r.get(0)))
}

/// The two roles, created once per cluster (roles are the cluster's, not a
/// database's), and given to the login role so that its transactions can take them.
fn ensure_roles(tx: &mut Transaction) -> Result<(), PgError> {
    for role in [USER_ROLE, SYSTEM_ROLE] {
        // A concurrent creation from another database of the cluster is no error.
        tx.batch_execute(&format!(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                     CREATE ROLE {role} NOLOGIN;
                 END IF;
             EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
             END $$"
        ))
        .map_err(sql(format!(
            "cannot create the role {role} (the login role needs CREATEROLE, or an administrator creates {role} NOLOGIN)"
        )))?;
    }
    tx.batch_execute(&format!("GRANT {USER_ROLE}, {SYSTEM_ROLE} TO CURRENT_USER"))
        .map_err(sql(format!(
            "cannot give the roles {USER_ROLE} and {SYSTEM_ROLE} to the login role"
        )))
}

/// Grants on the store's tables, and row-level security on its user tables: forced
/// (its owner sees nothing as itself), one person's rows to [`USER_ROLE`] as
/// [`USER_SETTING`] names them, every row to [`SYSTEM_ROLE`]. Run after every step, so a table a migration adds is
/// covered by the same transaction.
fn protect(tx: &mut Transaction, schema: &PgSchema) -> Result<(), postgres::Error> {
    let namespace = schema.namespace;
    let mut statements = format!(
        "GRANT USAGE ON SCHEMA {namespace} TO {USER_ROLE}, {SYSTEM_ROLE};
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {namespace} TO {USER_ROLE}, {SYSTEM_ROLE};
         GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {namespace} TO {USER_ROLE}, {SYSTEM_ROLE};"
    );
    // By `current_user`, the role the transaction took, not by membership: the login
    // role is a member of both (to take them) and must see nothing as itself.
    let allowed = format!(
        "(current_user = '{USER_ROLE}' AND user_id = NULLIF(current_setting('{USER_SETTING}', true), ''))
         OR current_user = '{SYSTEM_ROLE}'"
    );
    for table in schema.user_tables {
        let table = format!("{namespace}.{table}");
        // A table a later step adds is protected by that step.
        let exists: bool = tx
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])?
            .get(0);
        if !exists {
            continue;
        }
        statements.push_str(&format!(
            "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
             ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
             DROP POLICY IF EXISTS by_role ON {table};
             CREATE POLICY by_role ON {table} USING ({allowed}) WITH CHECK ({allowed});"
        ));
    }
    tx.batch_execute(&statements)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: PgSchema = PgSchema {
        what: "a store",
        namespace: "store",
        created_at: 3,
        create: "CREATE TABLE t (user_id TEXT)",
        later: &[
            Migration {
                description: "four",
                sql: "ALTER TABLE t ADD COLUMN a TEXT",
            },
            Migration {
                description: "five",
                sql: "ALTER TABLE t ADD COLUMN b TEXT",
            },
        ],
        user_tables: &["t"],
    };

    #[test]
    fn a_store_is_created_at_its_version_then_migrated_in_order() {
        assert_eq!(SCHEMA.latest(), 5);
        let numbers = |v| -> Vec<i64> { SCHEMA.pending(v).iter().map(|s| s.0).collect() };
        assert_eq!(numbers(None), [3, 4, 5]);
        assert_eq!(numbers(Some(3)), [4, 5]);
        assert_eq!(numbers(Some(5)), Vec::<i64>::new());
        assert_eq!(SCHEMA.step(3), SCHEMA.create);
        assert_eq!(SCHEMA.step(5), "ALTER TABLE t ADD COLUMN b TEXT");
    }

    #[test]
    fn only_a_server_on_this_machine_is_accepted_and_no_password_is_shown() {
        for url in [
            "postgres://u:secret@db.example.com/engram",
            "postgres://u:secret@10.0.0.5:5432/engram",
            "host=db.example.com user=u password=secret",
            "postgres://u:secret@localhost/engram?sslmode=require",
            "host=localhost hostaddr=10.1.1.1 user=u password=secret",
        ] {
            let error = connect(url).err().expect("refused").to_string();
            assert!(!error.contains("secret"), "{url}: {error}");
            assert!(error.contains("TLS"), "{url}: {error}");
        }
        assert!(is_loopback("127.0.0.1") && is_loopback("[::1]") && is_loopback("LOCALHOST"));
        let error = connect("postgres://u:secret@127.0.0.1:1/engram")
            .err()
            .expect("nothing listens on port 1")
            .to_string();
        assert!(
            error.starts_with("cannot connect to postgres://u@127.0.0.1:1/engram"),
            "{error}"
        );
        assert!(!error.contains("secret"), "{error}");
        let error = connect("postgres://[bad")
            .err()
            .expect("refused")
            .to_string();
        assert!(error.starts_with("not a PostgreSQL address"), "{error}");
    }
}
