//! Identifiers: `mem_01j...`, `turn_01j...`, `sch_01j...`: a prefix naming what the id
//! is, then a lower-case ULID, so ids sort by creation time and say what they name.

pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new().to_string().to_lowercase())
}
