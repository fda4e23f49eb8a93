//! Who may do what (README, "Security model"): the one model every front door uses
//! (REST and the dashboard, MCP, chat channels, the CLI).
//!
//! There are two authorities:
//!
//! - **the agent**: opens turns, runs tools through the gate, reads and writes
//!   memory, installs and manages skills that ask for no tools. It holds the agent
//!   token: `ENGRAM_TOKEN`, else `{data_dir}/auth-token`.
//! - **the person** the agent works for: everything the agent may do, and also
//!   approving a tool the gate asks about ([`PersonAct::Approve`]), clearing all of a
//!   user's memories ([`PersonAct::ClearAll`]), granting a skill its
//!   `allowed-tools` at install or update ([`PersonAct::ConfirmTools`]), and seeing
//!   and restoring the memories the agent deleted ([`PersonAct::SeeDismissed`],
//!   [`PersonAct::Restore`]: the agent's deletes are limited and undoable). The tool
//!   policy itself is `config.yaml`, which only the person edits. The person acts
//!   through the dashboard (a login with the operator token), a chat channel's own
//!   user (its admins, as the channel identifies them), or the operator token as a
//!   bearer token: `ENGRAM_OPERATOR_TOKEN`, else `{data_dir}/operator-token`.
//!
//! A single-user install gets both without a step of its own: the first start writes
//! both files (mode 0600); the agent is configured with `auth-token`, and the person
//! pastes `operator-token` into the dashboard's login page (the CLI, run by the person,
//! reads it by itself). The two must differ: a daemon given the same value for both
//! refuses to start, since the agent would then hold the person's authority.
//!
//! Front doors identify the caller as a [`Principal`] ([`Tokens::identify`] for a
//! bearer token; the dashboard's session and a channel's admin check are the person)
//! and ask [`Principal::require`] before a person's act, or hand the principal to the
//! service that checks it (`TurnService::approve`, which also audits a refusal).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// The agent token's environment variable (it overrides the file).
pub const AGENT_TOKEN_ENV: &str = "ENGRAM_TOKEN";
/// The agent token's file in the data directory.
pub const AGENT_TOKEN_FILE: &str = "auth-token";
/// The operator token's environment variable (it overrides the file).
pub const OPERATOR_TOKEN_ENV: &str = "ENGRAM_OPERATOR_TOKEN";
/// The operator token's file in the data directory.
pub const OPERATOR_TOKEN_FILE: &str = "operator-token";

/// Shortest token accepted from the environment or a file: anything shorter is
/// guessable over loopback in reasonable time.
const MIN_TOKEN_LEN: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{env} must be at least {MIN_TOKEN_LEN} printable ASCII characters")]
    WeakEnv { env: &'static str },
    #[error(
        "{path}: the token must be at least {MIN_TOKEN_LEN} printable ASCII characters; delete the file to generate a new one"
    )]
    WeakFile { path: String },
    #[error(
        "the agent token and the operator token are the same, which would give the agent the person's authority; give {OPERATOR_TOKEN_ENV} (or {OPERATOR_TOKEN_FILE}) another value"
    )]
    Same,
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot generate a token: {0}")]
    Random(String),
}

