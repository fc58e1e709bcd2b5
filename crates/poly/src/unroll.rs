//! Complete unrolling of the loops a register micro-kernel marks (`model::micro_kernel`),
//! on isl's AST.
//!
//! The micro-kernel's full tiles are built by isl as plain loops over the `rows x cols`
//! strip, with constant trip counts (`for (c6 = 4 * c3; c6 <= 4 * c3 + 3; c6 += 1)`), under
//! a mark `unroll c6 c7` naming the iterators of the strip's members. This pass replaces
//! each such loop by its iterations, the iterator substituted by `init + u`, so that code
//! generation sees `rows x cols` statements whose subscripts are constants apart
//! (`crate::promote` then keeps their elements in registers). isl's own `unroll` loop type
//! does the same but costs it 2-3 ms per unrolled instance (gemm: 170 ms of AST generation
//! against 24 without); here it is a copy of the tree. Loops whose trip count is not a
//! constant (the partial tiles, `c7 <= min(n - 1, 16 * c4 + 15)`) keep their loop.

use std::collections::{BTreeMap, HashMap};

use crate::isl::{Ast, AstExpr, AstOp};

/// The prefix of the marks this pass consumes; the iterators to unroll follow, separated
/// by spaces.
pub const MARK: &str = "unroll";

/// The most iterations of one loop unrolled.
pub const MAX_TRIP: i64 = 64;

/// What [`unroll`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Unrolled {
    /// Loops replaced by their iterations.
    pub loops: usize,
    /// Marked loops kept because their trip count is not a constant (partial strips).
    pub kept: usize,
}

/// Unrolls the marked loops of `a` and drops the marks; returns the new tree and counts.
pub fn unroll(a: Ast) -> (Ast, Unrolled) {
    let mut n = Unrolled::default();
    let out = walk(a, &[], &mut n);
    (out, n)
}

/// Per statement, how many of the loops around it an `unroll` mark names (the strips
/// [`unroll`] removes from its full tiles): read before [`unroll`] drops the marks.
pub fn marked_loops(a: &Ast) -> HashMap<String, usize> {
    fn go(a: &Ast, marked: usize, out: &mut HashMap<String, usize>) {
        match a {
            Ast::Mark(name, body) => {
                let extra = match name.strip_prefix(MARK) {
                    Some(rest) if rest.is_empty() || rest.starts_with(' ') => {
                        rest.split_whitespace().count()
                    }
                    _ => 0,
                };
                go(body, marked + extra, out)
            }
            Ast::User(AstExpr::Op(_, args)) => {
                if let Some(AstExpr::Id(stmt)) = args.first() {
                    let e = out.entry(stmt.clone()).or_insert(0);
                    *e = (*e).max(marked);
                }
            }
            Ast::User(_) => {}
            Ast::For { body, .. } => go(body, marked, out),
            Ast::If(_, t, e) => {
                go(t, marked, out);
                if let Some(e) = e {
                    go(e, marked, out);
                }
            }
            Ast::Block(v) => {
                for x in v {
                    go(x, marked, out);
                }
            }
        }
    }
    let mut out = HashMap::new();
    go(a, 0, &mut out);
    out
}

fn walk(a: Ast, its: &[String], n: &mut Unrolled) -> Ast {
    match a {
        Ast::Mark(name, body) => match name.strip_prefix(MARK) {
            Some(rest) if rest.is_empty() || rest.starts_with(' ') => {
                let mut inner: Vec<String> = its.to_vec();
                inner.extend(rest.split_whitespace().map(String::from));
                walk(*body, &inner, n)
            }
            _ => Ast::Mark(name, Box::new(walk(*body, its, n))),
        },
        Ast::Block(v) => Ast::Block(v.into_iter().map(|x| walk(x, its, n)).collect()),
        Ast::If(c, t, e) => Ast::If(
            c,
            Box::new(walk(*t, its, n)),
            e.map(|x| Box::new(walk(*x, its, n))),
        ),
        Ast::User(c) => Ast::User(c),
        Ast::For {
            it,
            init,
            cond,
            inc,
            body,
            parallel,
        } => {
            let body = walk(*body, its, n);
            let trip = if its.contains(&it) && inc == AstExpr::Int(1) {
                trip_count(&it, &init, &cond)
            } else {
                None
            };
            match trip {
                Some(t) if (1..=MAX_TRIP).contains(&t) => {
                    n.loops += 1;
                    Ast::Block(
                        (0..t)
                            .map(|u| {
                                let value = if u == 0 {
                                    init.clone()
                                } else {
                                    AstExpr::Op(AstOp::Add, vec![init.clone(), AstExpr::Int(u)])
                                };
                                subst(&body, &it, &value)
                            })
                            .collect(),
                    )
                }
                _ => {
                    if its.contains(&it) {
                        n.kept += 1;
                    }
                    Ast::For {
                        it,
                        init,
                        cond,
                        inc,
                        body: Box::new(body),
                        parallel,
                    }
                }
            }
        }
    }
}

