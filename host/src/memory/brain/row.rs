//! A memory's row: the columns every query of `memories` selects, read back into a
//! [`MemoryRecord`] (the store, the memory index and forgetting all read rows).

use engram_strategies::model::{Evidence, Scope};
use rusqlite::Row;

use crate::memory::record::{MemoryRecord, WireName};

pub(super) const COLUMNS: &str = "id, user_id, memory_type, summary, detail, scope, prior_scope, confidence, importance, durability, evidence, negated, validated, reinforcements, stale, dismissed_at, superseded_by, created_at, updated_at, last_seen_at, last_used_at, source_conversation, source_turns, confidence_at, holder, attribute";

fn enum_column<T: WireName>(row: &Row, index: usize) -> rusqlite::Result<T> {
    let name: String = row.get(index)?;
    T::from_name(&name).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            crate::memory::record::unknown_value::<T>(&name).into(),
        )
    })
}

pub(super) fn record_from_row(row: &Row) -> rusqlite::Result<MemoryRecord> {
    let prior: Option<String> = row.get(6)?;
    let turns: String = row.get(22)?;
    Ok(MemoryRecord {
        id: row.get(0)?,
        user_id: row.get(1)?,
        memory_type: enum_column(row, 2)?,
        summary: row.get(3)?,
        detail: row.get(4)?,
        scope: enum_column(row, 5)?,
        prior_scope: prior.as_deref().and_then(Scope::parse),
        confidence: row.get::<_, f64>(7)? as f32,
        importance: row.get::<_, f64>(8)? as f32,
        durability: row.get::<_, f64>(9)? as f32,
        evidence: enum_column::<Evidence>(row, 10)?,
        negated: row.get(11)?,
        validated: row.get(12)?,
        reinforcements: row.get(13)?,
        stale: row.get(14)?,
        dismissed_at: row.get(15)?,
        superseded_by: row.get(16)?,
        created_at: row.get(17)?,
        updated_at: row.get(18)?,
        last_seen_at: row.get(19)?,
        last_used_at: row.get(20)?,
        source_conversation: row.get(21)?,
        source_turns: serde_json::from_str(&turns).unwrap_or_default(),
        confidence_at: row.get(23)?,
        holder: row.get(24)?,
        attribute: row.get(25)?,
    })
}
