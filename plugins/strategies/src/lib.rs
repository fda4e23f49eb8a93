//! Engram's default memory strategies as plain, dependency-free Rust.
//!
//! The built-in plugins in `plugins/{extract-rules,resolve-default,consolidate-default}`
//! are thin WIT adapters around these functions; the host also calls them natively as
//! the baseline of its benchmarks. The types in [`model`] mirror `wit/types.wit` one to
//! one, so that the adapters are field-by-field conversions and nothing else.

pub mod about;
pub mod analyser;
pub mod consolidate;
pub mod extract;
pub mod forget;
pub mod model;
pub mod resolve;
pub mod secrets;
pub mod text;

/// Builders shared by the unit tests of the strategies.
#[cfg(test)]
mod test_support {
    use crate::model::{Evidence, Memory, MemoryType, Scope};
    use crate::text;

    /// A stored, direct, durable memory with confidence 0.9 and its type's default
    /// importance; tests change what they need with struct update syntax.
    pub(crate) fn stored_memory(id: &str, memory_type: MemoryType, summary: &str) -> Memory {
        Memory {
            id: id.to_owned(),
            memory_type,
            summary: summary.to_owned(),
            detail: None,
            scope: Scope::Durable,
            confidence: 0.9,
            importance: memory_type.default_importance(),
            durability: 0.8,
            evidence: Evidence::Direct,
            negated: text::is_negated(summary),
            reinforcements: 0,
            persons: Vec::new(),
            created_at: 1_000,
            updated_at: 1_000,
            last_seen_at: 1_000,
        }
    }
}