/// The constant trip count of `for (it = init; cond; it += 1)`, where `cond` is
/// `it <= e` or `it < e` and `e - init` is a constant.
fn trip_count(it: &str, init: &AstExpr, cond: &AstExpr) -> Option<i64> {
    let AstExpr::Op(op @ (AstOp::Le | AstOp::Lt), args) = cond else {
        return None;
    };
    let [AstExpr::Id(x), e] = args.as_slice() else {
        return None;
    };
    if x != it {
        return None;
    }
    let (mut m, c) = affine(e)?;
    let (mi, ci) = affine(init)?;
    for (v, k) in mi {
        *m.entry(v).or_insert(0) -= k;
    }
    if m.values().any(|&k| k != 0) {
        return None;
    }
    let d = c.checked_sub(ci)?;
    Some(if *op == AstOp::Le {
        d.checked_add(1)?
    } else {
        d
    })
}

/// `e` as coefficients per identifier and a constant, if it is affine.
fn affine(e: &AstExpr) -> Option<(BTreeMap<String, i64>, i64)> {
    Some(match e {
        AstExpr::Int(c) => (BTreeMap::new(), *c),
        AstExpr::Id(x) => (BTreeMap::from([(x.clone(), 1)]), 0),
        AstExpr::Op(AstOp::Minus, a) if a.len() == 1 => {
            let (m, c) = affine(&a[0])?;
            let m = m
                .into_iter()
                .map(|(v, k)| Some((v, k.checked_neg()?)))
                .collect::<Option<_>>()?;
            (m, c.checked_neg()?)
        }
        AstExpr::Op(op @ (AstOp::Add | AstOp::Sub), a) if a.len() == 2 => {
            let (mut m, c) = affine(&a[0])?;
            let (n, d) = affine(&a[1])?;
            let s = if *op == AstOp::Add { 1 } else { -1 };
            for (v, k) in n {
                let e = m.entry(v).or_insert(0);
                *e = e.checked_add(k.checked_mul(s)?)?;
            }
            (m, c.checked_add(d.checked_mul(s)?)?)
        }
        AstExpr::Op(AstOp::Mul, a) if a.len() == 2 => {
            let (x, y) = (affine(&a[0])?, affine(&a[1])?);
            let (k, (m, c)) = if x.0.is_empty() {
                (x.1, y)
            } else if y.0.is_empty() {
                (y.1, x)
            } else {
                return None;
            };
            let m = m
                .into_iter()
                .map(|(v, x)| Some((v, x.checked_mul(k)?)))
                .collect::<Option<_>>()?;
            (m, c.checked_mul(k)?)
        }
        _ => return None,
    })
}

/// `a` with the identifier `it` replaced by `value` (loops over another `it` inside shadow
/// it: isl names each dimension once, so there are none).
fn subst(a: &Ast, it: &str, value: &AstExpr) -> Ast {
    let e = |x: &AstExpr| subst_expr(x, it, value);
    match a {
        Ast::Block(v) => Ast::Block(v.iter().map(|x| subst(x, it, value)).collect()),
        Ast::If(c, t, f) => Ast::If(
            e(c),
            Box::new(subst(t, it, value)),
            f.as_ref().map(|x| Box::new(subst(x, it, value))),
        ),
        Ast::Mark(name, b) => Ast::Mark(name.clone(), Box::new(subst(b, it, value))),
        Ast::User(c) => Ast::User(e(c)),
        Ast::For {
            it: i,
            init,
            cond,
            inc,
            body,
            parallel,
        } => Ast::For {
            it: i.clone(),
            init: e(init),
            cond: e(cond),
            inc: e(inc),
            body: Box::new(subst(body, it, value)),
            parallel: *parallel,
        },
    }
}

