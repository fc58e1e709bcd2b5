//! Exact instance counts of SCoP statements for given parameter values, before running: the
//! execution counts of the predictive cost model (issue 15, item 4).
//!
//! isl gives each statement's domain with the parameters fixed, as disjoint basic sets.
//! isl 0.27 counts the points of a set only by enumerating them (`isl_set_count_val`), which
//! is far too slow for a 2000³ domain, and symbolic counting is Barvinok's, not isl's. So the
//! points are counted here from the constraints: the outer dimensions are enumerated between
//! bounds from Fourier–Motzkin projections (rational, so a superset of the integer
//! projection: an outer point without inner points counts 0), and the innermost dimension is
//! an interval counted in closed form. The work is the size of the outer projection (10⁶
//! steps for a 3-D domain of side 1000), bounded by the caller. Basic sets with existentially
//! quantified variables (strided loops) fall back to isl's enumeration under the same bound.

use std::collections::HashMap;

use tessera_ir::{Function, Span, VarId};

use crate::isl::Ctx;
use crate::scop;

/// The instances of one statement of a SCoP at the top level of a function (executed once
/// per call).
#[derive(Clone, Debug, PartialEq)]
pub struct StmtCount {
    /// The SCoP's index among the function's top-level SCoPs.
    pub scop: usize,
    /// The statement's name in the model (`S<k>`).
    pub stmt: String,
    /// Its source span.
    pub span: Span,
    /// How many times it runs.
    pub count: u128,
}

/// Why counts could not be given.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CountError {
    /// A parameter of a SCoP has no value (it is not a parameter of the function).
    #[error("the loop bounds depend on `{0}`, which is not a parameter of the function")]
    Unbound(String),
    /// Counting would take more than the allowed steps.
    #[error("counting the domain of {0} would take more than {1} steps")]
    TooLarge(String, u64),
    /// A dimension is unbounded.
    #[error("the domain of {0} is unbounded")]
    Unbounded(String),
    /// A loop nest at the top level of the function is not a SCoP: what it runs cannot be
    /// counted before running.
    #[error("a loop nest is outside the polyhedral model ({0}), so its work cannot be counted before running")]
    NotAffine(String),
    /// isl failed.
    #[error("{0}")]
    Isl(String),
}

/// Counts the instances of every statement of the SCoPs at the top level of `f`'s body,
/// with the parameters bound by `values` (a function parameter's value, by variable).
/// `max_steps` bounds the enumeration per statement. Every loop nest at the top level must
/// be in a SCoP ([`CountError::NotAffine`] otherwise).
pub fn statement_counts(
    f: &Function,
    values: &HashMap<VarId, i64>,
    max_steps: u64,
) -> Result<Vec<StmtCount>, CountError> {
    let counters = scop::loop_only_counters(f);
    let mut rejected = Vec::new();
    let found = scop::find_in_list(f, &f.body, &counters, &mut rejected);
    if let Some(r) = rejected.first() {
        return Err(CountError::NotAffine(r.reason.clone()));
    }
    let ctx = Ctx::new(50_000_000).map_err(|e| CountError::Isl(e.to_string()))?;
    let mut out = Vec::new();
    for (k, fs) in found.iter().enumerate() {
        let s = &fs.scop;
        let (params, ctx_text) = fixed_params(s, values)?;
        for st in &s.stmts {
            let its: Vec<&str> = st.loops.iter().map(|l| s.names[&l.var].as_str()).collect();
            let tuple = format!("{}[{}]", st.name, its.join(", "));
            let body = if st.constraints.is_empty() {
                tuple
            } else {
                format!("{tuple} : {}", st.constraints.join(" and "))
            };
            let set_text = format!("{} -> {{ {body} }}", params);
            let isl = |e: crate::isl::IslError| CountError::Isl(e.to_string());
            let set = ctx
                .set(&set_text)
                .and_then(|d| d.intersect_params(ctx.set(&ctx_text)?))
                .and_then(|d| d.project_out_params())
                .and_then(|d| d.make_disjoint())
                .map_err(isl)?;
            let count = match set.dim_constraints(1 << 40).map_err(isl)? {
                Some(parts) => {
                    let mut total = 0u128;
                    for conj in parts {
                        total += count_polytope(&conj, max_steps).map_err(|e| e.named(&st.name))?;
                    }
                    total
                }
                None => {
                    // Existentials (strided loops): isl's enumeration, bounded by the same
                    // operation budget.
                    ctx.reset_operations();
                    match set.count_by_enumeration() {
                        Ok(Some(n)) => n as u128,
                        _ => return Err(CountError::TooLarge(st.name.clone(), max_steps)),
                    }
                }
            };
            out.push(StmtCount {
                scop: k,
                stmt: st.name.clone(),
                span: st.span,
                count,
            });
        }
    }
    Ok(out)
}

