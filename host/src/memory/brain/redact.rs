//! Secrets at the door: every text that enters the Second Brain (a message, a memory
//! added, edited or imported) goes through the one detector
//! (`engram_strategies::secrets`) before anything stores, indexes, extracts or logs it:
//! what it finds becomes `[redacted: <kind>]`. A memory that is nothing but a secret is
//! refused (`StoreError::SecretRefused`). `memory.redact` in config.yaml chooses the
//! kinds (all by default); `GET /api/brain/status` counts what was redacted, per user
//! and kind ([`Brain::redaction_counts`]).
//!
//! What was stored before the detector (or with a kind turned off) is redacted by a
//! pass over the user's store ([`Brain::redact_stored`], `engram memory redact`),
//! which reports first when asked to (`dry_run`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};

use engram_strategies::secrets::{self, KindSet, SecretKind};
use rusqlite::{Connection, params};
use serde::Serialize;

use super::Brain;
use super::store::{StoreError, q};

/// The kinds the detector looks for, changed by the daemon when config.yaml changes.
#[derive(Debug)]
pub struct Redaction(AtomicU8);

impl Default for Redaction {
    fn default() -> Redaction {
        Redaction(AtomicU8::new(KindSet::all().bits()))
    }
}

impl Redaction {
    pub fn kinds(&self) -> KindSet {
        KindSet::from_bits(self.0.load(Ordering::Relaxed))
    }

    pub fn set(&self, kinds: KindSet) {
        self.0.store(kinds.bits(), Ordering::Relaxed);
    }
}

/// `text` with its secrets redacted, counting each kind found for `user` in the
/// transaction that stores it.
pub(super) fn redacted<'a>(
    tx: &Connection,
    user: &str,
    text: &'a str,
    kinds: KindSet,
) -> Result<Cow<'a, str>, StoreError> {
    let redacted = secrets::redact(text, kinds);
    count(tx, user, &redacted.found)?;
    Ok(redacted.text)
}

/// A memory that says nothing but a secret ("User's password is hunter2"): refused
/// by every store, nothing written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the memory is nothing but a secret ({kinds}); secrets are never stored: say what it is for without its value"
)]
pub struct SecretRefused {
    pub kinds: String,
}

/// 422 `secret-refused`, on the memory's `summary`.
impl crate::described::Described for SecretRefused {
    fn describe(&self) -> crate::described::Description {
        crate::described::Description::new(
            http::StatusCode::UNPROCESSABLE_ENTITY,
            "secret-refused",
            self.to_string(),
        )
        .on("summary")
    }
}

impl super::NewMemory {
    /// The memory with its secrets redacted, and the kinds found; refused when it is
    /// nothing but a secret.
    pub fn redacted(
        mut self,
        kinds: KindSet,
    ) -> Result<(super::NewMemory, Vec<SecretKind>), SecretRefused> {
        if secrets::is_only_secret(&self.summary, kinds) {
            let found: Vec<&str> = secrets::find(&self.summary, kinds)
                .iter()
                .map(|f| f.kind.as_str())
                .collect();
            return Err(SecretRefused {
                kinds: found.join(", "),
            });
        }
        let summary = secrets::redact(&self.summary, kinds);
        let mut found = summary.found;
        self.summary = summary.text.into_owned();
        if let Some(detail) = &self.detail {
            let detail = secrets::redact(detail, kinds);
            found.extend(detail.found);
            self.detail = Some(detail.text.into_owned());
        }
        Ok((self, found))
    }
}

/// Counts, for `user`, the secrets a write redacted.
pub(super) fn count_found(
    tx: &Connection,
    user: &str,
    found: &[SecretKind],
) -> Result<(), StoreError> {
    count(tx, user, found)
}

fn count(tx: &Connection, user: &str, found: &[SecretKind]) -> Result<(), StoreError> {
    for kind in found {
        tx.prepare_cached(
            "INSERT INTO redactions (user_id, kind, count) VALUES (?1, ?2, 1)
             ON CONFLICT (user_id, kind) DO UPDATE SET count = count + 1",
        )?
        .execute(params![user, kind.as_str()])?;
    }
    Ok(())
}

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
        self.store.read(|c| {
            let mut stmt =
                c.prepare("SELECT kind, count FROM redactions WHERE user_id = ?1 ORDER BY kind")?;
            let rows = stmt
                .query_map([user], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as usize))
                })?
                .collect::<rusqlite::Result<BTreeMap<_, _>>>()?;
            Ok(rows)
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
        let changed = self.store.write(|tx| {
            let messages: Vec<(String, String)> = tx
                .prepare("SELECT id, content FROM messages WHERE user_id = ?1")?
                .query_map([user], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            for (id, content) in messages {
                let redacted = secrets::redact(&content, kinds);
                if redacted.found.is_empty() {
                    continue;
                }
                tally(&redacted.found, &mut report);
                report.messages.push(id.clone());
                if !dry_run {
                    tx.execute(
                        "UPDATE messages SET content = ?2 WHERE id = ?1",
                        params![id, redacted.text.as_ref()],
                    )?;
                    count(tx, user, &redacted.found)?;
                }
            }
            let memories: Vec<String> = tx
                .prepare("SELECT id FROM memories WHERE user_id = ?1")?
                .query_map([user], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
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
                count(tx, user, &summary.found)?;
                count(tx, user, detail_found)?;
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
                let rows: Vec<(i64, Option<String>, Option<String>)> = tx
                    .prepare("SELECT id, old_value, new_value FROM history WHERE user_id = ?1")?
                    .query_map([user], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                for (row, old, new) in rows {
                    let clean = |v: &Option<String>| {
                        v.as_deref()
                            .map(|text| secrets::redact(text, kinds).text.into_owned())
                    };
                    let (old_clean, new_clean) = (clean(&old), clean(&new));
                    if old_clean != old || new_clean != new {
                        tx.execute(
                            "UPDATE history SET old_value = ?2, new_value = ?3 WHERE id = ?1",
                            params![row, old_clean, new_clean],
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