fn subst_expr(x: &AstExpr, it: &str, value: &AstExpr) -> AstExpr {
    match x {
        AstExpr::Id(i) if i == it => value.clone(),
        AstExpr::Op(op, args) => {
            AstExpr::Op(*op, args.iter().map(|a| subst_expr(a, it, value)).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> AstExpr {
        AstExpr::Id(s.into())
    }
    fn int(c: i64) -> AstExpr {
        AstExpr::Int(c)
    }
    fn op(o: AstOp, a: Vec<AstExpr>) -> AstExpr {
        AstExpr::Op(o, a)
    }
    fn strip(it: &str, lo: AstExpr, hi: AstExpr, body: Ast) -> Ast {
        Ast::For {
            it: it.into(),
            init: lo,
            cond: op(AstOp::Le, vec![id(it), hi]),
            inc: int(1),
            body: Box::new(body),
            parallel: false,
        }
    }
    fn call(args: Vec<AstExpr>) -> Ast {
        let mut v = vec![id("S1")];
        v.extend(args);
        Ast::User(op(AstOp::Call, v))
    }
    fn calls(a: &Ast) -> Vec<String> {
        match a {
            Ast::User(c) => vec![c.to_string()],
            Ast::Block(v) => v.iter().flat_map(calls).collect(),
            Ast::Mark(_, b) | Ast::For { body: b, .. } => calls(b),
            Ast::If(_, t, e) => {
                let mut v = calls(t);
                v.extend(e.iter().flat_map(|x| calls(x)));
                v
            }
        }
    }

    /// `for (c6 = 2*c3; c6 <= 2*c3 + 1) for (c7 = 3*c4; c7 <= 3*c4 + 2) S1(c6, c7)` under
    /// `unroll c6 c7`: six calls at constant offsets, no loop left, the mark gone.
    #[test]
    fn marked_constant_strips_are_unrolled() {
        let two_c3 = op(AstOp::Mul, vec![int(2), id("c3")]);
        let three_c4 = op(AstOp::Mul, vec![int(3), id("c4")]);
        let inner = strip(
            "c7",
            three_c4.clone(),
            op(AstOp::Add, vec![three_c4, int(2)]),
            call(vec![id("c6"), id("c7")]),
        );
        let nest = strip(
            "c6",
            two_c3.clone(),
            op(AstOp::Add, vec![two_c3, int(1)]),
            inner,
        );
        let (out, n) = unroll(Ast::Mark("unroll c6 c7".into(), Box::new(nest)));
        assert_eq!(
            n,
            Unrolled { loops: 2, kept: 0 },
            "the c6 and c7 loops (c7 unrolled before c6 copies it)"
        );
        assert_eq!(
            calls(&out),
            [
                "call(S1, (2 * c3), (3 * c4))",
                "call(S1, (2 * c3), ((3 * c4) + 1))",
                "call(S1, (2 * c3), ((3 * c4) + 2))",
                "call(S1, ((2 * c3) + 1), (3 * c4))",
                "call(S1, ((2 * c3) + 1), ((3 * c4) + 1))",
                "call(S1, ((2 * c3) + 1), ((3 * c4) + 2))",
            ]
        );
        fn loops(a: &Ast) -> usize {
            match a {
                Ast::For { body, .. } => 1 + loops(body),
                Ast::Mark(..) => 100,
                Ast::Block(v) => v.iter().map(loops).sum(),
                Ast::If(_, t, e) => loops(t) + e.as_ref().map_or(0, |x| loops(x)),
                Ast::User(_) => 0,
            }
        }
        assert_eq!(loops(&out), 0);
    }

    /// Partial tiles (a `min` bound), loops not named by the mark, and loops outside any
    /// mark keep their loop.
    #[test]
    fn other_loops_are_kept() {
        let partial = strip(
            "c7",
            id("c4"),
            op(
                AstOp::Min,
                vec![id("n"), op(AstOp::Add, vec![id("c4"), int(3)])],
            ),
            call(vec![id("c7")]),
        );
        let (out, n) = unroll(Ast::Mark("unroll c7".into(), Box::new(partial)));
        assert_eq!(n, Unrolled { loops: 0, kept: 1 });
        assert!(matches!(out, Ast::For { .. }));
        let other = strip("c5", int(0), int(3), call(vec![id("c5")]));
        let (out, n) = unroll(Ast::Mark("unroll c7".into(), Box::new(other.clone())));
        assert_eq!(n, Unrolled::default());
        assert!(matches!(out, Ast::For { .. }));
        let (out, n) = unroll(other);
        assert_eq!(n, Unrolled::default());
        assert!(matches!(out, Ast::For { .. }));
        // Other marks stay.
        let (out, _) = unroll(Ast::Mark("parallel".into(), Box::new(call(vec![]))));
        assert!(matches!(out, Ast::Mark(ref m, _) if m == "parallel"));
    }
}
