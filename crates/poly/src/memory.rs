//! The memory term of the schedule cost model (issue 16): how many cache lines each level of
//! the host's caches takes in when a SCoP runs under a schedule, from isl footprints, and the
//! work of its statements, for parameter values known before running.
//!
//! The model is Ferrante, Sarkar and Thrash's ("On estimating and enhancing cache
//! effectiveness", 1991) on isl sets. Let the schedule be the flat map from statement instances
//! to time vectors `[t0, ..., t(D-1)]`. At depth `d`, a *prefix* is a value of `t0..t(d-1)`:
//! the instances with that prefix are one iteration of the loop at depth `d - 1` (the whole
//! SCoP at depth 0, one instance at depth `D`). For a representative prefix (that of the
//! middle instance of the largest statement, chosen dimension by dimension) isl gives, per
//! array, the elements its instances touch; their cache lines are `rows × ((width - 1) / L +
//! 1)` for `width` the extent of the last subscript and `L` elements per line. `FP(d)` is
//! the sum over arrays, `new(d)` the lines not touched by the previous prefix (the one before
//! it in the same iteration of the loop outside: the lines of both prefixes' elements less
//! the previous prefix's), and `N(d)` = instances / instances per
//! prefix. A cache of `C` lines holds the footprint of the outermost depth `d*` with
//! `FP(d*) ≤ C / 2`; it then takes in the new lines of every prefix at `d*` and the lines
//! shared with the previous prefix once per iteration of the loop outside:
//! `N(d*) · new(d*) + N(d* - 1) · (FP(d*) - new(d*))`. With `d* = 0`, every line once.
//!
//! Besides the lines, per SCoP: the work (loads, stores and floating-point operations of
//! every instance, divided by the vector lanes where the statement's innermost loop
//! vectorises), the instances whose innermost loop is a chain (a dependence it carries under
//! the schedule, or a floating-point reduction without `--fast-math`), and the starts of the
//! innermost loop of the generated code. Work, chains, starts and the lines of the private
//! levels are divided among the threads for the statements under a loop that runs in
//! parallel; the last level's lines (memory bandwidth) are not. [`Weights`] turns the terms
//! into nanoseconds.
//!
//! Approximations, stated once: one representative prefix per depth (boundary tiles and
//! triangular domains differ), no conflict misses beyond the factor 1/2, rows of a
//! footprint assumed contiguous in their last subscript, no hardware prefetching and no
//! load imbalance (the weights absorb what they can), strides judged on the statement's
//! subscripts in its innermost counter (a skewed loop's stride is not seen), a micro-kernel
//! counted as vectors (twice the work when its accumulators spill).

use std::collections::HashMap;

use tessera_ir::{walk_stmts, ExprKind, Function, Place, VarId, VarKind};

use crate::count::{count_polytope, CountError};
use crate::isl::{Ctx, IslError, Set, USet};
use crate::model::Analysis;
use crate::scop::Scop;

/// One level of the data caches.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// `L1`, `L2`, `L3`.
    pub name: String,
    /// Its capacity in bytes (per core for private levels).
    pub bytes: u64,
}

/// The host's data caches and vector width.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// Cache line size in bytes.
    pub line_bytes: u64,
    /// The data cache levels, innermost first.
    pub levels: Vec<Level>,
    /// Vector register width in bytes.
    pub vector_bytes: u64,
    /// Vector registers (16 with AVX2, 32 with AVX-512).
    pub vector_registers: u64,
}

impl Machine {
    /// The caches of CPU 0 from sysfs (fallbacks: 64-byte lines, 32 KiB L1d, 512 KiB L2,
    /// 8 MiB L3) and the vector width of the host (AVX-512: 64 bytes, AVX: 32, else 16).
    pub fn detect() -> Machine {
        let mut sizes: [u64; 3] = [32 << 10, 512 << 10, 8 << 20];
        let mut line = 64;
        for c in crate::model::sysfs_caches() {
            match c.level {
                1 => {
                    sizes[0] = c.bytes;
                    line = c.line.unwrap_or(line);
                }
                2 => sizes[1] = c.bytes,
                3 => sizes[2] = c.bytes,
                _ => {}
            }
        }
        let vector = vector_bytes();
        Machine {
            line_bytes: line,
            levels: ["L1", "L2", "L3"]
                .iter()
                .zip(sizes)
                .map(|(n, b)| Level {
                    name: n.to_string(),
                    bytes: b,
                })
                .collect(),
            vector_bytes: vector,
            vector_registers: if vector == 64 { 32 } else { 16 },
        }
    }
}

fn vector_bytes() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return 64;
        }
        if std::arch::is_x86_feature_detected!("avx") {
            return 32;
        }
    }
    16
}

/// Which schedule of a SCoP to estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The optimiser's final schedule.
    Final,
    /// The code as written (the 2d+1 original schedule).
    Original,
}

/// The footprint at one depth of the schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Depth {
    /// Statement instances with the representative prefix.
    pub instances: f64,
    /// Cache lines they touch (below the first depth whose lines fit in half the
    /// smallest level, that depth's: deeper footprints decide nothing).
    pub lines: f64,
    /// Of those, lines the previous prefix did not touch (computed at the depths a cache
    /// level holds; elsewhere equal to `lines`).
    pub new_lines: f64,
}

