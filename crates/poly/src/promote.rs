//! Register promotion (scalar replacement) of the array elements an innermost loop of the
//! optimised code updates in place: `C[i][j] += A[i][k] * B[k][j]` over `k` keeps `C[i][j]`
//! in a local from one load before the loop to one store after it, instead of a load and a
//! store per iteration. LLVM does not do this itself where it cannot prove that the element
//! is not reached through another subscript in the loop; here the subscripts are affine
//! forms compared exactly. With a micro-kernel (`model::micro_kernel`) this is what keeps
//! its `rows x cols` accumulators in registers.
//!
//! An innermost `for` loop qualifies when its body cannot fail (every access proven in
//! bounds, no integer division, remainder or shift, no call) and has no jump or nested loop.
//! An array is promoted when the loop writes it, and every access of it in the loop has a
//! subscript that is an affine form of variables the loop does not assign (read as the SCoP
//! model reads subscripts, [`crate::scop::index_aff`]: the nest runs under the SCoP's entry
//! test, so its integer conversions do not wrap); the distinct
//! subscripts must differ by a non-zero constant in some dimension (so they name distinct
//! elements whatever the variables' values), and each must be accessed on every iteration
//! (outside any `if`, `&&`, `||` or `?:`), so that loading it before the first iteration
//! reads an element the loop reads anyway (within bounds). The loop then becomes
//! `if (cond) { locals = elements; loop; elements = locals; }`. Distinct array variables
//! of a SCoP are distinct storage (`tessera_ir::alias`), so no other access reaches them.

use tessera_ir::{BinOp, Expr, ExprKind, Function, Place, ScalarTy, Stmt, Var, VarId, VarKind};

use crate::scop::{index_aff, Aff};

/// The most elements promoted in one loop (register pressure).
const MAX_PROMOTED: usize = 128;

/// From this many promoted elements on, the loop is marked not to be vectorised by LLVM's
/// loop vectorizer ([`Stmt::While`]'s `vectorize`): more than a plain register tile (4).
const NO_LOOP_VECTORIZE: usize = 8;

/// Promotes invariant updated elements in every innermost loop of `body`; new locals are
/// added to `f`. Returns one line per loop changed, naming the elements and the loop's
/// counter (for `tessera explain`).
pub fn promote(f: &mut Function, body: &mut [Stmt]) -> Vec<String> {
    let mut out = Vec::new();
    for s in body.iter_mut() {
        promote_stmt(f, s, &mut out);
    }
    out
}

fn promote_stmt(f: &mut Function, s: &mut Stmt, out: &mut Vec<String>) {
    match s {
        Stmt::If { then, els, .. } => {
            out.extend(promote(f, then));
            out.extend(promote(f, els));
        }
        Stmt::ParFor { body, .. } | Stmt::DoWhile { body, .. } | Stmt::Block(body) => {
            out.extend(promote(f, body))
        }
        Stmt::Versioned { fast, .. } => out.extend(promote(f, fast)),
        Stmt::While { body, .. } if has_loop(body) => out.extend(promote(f, body)),
        Stmt::While { .. } => out.extend(promote_loop(f, s)),
        _ => {}
    }
}

/// `A[c0][c1 + 1]`, from the names of `f`'s variables.
fn describe(f: &Function, array: VarId, index: &[Aff]) -> String {
    let mut s = f.var(array).name.clone();
    for Aff { terms, c } in index {
        let mut t = String::new();
        for (v, k) in terms {
            let name = &f.var(*v).name;
            match (*k, t.is_empty()) {
                (1, true) => t.push_str(name),
                (1, false) => t.push_str(&format!(" + {name}")),
                (-1, true) => t.push_str(&format!("-{name}")),
                (-1, false) => t.push_str(&format!(" - {name}")),
                (k, true) => t.push_str(&format!("{k}*{name}")),
                (k, false) if k < 0 => t.push_str(&format!(" - {}*{name}", -k)),
                (k, false) => t.push_str(&format!(" + {k}*{name}")),
            }
        }
        match (*c, t.is_empty()) {
            (c, true) => t = c.to_string(),
            (0, false) => {}
            (c, false) if c < 0 => t.push_str(&format!(" - {}", -c)),
            (c, false) => t.push_str(&format!(" + {c}")),
        }
        s.push_str(&format!("[{t}]"));
    }
    s
}