/// The SCoP's parameter tuple in isl text (`[n, m]`) and the parameter set that binds each
/// to its value in `values` (`[n, m] -> { : n = 10 and m = 3 }`).
pub(crate) fn fixed_params(
    s: &scop::Scop,
    values: &HashMap<VarId, i64>,
) -> Result<(String, String), CountError> {
    let mut fix = Vec::new();
    for p in &s.params {
        let v = values
            .get(p)
            .ok_or_else(|| CountError::Unbound(s.names[p].clone()))?;
        fix.push(format!("{} = {v}", s.names[p]));
    }
    let names: Vec<&str> = s.params.iter().map(|p| s.names[p].as_str()).collect();
    let params = format!("[{}]", names.join(", "));
    let set = if fix.is_empty() {
        format!("{params} -> {{ : }}")
    } else {
        format!("{params} -> {{ : {} }}", fix.join(" and "))
    };
    Ok((params, set))
}

/// A failure of [`count_polytope`], before it is given the statement's name.
#[derive(Debug, PartialEq)]
pub enum PolyError {
    /// More than the allowed steps.
    TooLarge(u64),
    /// Unbounded.
    Unbounded,
}

impl PolyError {
    fn named(self, stmt: &str) -> CountError {
        match self {
            PolyError::TooLarge(n) => CountError::TooLarge(stmt.to_string(), n),
            PolyError::Unbounded => CountError::Unbounded(stmt.to_string()),
        }
    }
}

/// An inequality Σ a·x + c ≥ 0.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Ineq {
    a: Vec<i128>,
    c: i128,
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Ineq {
    /// Divides by the gcd of the coefficients (rounding the constant down: exact for
    /// integer points).
    fn normal(mut self) -> Ineq {
        let g = self.a.iter().fold(0, |g, &x| gcd(g, x));
        if g > 1 {
            for x in &mut self.a {
                *x /= g;
            }
            self.c = self.c.div_euclid(g);
        }
        self
    }
}

