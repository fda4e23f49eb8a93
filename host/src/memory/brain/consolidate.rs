//! Consolidation: every 60 minutes (configurable) and on demand, prune, then ask the
//! configured consolidator for the profile summary, the active-state summary and
//! reflections, and store them. A reflection that restates an existing one updates it
//! (the plugin's `merge-with`, or the host's own same-fact check), so reflections are
//! merged, never duplicated. The time of the last and next run is kept per user.

use engram_strategies::model::{Evidence, MemoryType, Reflection, Scope, Snapshot};
use engram_strategies::text;

use crate::sql::{Actor, AsTx, Tx};
use serde::Serialize;

use super::error::StoreError;
use super::lifecycle::{LifecycleConfig, PruneReport};
use super::store::q;
use super::text_index::TextIndex;
use super::{ACTOR_SYSTEM, Brain};
use crate::events::{Event, EventKind};
use crate::memory::ListFilter;
use crate::memory::record::MemoryRecord;
use crate::runtime::strategies::Strategies;
use crate::time::rfc3339;

pub const DEFAULT_INTERVAL_MS: i64 = 60 * 60_000;
/// Most memories given to the consolidator (most recently updated first).
const SNAPSHOT_LIMIT: usize = 500;

const PROFILE: &str = "profile_summary";
/// What consolidation summarised may hold what the person since asked to forget: the
/// summaries are dropped, and the next consolidation builds them from what is left.
pub(super) fn forget_summaries(tx: &impl AsTx, user: &str) -> Result<(), super::error::StoreError> {
    tx.as_tx().execute(
        "DELETE FROM meta WHERE user_id = ?1 AND key IN (?2, ?3)",
        &[user.into(), PROFILE.into(), ACTIVE.into()],
    )?;
    Ok(())
}

const ACTIVE: &str = "active_summary";
const LAST_RUN: &str = "last_consolidation_at";
const NEXT_RUN: &str = "next_consolidation_at";

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Consolidated {
    pub plugin: String,
    pub profile_summary: String,
    pub active_summary: String,
    pub reflections_added: Vec<String>,
    pub reflections_merged: Vec<String>,
    pub pruned: PruneReport,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub ran_at: i64,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub next_at: i64,
}

/// The stored results of the last consolidation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Summaries {
    pub profile_summary: Option<String>,
    pub active_summary: Option<String>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_consolidation_at: Option<i64>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_consolidation_at: Option<i64>,
}

impl Brain {
    pub fn summaries(&self, user: &str) -> Result<Summaries, StoreError> {
        self.store.read(Actor::User(user), |c| {
            let time = |key| -> Result<Option<i64>, StoreError> {
                Ok(q::meta(c, user, key)?.and_then(|v| v.parse().ok()))
            };
            Ok(Summaries {
                profile_summary: q::meta(c, user, PROFILE)?,
                active_summary: q::meta(c, user, ACTIVE)?,
                last_consolidation_at: time(LAST_RUN)?,
                next_consolidation_at: time(NEXT_RUN)?,
            })
        })
    }

