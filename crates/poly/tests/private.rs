//! Privatisation of scalars declared outside the loops that use them (`private.rs`): which
//! scalars get a variable per range of uses, and that the optimised program computes what
//! the original does, bit for bit, in the reference interpreter at several sizes (a wrong
//! renaming reads another range's value, or the value the loop left behind).

mod common;

use std::collections::HashMap;
use tessera_ir::{ArgValue, ArrayData, ArrayElems, Scalar};
use tessera_poly::{GenOptions, PolyOptions};

/// Optimises `src` (signature `(int n, double arrays[n]...)`, `arrays` of them, each `n` or
/// `n x n` long as `ranks` says); returns the privatised scalars as `(name, variables)` after
/// checking the optimised code against the original at n = 0 to 9.
fn privatised(src: &str, ranks: &[usize]) -> Vec<(String, usize)> {
    let prog =
        tessera_sema::compile_source(src, &HashMap::new()).unwrap_or_else(|d| panic!("{d:?}"));
    let gen = GenOptions {
        versions: false,
        ..Default::default()
    };
    let (out, report) = tessera_poly::optimize(&prog, &PolyOptions::default(), gen);
    let mut next = common::xorshift(0x51f1_5eed_1234_5678);
    for n in 0..10usize {
        let mut a = vec![ArgValue::Scalar(Scalar::I32(n as i32))];
        for &r in ranks {
            let shape = vec![n; r];
            let len = shape.iter().product();
            a.push(ArgValue::Array(ArrayData {
                shape,
                elems: ArrayElems::F64(
                    (0..len)
                        .map(|_| (next() % 2000) as f64 / 97.0 - 10.0)
                        .collect(),
                ),
            }));
        }
        // A diagonal that keeps divisions away from zero.
        if let Some(ArgValue::Array(ArrayData {
            elems: ArrayElems::F64(m),
            shape,
        })) = a.get_mut(1)
        {
            if shape.len() == 2 {
                for i in 0..n {
                    m[i * n + i] += 100.0;
                }
            }
        }
        common::assert_same_run(&prog, &out, &a, &format!("n = {n}"));
    }
    report
        .privatized
        .iter()
        .map(|(_, v, _, k)| (v.clone(), *k))
        .collect()
}

#[test]
fn ludcmp_temporary_declared_at_the_top() {
    // PolyBench's ludcmp as written: `double w;` and the counters at the top.
    let got = privatised(
        include_str!("../../../examples/kernels/ludcmp.c"),
        &[2, 1, 1, 1],
    );
    // One variable per loop body that assigns `w`; the counters stay as they are.
    assert_eq!(got, vec![("w".to_string(), 4)]);
}

#[test]
fn two_ranges_in_one_body() {
    let got = privatised(
        "void k(int n, double a[n], double b[n], double c[n]) {
            double w;
            for (int i = 0; i < n; i++) {
                w = a[i] * 2.0;
                b[i] = w + 1.0;
                w = c[i];
                c[i] = w * w;
            }
        }",
        &[1, 1, 1],
    );
    assert_eq!(got, vec![("w".to_string(), 2)]);
}

#[test]
fn value_read_after_the_loop_is_kept() {
    // The last iteration's `w` is read after the loop: no range covers that read.
    let got = privatised(
        "void k(int n, double a[n], double b[n]) {
            double w = 0.0;
            for (int i = 0; i < n; i++) {
                w = a[i] * 2.0;
                b[i] = w;
            }
            if (n > 0)
                a[0] = w;
        }",
        &[1, 1],
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn read_before_the_assignment_is_kept() {
    // Each iteration reads the previous iteration's value.
    let got = privatised(
        "void k(int n, double a[n], double b[n]) {
            double w = 1.0;
            for (int i = 0; i < n; i++) {
                b[i] = w;
                w = a[i];
            }
        }",
        &[1, 1],
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn conditional_assignment_is_kept() {
    // Where the test fails, the read sees an earlier iteration's value.
    let got = privatised(
        "void k(int n, double a[n], double b[n]) {
            double w = 0.0;
            for (int i = 0; i < n; i++) {
                if (a[i] > 0.0)
                    w = a[i];
                b[i] = w;
            }
        }",
        &[1, 1],
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn accumulation_across_iterations_is_kept() {
    // `w += ...` before any plain assignment in the body reads the previous value.
    let got = privatised(
        "void k(int n, double a[n], double b[n]) {
            double w = 0.0;
            for (int i = 0; i < n; i++) {
                w += a[i];
                b[i] = w;
            }
        }",
        &[1, 1],
    );
    assert!(got.is_empty(), "{got:?}");
}
