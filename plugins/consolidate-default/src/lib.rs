//! `builtin:consolidate-default`: the default consolidator,
//! [`engram_strategies::consolidate`] behind the `consolidator` world. The conversions
//! live in `guest-convert`.

wit_bindgen::generate!({
    path: "../../wit",
    world: "consolidator",
    with: { "engram:plugin/types@0.1.1": guest_convert::wit },
    generate_all,
});

use engram::plugin::log::{Level, log};
use engram_strategies::{consolidate, model};
use guest_convert::wit;

struct DefaultConsolidator;

impl Guest for DefaultConsolidator {
    fn consolidate(snapshot: wit::Snapshot, now: i64) -> wit::Consolidation {
        let snapshot = model::Snapshot::from(snapshot);
        let consolidation = consolidate::consolidate(&snapshot, now);
        log(
            Level::Debug,
            &format!(
                "{} memories -> profile {} bytes, active {} bytes, {} reflection(s)",
                snapshot.memories.len(),
                consolidation.profile_summary.len(),
                consolidation.active_summary.len(),
                consolidation.reflections.len()
            ),
        );
        consolidation.into()
    }
}

export!(DefaultConsolidator);
