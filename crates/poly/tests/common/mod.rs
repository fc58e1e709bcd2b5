//! Helpers shared by the optimiser's test files (each test file is its own crate and
//! includes this module with `mod common;`).

/// A xorshift64 generator started at `seed` (non-zero): the random bits of the tests'
/// inputs, the same sequence on every run.
pub fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
