//! The redaction pass over what was stored before the detector (or with a kind
//! turned off): [`Brain::redact_stored`] (`engram memory redact`), and the counts
//! the detector keeps ([`Brain::redaction_counts`]).

use std::collections::BTreeMap;

use crate::sql::{Actor, AsTx};
use engram_strategies::secrets::{self, SecretKind};
use serde::Serialize;

use super::Brain;
use super::error::StoreError;
use super::redact::{Redaction, count_found};
use super::store::q;

/// What a redaction pass over stored text found or changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RedactionReport {
    /// Whether this was a report only (nothing changed).
    pub dry_run: bool,
    /// Messages whose text holds (or held) a secret.
    pub messages: Vec<String>,
    /// Memories whose summary or detail holds (or held) a secret.
    pub memories: Vec<String>,
    /// Of those memories, the ones that were nothing but a secret (deleted).
    pub deleted: Vec<String>,
    /// Secrets found, by kind.
    pub found: BTreeMap<String, usize>,
}

impl Brain {
    /// The kinds the detector looks for.
    pub fn redaction(&self) -> &Redaction {
        &self.redaction
    }

    /// How many secrets of each kind were redacted for `user`.
    pub fn redaction_counts(&self, user: &str) -> Result<BTreeMap<String, usize>, StoreError> {
        self.store.read(Actor::User(user), |c| {
            Ok(c.as_tx()
                .query(
                    "SELECT kind, count FROM redactions WHERE user_id = ?1 ORDER BY kind",
                    &[user.into()],
                    |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)? as usize)),
                )?
                .into_iter()
                .collect())
        })
    }

    /// Applies the detector to what `user` has stored: messages, memories (a memory
    /// that is nothing but a secret is deleted) and the history's copies of them. With
    /// `dry_run`, only reports.
    pub fn redact_stored(&self, user: &str, dry_run: bool) -> Result<RedactionReport, StoreError> {
        let kinds = self.redaction.kinds();
        let now = self.now();
        let mut report = RedactionReport {
            dry_run,
            ..RedactionReport::default()
        };
        let tally = |found: &[SecretKind], report: &mut RedactionReport| {
            for kind in found {
                *report.found.entry(kind.as_str().to_string()).or_default() += 1;
            }
        };
        let changed = self.store.write(Actor::User(user), |tx| {
            let messages: Vec<(String, String)> = tx.as_tx().query(
                "SELECT id, content FROM messages WHERE user_id = ?1",
                &[user.into()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            for (id, content) in messages {
                let redacted = secrets::redact(&content, kinds);
                if redacted.found.is_empty() {
                    continue;
                }
                tally(&redacted.found, &mut report);
                report.messages.push(id.clone());
                if !dry_run {
                    tx.as_tx().execute(
                        "UPDATE messages SET content = ?2 WHERE id = ?1",
                        &[id.as_str().into(), redacted.text.as_ref().into()],
                    )?;
                    super::transcript::index_message(&tx.as_tx(), &id)?;
                    count_found(tx, user, &redacted.found)?;
                }
            }
            let memories: Vec<String> = tx.as_tx().query(
                "SELECT id FROM memories WHERE user_id = ?1",
                &[user.into()],
                |r| r.get(0),
            )?;
            for id in memories {
                let old = q::get(tx, user, &id)?;
                let summary = secrets::redact(&old.summary, kinds);
                let detail = old.detail.as_deref().map(|d| secrets::redact(d, kinds));
                let detail_found = detail.as_ref().map_or(&[][..], |d| &d.found[..]);
                if summary.found.is_empty() && detail_found.is_empty() {
                    continue;
                }
                tally(&summary.found, &mut report);
                tally(detail_found, &mut report);
                report.memories.push(id.clone());
                let bare = secrets::is_only_secret(&old.summary, kinds);
                if bare {
                    report.deleted.push(id.clone());
                }
                if dry_run {
                    continue;
                }
                count_found(tx, user, &summary.found)?;
                count_found(tx, user, detail_found)?;
                if bare {
                    q::delete(tx, user, &id, super::ACTOR_SYSTEM, now)?;
                    continue;
                }
                let mut new = old.clone();
                new.summary = summary.text.into_owned();
                new.detail = detail.map(|d| d.text.into_owned());
                q::update(tx, &old, &new, "UPDATE", super::ACTOR_SYSTEM)?;
            }
            if !dry_run {
                // The history keeps copies of every version of a memory.
                let rows: Vec<(i64, Option<String>, Option<String>)> = tx.as_tx().query(
                    "SELECT id, old_value, new_value FROM history WHERE user_id = ?1",
                    &[user.into()],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )?;
                for (row, old, new) in rows {
                    let clean = |v: &Option<String>| {
                        v.as_deref()
                            .map(|text| secrets::redact(text, kinds).text.into_owned())
                    };
                    let (old_clean, new_clean) = (clean(&old), clean(&new));
                    if old_clean != old || new_clean != new {
                        tx.as_tx().execute(
                            "UPDATE history SET old_value = ?2, new_value = ?3 WHERE id = ?1",
                            &[
                                row.into(),
                                old_clean.as_deref().into(),
                                new_clean.as_deref().into(),
                            ],
                        )?;
                    }
                }
                if !report.messages.is_empty() || !report.memories.is_empty() {
                    super::consolidate::forget_summaries(tx, user)?;
                }
            }
            Ok(!dry_run && (!report.messages.is_empty() || !report.memories.is_empty()))
        })?;
        if changed {
            self.purge();
        }
        Ok(report)
    }
}
