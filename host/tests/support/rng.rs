//! The tests' deterministic generator (xorshift64*): the same cases on every run for a
//! given seed, and a failure that prints its seed can be replayed. No extra crate.
//! The integration tests and the library's own unit tests (by `#[path]`) share it.
#![allow(dead_code)] // each user calls a different subset

pub struct Rng(pub u64);

impl Rng {
    /// Seeded from the clock, for tests that explore (they print `rng.0`).
    pub fn from_time() -> Rng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64);
        Rng(nanos | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Uniform enough in `low..high`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low)
    }
}
