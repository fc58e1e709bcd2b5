//! Panel copies of micro-kernel operands (`tessera_poly::model::Pack`): which operands of
//! kernels from source are copied, and that the optimised function computes what the
//! original does, bit for bit (the reference interpreter runs both on random inputs at
//! sizes 0 to 13, around and between the panel widths and the tile size).

mod common;

use std::collections::HashMap;
use tessera_ir::{ArgValue, ArrayData, ArrayElems, Program, Scalar};
use tessera_poly::{Fusion, GenOptions, PolyOptions};

/// Optimises `src` with a 2 x 4 micro-kernel and tiles of 5 (sizes below are not multiples
/// of either); returns the original, the optimised program, and per pack
/// `(array, panel subscript, width)`. With `kernel`, asserts that a micro-kernel was built.
fn packed(
    src: &str,
    pack: bool,
    fusion: Fusion,
    kernel: bool,
) -> (Program, Program, Vec<(String, usize, i64)>) {
    let prog =
        tessera_sema::compile_source(src, &HashMap::new()).unwrap_or_else(|d| panic!("{d:?}"));
    let opts = PolyOptions {
        tile_sizes: Some(vec![5]),
        register_tile: 2,
        micro_kernel_rows: 2,
        micro_kernel_cols: 4,
        pack,
        fusion,
        ..Default::default()
    };
    let gen = GenOptions {
        versions: false,
        ..Default::default()
    };
    let (out, report) = tessera_poly::optimize(&prog, &opts, gen);
    let f = &prog.functions[0];
    let mut packs = Vec::new();
    for s in &report.scops {
        assert!(s.fallback.is_none(), "{:?}", s.fallback);
        let a = s.analysis.as_ref().expect("analysed");
        assert!(!kernel || a.micro_kernel_shape.is_some(), "no micro-kernel");
        for p in &a.packs {
            packs.push((f.var(p.array).name.clone(), p.panel_dim, p.width));
        }
    }
    (prog, out, packs)
}

/// Runs both programs on the same random `n x n` arrays (the first parameter is `n`, then
/// two doubles, then `arrays` arrays) at several `n` and asserts equal results, bit for bit.
fn same_results(before: &Program, after: &Program, arrays: usize) {
    let mut next = common::xorshift(0x2545_f491_4f6c_dd1du64);
    for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 13] {
        let mut args = vec![
            ArgValue::Scalar(Scalar::I32(n as i32)),
            ArgValue::Scalar(Scalar::F64(1.5)),
            ArgValue::Scalar(Scalar::F64(-0.75)),
        ];
        for _ in 0..arrays {
            let elems = ArrayElems::F64(
                (0..n * n)
                    .map(|_| (next() % 2000) as f64 / 97.0 - 10.0)
                    .collect(),
            );
            args.push(ArgValue::Array(ArrayData {
                shape: vec![n, n],
                elems,
            }));
        }
        common::assert_same_run(before, after, &args, &format!("n = {n}"));
    }
}

#[test]
fn gemm_copies_both_operands() {
    // `alpha * A[i][k]`: rows (panels of 2 along subscript 0), computed once per element;
    // `B[k][j]`: columns (panels of 4 along subscript 1).
    let src =
        "void k(int n, double alpha, double beta, double C[n][n], double A[n][n], double B[n][n]) {
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++)
                C[i][j] *= beta;
            for (int p = 0; p < n; p++)
                for (int j = 0; j < n; j++)
                    C[i][j] += alpha * A[i][p] * B[p][j];
        }
    }";
    let (before, after, packs) = packed(src, true, Fusion::Smart, true);
    assert_eq!(
        packs,
        [("A".to_string(), 0, 2), ("B".to_string(), 1, 4)],
        "{packs:?}"
    );
    same_results(&before, &after, 3);
    let (_, unpacked, none) = packed(src, false, Fusion::Smart, true);
    assert!(none.is_empty());
    same_results(&before, &unpacked, 3);
}

#[test]
fn one_array_in_both_roles() {
    // Syrk: `A[j][k]` (columns, a row apart in `A`) and `alpha * A[i][k]` (rows).
    let src = "void k(int n, double alpha, double beta, double S[n][n], double A[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int p = 0; p < n; p++)
                    S[i][j] += (alpha * A[i][p]) * A[j][p];
    }";
    let (before, after, mut packs) = packed(src, true, Fusion::Smart, true);
    packs.sort();
    assert_eq!(
        packs,
        [("A".to_string(), 0, 2), ("A".to_string(), 0, 4)],
        "{packs:?}"
    );
    same_results(&before, &after, 2);
}

#[test]
fn an_operand_may_divide_and_negate() {
    // `-(B[j][k] / beta)`: columns along subscript 0; a division of floats cannot fail.
    let src =
        "void k(int n, double alpha, double beta, double D[n][n], double A[n][n], double B[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int p = 0; p < n; p++)
                    D[i][j] += A[i][p] * -(B[j][p] / beta);
    }";
    let (before, after, mut packs) = packed(src, true, Fusion::Smart, true);
    packs.sort();
    assert_eq!(
        packs,
        [("A".to_string(), 0, 2), ("B".to_string(), 0, 4)],
        "{packs:?}"
    );
    same_results(&before, &after, 3);
}

#[test]
fn an_array_the_scop_writes_is_not_copied() {
    // `B` is scaled by the first nest of the same SCoP: a copy made before the nest would
    // hold the values before the scaling. `A` is read-only and copied. (Without fusion:
    // isl's fusion of the two nests leaves no micro-kernel at these options.)
    let src =
        "void k(int n, double alpha, double beta, double C[n][n], double A[n][n], double B[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                B[i][j] = alpha * B[i][j];
        for (int i = 0; i < n; i++)
            for (int p = 0; p < n; p++)
                for (int j = 0; j < n; j++)
                    C[i][j] += A[i][p] * B[p][j];
    }";
    let (before, after, packs) = packed(src, true, Fusion::None, true);
    assert_eq!(packs, [("A".to_string(), 0, 2)], "{packs:?}");
    same_results(&before, &after, 3);
}

#[test]
fn operands_moving_with_two_members_are_not_copied() {
    // `A[i][p + j]` moves with the rows and the columns: no panel layout serves it.
    let src =
        "void k(int n, double alpha, double beta, double C[n][n], double A[n][n], double B[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int p = 0; p + j < n; p++)
                    C[i][j] += A[i][p + j] * B[p][j];
    }";
    let (before, after, packs) = packed(src, true, Fusion::Smart, false);
    assert!(packs.iter().all(|p| p.0 != "A"), "{packs:?}");
    same_results(&before, &after, 3);
}