fn has_loop(body: &[Stmt]) -> bool {
    let mut found = false;
    tessera_ir::walk_stmts(
        body,
        &mut |s| {
            found |= matches!(
                s,
                Stmt::While { .. } | Stmt::ParFor { .. } | Stmt::DoWhile { .. }
            )
        },
        &mut |_| {},
    );
    found
}

/// Whether `e` reads no array and has no side effect (loop conditions), or, with
/// `step`, assigns scalars only (loop steps): the condition is evaluated once more, before
/// the loop, to guard the loads of the promoted elements.
fn pure_scalar(e: &Expr, step: bool) -> bool {
    let mut ok = true;
    e.walk(&mut |x| {
        ok &= match x.kind {
            ExprKind::Load { .. } | ExprKind::Call(..) => false,
            ExprKind::Assign { .. } | ExprKind::IncDec { .. } => {
                step && x.assigned_scalar().is_some()
            }
            _ => true,
        };
    });
    ok
}

/// Whether a statement list cannot fail, jump or allocate, and holds no loop.
fn safe_body(body: &[Stmt]) -> bool {
    let mut stmts_ok = true;
    let mut ok = true;
    tessera_ir::walk_stmts(
        body,
        &mut |s| {
            stmts_ok &= !matches!(
                s,
                Stmt::While { .. }
                    | Stmt::ParFor { .. }
                    | Stmt::DoWhile { .. }
                    | Stmt::Versioned { .. }
                    | Stmt::Break
                    | Stmt::Continue
                    | Stmt::Return(..)
                    | Stmt::DeclArray { .. }
            )
        },
        &mut |e| {
            let all = |indices: &[Expr], proven: u64| {
                indices.len() < 64 && proven == (1u64 << indices.len()) - 1
            };
            ok &= match &e.kind {
                ExprKind::Load {
                    indices, proven, ..
                }
                | ExprKind::Assign {
                    place:
                        Place::Elem {
                            indices, proven, ..
                        },
                    ..
                }
                | ExprKind::IncDec {
                    place:
                        Place::Elem {
                            indices, proven, ..
                        },
                    ..
                } => all(indices, *proven),
                ExprKind::Call(..) => false,
                ExprKind::Binary(BinOp::Div | BinOp::Rem | BinOp::Shl | BinOp::Shr, ..) => {
                    matches!(e.ty, Some(ScalarTy::F32 | ScalarTy::F64))
                }
                ExprKind::Assign {
                    op: Some((op, ty)), ..
                } => {
                    !matches!(op, BinOp::Div | BinOp::Rem | BinOp::Shl | BinOp::Shr)
                        || matches!(ty, ScalarTy::F32 | ScalarTy::F64)
                }
                _ => true,
            };
        },
    );
    ok && stmts_ok
}

/// One access of an array in the loop body.
struct Access {
    array: VarId,
    index: Option<Vec<Aff>>,
    write: bool,
    every_iteration: bool,
}

