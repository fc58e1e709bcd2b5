//! Exact label and fragment counts against hand-computed trip counts, the invariants that
//! tie labels, arms and fragments together, and Γ under the three models.

use std::collections::HashMap;
use tessera_cost::*;
use tessera_interp::Limits;
use tessera_ir::{ArgValue, ArrayData, FuncId, Program, Scalar, ScalarTy};
use LabelKind::*;

fn compile(src: &str) -> Program {
    tessera_sema::compile_source(src, &HashMap::new()).unwrap_or_else(|d| panic!("{d:?}"))
}

fn i(x: i32) -> ArgValue {
    ArgValue::Scalar(Scalar::I32(x))
}

fn f64s(shape: &[usize]) -> ArgValue {
    let mut a = ArrayData::zeros(ScalarTy::F64, shape).unwrap();
    a.fill_random(7, "A");
    ArgValue::Array(a)
}

/// Counts `entry`, checks the run against the uninstrumented program and the invariants
/// every profile satisfies, and returns the profile.
fn profile(prog: &Program, entry: &str, args: Vec<ArgValue>) -> Profile {
    let (fid, _) = prog.function(entry).unwrap();
    let mut plain = args.clone();
    let want = tessera_interp::call(prog, fid, &mut plain, Limits::default()).unwrap();
    let mut counted = args;
    let p = count_run(prog, entry, &mut counted, Limits::default()).unwrap();
    assert_eq!(p.result, want, "instrumentation changed the result");
    assert_eq!(counted, plain, "instrumentation changed the arrays");
    check_invariants(&p);
    p
}

fn check_invariants(p: &Profile) {
    let m = &p.map;
    // A node that ends in a branch is left through exactly one of its arms.
    for (k, n) in m.nodes.iter().enumerate() {
        if let NodeEnd::Split(a, b) = n.end {
            assert_eq!(
                p.count(a) + p.count(b),
                p.count(NodeId(k as u32)),
                "arms of node {k}"
            );
        }
    }
    // Every label execution starts exactly one fragment execution.
    for l in m.labels() {
        let s: u64 = m
            .fragments
            .iter()
            .filter(|f| f.label == l)
            .map(|f| p.count(f.leaf()))
            .sum();
        assert_eq!(s, p.count(l), "fragments of label {l:?}");
    }
    assert_eq!(p.gamma(&CostModel::Cm0), p.label_executions() as f64);
    // Γ_CMC is the sum of the design row; Γ_CMW with unit weights is Γ_CMC.
    let row = p.class_totals();
    assert_eq!(p.gamma(&CostModel::Cmc), row.iter().sum::<f64>());
    assert_eq!(
        p.gamma(&CostModel::Cmw(Weights([1.0; NCLASSES]))),
        p.gamma(&CostModel::Cmc)
    );
    // The row equals the per-node sum Σ count(node) · own(node).
    let mut by_node = [0.0; NCLASSES];
    for (k, n) in m.nodes.iter().enumerate() {
        for (a, &c) in by_node.iter_mut().zip(&n.own.0) {
            *a += p.node_counts[k] as f64 * c as f64;
        }
    }
    assert_eq!(row, by_node);
}

fn labels(p: &Profile, prog: &Program, f: &str) -> Vec<(LabelKind, u64)> {
    let (fid, _) = prog.function(f).unwrap();
    p.label_counts(fid)
}

#[test]
fn nested_loops() {
    let prog = compile(
        "void k(int n, int m, double A[n][m]) {
            for (int i = 0; i < n; i++)
                for (int j = 0; j < m; j++)
                    A[i][j] = A[i][j] + 1.0;
        }",
    );
    let (n, m) = (7u64, 5u64);
    let p = profile(&prog, "k", vec![i(7), i(5), f64s(&[7, 5])]);
    assert_eq!(
        labels(&p, &prog, "k"),
        vec![
            (Entry, 1),
            (LoopHeader, n + 1),
            (LoopLatch, n),
            (LoopExit, 1),
            (LoopHeader, n * (m + 1)),
            (LoopLatch, n * m),
            (LoopExit, n),
        ]
    );
    // Zero-trip outer loop.
    let p = profile(&prog, "k", vec![i(0), i(5), f64s(&[0, 5])]);
    assert_eq!(p.label_executions(), 1 + 1 + 1);
}