/// The estimate for one SCoP under one schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Statement instances.
    pub instances: f64,
    /// Loads, stores and floating-point operations of all instances.
    pub ops: f64,
    /// Of `ops`, those in statements whose innermost loop vectorises.
    pub vector_ops: f64,
    /// Instances whose innermost loop is a chain (a dependence or a floating-point
    /// reduction it carries, kept in order): each waits for the previous one's result.
    pub chained: f64,
    /// Runs of the innermost loop (instances / the innermost trip count of the
    /// representative prefix).
    pub loop_starts: f64,
    /// Per cache level of the [`Machine`], the lines it takes in.
    pub misses: Vec<f64>,
    /// The fraction of the instances that run under a parallel loop (0 for the code as
    /// written).
    pub parallel_fraction: f64,
    /// Of `ops`, `vector_ops` and `chained`, the parts of statements under a parallel
    /// loop.
    pub parallel_work: (f64, f64, f64),
    /// Per depth `0..=D`, the footprint of the representative prefix.
    pub depths: Vec<Depth>,
}

/// The time per unit of each term of [`Estimate::features`], in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Weights {
    /// One weight per term.
    pub ns: Vec<f64>,
}

impl Weights {
    /// The weights fitted on the reference machine (an AMD EPYC znver3 VM, 2 cores, 2026-12-07:
    /// `tessera calibrate --schedules` on 194 candidates of 18 PolyBench-style kernels at
    /// their benchmark sizes, on 1 and 2 threads), for `m`'s cache levels: 0.089 ns per
    /// operation after vectorisation, 0.28 per chained instance, 32 per innermost loop
    /// start, 0.09 per line into L1, 1.09 into L2, 1.26 into the last level (from memory).
    pub fn reference(m: &Machine) -> Weights {
        let mut ns = vec![0.089, 0.28, 32.0];
        let lines = [0.09, 1.09];
        let n = m.levels.len();
        for k in 0..n {
            // The last level always takes its lines from memory.
            ns.push(if k + 1 == n { 1.26 } else { lines[k.min(1)] });
        }
        Weights { ns }
    }
}

/// The names of the terms of [`Estimate::features`] for `m`.
pub fn term_names(m: &Machine) -> Vec<String> {
    let mut v = vec![
        "work".to_string(),
        "chained instances".to_string(),
        "loop starts".to_string(),
    ];
    v.extend(m.levels.iter().map(|l| format!("{} lines", l.name)));
    v
}

impl Estimate {
    /// The terms of the linear model (see [`term_names`]): operations after vectorisation,
    /// chained instances, innermost loop starts, then lines per level; each divided by the threads that share
    /// it on `threads` threads: the work of statements under a parallel loop, and the
    /// starts and lines of all but the last level in proportion to the instances that run
    /// in parallel (memory bandwidth is shared).
    pub fn features(&self, m: &Machine, threads: usize) -> Vec<f64> {
        let p = threads.max(1) as f64;
        let lanes = (m.vector_bytes / 8).max(1) as f64;
        let work = |ops: f64, vec: f64| (ops - vec) + vec / lanes;
        let (pops, pvec, pchain) = self.parallel_work;
        // Terms of the whole SCoP (starts, lines) shrink with the parallel fraction.
        let share = self.parallel_fraction / p + (1.0 - self.parallel_fraction);
        let mut v = vec![
            work(self.ops - pops, self.vector_ops - pvec) + work(pops, pvec) / p,
            (self.chained - pchain) + pchain / p,
            self.loop_starts * share,
        ];
        let n = self.misses.len();
        for (k, x) in self.misses.iter().enumerate() {
            v.push(if k + 1 == n { *x } else { x * share });
        }
        v
    }

    /// The predicted time in nanoseconds.
    pub fn predict_ns(&self, m: &Machine, w: &Weights, threads: usize) -> f64 {
        self.features(m, threads)
            .iter()
            .zip(&w.ns)
            .map(|(x, c)| x * c)
            .sum()
    }
}

/// Elements per statement of the operation count: loads, stores, floating-point arithmetic
/// and math calls (4 each).
fn stmt_ops(st: &crate::scop::PolyStmt) -> f64 {
    let mut n: f64 = 0.0;
    walk_stmts(
        std::slice::from_ref(&st.body),
        &mut |_| {},
        &mut |e| match &e.kind {
            ExprKind::Load { .. } => n += 1.0,
            ExprKind::Assign { place, op, .. } => {
                if matches!(place, Place::Elem { .. }) {
                    n += 1.0;
                }
                if op.is_some_and(|(_, t)| t.is_float()) {
                    n += 1.0;
                }
            }
            ExprKind::Binary(..) | ExprKind::Unary(..) if e.ty.is_some_and(|t| t.is_float()) => {
                n += 1.0
            }
            ExprKind::Builtin(..) => n += 4.0,
            _ => {}
        },
    );
    n.max(1.0)
}

