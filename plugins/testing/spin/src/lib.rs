//! Test guest `spin`: never returns. It exists to test that the host's epoch
//! deadline interrupts a runaway guest (and that the store is dropped, not
//! reused, afterwards).

wit_bindgen::generate!({ path: "../../../wit", world: "extractor" });

use std::hint::black_box;

struct Spin;

impl Guest for Spin {
    fn extract(_conversation: Conversation, now: i64) -> Vec<Candidate> {
        // `black_box` makes the counter opaque to the optimizer, so the loop
        // (which never exits: no `break`, and `loop` has type `!`) keeps
        // executing real instructions instead of being folded into a bare
        // `unreachable` or a trap.
        let mut counter = now;
        loop {
            counter = black_box(counter.wrapping_add(1));
        }
    }
}

export!(Spin);
