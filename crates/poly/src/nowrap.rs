//! Run-time assumptions of a SCoP: no wrap-around, every access in bounds.
//!
//! No-wrap assumptions (as Polly's): the model computes with mathematical integers, while
//! the code computes bounds, conditions, subscripts and counters in wrapping 32- and 64-bit
//! types. SCoP detection records every such value with its type and where it is evaluated
//! ([`crate::scop::RangeObligation`]); here isl computes the parameter values for which
//! some value leaves its type, over-approximated by linear constraints on the parameters
//! alone ([`NoWrap::bad`]). At the SCoP's entry the generated code tests the actual
//! parameters: the transformed nest runs only when they are within the bound of
//! [`LONG_VALUE_BOUND`] (`long` parameters) and in no disjunct of the bad set; otherwise
//! the original, guarded code runs. Dependences, schedules, bounds proofs and dropped
//! guards are valid under that test, where the code and the model agree.
//!
//! The same test covers the array accesses: the parameter values for which some subscript
//! of some statement instance leaves its declared extent are part of the bad set. Under the
//! test the transformed nest cannot fault (SCoP detection admits no division or shift that
//! may fault), so every index runs unguarded; outside it the original code reports the
//! first fault in program order, as the interpreter does. A SCoP with an array whose extents
//! are not affine in the parameters keeps its code.

use std::collections::HashMap;
use std::fmt::Write;

use tessera_ir::{ScalarTy, VarId};

use crate::isl::{Ctx, IslResult};
use crate::scop::{Scop, LONG_VALUE_BOUND};

/// One linear constraint on the parameters: `Σ k·p + c >= 0` (`= 0` when `eq`).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamConstraint {
    /// Coefficients.
    pub terms: Vec<(VarId, i64)>,
    /// Constant.
    pub c: i64,
    /// Equality.
    pub eq: bool,
}

/// The run-time test of a SCoP's no-wrap assumption.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NoWrap {
    /// `long` parameters, which must lie within `±LONG_VALUE_BOUND` (tested first, so that
    /// the constraints below are evaluated without overflow).
    pub long_params: Vec<VarId>,
    /// Disjuncts of the parameter values where some value may wrap; the transformed code
    /// runs only outside all of them. Empty: nothing can wrap (beyond the `long` bound).
    pub bad: Vec<Vec<ParamConstraint>>,
    /// The bad set as isl text (simplified under the parameters' ranges), for `explain`.
    pub text: String,
    /// Number of values recorded (distinct expression, type and domain).
    pub obligations: usize,
    /// Number of array subscripts checked against their extents.
    pub subscripts: usize,
}

impl NoWrap {
    /// Whether the test always passes (no run-time test needed).
    pub fn trivial(&self) -> bool {
        self.long_params.is_empty() && self.bad.is_empty()
    }

    /// The test as C-like text, for `explain`.
    pub fn describe(&self, names: &HashMap<VarId, String>) -> String {
        let mut parts = Vec::new();
        for p in &self.long_params {
            parts.push(format!(
                "-{b} <= {n} <= {b}",
                n = names[p],
                b = LONG_VALUE_BOUND
            ));
        }
        for d in &self.bad {
            if d.is_empty() {
                return "false (a value wraps or an access is out of bounds for every parameter value)".into();
            }
            let conj: Vec<String> = d.iter().map(|c| constraint_text(c, names)).collect();
            parts.push(format!("!({})", conj.join(" && ")));
        }
        if parts.is_empty() {
            "none needed".into()
        } else {
            parts.join(" && ")
        }
    }
}

fn constraint_text(c: &ParamConstraint, names: &HashMap<VarId, String>) -> String {
    let mut s = String::new();
    for (v, k) in &c.terms {
        let n = &names[v];
        match (*k, s.is_empty()) {
            (1, true) => s.push_str(n),
            (1, false) => {
                let _ = write!(s, " + {n}");
            }
            (-1, true) => {
                let _ = write!(s, "-{n}");
            }
            (-1, false) => {
                let _ = write!(s, " - {n}");
            }
            (k, true) => {
                let _ = write!(s, "{k}*{n}");
            }
            (k, false) if k < 0 => {
                let _ = write!(s, " - {}*{n}", -k);
            }
            (k, false) => {
                let _ = write!(s, " + {k}*{n}");
            }
        }
    }
    let op = if c.eq { "==" } else { ">=" };
    format!("{s} {op} {}", -(c.c as i128))
}

/// Largest constant or coefficient kept in a test; with parameters within `2^40` each
/// constraint then evaluates in 64 bits (checked per constraint below).
const COEFF_LIMIT: i64 = 1 << 60;

/// [`compute`] in a context of its own, bounded by `max_operations`; every failure is a
/// reason for keeping the original code.
pub fn compute_bounded(s: &Scop, max_operations: u64) -> Result<NoWrap, String> {
    let ctx = Ctx::new(max_operations).map_err(|e| format!("no-wrap assumption: {e}"))?;
    match compute(&ctx, s) {
        Ok(Ok(nw)) => Ok(nw),
        Ok(Err(why)) => Err(why),
        Err(e) => Err(format!("no-wrap assumption: {e}")),
    }
}