/// True when `st`'s innermost loop over `v` vectorises: every array access unit-stride or
/// invariant in `v`, and no floating-point element written invariant in `v` (a reduction)
/// unless `fast_math`.
/// Whether `st`'s innermost loop over `v` runs as vectors, and whether its iterations form a
/// chain, each waiting for the previous one's result. `carried`: a dependence joins two of
/// its iterations ([`carried_by`]). A floating-point reduction (an element written in every
/// iteration: a subscript invariant in `v`) is reordered into vectors only with
/// `fast_math`; any other carried dependence keeps the loop scalar and in order. Strided
/// accesses keep it scalar.
fn inner_loop(
    f: &Function,
    st: &crate::scop::PolyStmt,
    v: VarId,
    fast_math: bool,
    carried: bool,
) -> (bool, bool) {
    let reduction = st.accesses.iter().any(|a| {
        let float = match &f.var(a.var).kind {
            VarKind::Array { elem, .. } => elem.is_float(),
            VarKind::Scalar(t) => t.is_float(),
        };
        a.kind == crate::scop::AccessKind::Write
            && float
            && a.idx.iter().all(|x| !x.terms.contains_key(&v))
    });
    let reordered = fast_math && reduction;
    let chain = carried && !reordered;
    let vector = crate::model::strided_accesses(st, v) == 0 && !chain;
    (vector, chain)
}

/// A statement's tuple with generic counters, `S1[i0, i1, i2]`, in isl text.
fn stmt_tuple(st: &crate::scop::PolyStmt) -> String {
    let its: Vec<String> = (0..st.loops.len()).map(|k| format!("i{k}")).collect();
    format!("{}[{}]", st.name, its.join(", "))
}

/// True when some dependence of `deps` joins two instances of `st` whose times under
/// `sched` (a flat map with `n` output dimensions) differ only in dimension `q`: a dependence
/// carried by the loop of that dimension when it is innermost.
fn carried_by(
    ctx: &Ctx,
    params: &str,
    sched: &crate::isl::UMap<'_>,
    deps: &crate::isl::UMap<'_>,
    st: &crate::scop::PolyStmt,
    (q, n): (usize, usize),
) -> Result<bool, IslError> {
    let mine = ctx.union_set(&format!("{params} -> {{ {} }}", stmt_tuple(st)))?;
    let s = sched.clone().intersect_domain(mine)?;
    let t: Vec<String> = (0..n).map(|k| format!("t{k}")).collect();
    let u: Vec<String> = (0..n).map(|k| format!("u{k}")).collect();
    let mut cons: Vec<String> = (0..n)
        .filter(|&k| k != q)
        .map(|k| format!("t{k} = u{k}"))
        .collect();
    cons.push(format!("(t{q} < u{q} or t{q} > u{q})"));
    let same_but_q = ctx.union_map(&format!(
        "{params} -> {{ [{}] -> [{}] : {} }}",
        t.join(", "),
        u.join(", "),
        cons.join(" and ")
    ))?;
    let pairs = s
        .clone()
        .apply_range(same_but_q)?
        .apply_range(s.reverse()?)?;
    Ok(!deps.clone().intersect(pairs)?.is_empty()?)
}

