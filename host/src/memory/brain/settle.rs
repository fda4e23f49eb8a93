//! What is true now: the store's rules for a memory that restates, replaces or negates
//! another, applied on every write path (a manual add through REST, MCP, the CLI or the
//! dashboard, an edit, extraction, an import), so that no path piles up contradictions.
//!
//! Every memory carries what it is about (`holder`, `attribute`: read from its summary
//! by `engram_strategies::about` unless the writer named them). Then, for a memory just
//! stored live:
//!
//! 1. **Restated** ([`restated`], before it is stored): the same value of the same
//!    holder's attribute, or the same fact in other words (`text::same_fact`), reinforces
//!    the live memory instead of adding a copy.
//! 2. **Replaced** ([`settle`]): a new value of a *single-valued* attribute (phone,
//!    employer, city, favourite X, ...) of the same holder supersedes the live one by
//!    README's rules ("The Second Brain", what is true now): the higher confidence
//!    wins, on equal confidence the newer. A statement that marks a change ("now",
//!    "new", "moved to", "took the job at") wins whatever the confidences: the old
//!    value was true then, it does not compete with the new one.
//! 3. **Negated**: a negation replaces what it negates: "no longer works at Google"
//!    ends "works at Google", "sold the Vespa" ends "my ride is a Vespa".
//! 4. Opposite statements without an attribute ("likes coffee" / "does not like
//!    coffee", `text::opposes`) as before: the higher confidence wins, then the newer.
//!
//! The loser is superseded (kept, linked by `superseded_by`, with a SUPERSEDE history
//! row), never deleted. A memory of another holder is never touched: "Ben is a pilot"
//! does not replace "User is an architect".

use std::collections::HashSet;

use engram_strategies::about::{self, Values, catalog};
use engram_strategies::text;

use super::error::StoreError;
use super::row::{COLUMNS, record_from_row};
use super::store::q;
use super::text_index::TextIndex;
use crate::memory::record::MemoryRecord;
use crate::sql::{AsTx, Tx};

/// Confidences closer than this are equal: what the user said (0.9) and what they
/// wrote down by hand (1.0) are as certain as each other, and the later one is what is
/// true now; a hedged (0.6) or inferred statement still loses to either.
const CONFIDENCE_EPSILON: f32 = 0.1 + 1e-6;
/// Memories checked for a restatement or an opposite statement by their words.
const TEXT_SWEEP: usize = 20;

/// What storing a memory did to the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settled {
    /// Live memories this one replaced.
    pub superseded: Vec<String>,
    /// The live memory that outranked this one (then stored already superseded).
    pub outvoted_by: Option<String>,
}

/// The live memories of `record`'s user and holder that state `attribute`.
fn live_with_attribute(
    conn: &Tx,
    record: &MemoryRecord,
    attribute: &str,
) -> Result<Vec<MemoryRecord>, StoreError> {
    Ok(conn.as_tx().query(
        &format!(
            "SELECT {COLUMNS} FROM memories WHERE user_id = ?1 AND attribute = ?2
               AND holder IS NOT DISTINCT FROM ?3
               AND id <> ?4 AND superseded_by IS NULL AND dismissed_at IS NULL
             ORDER BY last_seen_at DESC, id"
        ),
        &[
            record.user_id.as_str().into(),
            attribute.into(),
            record.holder.as_deref().into(),
            record.id.as_str().into(),
        ],
        record_from_row,
    )?)
}

/// Live memories whose words match `words`, best first, `record` itself left out.
fn live_by_words(
    conn: &Tx,
    text_index: &TextIndex,
    record: &MemoryRecord,
    words: &str,
) -> Result<Vec<MemoryRecord>, StoreError> {
    let query = super::meaning::query_words(words).join(" ");
    let mut seen = HashSet::new();
    Ok(
        q::search(conn, text_index, &record.user_id, &query, TEXT_SWEEP)?
            .into_iter()
            .map(|hit| hit.record)
            .filter(|other| {
                other.id != record.id && other.is_live() && seen.insert(other.id.clone())
            })
            .collect(),
    )
}

/// Gives a bare "favorite" ("Haskell is my favourite now") the favourite it changes:
/// the holder's only live `favorite <noun>`, else the one whose value is closest in
/// meaning, else the most recent.
pub(super) fn resolve_attribute(conn: &Tx, record: &mut MemoryRecord) -> Result<(), StoreError> {
    if record.attribute.as_deref() != Some(catalog::FAVORITE) {
        return Ok(());
    }
    let favorites = conn.as_tx().query(
        &format!(
            "SELECT {COLUMNS} FROM memories WHERE user_id = ?1 AND holder IS NOT DISTINCT FROM ?2
               AND attribute LIKE 'favorite %'
               AND superseded_by IS NULL AND dismissed_at IS NULL ORDER BY last_seen_at DESC, id"
        ),
        &[
            record.user_id.as_str().into(),
            record.holder.as_deref().into(),
        ],
        record_from_row,
    )?;
    let value = about::of_summary(&record.summary).value;
    let closeness = |other: &MemoryRecord| {
        let other_value = about::of_summary(&other.summary).value;
        super::meaning::similarity(&value, &other_value)
    };
    let chosen = favorites
        .iter()
        .enumerate()
        .max_by(|(ia, a), (ib, b)| {
            closeness(a)
                .total_cmp(&closeness(b))
                // Most recent first in the list: the lower index wins a tie.
                .then(ib.cmp(ia))
        })
        .map(|(_, m)| m.attribute.clone());
    if let Some(attribute) = chosen {
        record.attribute = attribute;
    }
    Ok(())
}

