//! The records the index holds, each as last committed: a read by id answers from
//! here without reading the table ([`TextIndex::get`]), and the heap each one takes.

use super::TextIndex;
use crate::memory::record::MemoryRecord;

impl TextIndex {
    /// `user`'s memory `id` as last committed, superseded and dismissed ones included;
    /// `None` when there is no such memory of `user` (or the index is not built).
    pub fn get(&self, user: &str, id: &str) -> Option<MemoryRecord> {
        let state = self.read();
        let inner = state.as_ref()?;
        let doc = inner.doc(*inner.ids.get(id)?);
        (doc.record.user_id == user).then(|| MemoryRecord::clone(&doc.record))
    }
}

/// About the heap a record holds: the struct and its strings.
pub(super) fn record_bytes(record: &MemoryRecord) -> usize {
    std::mem::size_of::<MemoryRecord>()
        + record.id.capacity()
        + record.user_id.capacity()
        + record.summary.capacity()
        + record.detail.as_ref().map_or(0, String::capacity)
        + record.superseded_by.as_ref().map_or(0, String::capacity)
        + record
            .source_conversation
            .as_ref()
            .map_or(0, String::capacity)
        + record
            .source_turns
            .iter()
            .map(|t| std::mem::size_of::<String>() + t.capacity())
            .sum::<usize>()
}