/// Counts the points of a set (its parameters fixed by equalities): exactly through
/// [`count_polytope`], else by isl's enumeration when the bounding box is small, else the
/// bounding box's volume. The set is coalesced before its pieces are made disjoint: the
/// footprints of time-tiled stencils (shifted skewed tiles, with divisions) took isl seconds
/// per count without it.
fn count(set: &Set<'_>) -> Result<f64, IslError> {
    let free = set.clone().project_out_params()?.coalesce()?;
    if free.is_empty()? {
        return Ok(0.0);
    }
    let s = free.make_disjoint()?;
    if let Some(parts) = s.dim_constraints(1 << 40)? {
        let mut total = 0.0;
        let mut ok = true;
        for conj in parts {
            match count_polytope(&conj, 20_000_000) {
                Ok(n) => total += n as f64,
                Err(_) => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            return Ok(total);
        }
    }
    let volume = bounding_box(&s)?;
    if volume <= 200_000.0 {
        if let Some(n) = s.count_by_enumeration()? {
            return Ok(n as f64);
        }
    }
    Ok(volume)
}

/// The points of the bounding box of a set without parameters (infinite if unbounded).
fn bounding_box(s: &Set<'_>) -> Result<f64, IslError> {
    let mut volume = 1.0;
    for d in 0..s.n_dim()? {
        match s.dim_range(d)? {
            Some((lo, hi)) => volume *= (hi - lo + 1) as f64,
            None => return Ok(f64::INFINITY),
        }
    }
    Ok(volume)
}

/// One real array of the SCoP: its name in the model, rank and elements per line.
struct Arr {
    name: String,
    rank: usize,
    per_line: f64,
}

/// The lines of the elements of `arr` in `elems` (a union set over arrays).
fn lines(ctx: &Ctx, params: &str, elems: &USet<'_>, arr: &Arr) -> Result<f64, IslError> {
    let dims: Vec<String> = (0..arr.rank).map(|k| format!("x{k}")).collect();
    let uni = ctx.union_set(&format!(
        "{params} -> {{ {}[{}] }}",
        arr.name,
        dims.join(", ")
    ))?;
    let mine = elems.clone().intersect(uni)?;
    if mine.is_empty()? {
        return Ok(0.0);
    }
    let set = mine.to_set()?;
    let n = count(&set)?;
    if arr.rank == 0 {
        return Ok(1.0);
    }
    let free = set.project_out_params()?;
    let width = match free.dim_range(arr.rank - 1)? {
        Some((lo, hi)) => (hi - lo + 1) as f64,
        None => 1.0,
    };
    let rows = (n / width).max(1.0);
    Ok((rows * ((width - 1.0) / arr.per_line + 1.0)).min(n))
}

/// The statements called under a loop that runs in parallel: a `for` that isl found
/// parallel at the depth of a `parallel` mark (`marked`: reached from the mark through
/// blocks and tests only), what `gen` makes a parallel loop of.
fn parallel_stmts(
    a: &crate::isl::Ast,
    marked: bool,
    inside: bool,
    out: &mut std::collections::HashSet<String>,
) {
    use crate::isl::{Ast, AstExpr};
    match a {
        Ast::User(AstExpr::Op(_, args)) => {
            if let (true, Some(AstExpr::Id(n))) = (inside, args.first()) {
                out.insert(n.clone());
            }
        }
        Ast::User(_) => {}
        Ast::Mark(name, body) => parallel_stmts(body, name == "parallel", inside, out),
        Ast::For { body, parallel, .. } => {
            parallel_stmts(body, false, inside || (marked && *parallel), out)
        }
        Ast::If(_, t, e) => {
            parallel_stmts(t, marked, inside, out);
            if let Some(e) = e {
                parallel_stmts(e, marked, inside, out);
            }
        }
        Ast::Block(v) => {
            for x in v {
                parallel_stmts(x, marked, inside, out);
            }
        }
    }
}

/// The most `for` loops around a call of statement `stmt` in `a` (`depth` loops outside).
fn loop_depth(a: &crate::isl::Ast, stmt: &str, depth: usize, out: &mut Option<usize>) {
    use crate::isl::{Ast, AstExpr};
    match a {
        Ast::User(AstExpr::Op(_, args)) => {
            if matches!(args.first(), Some(AstExpr::Id(n)) if n == stmt) {
                *out = Some(out.map_or(depth, |d| d.max(depth)));
            }
        }
        Ast::User(_) => {}
        Ast::For { body, .. } => loop_depth(body, stmt, depth + 1, out),
        Ast::Mark(_, body) => loop_depth(body, stmt, depth, out),
        Ast::If(_, t, e) => {
            loop_depth(t, stmt, depth, out);
            if let Some(e) = e {
                loop_depth(e, stmt, depth, out);
            }
        }
        Ast::Block(v) => {
            for x in v {
                loop_depth(x, stmt, depth, out);
            }
        }
    }
}

/// Estimates the work and the cache lines of SCoP `s` of function `f` under its final or
/// original schedule, with the parameters bound by `values`.
pub fn estimate(
    f: &Function,
    s: &Scop,
    a: &Analysis,
    values: &HashMap<VarId, i64>,
    m: &Machine,
    which: Which,
    fast_math: bool,
) -> Result<Estimate, CountError> {
    let isl = |e: IslError| CountError::Isl(e.to_string());
    let ctx = Ctx::new(50_000_000).map_err(isl)?;
    let (params, fixed) = crate::count::fixed_params(s, values)?;
    let fixed = ctx.set(&fixed).map_err(isl)?;
    let run = || -> Result<Estimate, IslError> {
        let dom = ctx.union_set(&a.domain)?.intersect_params(fixed.clone())?;
        let sched_text = match which {
            Which::Final => &a.final_map,
            Which::Original => &a.original_schedule,
        };
        let sched = ctx.union_map(sched_text)?.intersect_domain(dom.clone())?;
        let deps = ctx
            .union_map(&a.flow)?
            .union(ctx.union_map(&a.anti)?)?
            .union(ctx.union_map(&a.output)?)?
            .intersect_params(fixed.clone())?;
        let acc = ctx
            .union_map(&a.reads)?
            .union(ctx.union_map(&a.writes)?)?
            .intersect_domain(dom.clone())?;
        let arrays: Vec<Arr> = s
            .arrays
            .iter()
            .filter(|x| !x.extents.is_empty())
            .filter_map(|x| match &f.var(x.var).kind {
                VarKind::Array { elem, .. } => Some(Arr {
                    name: s.names.get(&x.var).cloned().unwrap_or_default(),
                    rank: x.extents.len(),
                    per_line: (m.line_bytes as f64 / elem.size_bytes() as f64).max(1.0),
                }),
                VarKind::Scalar(_) => None,
            })
            .collect();
        // Per statement: its instances in a set of instances.
        let universes: Vec<USet<'_>> = s
            .stmts
            .iter()
            .map(|st| ctx.union_set(&format!("{params} -> {{ {} }}", stmt_tuple(st))))
            .collect::<Result<_, _>>()?;
        let instances = |u: &USet<'_>| -> Result<Vec<f64>, IslError> {
            let mut out = Vec::new();
            for uni in &universes {
                let mine = u.clone().intersect(uni.clone())?;
                out.push(if mine.is_empty()? {
                    0.0
                } else {
                    count(&mine.to_set()?)?
                });
            }
            Ok(out)
        };
        let per_stmt = instances(&dom)?;
        let total: f64 = per_stmt.iter().sum();
        let micro: Vec<&String> = a.bands.iter().flat_map(|b| &b.micro_kernel).collect();
        // Statements under a loop that runs in parallel (a `parallel` mark on a loop isl
        // found parallel, as code generation decides).
        let mut under_parallel = std::collections::HashSet::new();
        if which == Which::Final {
            parallel_stmts(&a.ast, false, false, &mut under_parallel);
        }
        if total == 0.0 {
            return Ok(Estimate {
                instances: 0.0,
                ops: 0.0,
                vector_ops: 0.0,
                chained: 0.0,
                loop_starts: 0.0,
                misses: vec![0.0; m.levels.len()],
                parallel_fraction: 0.0,
                parallel_work: (0.0, 0.0, 0.0),
                depths: Vec::new(),
            });
        }
        // Per statement, its innermost counter and the schedule dimension it is.
        let inner_dims = crate::model::innermost_dims(sched_text, s);
        let range = sched.clone().range()?.to_set()?;
        let n_dims = range.n_dim()?;
        let (mut ops, mut vector_ops, mut chained) = (0.0, 0.0, 0.0);
        let (mut par_instances, mut par_work) = (0.0, (0.0, 0.0, 0.0));
        for (st, n) in s.stmts.iter().zip(&per_stmt) {
            let mut o = stmt_ops(st) * n;
            ops += o;
            let inner = inner_dims.get(&st.name).copied();
            // A micro-kernel keeps rows x cols independent accumulators: vectors, no chain;
            // unless they and a row of B and A's broadcast need more vector registers than
            // the machine has: then each accumulator goes through memory (twice the work).
            let (vec, chain) = if which == Which::Final && micro.contains(&&st.name) {
                if let Some((rows, cols)) = a.micro_kernel_shape {
                    let lanes = (m.vector_bytes / 8).max(1) as i64;
                    let needed = rows * cols / lanes + cols / lanes + 1;
                    if needed > m.vector_registers as i64 {
                        ops += o;
                        o *= 2.0;
                    }
                }
                (true, false)
            } else {
                match inner {
                    Some((v, q)) => {
                        let carried = carried_by(&ctx, &params, &sched, &deps, st, (q, n_dims))?;
                        inner_loop(f, st, v, fast_math, carried)
                    }
                    // A tiled or skewed innermost expression: scalar, no known chain.
                    None => (false, false),
                }
            };
            if vec {
                vector_ops += o;
            }
            if chain {
                chained += n;
            }
            if under_parallel.contains(&st.name) {
                par_instances += n;
                par_work.0 += o;
                if vec {
                    par_work.1 += o;
                }
                if chain {
                    par_work.2 += n;
                }
            }
        }
        let mut est = Estimate {
            instances: total,
            ops,
            vector_ops,
            chained,
            loop_starts: total,
            misses: vec![0.0; m.levels.len()],
            parallel_fraction: par_instances / total,
            parallel_work: par_work,
            depths: Vec::new(),
        };
        // The representative instance: the middle of the largest statement's domain, one
        // dimension at a time.
        let (big, _) = per_stmt
            .iter()
            .enumerate()
            .max_by(|x, y| x.1.total_cmp(y.1))
            .expect("statements");
        let st = &s.stmts[big];
        let mut slice = dom
            .clone()
            .intersect(universes[big].clone())?
            .to_set()?
            .project_out_params()?;
        let mut point = Vec::new();
        for k in 0..st.loops.len() {
            let Some((lo, hi)) = slice.dim_range(k)? else {
                return Ok(est);
            };
            let mut fixed_k = None;
            for v in [lo + (hi - lo) / 2, lo] {
                let c = ctx.set(&format!("{{ {} : i{k} = {v} }}", stmt_tuple(st)))?;
                let next = slice.clone().intersect(c)?;
                if !next.is_empty()? {
                    fixed_k = Some((v, next));
                    break;
                }
            }
            let Some((v, next)) = fixed_k else {
                return Ok(est);
            };
            point.push(v);
            slice = next;
        }
        let pt: Vec<String> = point.iter().map(|v| v.to_string()).collect();
        let image = ctx
            .union_set(&format!("{params} -> {{ {}[{}] }}", st.name, pt.join(", ")))?
            .intersect_params(fixed.clone())?
            .apply(sched.clone())?
            .to_set()?
            .project_out_params()?;
        let mut time = Vec::new();
        for d in 0..n_dims {
            match image.dim_range(d)? {
                Some((lo, _)) => time.push(lo),
                None => return Ok(est),
            }
        }
        let tdims: Vec<String> = (0..n_dims).map(|k| format!("t{k}")).collect();
        let tuple = format!("[{}]", tdims.join(", "));
        let prefix_set = |p: &[i64]| -> Result<USet<'_>, IslError> {
            let eqs: Vec<String> = p
                .iter()
                .enumerate()
                .map(|(k, v)| format!("t{k} = {v}"))
                .collect();
            ctx.union_set(&if eqs.is_empty() {
                format!("{params} -> {{ {tuple} }}")
            } else {
                format!("{params} -> {{ {tuple} : {} }}", eqs.join(" and "))
            })
        };
        let touched = |p: &[i64]| -> Result<(f64, USet<'_>), IslError> {
            let inst = sched.clone().intersect_range(prefix_set(p)?)?.domain()?;
            let n: f64 = instances(&inst)?.iter().sum();
            Ok((n, acc.clone().intersect_domain(inst)?.range()?))
        };
        let all_lines = |e: &USet<'_>| -> Result<f64, IslError> {
            let mut t = 0.0;
            for arr in &arrays {
                t += lines(&ctx, &params, e, arr)?;
            }
            Ok(t)
        };
        // Lines are counted down to the first depth that fits in half the smallest level
        // (deeper footprints are smaller still and decide nothing); the new lines only at
        // the depths some level holds.
        let caps: Vec<f64> = m
            .levels
            .iter()
            .map(|l| l.bytes as f64 / m.line_bytes as f64 / 2.0)
            .collect();
        let smallest = caps.iter().copied().fold(f64::INFINITY, f64::min);
        let mut kept: Vec<Option<USet<'_>>> = Vec::new();
        for d in 0..=n_dims {
            let (n, elems) = touched(&time[..d])?;
            let fp = match est.depths.last() {
                Some(prev) if prev.lines <= smallest => {
                    kept.push(None);
                    prev.lines
                }
                _ => {
                    let fp = all_lines(&elems)?;
                    kept.push(Some(elems));
                    fp
                }
            };
            est.depths.push(Depth {
                instances: n.max(1.0),
                lines: fp,
                new_lines: fp,
            });
        }
        let stars: Vec<usize> = caps
            .iter()
            .map(|&cap| {
                est.depths
                    .iter()
                    .position(|x| x.lines <= cap)
                    .unwrap_or(est.depths.len() - 1)
            })
            .collect();
        for &d in &stars {
            let (Some(Some(elems)), true) = (kept.get(d), d > 0) else {
                continue;
            };
            if est.depths[d].new_lines < est.depths[d].lines {
                continue; // done for another level
            }
            let p = &time[..d];
            // The previous prefix in the same iteration of the loop outside.
            let mut eqs: Vec<String> = p[..d - 1]
                .iter()
                .enumerate()
                .map(|(k, v)| format!("t{k} = {v}"))
                .collect();
            eqs.push(format!("t{} < {}", d - 1, p[d - 1]));
            let before = range.clone().intersect(ctx.set(&format!(
                "{params} -> {{ {tuple} : {} }}",
                eqs.join(" and ")
            ))?)?;
            if before.is_empty()? {
                continue;
            }
            if let Some((_, q)) = before.project_out_params()?.dim_range(d - 1)? {
                let mut prev = p.to_vec();
                prev[d - 1] = q;
                let (_, prev_elems) = touched(&prev)?;
                // At line granularity: the lines of both prefixes' elements less those of
                // the previous one's (the next element of a row is usually on a line
                // already there).
                let both = all_lines(&elems.clone().union(prev_elems.clone())?)?;
                let fp = est.depths[d].lines;
                est.depths[d].new_lines = (both - all_lines(&prev_elems)?).clamp(0.0, fp);
            }
        }
        // The innermost loop: the generated code has `L` loops around the largest
        // statement: the most loops around any of its occurrences (the partial tiles, where
        // every loop is kept; isl's peeled iterations have fewer) less the register-tile
        // strips unrolled in the full tiles (`Analysis::marked_loops`). They are the
        // outermost `L` schedule dimensions that take two or more values under the
        // representative prefix (the unrolled ones are innermost). It starts once per
        // prefix of the dimensions outside it.
        let loops = match which {
            Which::Final => {
                let mut l = None;
                loop_depth(&a.ast, &st.name, 0, &mut l);
                let marked = a.marked_loops.get(&st.name).copied().unwrap_or(0);
                l.map_or(st.loops.len(), |l| l.saturating_sub(marked).max(1))
            }
            Which::Original => st.loops.len(),
        };
        let ds = &est.depths;
        let varying: Vec<usize> = (0..ds.len().saturating_sub(1))
            .filter(|&d| ds[d].instances >= 2.0 * ds[d + 1].instances)
            .collect();
        if let Some(&d) = varying.get(loops.saturating_sub(1)).or(varying.last()) {
            est.loop_starts = total / ds[d].instances;
        }
        for (li, &star) in stars.iter().enumerate() {
            let ds = &est.depths;
            est.misses[li] = if star == 0 {
                ds[0].lines
            } else {
                let n_star = total / ds[star].instances;
                let n_out = total / ds[star - 1].instances;
                n_star * ds[star].new_lines + n_out * (ds[star].lines - ds[star].new_lines)
            };
        }
        Ok(est)
    };
    run().map_err(isl)
}

