//! Loop unswitching on isl's AST: a test inside a loop that does not depend on the loop's
//! counter (nor on a counter of a loop inside it) is hoisted out, and the loop is generated
//! once for each outcome, with the test resolved.
//!
//! isl leaves such tests where its unrolled register tiles meet the edges of the domain
//! (`if (ni >= 4 * c3 + 2) S1(4 * c3 + 1, c4, c5)` inside the `c5` loop) and where statements
//! of a fused band start (`if (c4 == 0) S0(..)`); inside the innermost loop they keep LLVM
//! from vectorising it. Applied bottom-up, a test climbs out of every loop it is invariant in.
//! Each unswitch doubles the loop's code, so it is bounded ([`MAX_UNSWITCH`] per loop, and a
//! loop larger than [`MAX_NODES`] nodes is left as it is).

use std::collections::HashSet;

use crate::isl::{Ast, AstExpr};

/// Tests hoisted out of one loop at most.
pub const MAX_UNSWITCH: usize = 4;
/// Size (AST nodes) above which a loop is not unswitched.
pub const MAX_NODES: usize = 4000;

/// Unswitches every loop of `a`; returns the new tree and the number of tests hoisted.
pub fn unswitch(a: Ast) -> (Ast, usize) {
    let mut n = 0;
    let out = walk(a, &mut n);
    (out, n)
}

fn walk(a: Ast, n: &mut usize) -> Ast {
    match a {
        Ast::Block(v) => Ast::Block(v.into_iter().map(|x| walk(x, n)).collect()),
        Ast::If(c, t, e) => Ast::If(c, Box::new(walk(*t, n)), e.map(|x| Box::new(walk(*x, n)))),
        // A mark stays on each version of the loop it marks.
        Ast::Mark(name, body) => push_mark(&name, walk(*body, n)),
        Ast::User(c) => Ast::User(c),
        Ast::For {
            it,
            init,
            cond,
            inc,
            body,
            parallel,
        } => {
            let body = Box::new(walk(*body, n));
            hoist(
                Ast::For {
                    it,
                    init,
                    cond,
                    inc,
                    body,
                    parallel,
                },
                MAX_UNSWITCH,
                n,
            )
        }
    }
}

/// A copy of the loop `f`'s header around `body`.
fn with_body(f: &Ast, body: Ast) -> Ast {
    match f {
        Ast::For {
            it,
            init,
            cond,
            inc,
            parallel,
            ..
        } => Ast::For {
            it: it.clone(),
            init: init.clone(),
            cond: cond.clone(),
            inc: inc.clone(),
            body: Box::new(body),
            // A copy runs a subset of the iterations: still parallel.
            parallel: *parallel,
        },
        _ => body,
    }
}

fn push_mark(name: &str, a: Ast) -> Ast {
    match a {
        Ast::If(c, t, e) if matches!(*t, Ast::For { .. } | Ast::If(..)) => Ast::If(
            c,
            Box::new(push_mark(name, *t)),
            e.map(|x| Box::new(push_mark(name, *x))),
        ),
        other => Ast::Mark(name.to_string(), Box::new(other)),
    }
}

/// Hoists invariant tests out of the loop `f` (at most `budget`).
fn hoist(f: Ast, budget: usize, n: &mut usize) -> Ast {
    if budget == 0 || size(&f) > MAX_NODES {
        return f;
    }
    let Ast::For { it, body, .. } = &f else {
        return f;
    };
    let mut bound = HashSet::new();
    bound.insert(it.clone());
    let Some(c) = invariant_test(body, &mut bound) else {
        return f;
    };
    *n += 1;
    let (t, e) = (resolve(&f, &c, true), resolve(&f, &c, false));
    Ast::If(
        c,
        Box::new(hoist(t, budget - 1, n)),
        Some(Box::new(hoist(e, budget - 1, n))),
    )
}

/// The first test in `a` whose identifiers are not bound inside the loop (`bound`: the
/// loop's counter and the counters of loops around the test inside it).
fn invariant_test(a: &Ast, bound: &mut HashSet<String>) -> Option<AstExpr> {
    match a {
        Ast::Block(v) => v.iter().find_map(|x| invariant_test(x, bound)),
        Ast::Mark(_, b) => invariant_test(b, bound),
        Ast::User(_) => None,
        Ast::If(c, t, e) => {
            if !uses(c, bound) {
                return Some(c.clone());
            }
            invariant_test(t, bound).or_else(|| e.as_ref().and_then(|x| invariant_test(x, bound)))
        }
        Ast::For { it, body, .. } => {
            let fresh = bound.insert(it.clone());
            let r = invariant_test(body, bound);
            if fresh {
                bound.remove(it);
            }
            r
        }
    }
}

