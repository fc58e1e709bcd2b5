//! Helpers shared by the optimiser's test files (each test file is its own crate and
//! includes this module with `mod common;`; not every file uses every helper).
#![allow(dead_code)]

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

/// Runs function 0 of `before` (the original) and of `after` (the optimised program) on
/// copies of `args` in the reference interpreter, and asserts that both end alike (the same
/// value or the same error) and leave the same arguments behind, bit for bit; `case` names
/// the inputs in the failure message.
pub fn assert_same_run(
    before: &tessera_ir::Program,
    after: &tessera_ir::Program,
    args: &[tessera_ir::ArgValue],
    case: &str,
) {
    let (mut a, mut b) = (args.to_vec(), args.to_vec());
    let id = tessera_ir::FuncId(0);
    let ra = tessera_interp::call(before, id, &mut a, Default::default()).map_err(|e| e.kind);
    let rb = tessera_interp::call(after, id, &mut b, Default::default()).map_err(|e| e.kind);
    assert_eq!(ra, rb, "{case}");
    assert_eq!(a, b, "{case}");
}

/// The code generator's modes for checking parallel loops, without versions: in order,
/// backwards and shuffled (a parallel loop that carries a dependence changes the results in
/// the last two).
pub fn parallel_test_modes() -> [tessera_poly::GenOptions; 3] {
    let base = tessera_poly::GenOptions {
        versions: false,
        ..Default::default()
    };
    [
        base,
        tessera_poly::GenOptions {
            reverse_parallel: true,
            ..base
        },
        tessera_poly::GenOptions {
            shuffle_parallel: Some(12345),
            ..base
        },
    ]
}
