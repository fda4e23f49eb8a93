//! The router over the active skills, kept while the catalog it was built from is
//! unchanged.

use std::sync::{Arc, Mutex};

use super::skill_vectors::SkillVectors;
use super::{RoutableSkill, Router, RouterConfig};
use crate::skills::CatalogEntry;

/// The catalog is read per turn anyway (its summaries are part of the answer), so
/// comparing it is the cheapest correct change detection: an install, removal,
/// (de)activation or an edited SKILL.md all change it.
#[derive(Default)]
pub struct SkillRouter {
    cached: Mutex<Option<(Vec<CatalogEntry>, Arc<Router>)>>,
}

impl SkillRouter {
    /// The router for `entries`, built only if they differ from the last ones: with
    /// the encoder's vectors when `vectors` is given ([`RouterConfig::encoded`]), else
    /// with the static table.
    pub fn for_catalog(
        &self,
        entries: &[CatalogEntry],
        vectors: Option<&SkillVectors>,
    ) -> Arc<Router> {
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, router)) = cached.as_ref()
            && seen.as_slice() == entries
            && router.is_encoded() == vectors.is_some()
        {
            return router.clone();
        }
        let router = Arc::new(match vectors {
            Some(vectors) => {
                let skills: Vec<RoutableSkill> = entries
                    .iter()
                    .filter(|e| e.active)
                    .map(RoutableSkill::from)
                    .collect();
                let encoded = vectors.for_skills(&skills);
                Router::with_encoded(skills, RouterConfig::encoded(), &encoded)
            }
            None => Router::from_catalog(entries),
        });
        *cached = Some((entries.to_vec(), router.clone()));
        router
    }
}
