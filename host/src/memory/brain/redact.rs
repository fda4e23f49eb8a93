//! Secrets at the door: every text that enters the Second Brain (a message, a memory
//! added, edited or imported) goes through the one detector
//! (`engram_strategies::secrets`) before anything stores, indexes, extracts or logs it:
//! what it finds becomes `[redacted: <kind>]`. A memory that is nothing but a secret is
//! refused (`StoreError::SecretRefused`). `memory.redact` in config.yaml chooses the
//! kinds (all by default); `GET /api/brain/status` counts what was redacted, per user
//! and kind (`Brain::redaction_counts`, `rescan.rs`).
//!
//! What was stored before the detector (or with a kind turned off) is redacted by a
//! pass over the user's store (`Brain::redact_stored` in `rescan.rs`, `engram memory redact`),
//! which reports first when asked to (`dry_run`).

use std::borrow::Cow;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::sql::AsTx;
use engram_strategies::secrets::{self, KindSet, SecretKind};

use super::error::{SecretRefused, StoreError};

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
    tx: &impl AsTx,
    user: &str,
    text: &'a str,
    kinds: KindSet,
) -> Result<Cow<'a, str>, StoreError> {
    let redacted = secrets::redact(text, kinds);
    count(tx, user, &redacted.found)?;
    Ok(redacted.text)
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
    tx: &impl AsTx,
    user: &str,
    found: &[SecretKind],
) -> Result<(), StoreError> {
    count(tx, user, found)
}

fn count(tx: &impl AsTx, user: &str, found: &[SecretKind]) -> Result<(), StoreError> {
    for kind in found {
        tx.as_tx().execute(
            "INSERT INTO redactions (user_id, kind, count) VALUES (?1, ?2, 1)
             ON CONFLICT (user_id, kind) DO UPDATE SET count = redactions.count + 1",
            &[user.into(), kind.as_str().into()],
        )?;
    }
    Ok(())
}
