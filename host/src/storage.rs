//! Where the daemon keeps its databases, chosen once when it starts: the SQLite files
//! of its data directory (the default, nothing to set up), or one PostgreSQL database
//! that several daemons serving a team share (issue 32). On PostgreSQL the Second
//! Brain, the plugins' key-value store, the gate's audit log, the schedules and the
//! import ledger all live in that database, each in a schema of its own (`pg/`);
//! skills, plugins, models and `config.yaml` stay in each daemon's data directory.
//!
//! `ENGRAM_DATABASE_URL` wins over `storage.url` in `config.yaml`, so that a
//! password need not be written into a file (an empty value is unset).

use crate::config::Config;

/// The environment variable naming the PostgreSQL database.
pub const ENV_VAR: &str = "ENGRAM_DATABASE_URL";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// The SQLite files of the data directory.
    Files,
    /// The PostgreSQL database at `url`; `shown` names it without its password.
    Postgres { url: String, shown: String },
}

#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {reason}")]
pub struct StorageError {
    /// Where the address came from: the variable or the configuration key.
    source_name: &'static str,
    reason: String,
}

impl Storage {
    /// From `ENGRAM_DATABASE_URL`'s value (`env`) and `storage.url`. An address this
    /// release cannot use (not PostgreSQL's, or a server off this machine, which it
    /// would reach without TLS) is an error naming where it came from: the daemon does
    /// not start on the SQLite files instead, which other daemons would not see.
    pub fn choose(env: Option<&str>, config: &Config) -> Result<Storage, StorageError> {
        let (source_name, url) = match env.map(str::trim).filter(|v| !v.is_empty()) {
            Some(url) => (ENV_VAR, url),
            None => match config.storage.url.as_deref() {
                Some(url) => ("storage.url", url),
                None => return Ok(Storage::Files),
            },
        };
        let shown = crate::pg::check_url(url).map_err(|e| StorageError {
            source_name,
            reason: e.to_string(),
        })?;
        Ok(Storage::Postgres {
            url: url.to_string(),
            shown,
        })
    }

    /// The PostgreSQL database's address, if that is where the databases are.
    pub fn database_url(&self) -> Option<&str> {
        match self {
            Storage::Files => None,
            Storage::Postgres { url, .. } => Some(url),
        }
    }

    /// `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self {
            Storage::Files => "sqlite",
            Storage::Postgres { .. } => "postgres",
        }
    }

    /// For the log: `sqlite` or the server, without a password.
    pub fn describe(&self) -> String {
        match self {
            Storage::Files => "sqlite (the data directory's files)".to_string(),
            Storage::Postgres { shown, .. } => format!("postgres {shown}"),
        }
    }
}

/// `url` with the password of its `user:password@` part, if any, replaced by `mask`.
pub fn without_password(url: &str, mask: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((credentials, after)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:{mask}@{after}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: Option<&str>) -> Config {
        let mut config = Config::default();
        config.storage.url = url.map(str::to_string);
        config
    }

    #[test]
    fn files_unless_an_address_is_given_and_the_variable_wins() {
        assert_eq!(
            Storage::choose(None, &config(None)).expect("files"),
            Storage::Files
        );
        assert_eq!(
            Storage::choose(Some("  "), &config(None)).expect("empty"),
            Storage::Files
        );
        let from_config =
            Storage::choose(None, &config(Some("postgres://a@127.0.0.1/db"))).expect("config");
        assert_eq!(
            from_config.database_url(),
            Some("postgres://a@127.0.0.1/db")
        );
        let from_env = Storage::choose(
            Some("postgres://b:secret@localhost:5433/team"),
            &config(Some("postgres://a@127.0.0.1/db")),
        )
        .expect("env");
        assert_eq!(
            from_env.database_url(),
            Some("postgres://b:secret@localhost:5433/team")
        );
        assert!(
            !from_env.describe().contains("secret"),
            "{}",
            from_env.describe()
        );
    }

    #[test]
    fn a_password_is_masked_and_nothing_else_changes() {
        assert_eq!(
            without_password("postgres://team:s3cr@t@127.0.0.1:5432/engram", "***"),
            "postgres://team:***@127.0.0.1:5432/engram"
        );
        for url in [
            "postgres://team@127.0.0.1/engram",
            "https://example.com/a",
            "nothing",
        ] {
            assert_eq!(without_password(url, "***"), url);
        }
    }

    #[test]
    fn an_address_it_cannot_use_is_an_error_naming_where_it_came_from() {
        let error = Storage::choose(Some("mysql://x@127.0.0.1/db"), &config(None))
            .expect_err("not postgres");
        assert!(error.to_string().starts_with(ENV_VAR), "{error}");
        let error = Storage::choose(None, &config(Some("postgres://a@db.example.com/team")))
            .expect_err("off this machine");
        assert!(error.to_string().starts_with("storage.url"), "{error}");
        assert!(error.to_string().contains("TLS"), "{error}");
        assert!(
            Config::parse("storage:\n  url: http://127.0.0.1/\n")
                .expect_err("refused in config.yaml")
                .contains("storage.url")
        );
        assert!(Config::parse("storage:\n  url: postgres://a@127.0.0.1/db\n").is_ok());
    }
}
