//! Which array parameters of a function may share storage.
//!
//! The SCoP model treats distinct array variables as distinct memory. The language lets a
//! call pass one array (or two sub-arrays of it) for two array parameters, so that is true only
//! where no call does: a pair of parameters may alias if some call passes the same caller
//! array for both, or two caller parameters that may alias themselves (a fixpoint over the
//! call graph). The entry function's arrays are separate allocations (the CLI and the
//! embedding API bind distinct buffers), so its parameters never alias.

use std::collections::HashSet;

use crate::{Arg, ExprKind, Place, Program, VarId};

/// A call's array arguments: (callee, [(parameter position, caller array)]).
type ArrayCall = (usize, Vec<(usize, VarId)>);

/// Per function (indexed like [`Program::functions`]), its calls with their array
/// arguments.
fn array_calls(prog: &Program) -> Vec<Vec<ArrayCall>> {
    prog.functions
        .iter()
        .map(|f| {
            let mut calls = Vec::new();
            crate::walk_stmts(&f.body, &mut |_| {}, &mut |e| {
                if let ExprKind::Call(fid, args) = &e.kind {
                    let arrays = args
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
            calls
        })
        .collect()
}

/// Per function (indexed like [`Program::functions`]), the pairs `(a, b)`, `a < b`, of its
/// array parameters that a call may bind to the same storage.
pub fn may_alias(prog: &Program) -> Vec<HashSet<(VarId, VarId)>> {
    let calls = array_calls(prog);
    let mut pairs: Vec<HashSet<(VarId, VarId)>> = vec![HashSet::new(); prog.functions.len()];
    loop {
        let mut changed = false;
        for (g, gcalls) in calls.iter().enumerate() {
            for (callee, arrays) in gcalls {
                let Some(f) = prog.functions.get(*callee) else {
                    continue;
                };
                for (x, &(k, a)) in arrays.iter().enumerate() {
                    for &(l, b) in &arrays[x + 1..] {
                        let same = a == b || pairs[g].contains(&(a.min(b), a.max(b)));
                        if let (true, Some(&p), Some(&q)) = (same, f.params.get(k), f.params.get(l))
                        {
                            changed |= pairs[*callee].insert((p.min(q), p.max(q)));
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

/// Per function (indexed like [`Program::functions`]), the array variables it may write:
/// an element assigned or incremented, or the array (or a sub-array of it) passed for a
/// parameter the callee may write (a fixpoint over the call graph).
pub fn written_arrays(prog: &Program) -> Vec<HashSet<VarId>> {
    let calls = array_calls(prog);
    let mut written: Vec<HashSet<VarId>> = prog
        .functions
        .iter()
        .map(|f| {
            let mut w = HashSet::new();
            crate::walk_stmts(&f.body, &mut |_| {}, &mut |e| match &e.kind {
                ExprKind::Assign {
                    place: Place::Elem { array, .. },
                    ..
                }
                | ExprKind::IncDec {
                    place: Place::Elem { array, .. },
                    ..
                } => {
                    w.insert(*array);
                }
                _ => {}
            });
            w
        })
        .collect();
    loop {
        let mut changed = false;
        for (g, gcalls) in calls.iter().enumerate() {
            for (callee, arrays) in gcalls {
                let Some(f) = prog.functions.get(*callee) else {
                    continue;
                };
                for &(k, a) in arrays {
                    let writes = f
                        .params
                        .get(k)
                        .is_some_and(|p| written[*callee].contains(p));
                    if writes {
                        changed |= written[g].insert(a);
                    }
                }
            }
        }
        if !changed {
            return written;
        }
    }
}
