//! Chat channels: the front doors where a person talks to Engram. The commands a
//! person types (`/skills`, `/memory`) are handled here independently of the transport
//! that carries them; the transports (the terminal's `engram chat`, the Telegram bot)
//! present them and send everything else to the agent loop (`crate::agent`).

pub mod memory_command;
pub mod registry_view;
pub mod roles;
pub mod skills_command;
pub mod telegram;
pub mod terminal;

use crate::memory::{Applied, Ingested};

/// What ending a conversation learned, in a few words.
pub fn learned(ingested: &Ingested) -> String {
    if let Some(why) = &ingested.skipped {
        return format!("(nothing learned: {why})");
    }
    let count = |f: fn(&Applied) -> bool| ingested.applied.iter().filter(|a| f(a)).count();
    let added = count(|a| matches!(a, Applied::Added { .. }));
    let changed = count(|a| {
        matches!(
            a,
            Applied::Reinforced { .. } | Applied::Updated { .. } | Applied::Superseded { .. }
        )
    });
    match (added, changed) {
        (0, 0) => "(nothing new to remember)".to_string(),
        (added, 0) => format!(
            "(learned {added} new memor{})",
            if added == 1 { "y" } else { "ies" }
        ),
        (added, changed) => format!("(learned {added} new, updated {changed})"),
    }
}