#[test]
fn triangular_loops() {
    let prog = compile(
        "double k(int n, double A[n][n]) {
            double s = 0.0;
            for (int i = 0; i < n; i++)
                for (int j = 0; j <= i; j++)
                    s += A[i][j];
            return s;
        }",
    );
    let n = 9u64;
    let p = profile(&prog, "k", vec![i(9), f64s(&[9, 9])]);
    let tri = n * (n + 1) / 2;
    assert_eq!(
        labels(&p, &prog, "k"),
        vec![
            (Entry, 1),
            (LoopHeader, n + 1),
            (LoopLatch, n),
            (LoopExit, 1),
            (LoopHeader, tri + n),
            (LoopLatch, tri),
            (LoopExit, n),
        ]
    );
    assert_eq!(
        p.gamma(&CostModel::Cm0),
        (1 + (n + 1) + n + 1 + (tri + n) + tri + n) as f64
    );
}

#[test]
fn if_else_join() {
    let prog = compile(
        "int k(int n) {
            int s = 0;
            for (int i = 0; i < n; i++) {
                if (i % 3 == 0) s += 2; else s -= 1;
            }
            return s;
        }",
    );
    let p = profile(&prog, "k", vec![i(10)]);
    assert_eq!(
        labels(&p, &prog, "k"),
        vec![
            (Entry, 1),
            (LoopHeader, 11),
            (LoopLatch, 10),
            (LoopExit, 1),
            (Join, 10)
        ]
    );
    let arm = |k: ArmKind| {
        let id = p
            .map
            .nodes
            .iter()
            .position(|n| matches!(n.kind, NodeKind::Arm { arm, .. } if arm == k))
            .unwrap();
        p.node_counts[id]
    };
    assert_eq!(arm(ArmKind::Then), 4); // i = 0, 3, 6, 9
    assert_eq!(arm(ArmKind::Else), 6);
    // Fragments from the loop header: into the body and through either branch to the join,
    // or out of the loop.
    let header = p.map.labels_of(FuncId(0))[1].0;
    let mut from_header: Vec<u64> = p
        .map
        .fragments
        .iter()
        .filter(|f| f.label == header)
        .map(|f| p.count(f.leaf()))
        .collect();
    from_header.sort();
    assert_eq!(from_header, vec![1, 4, 6]);
}

#[test]
fn early_break() {
    let prog = compile(
        "int k(int n, int lim) {
            int i = 0;
            for (i = 0; i < n; i++) {
                if (i == lim) break;
            }
            return i;
        }",
    );
    let p = profile(&prog, "k", vec![i(10), i(4)]);
    assert_eq!(p.result, Some(Scalar::I32(4)));
    assert_eq!(
        labels(&p, &prog, "k"),
        vec![
            (Entry, 1),
            (LoopHeader, 5),
            (LoopLatch, 4),
            (LoopExit, 1),
            (Join, 4)
        ]
    );
    // The exit is reached by the break, not by the loop test.
    let exit_arm = p
        .map
        .nodes
        .iter()
        .position(|n| {
            matches!(
                n.kind,
                NodeKind::Arm {
                    arm: ArmKind::Exit,
                    ..
                }
            )
        })
        .unwrap();
    assert_eq!(p.node_counts[exit_arm], 0);
    // Without the break taken: the loop test exits.
    let p = profile(&prog, "k", vec![i(3), i(4)]);
    assert_eq!(p.node_counts[exit_arm], 1);
    assert_eq!(labels(&p, &prog, "k")[1], (LoopHeader, 4));
}

#[test]
fn while_loop() {
    let prog = compile(
        "int k(int x) {
            int s = 0;
            while (x != 1) {
                if (x % 2 == 0) x = x / 2; else x = 3 * x + 1;
                s++;
            }
            return s;
        }",
    );
    // 6 3 10 5 16 8 4 2 1: eight steps.
    let p = profile(&prog, "k", vec![i(6)]);
    assert_eq!(p.result, Some(Scalar::I32(8)));
    assert_eq!(
        labels(&p, &prog, "k"),
        vec![(Entry, 1), (LoopHeader, 9), (LoopExit, 1), (Join, 8)]
    );
}

