//! Engram's default memory strategies as plain, dependency-free Rust.
//!
//! The built-in plugins in `plugins/{extract-rules,resolve-default,consolidate-default}`
//! are thin WIT adapters around these functions; the host also calls them natively as
//! the baseline of its benchmarks. The types in [`model`] mirror `wit/types.wit` one to
//! one, so that the adapters are field-by-field conversions and nothing else.

pub mod consolidate;
pub mod extract;
pub mod model;
pub mod resolve;
pub mod text;
