//! Flat chains that make deep syntax trees (a long sum, a long `else if` chain) go through
//! the library pipeline (parse, check, interpret, JIT) on an ordinary 8 MiB thread stack,
//! as an embedding program's main thread has, without overflowing it.

use std::collections::HashMap;
use tessera_ir::{ArgValue, Scalar};

fn on_8mib_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

fn flat_sum(n: usize) -> String {
    format!(
        "double f(double a) {{\n    double s = {};\n    return s;\n}}\n",
        vec!["a"; n].join(" + ")
    )
}

fn else_if_chain(n: usize) -> String {
    let mut s = String::from("int g(int x) {\n    int r = 0;\n    if (x == 0) r = 0;\n");
    for i in 1..n {
        s.push_str(&format!("    else if (x == {i}) r = {};\n", 2 * i));
    }
    s.push_str("    else r = -1;\n    return r;\n}\n");
    s
}

fn run(src: String, entry: &'static str, arg: Scalar, jit: bool) -> Option<Scalar> {
    on_8mib_stack(move || {
        let prog = tessera_sema::compile_source(&src, &HashMap::new()).expect("accepted");
        let fid = prog.function(entry).unwrap().0;
        let mut args = vec![ArgValue::Scalar(arg)];
        let r = if jit {
            let opts = tessera_jit::Options {
                opt_level: 0,
                ..Default::default()
            };
            let c = tessera_jit::Compiled::compile(&prog, &opts).unwrap();
            c.call(fid, &mut args).unwrap()
        } else {
            tessera_interp::call(&prog, fid, &mut args, Default::default()).unwrap()
        };
        drop(prog);
        r
    })
}

#[test]
fn flat_sum_of_100000_terms_through_the_interpreter() {
    let r = run(flat_sum(100_000), "f", Scalar::F64(0.5), false);
    assert_eq!(r, Some(Scalar::F64(50_000.0)));
}

#[test]
fn else_if_chain_of_10000_through_the_interpreter() {
    let r = run(else_if_chain(10_000), "g", Scalar::I32(9_999), false);
    assert_eq!(r, Some(Scalar::I32(19_998)));
}

#[test]
fn flat_sum_of_20000_terms_through_the_jit() {
    let r = run(flat_sum(20_000), "f", Scalar::F64(0.5), true);
    assert_eq!(r, Some(Scalar::F64(10_000.0)));
}

#[test]
fn else_if_chain_of_2000_through_the_jit() {
    let r = run(else_if_chain(2_000), "g", Scalar::I32(1_999), true);
    assert_eq!(r, Some(Scalar::I32(3_998)));
}

/// Every arm of a chain joins through the join tree (fan-in 16, so arms 15/16/17 and
/// 255/256/257 sit on its block boundaries), optimised: 300 arms (two levels, the full O3
/// pipeline) and 10,000 (a huge function with thousands of branches: promotion and one
/// simplification only, which took 14 s in the O1 pipeline and takes well under 1 s).
#[test]
fn else_if_chains_through_the_optimising_jit_take_every_arm() {
    for n in [300usize, 10_000] {
        let src = else_if_chain(n);
        let results = on_8mib_stack(move || {
            let prog = tessera_sema::compile_source(&src, &HashMap::new()).expect("accepted");
            let fid = prog.function("g").unwrap().0;
            let c = tessera_jit::Compiled::compile(&prog, &Default::default()).unwrap();
            let xs = [-1, 0, 1, 15, 16, 17, 255, 256, 257, 299, 300, 9_999, 10_000];
            xs.map(|x| {
                let mut args = vec![ArgValue::Scalar(Scalar::I32(x))];
                (x, c.call(fid, &mut args).unwrap())
            })
        });
        for (x, r) in results {
            let want = if (0..n as i32).contains(&x) {
                2 * x
            } else {
                -1
            };
            assert_eq!(r, Some(Scalar::I32(want)), "{n} arms, x = {x}");
        }
    }
}

#[test]
fn flat_sum_of_256_terms_and_252_else_ifs_are_not_nesting() {
    // Both were rejected as "nesting too deep" (the limit is 256 levels of real nesting).
    assert_eq!(
        run(flat_sum(256), "f", Scalar::F64(1.0), false),
        Some(Scalar::F64(256.0))
    );
    assert_eq!(
        run(else_if_chain(252), "g", Scalar::I32(251), false),
        Some(Scalar::I32(502))
    );
}

#[test]
fn tree_deeper_than_the_bound_is_a_located_error() {
    let src = flat_sum(tessera_syntax::parser::MAX_TREE_DEPTH + 10);
    let e = on_8mib_stack(move || tessera_sema::compile_source(&src, &HashMap::new()).unwrap_err());
    assert_eq!(e.len(), 1);
    assert!(e[0].message.contains("chain too long"), "{}", e[0].message);
    assert_eq!(e[0].span.line, 2);
}