/// The model's prediction for one call of a function: the sum of its SCoPs' estimates.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Predicted nanoseconds of the modelled SCoPs.
    pub ns: f64,
    /// The summed terms ([`Estimate::features`]).
    pub features: Vec<f64>,
    /// SCoPs modelled, a SCoP of a called function once per distinct argument values.
    pub scops: usize,
    /// Why the others were not (one line each).
    pub unmodelled: Vec<String>,
}

/// The integer scalar arguments of a call of `f`, by parameter.
pub fn parameter_values(f: &Function, args: &[tessera_ir::ArgValue]) -> HashMap<VarId, i64> {
    use tessera_ir::{ArgValue, Scalar};
    f.params
        .iter()
        .zip(args)
        .filter_map(|(p, a)| match a {
            ArgValue::Scalar(Scalar::I32(v)) => Some((*p, *v as i64)),
            ArgValue::Scalar(Scalar::I64(v)) => Some((*p, *v)),
            ArgValue::Scalar(Scalar::I8(v)) => Some((*p, *v as i64)),
            ArgValue::Scalar(Scalar::Bool(v)) => Some((*p, *v as i64)),
            _ => None,
        })
        .collect()
}

/// The options of [`predict`].
#[derive(Clone, Debug)]
pub struct PredictOptions<'a> {
    /// The host.
    pub machine: &'a Machine,
    /// The weights of the terms.
    pub weights: &'a Weights,
    /// Threads of the pool that runs parallel loops.
    pub threads: usize,
    /// Whether floating-point reductions may vectorise.
    pub fast_math: bool,
    /// Estimate the code as written instead of the optimised schedules.
    pub as_written: bool,
}

