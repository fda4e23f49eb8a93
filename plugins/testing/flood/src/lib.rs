//! Test guest `flood`: returns 1,000,000 small, individually valid candidates.
//! It exists to test that the host refuses an oversized result (and does not
//! run out of memory itself) instead of trusting the guest's output.
//!
//! Why the export is written by hand: through wit-bindgen's `Guest` trait the
//! guest would hold a `Vec<Candidate>` (about 64 bytes and a heap string per
//! element on wasm32) *and* its 56-byte-per-element lowered copy at once, over
//! 120 MB, so it would trap on its own 64 MiB limit before the host ever saw
//! the result. Here the lowered list is written directly in the canonical ABI
//! layout, every summary pointing at one static string, which keeps the guest
//! near 54 MiB. `generate!` still embeds the world's type information, so the
//! component exports the same `extract` as every other extractor.

wit_bindgen::generate!({ path: "../../../wit", world: "extractor" });

use std::alloc::{Layout, alloc};

/// How many candidates the flood returns.
const COUNT: usize = 1_000_000;
/// Canonical ABI size of `candidate` on wasm32 (alignment 4): memory-type u8
/// @0, summary (ptr, len) @4, detail option<string> (tag @12, ptr @16,
/// len @20), confidence @24, importance @28, durability @32, evidence u8 @36,
/// negated u8 @37, persons (ptr, len) @40, source-turns (ptr, len) @48.
const SIZE: usize = 56;
const SUMMARY: &str = "flood";
/// `memory-type::episode` and `evidence::direct` as enum discriminants.
const EPISODE: u8 = 8;
const DIRECT: u8 = 0;

/// The return area: (pointer, length) of the returned list.
#[repr(C, align(4))]
struct RetArea([u32; 2]);
static mut RET: RetArea = RetArea([0; 2]);

/// Core export for `extract: func(conversation, now: s64) -> list<candidate>`:
/// the conversation arrives flattened as three (pointer, length) pairs (id,
/// user-id, messages) plus `now`, and the list is returned through a pointer
/// to its (pointer, length) pair. The arguments are left unread and unfreed
/// (every call runs in a fresh instance).
///
/// # Safety
/// Called only by the component's canonical lift, as described above.
#[unsafe(export_name = "extract")]
pub unsafe extern "C" fn extract(
    _id: *mut u8,
    _id_len: usize,
    _user: *mut u8,
    _user_len: usize,
    _messages: *mut u8,
    _messages_len: usize,
    _now: i64,
) -> *mut u8 {
    wit_bindgen::rt::run_ctors_once();
    wit_bindgen::rt::maybe_link_cabi_realloc();
    unsafe {
        let layout = Layout::from_size_align(COUNT * SIZE, 4).unwrap();
        let base = alloc(layout);
        if base.is_null() {
            core::arch::wasm32::unreachable();
        }
        for i in 0..COUNT {
            let rec = base.add(i * SIZE);
            let put = |offset: usize, value: u32| (rec.add(offset) as *mut u32).write(value);
            put(0, 0); // also clears the padding after memory-type
            rec.write(EPISODE);
            put(4, SUMMARY.as_ptr() as u32);
            put(8, SUMMARY.len() as u32);
            put(12, 0); // detail: none (tag 0, padding)
            put(16, 0);
            put(20, 0);
            put(24, 0.5f32.to_bits()); // confidence
            put(28, 0.5f32.to_bits()); // importance
            put(32, 0.5f32.to_bits()); // durability
            put(36, 0); // evidence, negated = false, padding
            rec.add(36).write(DIRECT);
            put(40, 4); // persons: empty (dangling aligned pointer, 0)
            put(44, 0);
            put(48, 4); // source-turns: empty
            put(52, 0);
        }
        let ret = &raw mut RET;
        (*ret).0 = [base as u32, COUNT as u32];
        ret as *mut u8
    }
}
