//! Privatisation of scalars declared outside the loops that use them.
//!
//! C code declares its temporaries at the top of a function (PolyBench's `double w;` in
//! `ludcmp`) and assigns them afresh in each iteration:
//! `for (j ...) { w = A[i][j]; for (k ...) w -= A[i][k] * A[k][j]; A[i][j] = w; }`. As one
//! variable, `w` is a zero-dimensional array written by every iteration, and its anti and
//! output dependences serialise every loop around it. Each use, however, reads a value
//! assigned earlier in the same pass through the loop body: declared there instead, the
//! temporary is one instance per iteration, which SCoP detection expands over the loops
//! around its declaration (see `scop.rs`).
//!
//! A *plain definition* of `w` is a statement `w = e;` of a statement list, with `e` not
//! reading `w`. Its *range* runs from it to the next plain definition of `w` in the same list
//! (or the list's end). `w` is privatised when every occurrence of it (read or write, in any
//! expression, conditions and steps of loops included) lies in some range: then each read
//! gets a value assigned within its own range in the same pass through that list (a list
//! runs in order; `break`, `continue` and `return` only leave it early). Each outermost range
//! then gets a variable of its own, declared by the definition (`T w_1 = e;`) and renamed
//! throughout the range, nested lists included; nothing else changes, so every value read
//! is the one the program read. Parameters, loop counters (assigned in a `for` step) and
//! variables with no range inside a loop body are left alone.

use tessera_ir::{Expr, ExprKind, Function, Place, Span, Stmt, Var, VarId, VarKind};

/// Privatises the scalars of `f` that qualify; returns each one's name, the span of its
/// declaration and the number of variables it became.
pub fn privatize(f: &mut Function) -> Vec<(String, Span, usize)> {
    let mut done = Vec::new();
    let candidates: Vec<VarId> = (0..f.vars.len())
        .map(|i| VarId(i as u32))
        .filter(|&v| {
            let var = f.var(v);
            !var.is_param && matches!(var.kind, VarKind::Scalar(_)) && !var.scratch
        })
        .collect();
    for v in candidates {
        if in_step(&f.body, v) || !covered(&f.body, v, false) {
            continue;
        }
        let mut fresh = Vec::new();
        let mut body = std::mem::take(&mut f.body);
        let mut names: std::collections::HashSet<String> =
            f.vars.iter().map(|x| x.name.clone()).collect();
        let original = f.var(v).clone();
        let mut new_var = |vars: &mut Vec<Var>| -> VarId {
            let mut k = 1;
            while names.contains(&format!("{}_{k}", original.name)) {
                k += 1;
            }
            let name = format!("{}_{k}", original.name);
            names.insert(name.clone());
            vars.push(Var {
                name,
                ..original.clone()
            });
            VarId(vars.len() as u32 - 1)
        };
        let mut vars = std::mem::take(&mut f.vars);
        split(
            &mut body,
            v,
            false,
            &mut |vars_| new_var(vars_),
            &mut vars,
            &mut fresh,
        );
        f.vars = vars;
        f.body = body;
        if !fresh.is_empty() {
            done.push((original.name.clone(), original.span, fresh.len()));
        }
    }
    done
}

/// Whether `e` mentions `v` (read or written).
fn mentions(e: &Expr, v: VarId) -> bool {
    let mut any = false;
    e.walk(&mut |x| match &x.kind {
        ExprKind::Var(w) if *w == v => any = true,
        ExprKind::Assign {
            place: Place::Var(w),
            ..
        }
        | ExprKind::IncDec {
            place: Place::Var(w),
            ..
        } if *w == v => any = true,
        _ => {}
    });
    any
}

/// Whether any expression of `body` (nested statements included) mentions `v`.
fn mentions_stmts(body: &[Stmt], v: VarId) -> bool {
    let mut any = false;
    tessera_ir::walk_stmts(body, &mut |_| {}, &mut |e| {
        any |= mentions(e, v);
    });
    any
}

/// Whether `v` is assigned in the step of a loop (a loop counter).
fn in_step(body: &[Stmt], v: VarId) -> bool {
    let mut any = false;
    tessera_ir::walk_stmts(
        body,
        &mut |s| {
            if let Stmt::While {
                step: Some(step), ..
            } = s
            {
                any |= mentions(step, v);
            }
        },
        &mut |_| {},
    );
    any
}