/// Predicts one call of function `entry` of `prog` (the program `report` was made from) with
/// the integer parameters `values`: each of its SCoPs under the schedule the optimiser gave
/// it (its original schedule where it kept the code as written, or with
/// `opts.as_written`), and the SCoPs of the functions it calls ([`call_sites`]), each with
/// the integer arguments of its calls and weighed by how many times they run.
pub fn predict(
    prog: &tessera_ir::Program,
    report: &crate::Report,
    entry: &str,
    values: &HashMap<VarId, i64>,
    opts: &PredictOptions<'_>,
) -> Prediction {
    let mut out = Prediction {
        ns: 0.0,
        features: vec![0.0; 3 + opts.machine.levels.len()],
        scops: 0,
        unmodelled: Vec::new(),
    };
    let Some((entry_id, _)) = prog.function(entry) else {
        return out;
    };
    let (sites, notes) = call_sites(prog, entry_id, values);
    out.unmodelled.extend(notes);
    for (k, r) in report.scops.iter().enumerate() {
        let calls: Vec<&CallSite> = sites.iter().filter(|c| c.func == r.func).collect();
        if calls.is_empty() {
            out.unmodelled.push(format!(
                "SCoP {} is in `{}`, which the entry does not call where its arguments and the trips of the loops around the call are known",
                k + 1,
                r.func
            ));
            continue;
        }
        let Some(a) = &r.analysis else {
            out.unmodelled.push(format!(
                "SCoP {} at {}: no model ({})",
                k + 1,
                r.span.loc(),
                r.fallback.as_deref().unwrap_or("isl failed")
            ));
            continue;
        };
        let which = if opts.as_written || r.fallback.is_some() || a.stride_regression.is_some() {
            Which::Original
        } else {
            Which::Final
        };
        let Some((_, f)) = prog.function(&r.func) else {
            continue;
        };
        for c in calls {
            match estimate(
                f,
                &r.scop,
                a,
                &c.values,
                opts.machine,
                which,
                opts.fast_math,
            ) {
                Ok(e) => {
                    out.scops += 1;
                    for (s, x) in out
                        .features
                        .iter_mut()
                        .zip(e.features(opts.machine, opts.threads))
                    {
                        *s += c.times * x;
                    }
                    out.ns += c.times * e.predict_ns(opts.machine, opts.weights, opts.threads);
                }
                Err(e) => out
                    .unmodelled
                    .push(format!("SCoP {} at {}: {e}", k + 1, r.span.loc())),
            }
        }
    }
    out
}

