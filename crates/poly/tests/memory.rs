//! The memory term of the schedule cost model (`tessera_poly::memory`): instance and
//! operation counts against hand counts, cache lines of a stream against its compulsory
//! lines, the ordering of schedules whose traffic differs by orders of magnitude, the
//! vectorisation rule, the SCoPs of called functions, and the errors.

use std::collections::HashMap;
use tessera_ir::{Function, Program};
use tessera_poly::memory::{
    call_sites, estimate, parameter_values, predict, Estimate, Level, Machine, PredictOptions,
    Weights, Which,
};
use tessera_poly::{GenOptions, PolyOptions, Report};

/// A fixed machine, so that the expectations do not depend on the host.
fn machine() -> Machine {
    Machine {
        line_bytes: 64,
        levels: vec![
            Level {
                name: "L1".into(),
                bytes: 32 << 10,
            },
            Level {
                name: "L2".into(),
                bytes: 512 << 10,
            },
            Level {
                name: "L3".into(),
                bytes: 16 << 20,
            },
        ],
        vector_bytes: 32,
        vector_registers: 16,
    }
}

fn compile(src: &str) -> Program {
    tessera_sema::compile_source(src, &HashMap::new()).unwrap_or_else(|d| panic!("{d:?}"))
}

/// The optimiser's options for the machine of [`machine`], not the host's: tiles of 64 (what
/// its cache model gives for 32 KiB / 512 KiB) and micro-kernels of 4 x 8 (16 vector
/// registers of 4 doubles). With the host's (8 x 8 on an AVX-512 host) the test's AVX2
/// machine would not hold the micro-kernel's accumulators in registers.
fn options() -> PolyOptions {
    PolyOptions {
        tile_sizes: Some(vec![64]),
        micro_kernel_rows: 4,
        micro_kernel_cols: 8,
        ..PolyOptions::default()
    }
}

fn optimised(prog: &Program, opts: &PolyOptions) -> Report {
    tessera_poly::optimize(
        prog,
        opts,
        GenOptions {
            versions: false,
            ..GenOptions::default()
        },
    )
    .1
}

/// The estimate of the first SCoP with parameters bound by name.
fn est(
    prog: &Program,
    rep: &Report,
    vals: &[(&str, i64)],
    which: Which,
    fast_math: bool,
) -> Estimate {
    let r = &rep.scops[0];
    let f: &Function = prog.function(&r.func).unwrap().1;
    let values = r
        .scop
        .params
        .iter()
        .map(|p| {
            let v = vals
                .iter()
                .find(|(n, _)| *n == r.scop.names[p])
                .unwrap_or_else(|| panic!("no value for {}", r.scop.names[p]))
                .1;
            (*p, v)
        })
        .collect();
    estimate(
        f,
        &r.scop,
        r.analysis.as_ref().expect("analysed"),
        &values,
        &machine(),
        which,
        fast_math,
    )
    .unwrap()
}

const COPY: &str = "void copy(int n, double A[n], double B[n]) {
    for (int i = 0; i < n; i++)
        B[i] = A[i];
}";

#[test]
fn a_stream_takes_in_its_compulsory_lines_at_every_level() {
    let prog = compile(COPY);
    let rep = optimised(&prog, &options());
    let empty = est(&prog, &rep, &[("n", 0)], Which::Original, false);
    assert_eq!(
        (empty.instances, empty.misses.iter().sum::<f64>()),
        (0.0, 0.0)
    );
    for n in [1, 2, 7, 4096, 100_003] {
        let e = est(&prog, &rep, &[("n", n)], Which::Original, false);
        assert_eq!(e.instances, n as f64);
        // A load and a store per instance.
        assert_eq!(e.ops, 2.0 * n as f64);
        // Unit stride, no reduction: vectorised.
        assert_eq!(e.vector_ops, e.ops);
        // One run of the only loop.
        assert_eq!(e.loop_starts, 1.0);
        // Two arrays of n doubles, 8 per line: (n - 1) / 8 + 1 lines each (rows assumed
        // not aligned to lines), once, whatever the capacity.
        let compulsory = 2.0 * ((n - 1) as f64 / 8.0 + 1.0);
        for (k, m) in e.misses.iter().enumerate() {
            assert!(
                (m - compulsory).abs() < 1e-6 * compulsory,
                "n = {n}, level {k}: {m} lines, compulsory {compulsory}"
            );
        }
    }
}

const GEMM_IJK: &str = "void gemm(int n, double C[n][n], double A[n][n], double B[n][n]) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < n; k++)
                C[i][j] += A[i][k] * B[k][j];
}";

