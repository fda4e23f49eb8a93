//! How memories age, by the table below (the one place the rule is written). A memory
//! is *referenced* when it is stated again (`last_seen_at`) or retrieved
//! (`last_used_at`); its age is measured from the latest of those and its creation.
//!
//! | from | condition | to |
//! |---|---|---|
//! | active | unreferenced 21 days | stale (still active, ranked lower) |
//! | active | unreferenced 30 days | subconscious, `prior_scope` = active |
//! | durable | confidence < 0.3 and unreferenced 120 days | dismissed (hidden; purged 30 days later) |
//! | any | reinforced 3 or more times | durable |
//! | inferred, conscious | time | confidence halves every half-life (90 days) |
//! | subconscious | time | nothing: no decay |
//!
//! Pruning runs with consolidation; reinforcement happens when a fact is stated again.

use crate::sql::{Actor, AsTx, Value};

use super::error::StoreError;
use super::store::q;
use super::{ACTOR_SYSTEM, Brain};
use crate::memory::record::MemoryRecord;
use crate::time::DAY_MS;
use engram_strategies::model::Scope;

/// Reinforcements after which a memory is durable.
pub const DURABLE_AFTER_REINFORCEMENTS: u32 = 3;

#[derive(Debug, Clone, PartialEq)]
pub struct LifecycleConfig {
    pub stale_after_ms: i64,
    pub subconscious_after_ms: i64,
    pub dismiss_after_ms: i64,
    pub dismiss_below_confidence: f32,
    pub purge_dismissed_after_ms: i64,
    pub inferred_half_life_ms: i64,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        LifecycleConfig {
            stale_after_ms: 21 * DAY_MS,
            subconscious_after_ms: 30 * DAY_MS,
            dismiss_after_ms: 120 * DAY_MS,
            dismiss_below_confidence: 0.3,
            purge_dismissed_after_ms: 30 * DAY_MS,
            inferred_half_life_ms: 90 * DAY_MS,
        }
    }
}

/// What one pruning pass changed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct PruneReport {
    pub staled: usize,
    pub demoted: usize,
    pub dismissed: usize,
    pub purged: usize,
    pub decayed: usize,
}

/// The SQL for "last referenced at or before `param`": each of the times at or before
/// it (SQLite's `max(a, b, c)` is PostgreSQL's `greatest`; this reads the same on both).
fn referenced_by(param: &str) -> String {
    format!(
        "created_at <= {param} AND last_seen_at <= {param} AND coalesce(last_used_at, 0) <= {param}"
    )
}

/// The stated-again transition, applied inside a write transaction.
pub fn reinforce(old: &MemoryRecord, now: i64) -> MemoryRecord {
    let mut new = old.clone();
    new.reinforcements += 1;
    new.last_seen_at = now;
    new.updated_at = now;
    new.stale = false;
    if new.reinforcements >= DURABLE_AFTER_REINFORCEMENTS {
        new.scope = Scope::Durable;
        new.prior_scope = None;
    }
    new
}

impl Brain {
    /// One pruning pass over a user's memories.
    pub fn prune(&self, user: &str, config: &LifecycleConfig) -> Result<PruneReport, StoreError> {
        let now = self.now();
        self.store.write(Actor::System, |tx| {
            let tx = &tx.as_tx();
            let mut report = PruneReport::default();
            let select = |condition: &str, bind: &[Value]| -> Result<Vec<String>, StoreError> {
                let sql = format!(
                    "SELECT id FROM memories WHERE user_id = ?1 AND superseded_by IS NULL AND {condition}"
                );
                let mut values: Vec<Value> = vec![user.into()];
                values.extend_from_slice(bind);
                Ok(tx.query(&sql, &values, |row| row.get(0))?)
            };
            let apply = |id: &str, event: &str, change: &dyn Fn(&mut MemoryRecord)| -> Result<(), StoreError> {
                let old = q::get(tx, user, id)?;
                let mut new = old.clone();
                change(&mut new);
                new.updated_at = now;
                q::update(tx, &old, &new, event, ACTOR_SYSTEM)
            };

            let purge_before = now - config.purge_dismissed_after_ms;
            // What the agent deleted waits for the person instead (`dismissal.rs`).
            let pruned = format!(
                "dismissed_at IS NOT NULL AND dismissed_at <= ?2 AND id NOT IN ({})",
                super::store::AWAITING_IDS
            );
            for id in select(&pruned, &[purge_before.into()])? {
                q::delete(tx, user, &id, ACTOR_SYSTEM, now)?;
                report.purged += 1;
            }

            let demote_before = now - config.subconscious_after_ms;
            let live = "dismissed_at IS NULL AND scope = 'active'";
            for id in select(&format!("{live} AND {}", referenced_by("?2")), &[demote_before.into()])? {
                apply(&id, "DEMOTE", &|m| {
                    m.scope = Scope::Subconscious;
                    m.prior_scope = Some(Scope::Active);
                    m.stale = false;
                })?;
                report.demoted += 1;
            }

            let stale_before = now - config.stale_after_ms;
            for id in select(&format!("{live} AND stale = 0 AND {}", referenced_by("?2")), &[stale_before.into()])? {
                apply(&id, "UPDATE", &|m| m.stale = true)?;
                report.staled += 1;
            }

            let dismiss_before = now - config.dismiss_after_ms;
            let threshold = f64::from(config.dismiss_below_confidence);
            for id in select(
                &format!("dismissed_at IS NULL AND scope = 'durable' AND confidence < ?2 AND {}", referenced_by("?3")),
                &[threshold.into(), dismiss_before.into()],
            )? {
                apply(&id, "DISMISS", &|m| m.dismissed_at = Some(now))?;
                report.dismissed += 1;
            }

            // Decay is derived from time, so it is written without a history row.
            let half_life = config.inferred_half_life_ms.max(1) as f64;
            let rows = tx.query(
                "SELECT id, confidence, confidence_at FROM memories WHERE user_id = ?1 AND superseded_by IS NULL
                 AND dismissed_at IS NULL AND evidence = 'inferred' AND scope IN ('durable','active') AND confidence_at < ?2",
                &[user.into(), now.into()],
                |row| Ok((row.get::<String>(0)?, row.get::<f64>(1)?, row.get::<i64>(2)?)),
            )?;
            for (id, confidence, since) in rows {
                let decayed = confidence * 0.5f64.powf((now - since) as f64 / half_life);
                tx.execute(
                    "UPDATE memories SET confidence = ?3, confidence_at = ?4 WHERE user_id = ?1 AND id = ?2",
                    &[user.into(), id.as_str().into(), decayed.into(), now.into()],
                )?;
                report.decayed += 1;
            }
            Ok(report)
        })
    }
}