/// A function that a call of the entry runs ([`call_sites`]): the entry itself, or a function
/// it calls, with the integer parameters known for those calls and how many times they run.
#[derive(Clone, Debug, PartialEq)]
pub struct CallSite {
    /// The function's name.
    pub func: String,
    /// Its integer parameters that the calls bind to known values.
    pub values: HashMap<VarId, i64>,
    /// How many times it runs per call of the entry.
    pub times: f64,
}

/// Deepest chain of calls followed by [`call_sites`].
const CALL_DEPTH: usize = 8;

/// The functions one call of `entry` runs: the entry once with `values`, and every function
/// it calls, directly or through others, with the values of its integer parameters where
/// the call's arguments are integer expressions of constants and the caller's known
/// parameters, and the number of times the call runs: the product of the trip counts of the
/// `for` loops around it (`for (v = a; v < b; v++)` with `a` and `b` known and `v` not written
/// in the body). Calls with the same function and values are merged (their times added).
/// A call under a condition, inside a loop whose trips are not known, or recursive is left
/// out, with a note.
pub fn call_sites(
    prog: &tessera_ir::Program,
    entry: tessera_ir::FuncId,
    values: &HashMap<VarId, i64>,
) -> (Vec<CallSite>, Vec<String>) {
    let mut out = vec![CallSite {
        func: prog.func(entry).name.clone(),
        values: values.clone(),
        times: 1.0,
    }];
    let mut notes = Vec::new();
    let mut stack = vec![entry];
    calls_in(
        prog,
        &prog.func(entry).body,
        values,
        1.0,
        &mut stack,
        &mut out,
        &mut notes,
    );
    (out, notes)
}