/// A secret a caller presents.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    pub fn new(value: &str) -> Token {
        Token(Arc::from(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The token `env` (the value of its environment variable) if given, else the one
    /// in `{data_dir}/{file}`, created on first use.
    pub fn load_or_create(
        data_dir: &Path,
        file: &str,
        env_name: &'static str,
        env: Option<String>,
    ) -> Result<Token, TokenError> {
        if let Some(value) = env {
            let value = value.trim();
            return if acceptable(value) {
                Ok(Token::new(value))
            } else {
                Err(TokenError::WeakEnv { env: env_name })
            };
        }
        let path = data_dir.join(file);
        let io = |source| TokenError::Io {
            path: path.display().to_string(),
            source,
        };
        match std::fs::read_to_string(&path) {
            Ok(text) if acceptable(text.trim()) => return Ok(Token::new(text.trim())),
            Ok(_) => {
                return Err(TokenError::WeakFile {
                    path: path.display().to_string(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        let token = random_hex()?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&path) {
            Ok(mut handle) => {
                handle.write_all(token.as_bytes()).map_err(io)?;
                handle.sync_all().map_err(io)?;
                tracing::info!("generated a token in {}", path.display());
                Ok(Token::new(&token))
            }
            // Another process created it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Token::load_or_create(data_dir, file, env_name, None)
            }
            Err(e) => Err(io(e)),
        }
    }

    /// Compares in time independent of where the first difference is.
    pub fn matches(&self, candidate: &str) -> bool {
        constant_time_eq(self.0.as_bytes(), candidate.as_bytes())
    }
}

/// Equality of two byte strings in time that depends on their lengths only.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 32 random bytes as 64 hex characters: tokens, session ids and their secrets.
pub fn random_hex() -> Result<String, TokenError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
    Ok(hex::encode(bytes))
}

fn acceptable(token: &str) -> bool {
    token.len() >= MIN_TOKEN_LEN && token.bytes().all(|b| b.is_ascii_graphic())
}

/// The daemon's two tokens.
#[derive(Clone, Debug)]
pub struct Tokens {
    pub agent: Token,
    pub operator: Token,
}

impl Tokens {
    /// Both tokens of the daemon over `data_dir`, each from its environment variable
    /// (given here as read) or its file, created on first use.
    pub fn load_or_create(
        data_dir: &Path,
        agent_env: Option<String>,
        operator_env: Option<String>,
    ) -> Result<Tokens, TokenError> {
        let agent = Token::load_or_create(data_dir, AGENT_TOKEN_FILE, AGENT_TOKEN_ENV, agent_env)?;
        let operator = Token::load_or_create(
            data_dir,
            OPERATOR_TOKEN_FILE,
            OPERATOR_TOKEN_ENV,
            operator_env,
        )?;
        if agent.matches(operator.as_str()) {
            return Err(TokenError::Same);
        }
        Ok(Tokens { agent, operator })
    }

    /// Who presents `bearer`, if it is one of the two tokens.
    pub fn identify(&self, bearer: &str) -> Option<Principal> {
        // Both are compared, whichever matches, so that the time taken does not say
        // which of the two a guess came close to.
        let agent = self.agent.matches(bearer);
        let operator = self.operator.matches(bearer);
        match (agent, operator) {
            (_, true) => Some(Principal::Person(Via::OperatorToken)),
            (true, false) => Some(Principal::Agent),
            (false, false) => None,
        }
    }
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The agent token (REST, MCP).
    Agent,
    /// The person the agent works for, and how they reached the daemon.
    Person(Via),
}

/// How the person reached the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A dashboard session.
    Dashboard,
    /// The operator token as a bearer token (the CLI, a script of the person's).
    OperatorToken,
    /// A chat channel's own user (an admin of the channel), by the channel's name.
    Channel(String),
}

/// The users the agent's credential may act for: `agent.users` in config.yaml, else
/// the default user and `mcp.user` when that is set (one, on a single-user install).
/// The person (the operator token, the dashboard, a channel's own user) acts for any.
/// So an agent given the token reads and writes its person's memory, not everyone's:
/// a Telegram user's memory (`telegram-<id>`) is out of its reach unless listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentUsers(Vec<String>);

impl AgentUsers {
    /// What `config` allows, `default_user` being the name of the default user.
    pub fn from_config(config: &crate::config::Config, default_user: &str) -> AgentUsers {
        match &config.agent.users {
            Some(users) => AgentUsers(users.clone()),
            None => {
                let mut users = vec![default_user.to_string()];
                if let Some(user) = config.mcp.user.as_deref().filter(|u| *u != default_user) {
                    users.push(user.to_string());
                }
                AgentUsers(users)
            }
        }
    }

    pub fn contains(&self, user: &str) -> bool {
        self.0.iter().any(|u| u == user)
    }
}

/// The caller named a user it may not act for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the agent's credential acts for {} only, not for `{user}`; the person lists the users it may act for under agent.users in config.yaml",
    .allowed.iter().map(|u| format!("`{u}`")).collect::<Vec<_>>().join(", ")
)]
pub struct UserNotAllowed {
    pub user: String,
    pub allowed: Vec<String>,
}

