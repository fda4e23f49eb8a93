//! Any bytes through the SKILL.md parser and validator: a skill or a rejection naming
//! a rule, never a panic, and within the parser's budgets. Seed the corpus with
//! `shared/data/skills-edge-cases/*/*/SKILL.md`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(parsed) = engram::skills::parse_skill(data) {
        let _ = engram::skills::validate(parsed.clone(), Some("my-skill"));
        let _ = engram::skills::validate(parsed, None);
    }
});