/// Computes the no-wrap test of `s` in `ctx`. `Ok(Err(why))` when the bad set cannot be
/// written as a test that evaluates without overflow (the SCoP then keeps its code).
pub fn compute(ctx: &Ctx, s: &Scop) -> IslResult<Result<NoWrap, String>> {
    let names = &s.names;
    let params: Vec<&str> = s.params.iter().map(|p| names[p].as_str()).collect();
    let params_text = format!("[{}]", params.join(", "));
    let long_params: Vec<VarId> = s
        .params
        .iter()
        .copied()
        .filter(|p| s_param_ty(s, *p) == ScalarTy::I64)
        .collect();
    // The parameters' ranges: their types, and the bound for `long` ones (tested first).
    let bound_of = |p: VarId| -> i128 {
        if long_params.contains(&p) {
            LONG_VALUE_BOUND
        } else {
            1i128 << 31
        }
    };
    let range: Vec<String> = s
        .params
        .iter()
        .map(|p| {
            let b = bound_of(*p);
            format!("{} <= {} <= {}", -b, names[p], b - 1)
        })
        .collect();
    let box_text = if range.is_empty() {
        format!("{params_text} -> {{ : }}")
    } else {
        format!("{params_text} -> {{ : {} }}", range.join(" and "))
    };
    let mut pieces = Vec::new();
    for (k, o) in s.obligations.iter().enumerate() {
        let tuple: Vec<&str> = o.counters.iter().map(|v| names[v].as_str()).collect();
        let a = o.aff.to_isl(names);
        let mut cons = o.constraints.clone();
        cons.push(format!("({a} < {} or {a} > {})", o.lo, o.hi));
        pieces.push(format!(
            "W{k}[{}] : {}",
            tuple.join(", "),
            cons.join(" and ")
        ));
    }
    // Every array access in bounds: then the transformed nest cannot fault, and where it
    // could the original code runs and reports the first fault in program order.
    let extents: HashMap<VarId, &Vec<Option<crate::scop::Aff>>> =
        s.arrays.iter().map(|a| (a.var, &a.extents)).collect();
    let mut unknown = Vec::new();
    for st in s.stmts.iter().chain(&s.checks) {
        let tuple: Vec<&str> = st.loops.iter().map(|l| names[&l.var].as_str()).collect();
        for a in &st.accesses {
            if a.expanded || a.idx.is_empty() {
                continue;
            }
            let ext = extents.get(&a.var).copied();
            let Some(ext) = ext.filter(|e| e.len() == a.idx.len() && e.iter().all(Option::is_some))
            else {
                let n = format!("`{}`", names[&a.var]);
                if !unknown.contains(&n) {
                    unknown.push(n);
                }
                continue;
            };
            for (x, e) in a.idx.iter().zip(ext.iter().flatten()) {
                let (x, e) = (x.to_isl(names), e.to_isl(names));
                let mut cons = st.constraints.clone();
                cons.push(format!("({x} < 0 or {x} >= {e})"));
                pieces.push(format!(
                    "B{}[{}] : {}",
                    pieces.len(),
                    tuple.join(", "),
                    cons.join(" and ")
                ));
            }
        }
    }
    if !unknown.is_empty() {
        return Ok(Err(format!(
            "the extents of {} are not affine in the parameters, so the accesses cannot be checked before the transformed nest runs (its faults would come in another order than the program's)",
            unknown.join(", ")
        )));
    }
    let mut nw = NoWrap {
        long_params: long_params.clone(),
        obligations: s.obligations.len(),
        subscripts: pieces.len() - s.obligations.len(),
        ..NoWrap::default()
    };
    if pieces.is_empty() {
        nw.text = "{ }".into();
        return Ok(Ok(nw));
    }
    let bad = ctx
        .union_set(&format!("{params_text} -> {{ {} }}", pieces.join("; ")))?
        .params()?;
    let pbox = ctx.set(&box_text)?;
    let bad = bad
        .intersect(pbox.clone())?
        .gist(pbox)?
        .remove_divs()?
        .coalesce()?;
    nw.text = bad.to_string();
    if bad.is_empty()? {
        return Ok(Ok(nw));
    }
    let Some(disjuncts) = bad.param_constraints(COEFF_LIMIT)? else {
        return Ok(Err(format!(
            "the parameter values where an integer expression wraps ({}) need coefficients beyond 2^60",
            nw.text
        )));
    };
    let by_name: HashMap<&str, VarId> = s.params.iter().map(|p| (names[p].as_str(), *p)).collect();
    for d in disjuncts {
        let mut conj = Vec::new();
        for (terms, c, eq) in d {
            let mut t = Vec::new();
            let mut worst = (c as i128).abs();
            for (n, k) in terms {
                let Some(v) = by_name.get(n.as_str()) else {
                    return Ok(Err(format!(
                        "no-wrap test names an unknown parameter `{n}`"
                    )));
                };
                worst += (k as i128).abs() * bound_of(*v);
                t.push((*v, k));
            }
            if worst >= 1i128 << 62 {
                return Ok(Err(format!(
                    "the no-wrap test ({}) could overflow 64 bits when evaluated",
                    nw.text
                )));
            }
            conj.push(ParamConstraint { terms: t, c, eq });
        }
        nw.bad.push(conj);
    }
    Ok(Ok(nw))
}

fn s_param_ty(s: &Scop, p: VarId) -> ScalarTy {
    s.param_types.get(&p).copied().unwrap_or(ScalarTy::I32)
}
