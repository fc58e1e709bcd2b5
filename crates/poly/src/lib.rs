//! Tessera's polyhedral stage (BACKGROUND §2–3): SCoP detection on the typed IR, the isl
//! model (domains, original schedule, accesses, context), exact dependences, Pluto-style
//! scheduling through isl with tiling, wavefronts and parallel marks, bounds proofs, and code
//! generation from isl's AST back to the loop IR.
//!
//! The pipeline, per function ([`optimize`]):
//! 1. [`scop::find_in_list`] finds maximal SCoPs in every statement list (recursing into the
//!    statements that are not SCoPs) and records why rejected loop nests are not SCoPs;
//! 2. [`model::analyse`] builds the isl model, computes flow/anti/output dependences,
//!    schedules, tiles, skews and marks, proves accesses in bounds, and builds the AST — every
//!    isl computation bounded by `isl_ctx_set_max_operations`; a failure or overrun leaves
//!    the region as it was, with a note;
//! 3. [`gen::generate`] turns the AST into IR statements that replace the region, and
//!    [`promote::promote`] keeps the elements its innermost loops update in locals.
//!
//! [`Report::explain`] prints every stage's result as text (`tessera explain`).

#![warn(missing_docs)]

pub use tessera_ir::alias;
pub mod count;
pub mod gen;
pub mod isl;
pub mod memory;
pub mod model;
pub mod nowrap;
pub mod private;
pub mod promote;
pub mod scop;
pub mod subst;
pub mod unroll;
pub mod unswitch;

use std::fmt::Write;

use std::collections::HashSet;

use tessera_ir::{Function, Program, Span, Stmt, VarId};

pub use gen::GenOptions;
pub use model::{Analysis, CacheModel, Fusion, PolyOptions};
pub use scop::{NotScop, Scop};

/// What happened to one SCoP.
#[derive(Debug, Clone)]
pub struct ScopReport {
    /// Function name.
    pub func: String,
    /// Source span of the region.
    pub span: Span,
    /// The model.
    pub scop: Scop,
    /// The analysis, when isl succeeded.
    pub analysis: Option<Analysis>,
    /// Why the region kept its original code, when it did.
    pub fallback: Option<String>,
    /// The no-wrap assumption and its run-time test, when computed.
    pub no_wrap: Option<nowrap::NoWrap>,
    /// Milliseconds spent in isl and code generation.
    pub ms: f64,
    /// The number of the [`Stmt::Versioned`] region that holds the optimised code and the
    /// code as written, when the SCoP was optimised with [`GenOptions::versions`].
    pub site: Option<u32>,
    /// Register promotion in the generated nest ([`promote`]): one line per innermost loop.
    pub promoted: Vec<String>,
}

/// The polyhedral stage's report for a program.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// One entry per SCoP found.
    pub scops: Vec<ScopReport>,
    /// Loop nests that are not SCoPs, with the function name.
    pub rejected: Vec<(String, NotScop)>,
    /// Scalar temporaries forward-substituted before SCoP detection: function, variable,
    /// span of the initialiser (see [`subst`]).
    pub substituted: Vec<(String, String, Span)>,
    /// Scalars declared outside the loops that use them, given a variable per range of
    /// uses (see [`private`]): function, variable, span of its declaration, variables.
    pub privatized: Vec<(String, String, Span, usize)>,
}

/// Optimises every SCoP of `prog`; returns the transformed program and the report.
pub fn optimize(prog: &Program, opts: &PolyOptions, gen: GenOptions) -> (Program, Report) {
    let mut out = prog.clone();
    let mut report = Report::default();
    let alias = alias::may_alias(prog);
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(opts.max_total_ms);
    for (f, alias) in out.functions.iter_mut().zip(&alias) {
        for (v, sp, n) in private::privatize(f) {
            report.privatized.push((f.name.clone(), v, sp, n));
        }
        for (v, sp) in subst::forward_substitute(f) {
            report.substituted.push((f.name.clone(), v, sp));
        }
        // A copy: SCoP detection reads the whole original body (which scalars the
        // function writes anywhere) while the copy's regions are replaced.
        let mut body = f.body.clone();
        let counters = scop::loop_only_counters(f);
        let cx = Cx {
            opts,
            gen,
            alias,
            counters: &counters,
            deadline,
        };
        process_list(f, &mut body, &cx, &mut report);
        f.body = body;
    }
    (out, report)
}

