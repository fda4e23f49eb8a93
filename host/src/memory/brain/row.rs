//! A memory's row: the columns every query of `memories` selects, read back into a
//! [`MemoryRecord`] (the store, the memory index and forgetting all read rows), and
//! written from one.

use engram_strategies::model::{Evidence, Scope};

use crate::memory::record::{MemoryRecord, WireName};
use crate::sql::{Backend, Row, SqlError, Tx, Value};

pub(super) const COLUMNS: &str = "id, user_id, memory_type, summary, detail, scope, prior_scope, confidence, importance, durability, evidence, negated, validated, reinforcements, stale, dismissed_at, superseded_by, created_at, updated_at, last_seen_at, last_used_at, source_conversation, source_turns, confidence_at, holder, attribute";

/// The column numbering a memory's row, `n` on PostgreSQL: what the memory index
/// orders ties by, and what the vector worker's cursor moves along.
pub(super) fn number_column(tx: &Tx) -> &'static str {
    match tx.backend() {
        Backend::Sqlite => "rowid",
        Backend::Postgres => "n",
    }
}

fn enum_column<T: WireName>(row: &Row, index: usize) -> Result<T, SqlError> {
    let name: String = row.get(index)?;
    T::from_name(&name).ok_or_else(|| SqlError::Convert {
        column: index,
        reason: crate::memory::record::unknown_value::<T>(&name),
    })
}

pub(super) fn record_from_row(row: &Row) -> Result<MemoryRecord, SqlError> {
    record_from_row_at(row, 0)
}

/// A record read from `COLUMNS` starting at column `first` (after others a query
/// selects first).
pub(super) fn record_from_row_at(row: &Row, first: usize) -> Result<MemoryRecord, SqlError> {
    let prior: Option<String> = row.get(first + 6)?;
    let turns: String = row.get(first + 22)?;
    Ok(MemoryRecord {
        id: row.get(first)?,
        user_id: row.get(first + 1)?,
        memory_type: enum_column(row, first + 2)?,
        summary: row.get(first + 3)?,
        detail: row.get(first + 4)?,
        scope: enum_column(row, first + 5)?,
        prior_scope: prior.as_deref().and_then(Scope::parse),
        confidence: row.get(first + 7)?,
        importance: row.get(first + 8)?,
        durability: row.get(first + 9)?,
        evidence: enum_column::<Evidence>(row, first + 10)?,
        negated: row.get(first + 11)?,
        validated: row.get(first + 12)?,
        reinforcements: row.get(first + 13)?,
        stale: row.get(first + 14)?,
        dismissed_at: row.get(first + 15)?,
        superseded_by: row.get(first + 16)?,
        created_at: row.get(first + 17)?,
        updated_at: row.get(first + 18)?,
        last_seen_at: row.get(first + 19)?,
        last_used_at: row.get(first + 20)?,
        source_conversation: row.get(first + 21)?,
        source_turns: serde_json::from_str(&turns).unwrap_or_default(),
        confidence_at: row.get(first + 23)?,
        holder: row.get(first + 24)?,
        attribute: row.get(first + 25)?,
    })
}

/// A record's values in `COLUMNS` order; `turns` is its `source_turns` as JSON
/// ([`turns_json`]), which the values borrow.
pub(super) fn values<'r>(r: &'r MemoryRecord, turns: &'r str) -> Vec<Value<'r>> {
    vec![
        r.id.as_str().into(),
        r.user_id.as_str().into(),
        r.memory_type.as_str().into(),
        r.summary.as_str().into(),
        r.detail.as_deref().into(),
        r.scope.as_str().into(),
        r.prior_scope.map(|s| s.as_str()).into(),
        r.confidence.into(),
        r.importance.into(),
        r.durability.into(),
        r.evidence.as_str().into(),
        r.negated.into(),
        r.validated.into(),
        r.reinforcements.into(),
        r.stale.into(),
        r.dismissed_at.into(),
        r.superseded_by.as_deref().into(),
        r.created_at.into(),
        r.updated_at.into(),
        r.last_seen_at.into(),
        r.last_used_at.into(),
        r.source_conversation.as_deref().into(),
        turns.into(),
        r.confidence_at.into(),
        r.holder.as_deref().into(),
        r.attribute.as_deref().into(),
    ]
}

pub(super) fn turns_json(r: &MemoryRecord) -> String {
    serde_json::to_string(&r.source_turns).unwrap_or_else(|_| "[]".into())
}

/// `?1, ?2, ...` for every column.
pub(super) fn placeholders() -> String {
    (1..=COLUMNS.split(", ").count())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}