/// Collects the array accesses of `e`; `every` says whether `e` runs on every iteration.
fn accesses(e: &Expr, every: bool, out: &mut Vec<Access>) {
    let elem = |array: VarId, indices: &[Expr], write: bool, out: &mut Vec<Access>| {
        out.push(Access {
            array,
            index: indices.iter().map(index_aff).collect(),
            write,
            every_iteration: every,
        });
        indices.iter().for_each(|i| accesses(i, every, out));
    };
    match &e.kind {
        ExprKind::Load { array, indices, .. } => elem(*array, indices, false, out),
        ExprKind::Assign { place, value, .. } => {
            if let Place::Elem { array, indices, .. } = place {
                elem(*array, indices, true, out);
            }
            accesses(value, every, out);
        }
        ExprKind::IncDec { place, .. } => {
            if let Place::Elem { array, indices, .. } = place {
                elem(*array, indices, true, out);
            }
        }
        ExprKind::LogAnd(a, b) | ExprKind::LogOr(a, b) => {
            accesses(a, every, out);
            accesses(b, false, out);
        }
        ExprKind::Cond(c, a, b) => {
            accesses(c, every, out);
            accesses(a, false, out);
            accesses(b, false, out);
        }
        ExprKind::Unary(_, a) | ExprKind::Cast(a) => accesses(a, every, out),
        ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) | ExprKind::Comma(a, b) => {
            accesses(a, every, out);
            accesses(b, every, out);
        }
        ExprKind::Builtin(_, args) => args.iter().for_each(|a| accesses(a, every, out)),
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Var(_) | ExprKind::Call(..) => {}
    }
}

fn stmt_accesses(body: &[Stmt], every: bool, out: &mut Vec<Access>) {
    for s in body {
        match s {
            Stmt::Decl { init: Some(e), .. } | Stmt::Expr(e) => accesses(e, every, out),
            Stmt::If { cond, then, els } => {
                accesses(cond, every, out);
                stmt_accesses(then, false, out);
                stmt_accesses(els, false, out);
            }
            Stmt::Block(b) => stmt_accesses(b, every, out),
            _ => {}
        }
    }
}

/// The scalars a statement list assigns or declares.
fn assigned(body: &[Stmt], step: Option<&Expr>) -> Vec<VarId> {
    let mut out = Vec::new();
    let mut decls = Vec::new();
    tessera_ir::walk_stmts(
        body,
        &mut |s| {
            if let Stmt::Decl { var, .. } = s {
                decls.push(*var);
            }
        },
        &mut |e| out.extend(e.assigned_scalar()),
    );
    out.extend(decls);
    if let Some(e) = step {
        e.walk(&mut |x| out.extend(x.assigned_scalar()));
    }
    out
}