/// What [`process_list`] needs besides the function and the list.
struct Cx<'a> {
    opts: &'a PolyOptions,
    gen: GenOptions,
    alias: &'a HashSet<(VarId, VarId)>,
    /// The function's counters declared outside their loops ([`scop::loop_only_counters`]).
    counters: &'a HashSet<VarId>,
    deadline: std::time::Instant,
}

fn process_list(f: &mut Function, list: &mut Vec<Stmt>, cx: &Cx<'_>, report: &mut Report) {
    let Cx {
        opts,
        gen,
        alias,
        deadline,
        ..
    } = *cx;
    let mut rejected = Vec::new();
    let found = scop::find_in_list(f, list, cx.counters, &mut rejected);
    report
        .rejected
        .extend(rejected.into_iter().map(|r| (f.name.clone(), r)));
    let mut covered = vec![false; list.len()];
    // Replace from the back so earlier indices stay valid.
    let mut replaced: Vec<(usize, usize, Vec<Stmt>)> = Vec::new();
    for fd in found {
        for c in &mut covered[fd.start..fd.end] {
            *c = true;
        }
        let t0 = std::time::Instant::now();
        let over_budget = (t0 >= deadline).then(|| {
            format!(
                "the optimiser's time budget for the program ({} ms) is spent",
                opts.max_total_ms
            )
        });
        if let Some(why) = over_budget.or_else(|| shared_storage(f, &fd.scop, alias)) {
            report.scops.push(ScopReport {
                func: f.name.clone(),
                span: fd.scop.span,
                scop: fd.scop,
                analysis: None,
                fallback: Some(why),
                no_wrap: None,
                ms: t0.elapsed().as_secs_f64() * 1e3,
                site: None,
                promoted: Vec::new(),
            });
            continue;
        }
        let no_wrap = match nowrap::compute_bounded(&fd.scop, opts.max_operations) {
            Ok(nw) => nw,
            Err(why) => {
                report.scops.push(ScopReport {
                    func: f.name.clone(),
                    span: fd.scop.span,
                    scop: fd.scop,
                    analysis: None,
                    fallback: Some(format!("{why}; the original code runs")),
                    no_wrap: None,
                    ms: t0.elapsed().as_secs_f64() * 1e3,
                    site: None,
                    promoted: Vec::new(),
                });
                continue;
            }
        };
        let mut promoted = Vec::new();
        let (analysis, fallback, code) = match model::analyse(&fd.scop, opts) {
            Ok(a) if a.stride_regression.is_some() => {
                let why = a.stride_regression.clone().unwrap_or_default();
                // The schedule as written, but its accesses unguarded under the entry test.
                match gen::unguarded_original(f, &fd.scop, &list[fd.start..fd.end], &no_wrap) {
                    Ok(code) => (
                        Some(a),
                        Some(format!(
                            "{why}; the code as written runs, its accesses unguarded under the entry test"
                        )),
                        Some(code),
                    ),
                    Err(_) => (Some(a), Some(why), None),
                }
            }
            Ok(a) => match gen::generate(
                f,
                &fd.scop,
                &a,
                gen,
                opts,
                &list[fd.start..fd.end],
                &no_wrap,
            ) {
                Ok((code, p)) => {
                    promoted = p;
                    (Some(a), None, Some(code))
                }
                Err(e) => (
                    Some(a),
                    Some(format!("{e}; falling back to the plain JIT")),
                    None,
                ),
            },
            Err(e) => (None, Some(model::fallback_note(&e)), None),
        };
        let mut site = None;
        if let Some(code) = code {
            // A SCoP that keeps its schedule needs no second version (the same code).
            let code = if gen.keeps_versions() && fallback.is_none() {
                let n = report.scops.iter().filter(|r| r.site.is_some()).count() as u32;
                site = Some(n);
                vec![Stmt::Versioned {
                    site: n,
                    span: fd.scop.span,
                    fast: code,
                    original: list[fd.start..fd.end].to_vec(),
                }]
            } else {
                code
            };
            replaced.push((fd.start, fd.end, code));
        }
        report.scops.push(ScopReport {
            func: f.name.clone(),
            span: fd.scop.span,
            scop: fd.scop,
            analysis,
            fallback,
            no_wrap: Some(no_wrap),
            ms: t0.elapsed().as_secs_f64() * 1e3,
            site,
            promoted,
        });
    }
    // Recurse into what is not a SCoP.
    for (i, s) in list.iter_mut().enumerate() {
        if covered[i] {
            continue;
        }
        match s {
            Stmt::If { then, els, .. } => {
                process_list(f, then, cx, report);
                process_list(f, els, cx, report);
            }
            Stmt::While { body, .. } | Stmt::DoWhile { body, .. } => {
                process_list(f, body, cx, report)
            }
            Stmt::Block(b) => {
                // A lowered `for` that is not a SCoP: look inside its body only (its
                // header was reported already).
                if let [Stmt::Decl { .. } | Stmt::Expr(_), Stmt::While {
                    body, is_for: true, ..
                }] = b.as_mut_slice()
                {
                    process_list(f, body, cx, report);
                } else {
                    process_list(f, b, cx, report);
                }
            }
            _ => {}
        }
    }
    for (start, end, code) in replaced.into_iter().rev() {
        list.splice(start..end, [Stmt::Block(code)]);
    }
}