/// The integer points of { x : Σ a·x + c ≥ 0 (or = 0) for every row }, for rows over the same
/// dimensions.
pub fn count_polytope(rows: &[(Vec<i64>, i64, bool)], max_steps: u64) -> Result<u128, PolyError> {
    let d = rows.first().map_or(0, |r| r.0.len());
    let mut ineqs: Vec<Ineq> = Vec::new();
    for (a, c, eq) in rows {
        let a: Vec<i128> = a.iter().map(|&x| x as i128).collect();
        let c = *c as i128;
        if *eq {
            ineqs.push(Ineq {
                a: a.iter().map(|x| -x).collect(),
                c: -c,
            });
        }
        ineqs.push(Ineq { a, c });
    }
    if d == 0 {
        return Ok(ineqs.iter().all(|r| r.c >= 0) as u128);
    }
    // levels[k]: the constraints on x_0..=x_k (Fourier–Motzkin from the innermost out).
    let mut levels: Vec<Vec<Ineq>> = vec![Vec::new(); d];
    let mut cur: Vec<Ineq> = ineqs.into_iter().map(Ineq::normal).collect();
    for k in (0..d).rev() {
        dedup(&mut cur);
        levels[k] = cur.clone();
        if k == 0 {
            break;
        }
        let (mut lo, mut hi, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for r in cur {
            match r.a[k].signum() {
                1 => lo.push(r),
                -1 => hi.push(r),
                _ => rest.push(r),
            }
        }
        for l in &lo {
            for h in &hi {
                // Eliminate x_k: (-h_k)·l + l_k·h.
                let (p, q) = (-h.a[k], l.a[k]);
                let a: Vec<i128> = l.a.iter().zip(&h.a).map(|(x, y)| p * x + q * y).collect();
                rest.push(
                    Ineq {
                        a,
                        c: p * l.c + q * h.c,
                    }
                    .normal(),
                );
            }
            if rest.len() > 4096 {
                return Err(PolyError::TooLarge(max_steps));
            }
        }
        cur = rest;
    }
    let mut steps = 0u64;
    let mut x = vec![0i128; d];
    walk(&levels, 0, &mut x, &mut steps, max_steps)
}

fn dedup(v: &mut Vec<Ineq>) {
    let mut seen = std::collections::HashSet::new();
    v.retain(|r| r.a.iter().any(|&x| x != 0) || r.c < 0);
    v.retain(|r| seen.insert(r.clone()));
}

/// The bounds of x_k given x_0..x_{k-1}: None if empty.
fn bounds(rows: &[Ineq], k: usize, x: &[i128]) -> Result<Option<(i128, i128)>, PolyError> {
    let (mut lo, mut hi): (Option<i128>, Option<i128>) = (None, None);
    for r in rows {
        let rest: i128 = r.c + (0..k).map(|j| r.a[j] * x[j]).sum::<i128>();
        let a = r.a[k];
        if a == 0 {
            if rest < 0 {
                return Ok(None);
            }
        } else if a > 0 {
            // a·x_k ≥ -rest
            let b = (-rest).div_euclid(a) + ((-rest).rem_euclid(a) != 0) as i128;
            lo = Some(lo.map_or(b, |l| l.max(b)));
        } else {
            // -|a|·x_k ≥ -rest → x_k ≤ rest/|a|
            let b = rest.div_euclid(-a);
            hi = Some(hi.map_or(b, |h| h.min(b)));
        }
    }
    match (lo, hi) {
        (Some(l), Some(h)) => Ok((l <= h).then_some((l, h))),
        _ => Err(PolyError::Unbounded),
    }
}

fn walk(
    levels: &[Vec<Ineq>],
    k: usize,
    x: &mut [i128],
    steps: &mut u64,
    max_steps: u64,
) -> Result<u128, PolyError> {
    let d = levels.len();
    let Some((lo, hi)) = bounds(&levels[k], k, x)? else {
        return Ok(0);
    };
    if k + 1 == d {
        return Ok((hi - lo + 1) as u128);
    }
    let mut total = 0u128;
    for v in lo..=hi {
        *steps += 1;
        if *steps > max_steps {
            return Err(PolyError::TooLarge(max_steps));
        }
        x[k] = v;
        total += walk(levels, k + 1, x, steps, max_steps)?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn isl_count(text: &str) -> (u128, i64) {
        let ctx = Ctx::new(100_000_000).unwrap();
        let set = ctx.set(text).unwrap().make_disjoint().unwrap();
        let want = set.count_by_enumeration().unwrap().unwrap();
        let parts = set.dim_constraints(1 << 40).unwrap().unwrap();
        let got = parts
            .iter()
            .map(|c| count_polytope(c, 1 << 30).unwrap())
            .sum::<u128>();
        (got, want)
    }

    #[test]
    fn counts_equal_isl_enumeration() {
        for text in [
            "{ S[i, j] : 0 <= i < 17 and 0 <= j < 23 }",
            "{ S[i, j, k] : 0 <= i < 9 and 0 <= j <= i and j <= k < 11 }",
            "{ S[i, j] : 0 <= i < 10 and 0 <= j < 10 and i + j <= 12 and 2i - 3j <= 5 }",
            "{ S[i, j] : 0 <= i < 10 and 0 <= j < 10 and i + j <= 12; S[i, j] : 20 <= i <= 22 and j = i }",
            "{ S[i] : 0 <= i < 0 }",
            "{ S[] }",
            "{ S[t, i, j] : 0 <= t < 5 and 1 <= i < 9 and 1 <= j < 9 and i + j > t }",
            "{ S[i, j] : 0 <= i <= 30 and 3j >= i and 5j <= 2i + 7 }",
            "{ S[i, j, k, l] : 0 <= i < 4 and 0 <= j < 5 and 0 <= k < 6 and k <= l < 7 }",
        ] {
            let (got, want) = isl_count(text);
            assert_eq!(got, want as u128, "{text}");
        }
    }

    #[test]
    fn large_domains_count_in_closed_form_and_bounds_hold() {
        let ctx = Ctx::new(100_000_000).unwrap();
        let set = ctx
            .set("{ S[i, j, k] : 0 <= i < 1000 and 0 <= j < 1100 and 0 <= k < 1200 }")
            .unwrap();
        let parts = set.dim_constraints(1 << 40).unwrap().unwrap();
        assert_eq!(
            count_polytope(&parts[0], 2_000_000).unwrap(),
            1000 * 1100 * 1200
        );
        // Triangular: Σ_{i<n} (i + 1) · m.
        let set = ctx
            .set("{ S[i, j, k] : 0 <= i < 2000 and 0 <= j <= i and 0 <= k < 300 }")
            .unwrap();
        let parts = set.dim_constraints(1 << 40).unwrap().unwrap();
        assert_eq!(
            count_polytope(&parts[0], 10_000_000).unwrap(),
            2000 * 2001 / 2 * 300
        );
        assert_eq!(
            count_polytope(&parts[0], 1000),
            Err(PolyError::TooLarge(1000))
        );
        let set = ctx.set("{ S[i, j] : 0 <= i < 10 and j >= i }").unwrap();
        let parts = set.dim_constraints(1 << 40).unwrap().unwrap();
        assert_eq!(count_polytope(&parts[0], 1000), Err(PolyError::Unbounded));
    }
}