fn promote_loop(f: &mut Function, s: &mut Stmt) -> Option<String> {
    let Stmt::While {
        cond,
        body,
        step,
        is_for: true,
        vectorize,
    } = s
    else {
        return None;
    };
    if !pure_scalar(cond, false)
        || step.as_ref().is_some_and(|e| !pure_scalar(e, true))
        || !safe_body(body)
    {
        return None;
    }
    let variant = assigned(body, step.as_ref());
    let mut acc = Vec::new();
    stmt_accesses(body, true, &mut acc);
    // Per array written in the loop: its distinct subscripts, if it qualifies.
    let mut arrays: Vec<VarId> = acc.iter().filter(|a| a.write).map(|a| a.array).collect();
    arrays.sort();
    arrays.dedup();
    let mut groups: Vec<(VarId, Vec<Aff>)> = Vec::new();
    'array: for x in arrays {
        let mut mine: Vec<(Vec<Aff>, bool)> = Vec::new();
        for a in acc.iter().filter(|a| a.array == x) {
            let Some(idx) = &a.index else { continue 'array };
            if idx
                .iter()
                .any(|a| a.terms.keys().any(|v| variant.contains(v)))
            {
                continue 'array;
            }
            match mine.iter_mut().find(|(i, _)| i == idx) {
                Some((_, every)) => *every |= a.every_iteration,
                None => mine.push((idx.clone(), a.every_iteration)),
            }
        }
        if mine.iter().any(|(_, every)| !every) {
            continue;
        }
        // Distinct subscripts must name distinct elements for all values of the variables.
        for (k, (a, _)) in mine.iter().enumerate() {
            for (b, _) in &mine[k + 1..] {
                let apart = a
                    .iter()
                    .zip(b)
                    .any(|(x, y)| x.terms == y.terms && x.c != y.c);
                if !apart {
                    continue 'array;
                }
            }
        }
        groups.extend(mine.into_iter().map(|(i, _)| (x, i)));
    }
    if groups.is_empty() || groups.len() > MAX_PROMOTED {
        return None;
    }
    let counter = step
        .as_ref()
        .and_then(|e| {
            let mut v = None;
            e.walk(&mut |x| v = v.or(x.assigned_scalar()));
            v
        })
        .map(|v| f.var(v).name.clone())
        .unwrap_or_else(|| "?".into());
    let shown: Vec<String> = groups
        .iter()
        .take(4)
        .map(|(x, i)| describe(f, *x, i))
        .collect();
    let note = format!(
        "{} element{} ({}{}) across the loop over `{counter}`",
        groups.len(),
        if groups.len() == 1 { "" } else { "s" },
        shown.join(", "),
        if groups.len() > 4 { ", ..." } else { "" }
    );
    // One local per element.
    let span = cond.span;
    let mut locals = Vec::new();
    for (k, (x, _)) in groups.iter().enumerate() {
        let v = f.var(*x).clone();
        let id = VarId(f.vars.len() as u32);
        f.vars.push(Var {
            name: format!("{}_r{k}", v.name),
            kind: VarKind::Scalar(v.scalar_ty()),
            dims: vec![],
            is_param: false,
            scratch: false,
            span,
        });
        locals.push(id);
    }
    let find = |array: VarId, indices: &[Expr]| -> Option<usize> {
        let idx = indices.iter().map(index_aff).collect::<Option<Vec<_>>>()?;
        groups.iter().position(|(x, i)| *x == array && *i == idx)
    };
    // The subscripts of the first access of each element, as written, for the load and
    // the store around the loop.
    let mut written: Vec<Option<Vec<Expr>>> = vec![None; groups.len()];
    tessera_ir::walk_stmts_mut(body, &mut |e| {
        let (array, indices) = match &e.kind {
            ExprKind::Load { array, indices, .. }
            | ExprKind::Assign {
                place: Place::Elem { array, indices, .. },
                ..
            }
            | ExprKind::IncDec {
                place: Place::Elem { array, indices, .. },
                ..
            } => (*array, indices.clone()),
            _ => return true,
        };
        let Some(k) = find(array, &indices) else {
            return true;
        };
        if written[k].is_none() {
            written[k] = Some(indices);
        }
        let local = locals[k];
        match &mut e.kind {
            ExprKind::Load { .. } => e.kind = ExprKind::Var(local),
            ExprKind::Assign { place, .. } | ExprKind::IncDec { place, .. } => {
                *place = Place::Var(local)
            }
            _ => {}
        }
        true
    });
    let mut pre = Vec::new();
    let mut post = Vec::new();
    for (k, ((x, _), idx)) in groups.iter().zip(written).enumerate() {
        let Some(indices) = idx else { continue };
        let ty = f.var(*x).scalar_ty();
        let proven = (1u64 << indices.len()) - 1;
        pre.push(Stmt::Decl {
            var: locals[k],
            init: Some(Expr {
                kind: ExprKind::Load {
                    array: *x,
                    indices: indices.clone(),
                    proven,
                },
                ty: Some(ty),
                span,
            }),
        });
        post.push(Stmt::Expr(Expr {
            kind: ExprKind::Assign {
                place: Place::Elem {
                    array: *x,
                    indices,
                    proven,
                },
                op: None,
                value: Box::new(Expr {
                    kind: ExprKind::Var(locals[k]),
                    ty: Some(ty),
                    span,
                }),
            },
            ty: Some(ty),
            span,
        }));
    }
    // A micro-kernel's accumulators: the SLP vectorizer packs its unrolled columns; the
    // loop vectorizer (under --fast-math) would make each a reduction of its own, with
    // gathers. A register tile's few accumulators (gemv's rows) are left to it.
    if groups.len() >= NO_LOOP_VECTORIZE {
        *vectorize = false;
    }
    let test = cond.clone();
    let lp = std::mem::replace(s, Stmt::Break);
    let mut then = pre;
    then.push(lp);
    then.extend(post);
    *s = Stmt::If {
        cond: test,
        then,
        els: vec![],
    };
    Some(note)
}
