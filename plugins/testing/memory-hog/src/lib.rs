//! Test guest `memory-hog`: allocates memory 1 MiB at a time, touching every
//! page, until allocation fails. It exists to test that the host's store
//! limiter (64 MiB by default) stops a guest that grows its linear memory
//! without bound: the failed `memory.grow` makes the allocator abort, which
//! traps, and only that call fails.

wit_bindgen::generate!({ path: "../../../wit", world: "extractor" });

use std::hint::black_box;

const CHUNK: usize = 1 << 20;
const PAGE: usize = 64 << 10;

struct MemoryHog;

impl Guest for MemoryHog {
    fn extract(_conversation: Conversation, _now: i64) -> Vec<Candidate> {
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut chunk = vec![0u8; CHUNK];
            // Write to each wasm page so the memory is really used, and hide
            // the chunk from the optimizer so the allocation is kept.
            for (i, byte) in chunk.iter_mut().step_by(PAGE).enumerate() {
                *byte = i as u8 | 1;
            }
            chunks.push(black_box(chunk));
            black_box(&chunks);
        }
    }
}

export!(MemoryHog);
