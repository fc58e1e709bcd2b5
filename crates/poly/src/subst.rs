//! Forward substitution of scalar temporaries, run before SCoP detection.
//!
//! A loop body such as gemm's `double a = alpha * A[i][k]; for (j ...) C[i][j] += a * B[k][j];`
//! makes `a` a zero-dimensional array written by every `(i, k)` and read by every `(i, k, j)`:
//! its anti and output dependences serialise the nest and forbid tiling. Where the
//! initialiser can be recomputed at every use with the same value, the declaration is removed
//! and each read of the temporary replaced by the initialiser (already converted to the
//! temporary's type, so every value is bit-identical); LLVM's loop-invariant code motion
//! hoists the recomputation again.
//!
//! Conditions, for `T a = e;` at position `p` of a statement list inside a loop:
//! * `a` is assigned nowhere in the function;
//! * `e` is small (at most [`MAX_NODES`] nodes) and pure: no assignments, calls, builtins, or
//!   operations that can fail (division, remainder, shifts);
//! * the rest of the list after `p` (where `a` is in scope) assigns no scalar that `e` reads,
//!   writes no array that `e` reads and calls no function.
//!
//! An initialiser that reads array elements stays in place as an expression statement
//! (`A[i][k];` evaluated for its bounds checks only), so that an out-of-bounds read is
//! reported where the program makes it even when `a` is never used (a loop that runs zero
//! times). Inside a SCoP such a statement is not part of the model: the entry test of
//! `nowrap.rs` covers its accesses, and the transformed code omits it (see `Scop::checks`).

use std::collections::BTreeSet;

use tessera_ir::{walk_stmts, walk_stmts_mut, Expr, ExprKind, Function, Place, Span, Stmt, VarId};

/// Largest initialiser substituted, in expression nodes.
pub const MAX_NODES: usize = 12;

/// Substitutes the temporaries of `f`'s loop bodies; returns the names and declaration
/// spans of those removed.
pub fn forward_substitute(f: &mut Function) -> Vec<(String, Span)> {
    let mut assigned = BTreeSet::new();
    walk_stmts(&f.body, &mut |_| {}, &mut |e| {
        if let Some(v) = e.assigned_scalar() {
            assigned.insert(v);
        }
    });
    let mut done = Vec::new();
    let mut body = std::mem::take(&mut f.body);
    list(&mut body, false, &assigned, &mut done);
    f.body = body;
    done.into_iter()
        .map(|(v, sp)| (f.var(v).name.clone(), sp))
        .collect()
}

fn list(
    stmts: &mut Vec<Stmt>,
    in_loop: bool,
    assigned: &BTreeSet<VarId>,
    done: &mut Vec<(VarId, Span)>,
) {
    let mut p = 0;
    while p < stmts.len() {
        if in_loop {
            if let Stmt::Decl { var, init: Some(e) } = &stmts[p] {
                let (var, e) = (*var, e.clone());
                if !assigned.contains(&var) && substitutable(&e, &stmts[p + 1..]) {
                    let span = e.span;
                    if reads_array(&e) {
                        // The reads stay where the program makes them, for their bounds
                        // checks: the first fault comes where it did, even when the
                        // temporary is never used.
                        stmts[p] = Stmt::Expr(e.clone());
                        p += 1;
                    } else {
                        stmts.remove(p);
                    }
                    subst(&mut stmts[p..], var, &e);
                    done.push((var, span));
                    continue;
                }
            }
        }
        match &mut stmts[p] {
            Stmt::If { then, els, .. } => {
                list(then, in_loop, assigned, done);
                list(els, in_loop, assigned, done);
            }
            Stmt::While { body, .. } | Stmt::DoWhile { body, .. } => {
                list(body, true, assigned, done)
            }
            Stmt::Block(b) => list(b, in_loop, assigned, done),
            _ => {}
        }
        p += 1;
    }
}

/// Whether `e` may replace the temporary in `rest` (see the module docs).
fn substitutable(e: &Expr, rest: &[Stmt]) -> bool {
    let mut nodes = 0;
    let mut pure = true;
    let mut scalars = BTreeSet::new();
    let mut arrays = BTreeSet::new();
    e.walk(&mut |x| {
        nodes += 1;
        match &x.kind {
            ExprKind::Var(v) => {
                scalars.insert(*v);
            }
            ExprKind::Load { array, .. } => {
                arrays.insert(*array);
            }
            ExprKind::Assign { .. }
            | ExprKind::IncDec { .. }
            | ExprKind::Call(..)
            | ExprKind::Builtin(..)
            | ExprKind::Comma(..) => pure = false,
            ExprKind::Binary(op, ..) => {
                use tessera_ir::BinOp::*;
                if matches!(op, Div | Rem | Shl | Shr) {
                    pure = false;
                }
            }
            _ => {}
        }
    });
    if !pure || nodes > MAX_NODES {
        return false;
    }
    let (mut redeclared, mut written) = (false, false);
    walk_stmts(
        rest,
        &mut |s| {
            if let Stmt::Decl { var, .. } = s {
                redeclared |= scalars.contains(var);
            }
        },
        &mut |x| match &x.kind {
            ExprKind::Assign { place, .. } | ExprKind::IncDec { place, .. } => match place {
                Place::Var(v) => written |= scalars.contains(v),
                Place::Elem { array, .. } => written |= arrays.contains(array),
            },
            ExprKind::Call(..) => written = true,
            _ => {}
        },
    );
    !redeclared && !written
}

/// Whether `e` reads an array element.
fn reads_array(e: &Expr) -> bool {
    let mut load = false;
    e.walk(&mut |x| load |= matches!(x.kind, ExprKind::Load { .. }));
    load
}

/// Replaces every read of `a` in `stmts` by `e`.
fn subst(stmts: &mut [Stmt], a: VarId, e: &Expr) {
    walk_stmts_mut(stmts, &mut |x| {
        if matches!(x.kind, ExprKind::Var(v) if v == a) {
            *x = e.clone();
            return false;
        }
        true
    });
}