/// 403 `user-not-allowed`.
impl crate::described::Described for UserNotAllowed {
    fn describe(&self) -> crate::described::Description {
        crate::described::Description::new(
            http::StatusCode::FORBIDDEN,
            "user-not-allowed",
            self.to_string(),
        )
    }
}

/// What only the person may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonAct {
    /// Approve a tool the gate asks about, for a turn.
    Approve,
    /// Delete all of a user's memories at once.
    ClearAll,
    /// Grant a skill its `allowed-tools`, at install or at an update that changes
    /// them.
    ConfirmTools,
    /// Take a copy of the whole data directory (tokens and every user's memory).
    Backup,
    /// Chat through the daemon as the person at the terminal (`engram chat`), whose
    /// approvals and `/memory clear` are theirs.
    Chat,
    /// See the memories the agent deleted, which are hidden from it.
    SeeDismissed,
    /// Restore a memory the agent deleted.
    Restore,
    /// Import a JSONL export, whose records replace memories by id (the agent's
    /// writes go through `POST /api/brain/memory`, limited and settled).
    Import,
}

impl PersonAct {
    fn describe(self) -> &'static str {
        match self {
            PersonAct::Approve => "approving a tool",
            PersonAct::ClearAll => "clearing all memories",
            PersonAct::ConfirmTools => "granting a skill its allowed-tools",
            PersonAct::Backup => "backing up the data directory",
            PersonAct::Chat => "chatting as the person (`engram chat`)",
            PersonAct::SeeDismissed => "seeing the memories the agent deleted",
            PersonAct::Restore => "restoring a memory the agent deleted",
            PersonAct::Import => "importing an export (it replaces memories by id)",
        }
    }
}

/// A person's act asked for by the agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} is the person's to do, not the agent's: use the dashboard, a chat channel's approval, or the operator token ({OPERATOR_TOKEN_FILE} or {OPERATOR_TOKEN_ENV})",
    .act.describe()
)]
pub struct PersonRequired {
    pub act: PersonAct,
}

impl PersonRequired {
    /// The stable code of the refusal.
    pub const CODE: &'static str = "person-required";
}

/// 403 `person-required`.
impl crate::described::Described for PersonRequired {
    fn describe(&self) -> crate::described::Description {
        crate::described::Description::new(
            http::StatusCode::FORBIDDEN,
            PersonRequired::CODE,
            self.to_string(),
        )
    }
}

impl Principal {
    pub fn is_person(&self) -> bool {
        matches!(self, Principal::Person(_))
    }

    /// Ok for the person; [`PersonRequired`] for the agent.
    pub fn require(&self, act: PersonAct) -> Result<(), PersonRequired> {
        if self.is_person() {
            Ok(())
        } else {
            Err(PersonRequired { act })
        }
    }

    /// Ok when the caller may act for `user`: the person for anyone, the agent for
    /// the users in `agent_users` only.
    pub fn may_act_for(&self, user: &str, agent_users: &AgentUsers) -> Result<(), UserNotAllowed> {
        if self.is_person() || agent_users.contains(user) {
            Ok(())
        } else {
            Err(UserNotAllowed {
                user: user.to_string(),
                allowed: agent_users.0.clone(),
            })
        }
    }