/// The live memory `record` (not stored yet) restates, if any: the same value of the
/// same holder's attribute with the same polarity, or the same fact in other words.
pub(super) fn restated(
    conn: &Tx,
    text_index: &TextIndex,
    record: &MemoryRecord,
) -> Result<Option<MemoryRecord>, StoreError> {
    let value = about::of_summary(&record.summary).value;
    if let Some(attribute) = &record.attribute {
        for other in live_with_attribute(conn, record, attribute)? {
            let other_value = about::of_summary(&other.summary).value;
            if other.negated == record.negated
                && about::compare_values_of(Some(attribute), &value, &other_value) == Values::Same
            {
                return Ok(Some(other));
            }
        }
    }
    for other in live_by_words(conn, text_index, record, &record.summary)? {
        if other.holder == record.holder
            && other.negated == record.negated
            && text::same_fact(&record.summary, &other.summary)
            && numbers(&record.summary) == numbers(&other.summary)
        {
            return Ok(Some(other));
        }
    }
    Ok(None)
}

/// The numbers a summary names, in order: two facts that differ in one ("room 12",
/// "room 14") are not the same fact however alike their words.
fn numbers(summary: &str) -> Vec<&str> {
    summary
        .split(|c: char| !c.is_ascii_digit())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Whether `new` states another value of the attribute `old` states for the same
/// holder, or its negation: never a restatement of `old`, whatever a resolver says.
pub(super) fn new_value(old: &str, new: &str) -> bool {
    let (old, new) = (about::of_summary(old), about::of_summary(new));
    // A bare "favourite" changes whichever favourite it is compared with.
    let same_attribute = old.attribute == new.attribute
        || (new.attribute.as_deref() == Some(catalog::FAVORITE)
            && old
                .attribute
                .as_deref()
                .is_some_and(|a| a.starts_with(catalog::FAVORITE)));
    old.attribute.is_some()
        && same_attribute
        && old.holder_key() == new.holder_key()
        && (old.negated != new.negated
            || about::compare_values_of(old.attribute.as_deref(), &old.value, &new.value)
                == Values::Different)
}

/// Applies the rules of the module docs after `record` was stored live.
pub(super) fn settle(
    conn: &Tx,
    text_index: &TextIndex,
    record: &MemoryRecord,
    now: i64,
    actor: &str,
) -> Result<Settled, StoreError> {
    let mut settled = Settled::default();
    let about = about::of_summary(&record.summary);
    let mut rivals: Vec<MemoryRecord> = Vec::new();
    if let Some(attribute) = &record.attribute {
        let single = catalog::is_single(attribute);
        for other in live_with_attribute(conn, record, attribute)? {
            let other_value = about::of_summary(&other.summary).value;
            let values = about::compare_values_of(Some(attribute), &about.value, &other_value);
            let replaces = match values {
                // A negation replaces what it negates (and a value stated again
                // replaces its negation).
                Values::Same => other.negated != record.negated || single,
                Values::Different | Values::Unknown => single && !record.negated && !other.negated,
            };
            if replaces {
                rivals.push(other);
            }
        }
    } else if about.negated && !about.value.is_empty() {
        // "sold the Vespa": the live single-valued facts of the holder whose value
        // it names.
        let negated = about::value_terms(&about.value);
        for other in live_by_words(conn, text_index, record, &about.value)? {
            let single = other.attribute.as_deref().is_some_and(catalog::is_single);
            let other_value = about::value_terms(&about::of_summary(&other.summary).value);
            if single
                && other.holder == record.holder
                && !other.negated
                && !negated.is_disjoint(&other_value)
            {
                rivals.push(other);
            }
        }
    }
    // Opposite statements by their words ("likes coffee" / "hates coffee").
    for other in live_by_words(conn, text_index, record, &record.summary)? {
        if other.holder == record.holder
            && !rivals.iter().any(|r| r.id == other.id)
            && text::opposes(
                &record.summary,
                record.negated,
                &other.summary,
                other.negated,
            )
        {
            rivals.push(other);
        }
    }
    for rival in rivals {
        let current = q::get(conn, &record.user_id, &record.id)?;
        if current.superseded_by.is_some() {
            break;
        }
        if wins(&current, about.changed, &rival) {
            supersede(conn, &current.id, &rival, now, actor)?;
            settled.superseded.push(rival.id);
        } else {
            supersede(conn, &rival.id, &current, now, actor)?;
            settled.outvoted_by = Some(rival.id);
        }
    }
    Ok(settled)
}

/// Whether `new` wins over `old`: a change always; else the higher confidence, then
/// the later statement (`new` on a tie: it was just written).
fn wins(new: &MemoryRecord, changed: bool, old: &MemoryRecord) -> bool {
    if changed && new.last_seen_at >= old.last_seen_at {
        return true;
    }
    if (new.confidence - old.confidence).abs() > CONFIDENCE_EPSILON {
        return new.confidence > old.confidence;
    }
    new.last_seen_at >= old.last_seen_at
}

/// Marks `loser` superseded by `winner`, with its history row.
pub(super) fn supersede(
    conn: &Tx,
    winner: &str,
    loser: &MemoryRecord,
    now: i64,
    actor: &str,
) -> Result<(), StoreError> {
    let mut new = loser.clone();
    new.superseded_by = Some(winner.to_string());
    new.updated_at = now;
    q::update(conn, loser, &new, "SUPERSEDE", actor)
}
