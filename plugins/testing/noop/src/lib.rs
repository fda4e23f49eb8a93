//! Test guest `noop`: the cheapest possible extractor. It exists so the host's
//! benchmark can measure new store + instantiate + call + drop with nothing
//! but the call overhead in it.

wit_bindgen::generate!({ path: "../../../wit", world: "extractor" });

struct Noop;

impl Guest for Noop {
    fn extract(_conversation: Conversation, _now: i64) -> Vec<Candidate> {
        Vec::new()
    }
}

export!(Noop);