fn uses(e: &AstExpr, names: &HashSet<String>) -> bool {
    match e {
        AstExpr::Int(_) => false,
        AstExpr::Id(x) => names.contains(x),
        AstExpr::Op(_, args) => args.iter().any(|a| uses(a, names)),
    }
}

/// `a` with every test `c` replaced by its branch for `value`.
fn resolve(a: &Ast, c: &AstExpr, value: bool) -> Ast {
    match a {
        Ast::Block(v) => Ast::Block(v.iter().map(|x| resolve(x, c, value)).collect()),
        Ast::Mark(name, b) => Ast::Mark(name.clone(), Box::new(resolve(b, c, value))),
        Ast::User(x) => Ast::User(x.clone()),
        Ast::If(k, t, e) if k == c => {
            if value {
                resolve(t, c, value)
            } else {
                match e {
                    Some(x) => resolve(x, c, value),
                    None => Ast::Block(vec![]),
                }
            }
        }
        Ast::If(k, t, e) => Ast::If(
            k.clone(),
            Box::new(resolve(t, c, value)),
            e.as_ref().map(|x| Box::new(resolve(x, c, value))),
        ),
        Ast::For { body, .. } => with_body(a, resolve(body, c, value)),
    }
}

fn size(a: &Ast) -> usize {
    1 + match a {
        Ast::Block(v) => v.iter().map(size).sum(),
        Ast::Mark(_, b) => size(b),
        Ast::User(_) => 0,
        Ast::If(_, t, e) => size(t) + e.as_ref().map_or(0, |x| size(x)),
        Ast::For { body, .. } => size(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isl::AstOp;

    fn id(s: &str) -> AstExpr {
        AstExpr::Id(s.into())
    }
    fn ge(a: AstExpr, b: AstExpr) -> AstExpr {
        AstExpr::Op(AstOp::Ge, vec![a, b])
    }
    fn call(s: &str, args: &[&str]) -> Ast {
        let mut v = vec![id(s)];
        v.extend(args.iter().map(|a| id(a)));
        Ast::User(AstExpr::Op(AstOp::Call, v))
    }
    fn for_(it: &str, body: Ast) -> Ast {
        Ast::For {
            it: it.into(),
            init: AstExpr::Int(0),
            cond: AstExpr::Op(AstOp::Lt, vec![id(it), id("n")]),
            inc: AstExpr::Int(1),
            body: Box::new(body),
            parallel: false,
        }
    }

    #[test]
    fn a_test_on_an_outer_counter_leaves_the_inner_loop() {
        // for i { for j { S(i, j); if (n >= i + 2) T(i, j) } }
        let t = ge(
            id("n"),
            AstExpr::Op(AstOp::Add, vec![id("i"), AstExpr::Int(2)]),
        );
        let inner = for_(
            "j",
            Ast::Block(vec![
                call("S", &["i", "j"]),
                Ast::If(t.clone(), Box::new(call("T", &["i", "j"])), None),
            ]),
        );
        let (out, n) = unswitch(for_("i", inner));
        assert_eq!(n, 1);
        // for i { if (n >= i + 2) for j { S; T } else for j { S } }
        let Ast::For { body, .. } = out else {
            panic!("outer loop expected, got {out:?}")
        };
        let Ast::If(c, yes, Some(no)) = *body else {
            panic!("hoisted test expected")
        };
        assert_eq!(c, t);
        assert_eq!(
            *yes,
            for_(
                "j",
                Ast::Block(vec![call("S", &["i", "j"]), call("T", &["i", "j"])])
            )
        );
        assert_eq!(
            *no,
            for_(
                "j",
                Ast::Block(vec![call("S", &["i", "j"]), Ast::Block(vec![])])
            )
        );
    }

    #[test]
    fn a_test_on_the_loop_counter_stays() {
        let t = ge(id("j"), AstExpr::Int(1));
        let l = for_("j", Ast::If(t, Box::new(call("S", &["j"])), None));
        let (out, n) = unswitch(l.clone());
        assert_eq!(n, 0);
        assert_eq!(out, l);
    }

    #[test]
    fn a_parallel_mark_follows_each_version() {
        let t = ge(id("m"), AstExpr::Int(1));
        let l = Ast::Mark(
            "parallel".into(),
            Box::new(for_("j", Ast::If(t, Box::new(call("S", &["j"])), None))),
        );
        let (out, _) = unswitch(l);
        let Ast::If(_, yes, Some(no)) = out else {
            panic!("hoisted test expected, got {out:?}")
        };
        assert!(matches!(*yes, Ast::Mark(ref m, _) if m == "parallel"));
        assert!(matches!(*no, Ast::Mark(ref m, _) if m == "parallel"));
    }
}