    /// The caller as the audit log names it: `agent`, `dashboard`, `operator`,
    /// `person:<name>`.
    pub fn label(&self) -> String {
        match self {
            Principal::Agent => "agent".to_string(),
            Principal::Person(Via::Dashboard) => "dashboard".to_string(),
            Principal::Person(Via::OperatorToken) => "operator".to_string(),
            Principal::Person(Via::Channel(name)) => format!("person:{name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_start_creates_two_private_token_files_and_reuses_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = Tokens::load_or_create(dir.path(), None, None).expect("create");
        assert_eq!(first.agent.as_str().len(), 64);
        assert_eq!(first.operator.as_str().len(), 64);
        assert_ne!(first.agent.as_str(), first.operator.as_str());
        #[cfg(unix)]
        for file in [AGENT_TOKEN_FILE, OPERATOR_TOKEN_FILE] {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(file))
                .expect("token file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{file}");
        }
        let again = Tokens::load_or_create(dir.path(), None, None).expect("reuse");
        assert_eq!(again.agent.as_str(), first.agent.as_str());
        assert_eq!(again.operator.as_str(), first.operator.as_str());
    }

    #[test]
    fn the_environment_overrides_the_files_must_be_strong_and_must_differ() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tokens = Tokens::load_or_create(
            dir.path(),
            Some("0123456789abcdef-agent".into()),
            Some("0123456789abcdef-person".into()),
        )
        .expect("env");
        assert_eq!(tokens.agent.as_str(), "0123456789abcdef-agent");
        assert_eq!(tokens.operator.as_str(), "0123456789abcdef-person");
        assert!(!dir.path().join(AGENT_TOKEN_FILE).exists());
        assert!(!dir.path().join(OPERATOR_TOKEN_FILE).exists());
        assert!(matches!(
            Tokens::load_or_create(dir.path(), Some("short".into()), None),
            Err(TokenError::WeakEnv {
                env: AGENT_TOKEN_ENV
            })
        ));
        assert!(matches!(
            Tokens::load_or_create(
                dir.path(),
                Some("0123456789abcdef-same".into()),
                Some("0123456789abcdef-same".into())
            ),
            Err(TokenError::Same)
        ));
    }

    #[test]
    fn each_token_names_its_principal_and_only_the_person_may_act_as_one() {
        let tokens = Tokens {
            agent: Token::new("0123456789abcdef-agent"),
            operator: Token::new("0123456789abcdef-person"),
        };
        assert_eq!(
            tokens.identify("0123456789abcdef-agent"),
            Some(Principal::Agent)
        );
        assert_eq!(
            tokens.identify("0123456789abcdef-person"),
            Some(Principal::Person(Via::OperatorToken))
        );
        assert_eq!(tokens.identify("0123456789abcdef-agenT"), None);
        assert_eq!(tokens.identify(""), None);

        for act in [
            PersonAct::Approve,
            PersonAct::ClearAll,
            PersonAct::ConfirmTools,
            PersonAct::SeeDismissed,
            PersonAct::Restore,
        ] {
            assert_eq!(Principal::Agent.require(act), Err(PersonRequired { act }));
            for via in [
                Via::Dashboard,
                Via::OperatorToken,
                Via::Channel("telegram".into()),
            ] {
                assert_eq!(Principal::Person(via).require(act), Ok(()));
            }
        }
        assert_eq!(Principal::Agent.label(), "agent");
        assert_eq!(
            Principal::Person(Via::Channel("telegram".into())).label(),
            "person:telegram"
        );
    }

    #[test]
    fn the_agent_acts_for_its_listed_users_and_the_person_for_anyone() {
        let config = |yaml: &str| crate::config::Config::parse(yaml).expect("config");
        let alone = AgentUsers::from_config(&config(""), "default");
        assert_eq!(alone, AgentUsers(vec!["default".into()]));
        let with_mcp = AgentUsers::from_config(&config("mcp:\n  user: alice\n"), "default");
        assert!(with_mcp.contains("default") && with_mcp.contains("alice"));
        let listed = AgentUsers::from_config(&config("agent:\n  users: [bob]\n"), "default");
        assert_eq!(listed, AgentUsers(vec!["bob".into()]));

        assert_eq!(Principal::Agent.may_act_for("default", &alone), Ok(()));
        let refused = Principal::Agent
            .may_act_for("telegram-100", &alone)
            .expect_err("not listed");
        assert!(refused.to_string().contains("agent.users"), "{refused}");
        let person = Principal::Person(Via::OperatorToken);
        assert_eq!(person.may_act_for("telegram-100", &alone), Ok(()));
    }

    #[test]
    fn comparison_needs_the_exact_token() {
        let token = Token::new("0123456789abcdef");
        assert!(token.matches("0123456789abcdef"));
        assert!(!token.matches("0123456789abcdeF"));
        assert!(!token.matches("0123456789abcde"));
        assert!(!token.matches(""));
    }
}
