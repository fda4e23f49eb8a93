//! The registry client as the chat commands see it: [`RegistryView`] (what
//! `/skills` needs of a registry) over the real client, its feed search and lookup and
//! its verified install, and its errors as [`RegistryFailure`]s (code and message).

use super::skills_command::{RegistryFailure, RegistrySkill, RegistryView};
use crate::skills::library::Library;
use crate::skills::library::install::{InstallOutcome, ToolConsent};
use crate::skills::registry::feed::FeedSkill;
use crate::skills::registry::{RegistryClient, RegistryError};

/// The real registry client behind the handler: feed search and lookup, and the
/// verified install.
impl RegistryView for RegistryClient {
    fn registry_url(&self) -> String {
        self.registry().as_str().to_string()
    }

    async fn search(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<RegistrySkill>, RegistryFailure> {
        let loaded = self.feed().await.map_err(failure)?;
        Ok(loaded
            .feed
            .search(query)
            .into_iter()
            .take(limit)
            .map(|hit| registry_skill(hit.skill))
            .collect())
    }

    async fn view(&self, id: &str) -> Result<RegistrySkill, RegistryFailure> {
        let loaded = self.feed().await.map_err(failure)?;
        loaded
            .find(id, self.registry())
            .map(registry_skill)
            .map_err(failure)
    }

    async fn install(
        &self,
        library: &Library,
        id: &str,
    ) -> Result<InstallOutcome, RegistryFailure> {
        RegistryClient::install(self, library, id, false, ToolConsent::Confirmed)
            .await
            .map(|installed| installed.outcome)
            .map_err(failure)
    }
}

fn registry_skill(skill: &FeedSkill) -> RegistrySkill {
    RegistrySkill {
        id: skill.id.clone(),
        title: skill
            .title
            .clone()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| skill.name.clone()),
        version: skill.version.clone(),
        description: skill.description.clone(),
    }
}

fn failure(e: RegistryError) -> RegistryFailure {
    RegistryFailure {
        code: e.code().to_string(),
        message: e.to_string(),
    }
}
