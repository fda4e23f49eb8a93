//! Identifiers: `mem_01j...`, `turn_01j...`, `sch_01j...`: a prefix naming what the id
//! is, then a lower-case ULID, so ids sort by creation time and say what they name.

pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new().to_string().to_lowercase())
}

/// Names that become directory names (plugins, skill scripts) follow the skill-name
/// rules: 1-64 lowercase letters, digits and single hyphens.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!("`{name}` must be 1 to 64 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(format!(
            "`{name}` may only contain lowercase letters, digits and hyphens"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!(
            "`{name}` may not start or end with a hyphen or contain two in a row"
        ));
    }
    Ok(())
}
