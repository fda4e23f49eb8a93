//! The Second Brain's background work, run by the daemon on a timer: end the
//! conversations that went idle (which learns from them), prune the transcript past
//! its retention, forget for good what the agent deleted once the person's window to
//! restore it has ended (`dismissal.rs`), and consolidate the users whose
//! consolidation is due (which prunes memories too). Each step logs its failures and
//! goes on: one user's broken data never stops another's maintenance.

use serde::Serialize;

use super::Brain;
use super::consolidate::DEFAULT_INTERVAL_MS;
use super::lifecycle::LifecycleConfig;
use crate::config::MemoryConfig;
use crate::memory::DEFAULT_TRANSCRIPT_DAYS;
use crate::runtime::strategies::Strategies;
use crate::time::{DAY_MS, MINUTE_MS};

/// Timings from `memory.secondBrain` in config.yaml, with the defaults the README lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub idle_ms: i64,
    pub consolidation_interval_ms: i64,
    pub lifecycle: LifecycleConfig,
    /// How long a message stays in the transcript once extraction has read it.
    pub transcript_keep_ms: i64,
    /// How long the person can restore a memory the agent deleted
    /// (`memory.agentDeletes.restoreDays`).
    pub agent_restore_ms: i64,
}

impl Settings {
    pub fn from_config(memory: &MemoryConfig) -> Settings {
        let config = &memory.second_brain;
        let mut lifecycle = LifecycleConfig::default();
        if let Some(days) = config.inferred_half_life_days.filter(|d| *d > 0) {
            lifecycle.inferred_half_life_ms = i64::from(days) * DAY_MS;
        }
        Settings {
            idle_ms: config
                .idle_minutes
                .filter(|m| *m > 0)
                .map_or(10 * MINUTE_MS, |m| i64::from(m) * MINUTE_MS),
            consolidation_interval_ms: config
                .consolidation_interval_minutes
                .filter(|m| *m > 0)
                .map_or(DEFAULT_INTERVAL_MS, |m| i64::from(m) * MINUTE_MS),
            lifecycle,
            transcript_keep_ms: i64::from(
                config.transcript_days.unwrap_or(DEFAULT_TRANSCRIPT_DAYS),
            ) * DAY_MS,
            agent_restore_ms: memory.agent_deletes.restore_ms(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub conversations_ended: usize,
    pub messages_pruned: usize,
    /// Memories the agent deleted, forgotten for good at the end of their window.
    pub dismissals_forgotten: usize,
    pub users_consolidated: usize,
    pub failures: usize,
}

/// The least time between two passes of the daemons on one PostgreSQL database: a
/// little under the daemon's 30 s timer, so that one daemon's passes are never skipped
/// for its timer's jitter.
pub const PASS_EVERY_MS: i64 = 25_000;

/// One maintenance pass (none when another daemon on the same database ran one within
/// [`PASS_EVERY_MS`]).
pub fn run(brain: &Brain, strategies: &Strategies, settings: &Settings) -> Report {
    let mut report = Report::default();
    match brain.store().claim_maintenance(PASS_EVERY_MS) {
        Ok(true) => {}
        Ok(false) => return report,
        Err(e) => {
            report.failures += 1;
            tracing::error!("claiming the maintenance pass failed: {e}");
            return report;
        }
    }
    for ended in brain.end_idle_conversations(settings.idle_ms, strategies) {
        match ended {
            Ok(_) => report.conversations_ended += 1,
            Err(e) => {
                report.failures += 1;
                tracing::error!("ending an idle conversation failed: {e}");
            }
        }
    }
    match brain.prune_transcript(settings.transcript_keep_ms) {
        Ok(pruned) => report.messages_pruned = pruned,
        Err(e) => {
            report.failures += 1;
            tracing::error!("pruning the transcript failed: {e}");
        }
    }
    for forgotten in brain.purge_agent_dismissals(settings.agent_restore_ms) {
        match forgotten {
            Ok(forgotten) => report.dismissals_forgotten += forgotten.memories.len(),
            Err(e) => {
                report.failures += 1;
                tracing::error!("forgetting a memory the agent deleted failed: {e}");
            }
        }
    }
    // A purge that a reader kept from reaching the end of the WAL is tried again.
    if let Err(e) = brain.store().purge_if_requested() {
        report.failures += 1;
        tracing::error!("purging forgotten text from the database file failed: {e}");
    }
    if let Err(e) = brain.store().prune_changes(brain.now()) {
        report.failures += 1;
        tracing::error!("pruning the memory index's change log failed: {e}");
    }
    let due = brain.users_due().unwrap_or_else(|e| {
        report.failures += 1;
        tracing::error!("finding users due for consolidation failed: {e}");
        Vec::new()
    });
    for user in due {
        match brain.consolidate(
            &user,
            strategies,
            &settings.lifecycle,
            settings.consolidation_interval_ms,
        ) {
            Ok(_) => report.users_consolidated += 1,
            Err(e) => {
                report.failures += 1;
                tracing::error!(user = %user, "consolidation failed: {e}");
            }
        }
    }
    report
}