/// The value of a plain definition `v = e;` (with `e` not reading `v`).
fn plain_def(s: &Stmt, v: VarId) -> Option<&Expr> {
    match s {
        Stmt::Expr(Expr {
            kind:
                ExprKind::Assign {
                    place: Place::Var(w),
                    op: None,
                    value,
                },
            ..
        }) if *w == v && !mentions(value, v) => Some(value),
        _ => None,
    }
}

/// The statement lists nested in `s`, and whether each is a loop body.
fn lists_mut(s: &mut Stmt) -> Vec<(&mut Vec<Stmt>, bool)> {
    match s {
        Stmt::If { then, els, .. } => vec![(then, false), (els, false)],
        Stmt::While { body, .. } | Stmt::DoWhile { body, .. } | Stmt::ParFor { body, .. } => {
            vec![(body, true)]
        }
        Stmt::Block(b) => vec![(b, false)],
        Stmt::Versioned { fast, original, .. } => vec![(fast, false), (original, false)],
        _ => vec![],
    }
}

/// The statement lists nested in `s`.
fn lists(s: &Stmt) -> Vec<&[Stmt]> {
    let mut out: Vec<&[Stmt]> = Vec::new();
    match s {
        Stmt::If { then, els, .. } => out.extend([&then[..], &els[..]]),
        Stmt::While { body, .. } | Stmt::DoWhile { body, .. } | Stmt::ParFor { body, .. } => {
            out.push(body)
        }
        Stmt::Block(b) => out.push(b),
        Stmt::Versioned { fast, original, .. } => out.extend([&fast[..], &original[..]]),
        _ => {}
    }
    out
}

/// Whether `s`'s own expressions (not those of its nested lists) mention `v`.
fn own_mentions(s: &Stmt, v: VarId) -> bool {
    match s {
        Stmt::If { cond, .. } => mentions(cond, v),
        Stmt::While { cond, step, .. } => {
            mentions(cond, v) || step.as_ref().is_some_and(|e| mentions(e, v))
        }
        Stmt::DoWhile { cond, .. } => mentions(cond, v),
        Stmt::ParFor { lo, hi, .. } => mentions(lo, v) || mentions(hi, v),
        Stmt::Block(_) | Stmt::Versioned { .. } | Stmt::Break | Stmt::Continue => false,
        Stmt::Decl { var, .. } if *var == v => false,
        other => mentions_stmts(std::slice::from_ref(other), v),
    }
}

/// Whether every occurrence of `v` in `list` lies in a range (`open`: a range of an
/// enclosing list covers the whole list).
fn covered(list: &[Stmt], v: VarId, open: bool) -> bool {
    let mut open = open;
    for s in list {
        if plain_def(s, v).is_some() {
            open = true;
            continue;
        }
        if open {
            continue;
        }
        if own_mentions(s, v) {
            return false;
        }
        if !lists(s).iter().all(|l| covered(l, v, false)) {
            return false;
        }
    }
    true
}

/// Gives each outermost range of `v` in `list` a variable of its own (`new_var`), where the
/// range lies in a loop body (`in_loop`) or, outside loops, is left alone; nested lists
/// before the first definition are visited. The new variables go to `fresh`.
fn split(
    list: &mut [Stmt],
    v: VarId,
    in_loop: bool,
    new_var: &mut dyn FnMut(&mut Vec<Var>) -> VarId,
    vars: &mut Vec<Var>,
    fresh: &mut Vec<VarId>,
) {
    let mut p = 0;
    while p < list.len() {
        if let Some(value) = plain_def(&list[p], v) {
            let end = (p + 1..list.len())
                .find(|&r| plain_def(&list[r], v).is_some())
                .unwrap_or(list.len());
            // A range outside every loop body is left alone: renaming it gains nothing.
            if in_loop {
                let w = new_var(vars);
                fresh.push(w);
                list[p] = Stmt::Decl {
                    var: w,
                    init: Some(value.clone()),
                };
                rename(&mut list[p + 1..end], v, w);
            }
            p = end;
            continue;
        }
        for (l, is_loop) in lists_mut(&mut list[p]) {
            split(l, v, in_loop || is_loop, new_var, vars, fresh);
        }
        p += 1;
    }
}

/// Replaces every occurrence of `v` in `list` by `w`.
fn rename(list: &mut [Stmt], v: VarId, w: VarId) {
    tessera_ir::walk_stmts_mut(list, &mut |e| {
        match &mut e.kind {
            ExprKind::Var(x) if *x == v => *x = w,
            ExprKind::Assign {
                place: Place::Var(x),
                ..
            }
            | ExprKind::IncDec {
                place: Place::Var(x),
                ..
            } if *x == v => *x = w,
            _ => {}
        }
        true
    });
}
