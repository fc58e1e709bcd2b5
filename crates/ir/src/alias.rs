//! Which array parameters of a function may share storage.
//!
//! The SCoP model treats distinct array variables as distinct memory. The language lets a
//! call pass one array (or two sub-arrays of it) for two array parameters, so that is true only
//! where no call does: a pair of parameters may alias if some call passes the same caller
//! array for both, or two caller parameters that may alias themselves (a fixpoint over the
//! call graph). The entry function's arrays are separate allocations (the CLI and the
//! embedding API bind distinct buffers), so its parameters never alias.

use std::collections::HashSet;

use crate::{Arg, ExprKind, FuncId, Place, Program, VarId};

/// Per function (indexed like [`Program::functions`]), the pairs `(a, b)`, `a < b`, of its
/// array parameters that a call may bind to the same storage.
pub fn may_alias(prog: &Program) -> Vec<HashSet<(VarId, VarId)>> {
    let mut pairs: Vec<HashSet<(VarId, VarId)>> = vec![HashSet::new(); prog.functions.len()];
    loop {
        let mut changed = false;
        for (g, caller) in prog.functions.iter().enumerate() {
            let mut calls = Vec::new();
            crate::walk_stmts(&caller.body, &mut |_| {}, &mut |e| {
                if let ExprKind::Call(fid, args) = &e.kind {
                    let arrays: Vec<(usize, VarId)> = args
                        .iter()
                        .enumerate()
                        .filter_map(|(k, a)| match a {
                            Arg::Array { array, .. } => Some((k, *array)),
                            Arg::Scalar(_) => None,
                        })
                        .collect();
                    calls.push((fid.0 as usize, arrays));
                }
            });
            for (callee, arrays) in calls {
                let Some(f) = prog.functions.get(callee) else {
                    continue;
                };
                for (x, &(k, a)) in arrays.iter().enumerate() {
                    for &(l, b) in &arrays[x + 1..] {
                        let same = a == b || pairs[g].contains(&(a.min(b), a.max(b)));
                        if let (true, Some(&p), Some(&q)) = (same, f.params.get(k), f.params.get(l))
                        {
                            changed |= pairs[callee].insert((p.min(q), p.max(q)));
                        }
                    }
                }
            }
        }
        if !changed {
            return pairs;
        }
    }
}

/// Whether function `func` may write (an element of) its array parameter `param`: an
/// assignment or increment of one of its elements, or a call that passes it (or a
/// sub-array of it) for a parameter the callee may write (a fixpoint over the call graph).
pub fn writes_param(prog: &Program, func: FuncId, param: VarId) -> bool {
    written_arrays(prog)
        .get(func.0 as usize)
        .is_some_and(|w| w.contains(&param))
}

/// Per function (indexed like [`Program::functions`]), the array variables it may write,
/// directly or through calls.
pub fn written_arrays(prog: &Program) -> Vec<HashSet<VarId>> {
    let mut written: Vec<HashSet<VarId>> = vec![HashSet::new(); prog.functions.len()];
    // Direct writes, and the calls: (callee, [(parameter position, caller array)]).
    // Per function, its calls: (callee, [(parameter position, caller array)]).
    type Calls = Vec<(usize, Vec<(usize, VarId)>)>;
    let mut calls: Vec<Calls> = vec![Vec::new(); prog.functions.len()];
    for (g, f) in prog.functions.iter().enumerate() {
        crate::walk_stmts(&f.body, &mut |_| {}, &mut |e| match &e.kind {
            ExprKind::Assign {
                place: Place::Elem { array, .. },
                ..
            }
            | ExprKind::IncDec {
                place: Place::Elem { array, .. },
                ..
            } => {
                written[g].insert(*array);
            }
            ExprKind::Call(fid, args) => {
                let arrays = args
                    .iter()
                    .enumerate()
                    .filter_map(|(k, a)| match a {
                        Arg::Array { array, .. } => Some((k, *array)),
                        Arg::Scalar(_) => None,
                    })
                    .collect();
                calls[g].push((fid.0 as usize, arrays));
            }
            _ => {}
        });
    }
    loop {
        let mut changed = false;
        for g in 0..prog.functions.len() {
            for (callee, arrays) in &calls[g] {
                let Some(f) = prog.functions.get(*callee) else {
                    continue;
                };
                for &(k, a) in arrays {
                    let writes = f
                        .params
                        .get(k)
                        .is_some_and(|p| written[*callee].contains(p));
                    if writes && !written[g].contains(&a) {
                        written[g].insert(a);
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            return written;
        }
    }
}