#[test]
fn do_while_with_continue() {
    let prog = compile(
        "int k(int n) {
            int i = 0;
            int s = 0;
            do {
                i++;
                if (i % 2 == 1) continue;
                s += i;
            } while (i < n);
            return s;
        }",
    );
    let p = profile(&prog, "k", vec![i(5)]);
    assert_eq!(p.result, Some(Scalar::I32(6)));
    assert_eq!(
        labels(&p, &prog, "k"),
        vec![
            (Entry, 1),
            (LoopHeader, 5),
            (LoopLatch, 5),
            (LoopExit, 1),
            (Join, 2)
        ]
    );
}

#[test]
fn calls_and_recursion() {
    let prog = compile(
        "int fib(int n) {
            if (n < 2) return n;
            return fib(n - 1) + fib(n - 2);
        }
        int k(int n) { return fib(n) + fib(1); }",
    );
    let p = profile(&prog, "k", vec![i(10)]);
    assert_eq!(p.result, Some(Scalar::I32(56)));
    // fib(10) makes 177 calls, 88 of them with n >= 2; plus fib(1).
    assert_eq!(labels(&p, &prog, "fib"), vec![(Entry, 178), (Join, 88)]);
    assert_eq!(labels(&p, &prog, "k"), vec![(Entry, 1)]);
    // Every call is one Call instruction: two per fib with n >= 2, two in k.
    assert_eq!(p.class_totals()[Class::Call.index()], (2 * 88 + 2) as f64);
}

#[test]
fn guards_and_classes() {
    let prog = compile(
        "#include <math.h>
        void k(int n, int d, double A[n], long B[n]) {
            for (long i = 0; i < n; i++) {
                A[i] = sqrt(A[i]) / 2.0;
                B[i] = i / d + i / 4 + (i << 2);
            }
        }",
    );
    let map = fragments(&prog);
    // The fragment through the loop body: two array loads, two stores, each with a bounds
    // guard; the division by `d` is guarded, by 4 not; the constant shift is not; the
    // branch of the loop test is a guard.
    let body = map
        .fragments
        .iter()
        .find(|f| {
            f.path.iter().any(|&n| {
                matches!(
                    map.node(n).kind,
                    NodeKind::Arm {
                        arm: ArmKind::Body,
                        ..
                    }
                )
            })
        })
        .unwrap();
    let c = body.classes;
    assert_eq!(c.get(Class::Array), 3);
    assert_eq!(c.get(Class::Guard), 3 + 1 + 1);
    assert_eq!(c.get(Class::Math), 4); // sqrt, / 2.0, / d, / 4
    assert_eq!(c.get(Class::Alloc), 0);
    assert_eq!(c.get(Class::Call), 0);
    // Run it: the body fragment runs n times.
    let mut b = ArrayData::zeros(ScalarTy::I64, &[6]).unwrap();
    b.fill_random(1, "B");
    let p = profile(&prog, "k", vec![i(6), i(3), f64s(&[6]), ArgValue::Array(b)]);
    let k = p.map.fragments.iter().position(|f| f == body).unwrap();
    assert_eq!(p.fragment_counts()[k], 6);
}

#[test]
fn hand_counted_cmc() {
    // Per fragment (scalar reads/writes, int ops, guards, array accesses, float ops):
    // entry: `long i = 0` (1); header→body→latch: test `i < n` (2 scalar reads, a
    // conversion, a compare, the branch guard) and `A[i] = A[i] * 2.0` (2 scalar reads,
    // 2 bounds guards, a load, a store, a multiply): 12; latch `i++` (read, add, write): 3;
    // header→exit: 5; loop exit → end: 0. Γ_CMC = 1 + 12 n + 3 n + 5.
    let prog = compile(
        "void k(int n, double A[n]) {
            for (long i = 0; i < n; i++) A[i] = A[i] * 2.0;
        }",
    );
    for n in [0usize, 1, 10] {
        let p = profile(&prog, "k", vec![i(n as i32), f64s(&[n])]);
        assert_eq!(p.gamma(&CostModel::Cmc), (6 + 15 * n) as f64, "n = {n}");
        assert_eq!(p.gamma(&CostModel::Cm0), (3 + 2 * n) as f64);
    }
}