#[test]
fn counts_are_exact_and_a_column_walk_costs_a_line_per_instance() {
    let prog = compile(GEMM_IJK);
    let rep = optimised(&prog, &options());
    let n = 600i64;
    let orig = est(&prog, &rep, &[("n", n)], Which::Original, false);
    assert_eq!(orig.instances, (n * n * n) as f64);
    // C[i][j] += A[i][k] * B[k][j]: 2 loads, 1 store, a multiply and the compound add.
    assert_eq!(orig.ops, 5.0 * (n * n * n) as f64);
    // k innermost: B[k][j] walks a column (strided) and C[i][j] is a floating-point
    // reduction over k: not vectorised, with or without fast-math (the stride).
    assert_eq!(orig.vector_ops, 0.0);
    assert_eq!(orig.parallel_fraction, 0.0);
    // The k loop starts once per (i, j).
    assert_eq!(orig.loop_starts, (n * n) as f64);
    // Each instance takes a new line of B into L1 (B's column, 600 lines, does not fit in
    // half of L1 with A's row; it fits in L2): about n^3 L1 lines.
    assert!(
        orig.misses[0] > 0.9 * (n * n * n) as f64,
        "L1 lines {}",
        orig.misses[0]
    );
    // The optimised schedule (tiled, j innermost or a micro-kernel) takes in at least ten
    // times fewer lines at L1 and is predicted faster on 1 and 2 threads.
    let fin = est(&prog, &rep, &[("n", n)], Which::Final, false);
    assert_eq!(fin.instances, orig.instances);
    assert_eq!(fin.ops, orig.ops);
    assert!(fin.vector_ops > 0.0);
    // Every instance of the optimised gemm runs under its parallel loop.
    assert_eq!(fin.parallel_fraction, 1.0);
    // Register-tile dimensions are unrolled, not loops: the innermost loop runs at least
    // 16 iterations per start.
    assert!(
        fin.loop_starts * 16.0 <= fin.instances,
        "{}",
        fin.loop_starts
    );
    assert!(
        fin.misses[0] * 10.0 < orig.misses[0],
        "final {:?} original {:?}",
        fin.misses,
        orig.misses
    );
    let m = machine();
    let w = Weights::reference(&m);
    for t in [1, 2] {
        assert!(fin.predict_ns(&m, &w, t) < orig.predict_ns(&m, &w, t));
    }
}

#[test]
fn a_float_reduction_vectorises_only_with_fast_math() {
    let src = "void dot(int n, int m, double s[n], double A[n][m]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < m; j++)
                s[i] += A[i][j];
    }";
    let prog = compile(src);
    let rep = optimised(&prog, &options());
    let v = [("n", 50), ("m", 70)];
    let strict = est(&prog, &rep, &v, Which::Original, false);
    let fast = est(&prog, &rep, &v, Which::Original, true);
    assert_eq!(strict.instances, 3500.0);
    assert_eq!(strict.vector_ops, 0.0);
    assert_eq!(fast.vector_ops, fast.ops);
}

#[test]
fn predict_sums_the_entrys_scops_and_names_what_it_cannot_model() {
    let src = "void two(int n, double A[n], double B[n]) {
        for (int i = 0; i < n; i++)
            A[i] = 2.0 * A[i];
        int k = 0;
        while (k < n) { B[k] = A[k]; k = k + 1; }
        for (int i = 0; i < n; i++)
            B[i] = B[i] + A[i];
    }";
    let prog = compile(src);
    let rep = optimised(&prog, &options());
    let (_, f) = prog.function("two").unwrap();
    let args = vec![
        tessera_ir::ArgValue::Scalar(tessera_ir::Scalar::I32(1000)),
        tessera_ir::ArgValue::Array(
            tessera_ir::ArrayData::zeros(tessera_ir::ScalarTy::F64, &[1000]).unwrap(),
        ),
        tessera_ir::ArgValue::Array(
            tessera_ir::ArrayData::zeros(tessera_ir::ScalarTy::F64, &[1000]).unwrap(),
        ),
    ];
    let values = parameter_values(f, &args);
    assert_eq!(values.len(), 1);
    let m = machine();
    let w = Weights::reference(&m);
    let opts = PredictOptions {
        machine: &m,
        weights: &w,
        threads: 1,
        fast_math: false,
        as_written: false,
    };
    let p = predict(&prog, &rep, "two", &values, &opts);
    assert_eq!(p.scops, rep.scops.len());
    assert!(p.ns > 0.0);
    // Without the parameter's value nothing is modelled, and each SCoP says why.
    let p = predict(&prog, &rep, "two", &HashMap::new(), &opts);
    assert_eq!(p.scops, 0);
    assert_eq!(p.unmodelled.len(), rep.scops.len());
    assert!(p.unmodelled[0].contains("`n`"), "{:?}", p.unmodelled);
}