    /// Users whose consolidation is due (never run, or next run time passed).
    pub fn users_due(&self) -> Result<Vec<String>, StoreError> {
        let now = self.now();
        self.store.read(Actor::System, |c| {
            // BIGINT: a time in milliseconds overflows PostgreSQL's INTEGER.
            Ok(c.as_tx().query(
                "SELECT DISTINCT m.user_id FROM memories m WHERE NOT EXISTS (
                    SELECT 1 FROM meta WHERE meta.user_id = m.user_id AND meta.key = ?1 AND CAST(meta.value AS BIGINT) > ?2)
                 ORDER BY m.user_id",
                &[NEXT_RUN.into(), now.into()],
                |r| r.get(0),
            )?)
        })
    }

    /// One consolidation of a user's memories.
    pub fn consolidate(
        &self,
        user: &str,
        strategies: &Strategies,
        lifecycle: &LifecycleConfig,
        interval_ms: i64,
    ) -> Result<Consolidated, StoreError> {
        let pruned = self.prune(user, lifecycle)?;
        let now = self.now();
        let conscious = self
            .list(
                user,
                &ListFilter {
                    conscious: Some(true),
                    limit: SNAPSHOT_LIMIT,
                    ..ListFilter::default()
                },
            )?
            .items;
        let snapshot = Snapshot {
            user_id: user.to_string(),
            memories: conscious.iter().map(|m| m.to_model(Vec::new())).collect(),
        };
        let outcome = strategies
            .consolidate(&snapshot, now)
            .map_err(|e| StoreError::Invalid {
                field: "consolidator",
                reason: e.to_string(),
            })?;
        let result = outcome.value;
        let next_at = now + interval_ms;
        let text = self.store.text();
        let (added, merged) = self.store.write(Actor::User(user), |tx| {
            q::set_meta(tx, user, PROFILE, &result.profile_summary)?;
            q::set_meta(tx, user, ACTIVE, &result.active_summary)?;
            q::set_meta(tx, user, LAST_RUN, &now.to_string())?;
            q::set_meta(tx, user, NEXT_RUN, &next_at.to_string())?;
            let mut added = Vec::new();
            let mut merged = Vec::new();
            for reflection in &result.reflections {
                match store_reflection(tx, text, user, reflection, now)? {
                    Stored::Added(id) => added.push(id),
                    Stored::Merged(id) => merged.push(id),
                }
            }
            Ok((added, merged))
        })?;
        let consolidated = Consolidated {
            plugin: outcome.plugin,
            profile_summary: result.profile_summary,
            active_summary: result.active_summary,
            reflections_added: added,
            reflections_merged: merged,
            pruned,
            ran_at: now,
            next_at,
        };
        self.store.events().publish(Event {
            kind: EventKind::ConsolidationCompleted,
            user: user.to_string(),
            data: serde_json::json!({
                "plugin": consolidated.plugin,
                "reflections_added": consolidated.reflections_added.len(),
                "reflections_merged": consolidated.reflections_merged.len(),
                "ran_at": rfc3339::format(now),
                "next_at": rfc3339::format(next_at),
            }),
        });
        Ok(consolidated)
    }
}

enum Stored {
    Added(String),
    Merged(String),
}

/// The live reflection a new one restates, if any: the plugin's choice first, else the
/// same fact in other words.
fn existing_reflection(
    tx: &Tx,
    text: &TextIndex,
    user: &str,
    r: &Reflection,
) -> Result<Option<MemoryRecord>, StoreError> {
    if let Some(id) = &r.merge_with {
        let target = q::get(tx, user, id)?;
        if target.memory_type == MemoryType::Reflection && target.is_live() {
            return Ok(Some(target));
        }
    }
    let query = super::meaning::query_words(&r.summary).join(" ");
    Ok(q::search(tx, text, user, &query, 20)?
        .into_iter()
        .map(|hit| hit.record)
        .find(|m| {
            m.memory_type == MemoryType::Reflection && text::same_fact(&m.summary, &r.summary)
        }))
}

fn store_reflection(
    tx: &Tx,
    text: &TextIndex,
    user: &str,
    r: &Reflection,
    now: i64,
) -> Result<Stored, StoreError> {
    if let Some(old) = existing_reflection(tx, text, user, r)? {
        let mut new = old.clone();
        new.summary = r.summary.clone();
        new.detail = r.detail.clone();
        new.confidence = r.confidence;
        new.confidence_at = now;
        new.importance = r.importance;
        new.last_seen_at = now;
        new.updated_at = now;
        new.reinforcements += 1;
        q::update(tx, &old, &new, "UPDATE", ACTOR_SYSTEM)?;
        return Ok(Stored::Merged(old.id));
    }
    let record = MemoryRecord {
        detail: r.detail.clone(),
        scope: Scope::Durable,
        importance: r.importance,
        ..MemoryRecord::fresh(
            user,
            MemoryType::Reflection,
            &r.summary,
            Evidence::System,
            r.confidence,
            now,
        )
    };
    q::insert(tx, &record, ACTOR_SYSTEM)?;
    Ok(Stored::Added(record.id))
}