#[test]
fn local_arrays_and_unreachable_code() {
    let prog = compile(
        "int g(int n) {
            int t[n];
            for (int i = 0; i < n; i++) t[i] = i;
            return t[n - 1];
            t[0] = g(1);
        }
        int k(int n) {
            int s = 0;
            for (int j = 1; j <= n; j++) s += g(j);
            return s;
        }",
    );
    let p = profile(&prog, "k", vec![i(4)]);
    assert_eq!(p.result, Some(Scalar::I32(6)));
    assert_eq!(p.class_totals()[Class::Alloc.index()], 4.0);
    assert_eq!(p.class_totals()[Class::Call.index()], 4.0);
    assert_eq!(
        labels(&p, &prog, "g"),
        vec![(Entry, 4), (LoopHeader, 14), (LoopLatch, 10), (LoopExit, 4)]
    );
}

#[test]
fn errors() {
    let prog = compile("int k(int n, double A[n]) { return (int)A[n]; }");
    let mut args = vec![i(2), f64s(&[2])];
    assert!(matches!(
        count_run(&prog, "nope", &mut args, Limits::default()),
        Err(CostError::UnknownFunction(_))
    ));
    match count_run(&prog, "k", &mut args, Limits::default()) {
        Err(CostError::Runtime(e)) => {
            assert!(matches!(
                e.kind,
                tessera_ir::ErrorKind::IndexOutOfBounds { .. }
            ))
        }
        other => panic!("{other:?}"),
    }
    // Wrong arguments are the interpreter's BadCall, not a panic.
    assert!(matches!(
        count_run(&prog, "k", &mut [i(2)], Limits::default()),
        Err(CostError::Runtime(_))
    ));
}

#[test]
fn parallel_loop() {
    use tessera_ir::{Expr, ExprKind, Stmt};
    // A `for` loop rewritten by hand into the parallel loop the polyhedral optimiser makes.
    let mut prog = compile(
        "void k(int n, double A[n]) {
            for (long i = 0; i < n; i++) A[i] = A[i] + 1.0;
        }",
    );
    let f = &mut prog.functions[0];
    let Stmt::Block(b) = &f.body[0] else {
        panic!("{:?}", f.body)
    };
    let (Stmt::Decl { var, .. }, Stmt::While { cond, body, .. }) = (&b[0], &b[1]) else {
        panic!("{b:?}")
    };
    let ExprKind::Cast(c) = &cond.kind else {
        panic!("{cond:?}")
    };
    let ExprKind::Cmp(_, _, hi) = &c.kind else {
        panic!("{c:?}")
    };
    let par = Stmt::ParFor {
        var: *var,
        lo: Expr {
            kind: ExprKind::Int(0),
            ty: Some(ScalarTy::I64),
            span: hi.span,
        },
        hi: (**hi).clone(),
        body: body.clone(),
    };
    f.body = vec![par];
    let p = profile(&prog, "k", vec![i(6), f64s(&[6])]);
    assert_eq!(
        labels(&p, &prog, "k"),
        vec![(Entry, 1), (LoopHeader, 7), (LoopExit, 1)]
    );
    let body_arm = p
        .map
        .nodes
        .iter()
        .position(|n| {
            matches!(
                n.kind,
                NodeKind::Arm {
                    arm: ArmKind::Body,
                    ..
                }
            )
        })
        .unwrap();
    assert_eq!(p.node_counts[body_arm], 6);
}

#[test]
fn else_if_chain_and_short_circuit() {
    let prog = compile(
        "int k(int n) {
            int a = 0, b = 0, c = 0;
            for (int i = 0; i < n; i++) {
                if (i < 3) a++;
                else if (i < 5 && i != 100) b++;
                else c++;
            }
            return a * 100 + b * 10 + c;
        }",
    );
    let p = profile(&prog, "k", vec![i(8)]);
    assert_eq!(p.result, Some(Scalar::I32(323)));
    assert_eq!(
        labels(&p, &prog, "k"),
        vec![
            (Entry, 1),
            (LoopHeader, 9),
            (LoopLatch, 8),
            (LoopExit, 1),
            (Join, 8),
            (Join, 5)
        ]
    );
}