/// Why the SCoP must keep its code: two of its arrays, one written, may share storage.
fn shared_storage(f: &Function, s: &Scop, alias: &HashSet<(VarId, VarId)>) -> Option<String> {
    let written = s.written_vars();
    alias
        .iter()
        .find(|(a, b)| {
            let used = |v: &VarId| s.arrays.iter().any(|x| x.var == *v);
            used(a) && used(b) && (written.contains(a) || written.contains(b))
        })
        .map(|(a, b)| {
            format!(
                "arrays `{}` and `{}` may share storage (a call passes the same array for both), and the model assumes distinct arrays",
                f.var(*a).name,
                f.var(*b).name
            )
        })
}

fn indent(s: &str, by: &str) -> String {
    s.lines().map(|l| format!("{by}{l}\n")).collect()
}

impl Report {
    /// isl's phases (`scheduling`, `bounds proofs`, ...) with their milliseconds summed over
    /// the SCoPs analysed, in order of first appearance (the rest of the time is detection
    /// and code generation).
    pub fn phase_ms(&self) -> Vec<(&'static str, f64)> {
        let mut phases: Vec<(&'static str, f64)> = Vec::new();
        for (k, ms) in self
            .scops
            .iter()
            .filter_map(|s| s.analysis.as_ref())
            .flat_map(|a| &a.phase_ms)
        {
            match phases.iter_mut().find(|(n, _)| n == k) {
                Some(p) => p.1 += ms,
                None => phases.push((k, *ms)),
            }
        }
        phases
    }

    /// One line: how many SCoPs were optimised and how many loop nests are not SCoPs
    /// (`poly: 1 of 2 SCoPs optimised, 0 loop nests not SCoPs`), as `tessera run --mode opt`
    /// prints it.
    pub fn summary(&self) -> String {
        let done = self.scops.iter().filter(|s| s.fallback.is_none()).count();
        format!(
            "poly: {done} of {} SCoP{} optimised, {} loop nest{} not SCoPs",
            self.scops.len(),
            if self.scops.len() == 1 { "" } else { "s" },
            self.rejected.len(),
            if self.rejected.len() == 1 { "" } else { "s" }
        )
    }

    /// The report as text, for the functions named in `only` (all when empty). `prog` is the
    /// program [`optimize`] returned with the report (its statements name the variables the
    /// optimiser added, such as privatised scalars).
    pub fn explain(&self, prog: &Program, only: &[&str]) -> String {
        let mut s = String::new();
        let want = |f: &str| only.is_empty() || only.contains(&f);
        let mut any = false;
        for (func, v, sp, n) in &self.privatized {
            if want(func) {
                let _ = writeln!(
                    s,
                    "privatised the scalar `{v}` of `{func}` (declared at {}): {n} variable{} declared where a loop body assigns it before every use",
                    sp.loc(),
                    if *n == 1 { "" } else { "s" }
                );
            }
        }
        for (func, v, sp) in &self.substituted {
            if want(func) {
                let _ = writeln!(
                    s,
                    "forward-substituted the temporary `{v}` of `{func}` (initialiser at {}) into its uses",
                    sp.loc()
                );
            }
        }
        for (k, r) in self.scops.iter().enumerate() {
            if !want(&r.func) {
                continue;
            }
            any = true;
            let f = prog.function(&r.func).map(|x| x.1);
            let _ = writeln!(
                s,
                "SCoP {} in `{}` at {} ({} statement{}, parameters [{}]; isl + codegen {:.1} ms)",
                k + 1,
                r.func,
                r.span.loc(),
                r.scop.stmts.len(),
                if r.scop.stmts.len() == 1 { "" } else { "s" },
                r.scop
                    .params
                    .iter()
                    .map(|p| r.scop.names[p].clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                r.ms
            );
            s.push_str("  statements:\n");
            for st in &r.scop.stmts {
                let text = match (&st.body, f) {
                    (Stmt::Expr(e), Some(f)) => tessera_ir::print::expr(prog, f, e),
                    (Stmt::Decl { var, init: Some(e) }, Some(f)) => format!(
                        "{} = {}",
                        f.var(*var).name,
                        tessera_ir::print::expr(prog, f, e)
                    ),
                    _ => String::new(),
                };
                let _ = writeln!(s, "    {} at {}: {}", st.name, st.span.loc(), text);
            }
            if !r.scop.checks.is_empty() {
                s.push_str(
                    "  reads kept for their bounds checks (covered by the entry test, omitted by the transformed code):\n",
                );
                for st in &r.scop.checks {
                    let text = match (&st.body, f) {
                        (Stmt::Expr(e), Some(f)) => tessera_ir::print::expr(prog, f, e),
                        _ => String::new(),
                    };
                    let _ = writeln!(s, "    {} at {}: {}", st.name, st.span.loc(), text);
                }
            }
            if let Some(fb) = &r.fallback {
                let _ = writeln!(s, "  kept the original code: {fb}");
            }
            let Some(a) = &r.analysis else {
                s.push('\n');
                continue;
            };
            let _ = writeln!(
                s,
                "  time: {}",
                a.phase_ms
                    .iter()
                    .map(|(n, ms)| format!("{n} {ms:.1} ms"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if let Some(nw) = &r.no_wrap {
                let _ = writeln!(
                    s,
                    "  assumptions: {} integer value{} kept within {} type{} (no wrap-around), {} subscript{} within {} extent{}; parameters where one fails: {}",
                    nw.obligations,
                    if nw.obligations == 1 { "" } else { "s" },
                    if nw.obligations == 1 { "its" } else { "their" },
                    if nw.obligations == 1 { "" } else { "s" },
                    nw.subscripts,
                    if nw.subscripts == 1 { "" } else { "s" },
                    if nw.subscripts == 1 { "its" } else { "their" },
                    if nw.subscripts == 1 { "" } else { "s" },
                    nw.text
                );
                let _ = writeln!(
                    s,
                    "  run-time check at entry (else the original code runs): {}",
                    nw.describe(&r.scop.names)
                );
            }
            if let Some(k) = r.site {
                let _ = writeln!(
                    s,
                    "  versions: region {k}, the optimised code and the code as written; the JIT times both on the first executions and keeps the faster"
                );
            }
            let _ = writeln!(s, "  context:  {}", a.context);
            let _ = writeln!(s, "  domain:   {}", a.domain);
            let _ = writeln!(s, "  original schedule: {}", a.original_schedule);
            let _ = writeln!(s, "  reads:    {}", a.reads);
            let _ = writeln!(s, "  writes:   {}", a.writes);
            s.push_str("  dependences:\n");
            let _ = writeln!(s, "    flow:   {}", a.flow);
            let _ = writeln!(s, "    anti:   {}", a.anti);
            let _ = writeln!(s, "    output: {}", a.output);
            if let Some(e) = &a.expansion {
                let _ = writeln!(s, "  scalars: {e}");
            }
            if let Some(n) = &a.register_tile_note {
                let _ = writeln!(s, "  {n}");
            }
            for sc in &a.scratch {
                let dims: Vec<String> = sc
                    .bounds
                    .iter()
                    .map(|(lo, hi)| format!("[{lo} .. {hi}]"))
                    .collect();
                let _ = writeln!(
                    s,
                    "  scratch array: `{}_x`{} (the counters' bounding box, from isl)",
                    r.scop.names[&sc.var],
                    dims.join("")
                );
            }
            let _ = writeln!(s, "  schedule computed by isl: {}", a.computed_schedule);
            s.push_str("  bands:\n");
            for b in &a.bands {
                let _ = writeln!(
                    s,
                    "    depth {}: {} member{}, {}, parallel members [{}], {}",
                    b.depth,
                    b.members,
                    if b.members == 1 { "" } else { "s" },
                    if b.permutable {
                        "permutable"
                    } else {
                        "not permutable"
                    },
                    b.coincident
                        .iter()
                        .map(|&c| if c { "yes" } else { "no" })
                        .collect::<Vec<_>>()
                        .join(", "),
                    b.note
                );
            }
            let _ = writeln!(s, "  final schedule: {}", a.final_schedule);
            let _ = writeln!(s, "  parallel loops marked: {}", a.parallel_loops);
            let (p, k): (Vec<_>, Vec<_>) = a.bounds.iter().partition(|b| b.proven);
            let _ = writeln!(
                s,
                "  bounds: {} access{} proven in bounds, {} kept guarded",
                p.len(),
                if p.len() == 1 { "" } else { "es" },
                k.len()
            );
            for b in &a.bounds {
                let _ = writeln!(
                    s,
                    "    {} {} at {}: {}",
                    if b.proven { "proven" } else { "guarded" },
                    b.access,
                    b.loc,
                    if b.proven {
                        "within the declared extents"
                    } else {
                        &b.why
                    }
                );
            }
            let wide: usize = a.wide_subscripts.values().map(Vec::len).sum();
            if wide > 0 {
                let mut w: Vec<String> = Vec::new();
                for st in &r.scop.stmts {
                    for x in a.wide_subscripts.get(&st.name).into_iter().flatten() {
                        w.push(format!("{}: {}", st.name, x.to_isl(&r.scop.names)));
                    }
                }
                let _ = writeln!(
                    s,
                    "  subscripts proven within int, computed in 64 bits: {}",
                    w.join(", ")
                );
            }
            if a.unswitched > 0 {
                let _ = writeln!(
                    s,
                    "  unswitched: {} test{} hoisted out of loops they are invariant in (the nest below is isl's, before that)",
                    a.unswitched,
                    if a.unswitched == 1 { "" } else { "s" }
                );
            }
            if !r.promoted.is_empty() {
                let _ = writeln!(
                    s,
                    "  register promotion (after code generation): array elements kept in locals across innermost loops:"
                );
                for p in &r.promoted {
                    let _ = writeln!(s, "    {p}");
                }
            }
            s.push_str("  generated loop nest:\n");
            s.push_str(&indent(&a.c_code, "    "));
            s.push('\n');
        }
        for (func, r) in &self.rejected {
            if !want(func) {
                continue;
            }
            any = true;
            let _ = writeln!(
                s,
                "not a SCoP in `{func}` at {}: {}",
                r.span.loc(),
                r.reason
            );
        }
        if !any {
            s.push_str("no loop nests\n");
        }
        s
    }
}