/// The calls of `body` (a function on `stack`'s top, with `env` its known integers) for
/// [`call_sites`], each run `times` times per call of the entry.
fn calls_in(
    prog: &tessera_ir::Program,
    body: &[tessera_ir::Stmt],
    env: &HashMap<VarId, i64>,
    times: f64,
    stack: &mut Vec<tessera_ir::FuncId>,
    out: &mut Vec<CallSite>,
    notes: &mut Vec<String>,
) {
    use tessera_ir::Stmt;
    let caller = prog.func(*stack.last().expect("the caller"));
    for (i, st) in body.iter().enumerate() {
        match st {
            Stmt::Block(b) => calls_in(prog, b, env, times, stack, out, notes),
            Stmt::While { body: inner, .. } => {
                if calls_of(inner).is_empty() {
                    continue;
                }
                match trip_count(&body[..i], st, env) {
                    Some(n) => calls_in(prog, inner, env, times * n as f64, stack, out, notes),
                    None => notes.push(format!(
                        "calls in a loop of `{}` whose trip count is not known: not modelled",
                        caller.name
                    )),
                }
            }
            Stmt::If { then, els, .. } => {
                if !calls_of(then).is_empty() || !calls_of(els).is_empty() {
                    notes.push(format!(
                        "calls under a condition in `{}`: not modelled",
                        caller.name
                    ));
                }
            }
            _ => {
                for (fid, args) in calls_of(std::slice::from_ref(st)) {
                    let callee = prog.func(fid);
                    if stack.contains(&fid) || stack.len() >= CALL_DEPTH {
                        notes.push(format!(
                            "a recursive or too deep call of `{}`: not modelled",
                            callee.name
                        ));
                        continue;
                    }
                    let values: HashMap<VarId, i64> = callee
                        .params
                        .iter()
                        .zip(&args)
                        .filter_map(|(p, a)| match a {
                            tessera_ir::Arg::Scalar(x) => Some((*p, int_value(x, env)?)),
                            _ => None,
                        })
                        .collect();
                    match out
                        .iter_mut()
                        .find(|c| c.func == callee.name && c.values == values)
                    {
                        Some(c) => c.times += times,
                        None => out.push(CallSite {
                            func: callee.name.clone(),
                            values: values.clone(),
                            times,
                        }),
                    }
                    stack.push(fid);
                    calls_in(prog, &callee.body, &values, times, stack, out, notes);
                    stack.pop();
                }
            }
        }
    }
}

/// The calls of program functions anywhere in `body`, in order.
fn calls_of(body: &[tessera_ir::Stmt]) -> Vec<(tessera_ir::FuncId, Vec<tessera_ir::Arg>)> {
    let mut calls = Vec::new();
    walk_stmts(body, &mut |_| {}, &mut |e| {
        if let ExprKind::Call(f, args) = &e.kind {
            calls.push((*f, args.clone()));
        }
    });
    calls
}

/// The value of an integer expression of constants and the variables of `env`, computed in
/// 64 bits (`None` on overflow, division by zero or anything else).
fn int_value(x: &tessera_ir::Expr, env: &HashMap<VarId, i64>) -> Option<i64> {
    use tessera_ir::{BinOp, UnOp};
    if !x.ty.is_some_and(|t| t.is_int()) {
        return None;
    }
    match &x.kind {
        ExprKind::Int(c) => Some(*c),
        ExprKind::Var(v) => env.get(v).copied(),
        ExprKind::Cast(y) => int_value(y, env),
        ExprKind::Unary(UnOp::Neg, y) => int_value(y, env)?.checked_neg(),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (int_value(a, env)?, int_value(b, env)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div => a.checked_div(b),
                BinOp::Rem => a.checked_rem(b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The trip count of the `for` loop `l` (`for (v = a; v < b or v <= b; v++)`, its
/// initialisation the last statement of `before`), where `a` and `b` are known in `env` and
/// the body does not write `v`.
fn trip_count(
    before: &[tessera_ir::Stmt],
    l: &tessera_ir::Stmt,
    env: &HashMap<VarId, i64>,
) -> Option<i64> {
    use tessera_ir::{BinOp, CmpOp, Stmt};
    let Stmt::While {
        cond,
        body,
        step: Some(step),
        ..
    } = l
    else {
        return None;
    };
    let var_of = |e: &tessera_ir::Expr| match &e.kind {
        ExprKind::Var(v) => Some(*v),
        ExprKind::Cast(y) => match &y.kind {
            ExprKind::Var(v) => Some(*v),
            _ => None,
        },
        _ => None,
    };
    // The condition as the front end gives it: the comparison converted to bool.
    let cond = match &cond.kind {
        ExprKind::Cast(c) => c,
        _ => cond,
    };
    let ExprKind::Cmp(op @ (CmpOp::Lt | CmpOp::Le), a, b) = &cond.kind else {
        return None;
    };
    let v = var_of(a)?;
    let hi = int_value(b, env)?;
    let steps_by_one = match &step.kind {
        ExprKind::IncDec {
            place: Place::Var(p),
            inc: true,
            ..
        } => *p == v,
        ExprKind::Assign {
            place: Place::Var(p),
            op: Some((BinOp::Add, _)),
            value,
        } => *p == v && matches!(value.kind, ExprKind::Int(1)),
        ExprKind::Assign {
            place: Place::Var(p),
            op: None,
            value,
        } => {
            *p == v
                && matches!(&value.kind, ExprKind::Binary(BinOp::Add, x, y)
                    if var_of(x) == Some(v) && matches!(y.kind, ExprKind::Int(1)))
        }
        _ => false,
    };
    if !steps_by_one {
        return None;
    }
    let lo = match before.last()? {
        Stmt::Decl { var, init: Some(x) } if *var == v => int_value(x, env)?,
        Stmt::Expr(tessera_ir::Expr {
            kind:
                ExprKind::Assign {
                    place: Place::Var(p),
                    op: None,
                    value,
                },
            ..
        }) if *p == v => int_value(value, env)?,
        _ => return None,
    };
    let mut written = false;
    walk_stmts(body, &mut |_| {}, &mut |e| match &e.kind {
        ExprKind::Assign {
            place: Place::Var(p),
            ..
        }
        | ExprKind::IncDec {
            place: Place::Var(p),
            ..
        } if *p == v => written = true,
        _ => {}
    });
    if written {
        return None;
    }
    let n = if *op == CmpOp::Le {
        hi.checked_sub(lo)?.checked_add(1)?
    } else {
        hi.checked_sub(lo)?
    };
    Some(n.max(0))
}