/// The SCoPs of the functions the entry calls are predicted with the integer arguments of
/// each call, as many times as the `for` loops around the call run: a call of the entry
/// costs what its callees cost when each is the entry with those values, times its calls.
/// Calls under a condition or in a loop of unknown trips are left out, with a note.
#[test]
fn called_functions_are_predicted_per_call_with_their_arguments() {
    let src = "
    void step(int n, double B[n], double A[n]) {
        for (int i = 1; i < n - 1; i++)
            B[i] = (A[i - 1] + A[i] + A[i + 1]) / 3.0;
    }
    void prod(int n, int m, double C[n][m], double D[n][m]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < m; j++)
                C[i][j] += D[i][j] * 2.0;
    }
    void outer(int t, int n, int m, double A[n], double B[n], double C[n][m], double D[n][m]) {
        for (int s = 1; s <= t; s++) {
            step(n, B, A);
            step(n, A, B);
        }
        prod(n, m, C, D);
        prod(n - 1, 2 * m - m, C, D);
        if (t > 5)
            prod(n, m, C, D);
        int k = 0;
        while (k < n) {
            step(n, B, A);
            k = k + 1;
        }
    }";
    let prog = compile(src);
    let rep = optimised(&prog, &options());
    let var = |f: &str, v: &str| {
        let (_, func) = prog.function(f).unwrap();
        let id = func.params.iter().copied().find(|&p| func.var(p).name == v);
        id.unwrap()
    };
    let (entry, _) = prog.function("outer").unwrap();
    let values = HashMap::from([
        (var("outer", "t"), 3),
        (var("outer", "n"), 100),
        (var("outer", "m"), 50),
    ]);
    let (sites, notes) = call_sites(&prog, entry, &values);
    let site = |f: &str, vals: &[(&str, i64)]| {
        let want: HashMap<_, _> = vals.iter().map(|&(v, x)| (var(f, v), x)).collect();
        sites
            .iter()
            .find(|c| c.func == f && c.values == want)
            .map(|c| c.times)
    };
    assert_eq!(sites.len(), 4, "{sites:?}");
    assert_eq!(site("outer", &[("t", 3), ("n", 100), ("m", 50)]), Some(1.0));
    assert_eq!(site("step", &[("n", 100)]), Some(6.0), "{sites:?}");
    assert_eq!(
        site("prod", &[("n", 100), ("m", 50)]),
        Some(1.0),
        "{sites:?}"
    );
    assert_eq!(
        site("prod", &[("n", 99), ("m", 50)]),
        Some(1.0),
        "{sites:?}"
    );
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes.iter().any(|n| n.contains("under a condition")),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.contains("trip count")), "{notes:?}");

    let m = machine();
    let w = Weights::reference(&m);
    for threads in [1, 2] {
        let opts = PredictOptions {
            machine: &m,
            weights: &w,
            threads,
            fast_math: false,
            as_written: false,
        };
        let whole = predict(&prog, &rep, "outer", &values, &opts);
        let alone = |f: &str, vals: &[(&str, i64)]| {
            let v: HashMap<_, _> = vals.iter().map(|&(v, x)| (var(f, v), x)).collect();
            let p = predict(&prog, &rep, f, &v, &opts);
            assert_eq!(p.scops, 1, "{:?}", p.unmodelled);
            p
        };
        let step = alone("step", &[("n", 100)]);
        let prod = alone("prod", &[("n", 100), ("m", 50)]);
        let prod99 = alone("prod", &[("n", 99), ("m", 50)]);
        assert_eq!(whole.scops, 3, "{:?}", whole.unmodelled);
        let want = 6.0 * step.ns + prod.ns + prod99.ns;
        assert!(
            (whole.ns - want).abs() <= 1e-9 * want,
            "{} against {want}",
            whole.ns
        );
        for (k, x) in whole.features.iter().enumerate() {
            let want = 6.0 * step.features[k] + prod.features[k] + prod99.features[k];
            assert!(
                (x - want).abs() <= 1e-9 * want.abs().max(1.0),
                "term {k}: {x} against {want}"
            );
        }
        assert!(step.ns > 0.0 && prod99.ns > 0.0 && prod99.ns < prod.ns);
    }
}

/// The innermost loop's starts count the loop the code runs, not an iteration isl peeled
/// out of it: 3mm's product (its scalar expanded, `s = 0` fused at `k = 0`) tiled by 64 with
/// no register tiles runs its `j` loop of 64 iterations n³ / 64 times; isl peels `k = 0`
/// (one loop fewer around that copy), which once made the model take the `k x j` pair for
/// the innermost loop (n³ / 4096 starts). With register tiles of 4 (the strips unrolled in
/// full tiles, loops in partial ones) the same loop starts n³ / 256 times.
#[test]
fn loop_starts_count_the_innermost_loop_not_a_peeled_iteration() {
    let src = "void matprod(int n, int m, int p, double Z[n][p], double X[n][m], double Y[m][p]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < p; j++) {
                double s = 0.0;
                for (int k = 0; k < m; k++)
                    s += X[i][k] * Y[k][j];
                Z[i][j] = s;
            }
    }";
    let prog = compile(src);
    let n = 256i64;
    let vals = [("n", n), ("m", n), ("p", n)];
    for (rt, per_start) in [(1, 64.0), (4, 256.0)] {
        let opts = PolyOptions {
            register_tile: rt,
            micro_kernel_cols: 0,
            ..options()
        };
        let rep = optimised(&prog, &opts);
        let a = rep.scops[0].analysis.as_ref().expect("analysed");
        assert!(
            a.c_code.contains(", 0)"),
            "no peeled k = 0 iteration: {}",
            a.c_code
        );
        let e = est(&prog, &rep, &vals, Which::Final, false);
        let want = (n * n * n) as f64 / per_start;
        assert!(
            (e.loop_starts - want).abs() <= 0.1 * want,
            "register tile {rt}: {} loop starts, expected about {want}",
            e.loop_starts
        );
    }
}
