//! Who may use a messaging bot (`channels.bot` in config.yaml, read again for every
//! update): admins, approved users, and everyone else, who gets a refusal and nothing
//! else (no turn, no memory). Approved users chat with the agent and list, search and
//! view skills; admins also install and remove them (`/skills install`, and the
//! agent's `install_skill`, which the bot withholds from everyone else). Each
//! transport maps its own user id to a [`Role`] here; the commands
//! (`skills_command.rs`) and the transports decide by the role alone.

use serde::Serialize;

use crate::config::BotChannelConfig;

/// What the caller may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Everything, including install and remove.
    Admin,
    /// Listing, search and view.
    Approved,
    /// Nothing.
    Unknown,
}

impl Role {
    /// The role of the transport's user id `user` under `channels.bot`: admins are
    /// approved users too.
    pub fn of(config: &BotChannelConfig, user: &str) -> Role {
        if config.admins.iter().any(|a| a == user) {
            Role::Admin
        } else if config.approved_users.iter().any(|a| a == user) {
            Role::Approved
        } else {
            Role::Unknown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_bot_roles_come_from_the_config() {
        let config = BotChannelConfig {
            admins: vec!["1".into()],
            approved_users: vec!["2".into(), "1".into()],
        };
        assert_eq!(Role::of(&config, "1"), Role::Admin);
        assert_eq!(Role::of(&config, "2"), Role::Approved);
        assert_eq!(Role::of(&config, "3"), Role::Unknown);
        assert_eq!(Role::of(&config, ""), Role::Unknown);
        assert_eq!(Role::of(&BotChannelConfig::default(), "1"), Role::Unknown);
    }
}
