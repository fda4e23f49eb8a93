//! Test guest `trap`: panics on every call. With `panic = "abort"` the panic
//! is a wasm trap, so the host's fault isolation (that call fails, the host
//! falls back to its built-in strategy and keeps serving) can be tested.

wit_bindgen::generate!({ path: "../../../wit", world: "extractor" });

struct Trap;

impl Guest for Trap {
    fn extract(_conversation: Conversation, _now: i64) -> Vec<Candidate> {
        panic!("test guest `trap` traps on every call");
    }
}

export!(Trap);
