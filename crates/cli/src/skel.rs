//! `tessera skel`: run a kernel function over an index range with a parallel skeleton
//! (parMapChunk, parMapStride, parDivconqThresh) on the work-stealing runtime, with a fixed
//! tuning parameter τ or the adaptive granularity controller.
//!
//! Scalar parameters of the entry given with `-D` are fixed; the remaining integer parameter
//! is the element index (chunk, stride; divconq-thresh with `--divide fib`, where it is the
//! problem size), or the remaining two are a range `[lo, hi)` (divconq-thresh with `--divide
//! halves`). The entry returns a number per element or sub-problem; results are summed.
//!
//! Array parameters are read-only inputs, allocated once from their declared extents and
//! filled per `--init`. Tasks run on per-worker copies (one slot per worker, filled before
//! the run is timed: a task takes its worker's copy, calls the entry, returns it), so no two
//! tasks share mutable memory; after the run every copy is compared with the original, and an
//! entry that wrote to an array parameter is an error (its results could depend on the
//! schedule).

use std::time::Instant;
use tessera_ir::{ArgValue, FuncId, Program, RuntimeError, Scalar, ScalarTy};
use tessera_runtime::{
    AdaptiveRun, Controller, ControllerConfig, CostDerivative, Runtime, SkelError, TaskRecord, PHI,
};

/// Which skeleton.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Skeleton {
    /// parMapChunk: tasks of τ consecutive elements.
    Chunk,
    /// parMapStride: τ interleaved tasks per batch (every τ-th element).
    Stride,
    /// parDivconqThresh: divide until the problem size is ≤ τ, then solve with the entry.
    DivconqThresh,
    /// For comparison: rayon's own adaptive splitting (`par_iter().map()` over the
    /// elements, on the same pool); τ is not used.
    Rayon,
}

/// How divconq-thresh divides a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Divide {
    /// n → n-1, n-2 (Fibonacci-like; size n; cost derivative φ^τ); results are summed.
    Fib,
    /// [lo, hi) → halves (size hi-lo; linear cost derivative); results are summed.
    Halves,
}

/// The cost model `--cost` gives the controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CostArg {
    /// CM0 on TIR fragments: γ = 1 per fragment executed.
    Cm0,
    /// CMC on TIR fragments: instructions executed.
    Cmc,
    /// CMW on TIR fragments: calibrated weights per instruction class.
    Cmw,
    /// CMC on the optimised LLVM IR's basic blocks (calibrated k).
    CmcM,
    /// CMW on the optimised LLVM IR's basic blocks (calibrated weights).
    CmwM,
}

enum CountBuild {
    Fragments(tessera_cost::jit::CountingBuild),
    Blocks(tessera_cost::jit::BlockBuild),
}

/// A counting build of the program and the γ of each of its counters: runs an element and
/// returns its result and its cost Γ (ns when calibrated).
pub struct Counter {
    build: CountBuild,
    /// γ per fragment (TIR models).
    gammas: Vec<f64>,
    /// Γ of the block models, per memory level of the call's data.
    plans: Vec<tessera_cost::jit::GammaPlan>,
    /// ns per unit of Γ when a profile calibrated the model (1 for CMW, CMW-M).
    pub k_ns: Option<f64>,
    /// The model's name as printed.
    pub name: String,
}

impl Counter {
    /// Compiles the counting build for `model`, loading the machine profile if the model
    /// needs it (or if one is there, to predict the first τ).
    pub fn new(
        prog: &Program,
        model: CostArg,
        profile: Option<&std::path::Path>,
    ) -> Result<Counter, String> {
        use tessera_cost::calibrate::{default_profile_path, Family, MachineProfile};
        use tessera_cost::CostModel;
        let path = profile
            .map(|p| p.to_path_buf())
            .or_else(default_profile_path);
        let needs = matches!(model, CostArg::Cmw | CostArg::CmcM | CostArg::CmwM);
        let prof = match &path {
            Some(p) if profile.is_some() || needs || p.exists() => match MachineProfile::load(p) {
                Ok(x) => Some(x),
                Err(e) if needs || profile.is_some() => {
                    return Err(format!("{e} (make one with `tessera calibrate`)"))
                }
                Err(_) => None,
            },
            _ if needs => return Err(
                "--cost needs a machine profile: run `tessera calibrate` or give --profile FILE"
                    .into(),
            ),
            _ => None,
        };
        let opts = tessera_jit::Options::default();
        let fam = match model {
            CostArg::Cm0 => Family::Cm0,
            CostArg::Cmc => Family::Cmc,
            CostArg::Cmw => Family::Cmw,
            CostArg::CmcM => Family::Mcc,
            CostArg::CmwM => Family::Mcw,
        };
        let name = fam.name().to_string();
        match model {
            CostArg::Cm0 | CostArg::Cmc | CostArg::Cmw => {
                let b = tessera_cost::jit::CountingBuild::compile(prog, &opts)
                    .map_err(|e| e.to_string())?;
                let (m, k) = match (model, prof.as_ref().and_then(|p| p.model(fam))) {
                    (_, Some((m, k))) => (m, Some(k)),
                    (CostArg::Cm0, None) => (CostModel::Cm0, None),
                    (_, None) => (CostModel::Cmc, None),
                };
                let gammas = tessera_cost::jit::node_gammas(b.map(), &m);
                Ok(Counter {
                    build: CountBuild::Fragments(b),
                    gammas,
                    plans: Vec::new(),
                    k_ns: k,
                    name,
                })
            }
            CostArg::CmcM | CostArg::CmwM => {
                let b = tessera_cost::jit::BlockBuild::compile(prog, &opts)
                    .map_err(|e| e.to_string())?;
                let w = prof
                    .as_ref()
                    .and_then(|p| p.block_weights(fam))
                    .ok_or("the profile has no machine-level fit")?;
                let plans = (0..3).map(|level| b.gamma_plan(&w, level)).collect();
                Ok(Counter {
                    build: CountBuild::Blocks(b),
                    gammas: Vec::new(),
                    plans,
                    k_ns: Some(1.0),
                    name,
                })
            }
        }
    }

    fn slots(&self) -> usize {
        match &self.build {
            CountBuild::Fragments(b) => b.map().nodes.len(),
            CountBuild::Blocks(b) => b.blocks().len(),
        }
    }

    /// Calls `fid`, adding its counts to `counts` (made `slots()` long if it is not).
    /// Counts accumulate over calls: a task's Γ is taken once, from the sum of its
    /// elements' counts ([`Counter::take_gamma`]), so that an element costs its counted call
    /// and nothing more.
    fn call(
        &self,
        fid: FuncId,
        args: &mut Vec<ArgValue>,
        counts: &mut Vec<i64>,
    ) -> Result<Option<Scalar>, RuntimeError> {
        if counts.len() != self.slots() {
            counts.clear();
            counts.resize(self.slots(), 0);
        }
        match &self.build {
            CountBuild::Fragments(b) => {
                let mut c = tessera_ir::ArrayData {
                    shape: vec![counts.len()],
                    elems: tessera_ir::ArrayElems::I64(std::mem::take(counts)),
                };
                let r = b.call_with(fid, args, &mut c);
                if let tessera_ir::ArrayElems::I64(v) = c.elems {
                    *counts = v;
                }
                r
            }
            CountBuild::Blocks(b) => b.call_counted(fid, args, counts),
        }
    }

    /// Γ of the counts accumulated since the last take, for calls whose arrays total
    /// `footprint` bytes; zeroes the counts.
    fn take_gamma(&self, counts: &mut [i64], footprint: u64) -> f64 {
        let g = match &self.build {
            CountBuild::Fragments(_) => tessera_cost::jit::gamma_of(counts, &self.gammas),
            CountBuild::Blocks(_) => {
                self.plans[tessera_cost::jit::memory_level(footprint)].gamma(counts)
            }
        };
        counts.iter_mut().for_each(|x| *x = 0);
        g
    }
}

/// A way to call a function of the program (interpreter or JIT).
pub type Caller<'a> =
    dyn Fn(FuncId, &mut [ArgValue]) -> Result<Option<Scalar>, RuntimeError> + Sync + 'a;

/// What the user asked for.
pub struct Plan {
    /// The skeleton.
    pub skeleton: Skeleton,
    /// Index range (elements, or the divconq root problem `lo..hi`).
    pub lo: i64,
    /// End of the range (exclusive).
    pub hi: i64,
    /// Fixed τ, if not adaptive.
    pub tau: Option<usize>,
    /// Adaptive target window (ms).
    pub window: Option<(f64, f64)>,
    /// Division rule for divconq.
    pub divide: Divide,
    /// Print every decision / batch.
    pub verbose: bool,
    /// Threads.
    pub threads: Option<usize>,
}

/// The outcome, printed by the CLI.
pub struct Outcome {
    /// Lines to print before the result.
    pub log: String,
    /// Sum of all results.
    pub sum: f64,
    /// Integer sum, if the entry returns integers.
    pub int_sum: Option<i64>,
    /// FNV-1a over the per-element results in input order (chunk/stride).
    pub checksum: Option<u64>,
    /// Wall time of the skeleton run (ms).
    pub ms: f64,
}

fn num(s: Scalar) -> f64 {
    match s.convert(ScalarTy::F64) {
        Scalar::F64(x) => x,
        _ => unreachable!(),
    }
}

fn task_summary(label: &str, tasks: &[TaskRecord], window: Option<(f64, f64)>) -> String {
    if tasks.is_empty() {
        return format!("{label}: no tasks\n");
    }
    let mut ms: Vec<f64> = tasks.iter().map(|t| t.elapsed_ms()).collect();
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    let mut s = format!(
        "{label}: {} tasks, task time mean {:.3} ms, median {:.3} ms, min {:.3} ms, max {:.3} ms",
        ms.len(),
        mean,
        ms[ms.len() / 2],
        ms[0],
        ms[ms.len() - 1]
    );
    if let Some((lo, hi)) = window {
        let inw = ms.iter().filter(|&&t| t >= lo && t <= hi).count();
        s.push_str(&format!(
            ", {:.1}% in {lo}..{hi} ms",
            100.0 * inw as f64 / ms.len() as f64
        ));
    }
    s.push('\n');
    s
}

/// k = t/Γ over the tasks (ms per unit of Γ): of the totals, and the median per task.
fn k_summary(model: &str, tasks: &[TaskRecord]) -> String {
    let with: Vec<(f64, f64)> = tasks
        .iter()
        .filter_map(|t| t.cost.filter(|g| *g > 0.0).map(|g| (t.elapsed_ms(), g)))
        .collect();
    if with.is_empty() {
        return format!("cost {model}: no task with a cost\n");
    }
    let (st, sg) = with.iter().fold((0.0, 0.0), |a, (t, g)| (a.0 + t, a.1 + g));
    let mut ks: Vec<f64> = with.iter().map(|(t, g)| t / g).collect();
    ks.sort_by(|a, b| a.total_cmp(b));
    format!(
        "cost {model}: Γ per task mean {:.4e}; k = t/Γ (ns per unit): total {:.4}, median per task {:.4}, range {:.4}..{:.4}\n",
        sg / with.len() as f64,
        1e6 * st / sg,
        1e6 * ks[ks.len() / 2],
        1e6 * ks[0],
        1e6 * ks[ks.len() - 1]
    )
}

/// Runs the plan. `index_params` are the positions (in the entry's parameters) of the
/// unbound scalars, `fixed` the arguments with those positions to be filled per task.
pub fn run(
    prog: &Program,
    fid: FuncId,
    call: &Caller<'_>,
    fixed: &[ArgValue],
    index_params: &[usize],
    plan: &Plan,
    counter: Option<&Counter>,
) -> Result<Outcome, Result<RuntimeError, String>> {
    let f = prog.func(fid);
    let ret = f.ret.ok_or_else(|| {
        Err(format!(
            "`{}` returns void: skel needs a numeric result per task",
            f.name
        ))
    })?;
    let rt = Runtime::new(plan.threads).map_err(|e| Err(e.to_string()))?;
    // Per-worker argument vectors (see the module docs): one slot per worker, so a task's
    // take and return lock a mutex no other thread uses (one shared pool, locked twice per
    // element, cost contended cache-line transfers at microsecond elements). Copied here,
    // before the clock starts: copying the arrays is set-up, not the skeleton's work, and
    // done inside the first task of each worker it made that task look far slower than the
    // rest (a 256 MB k-means input: ~170 ms for one element), which misled the first
    // decision. A worker without a copy (not expected: a kernel call runs no nested tasks)
    // makes one.
    let slots: Vec<std::sync::Mutex<Vec<Vec<ArgValue>>>> = (0..rt.threads().max(1))
        .map(|_| std::sync::Mutex::new(vec![fixed.to_vec()]))
        .collect();
    // With a cost model, each worker counts its elements into its own buffer; the
    // controller's cost callback, called on the same worker right after the task, takes the
    // task's Γ from the buffer and zeroes it. The arrays (and so the memory level of the
    // block models) are the same for every element.
    let nslots = rt.threads().max(1);
    let counts: Vec<std::sync::Mutex<Vec<i64>>> = (0..nslots)
        .map(|_| std::sync::Mutex::new(Vec::new()))
        .collect();
    let footprint = tessera_cost::jit::footprint(fixed);
    let me = || rayon::current_thread_index().unwrap_or(0) % nslots;
    let kernel = |vals: &[i64]| -> Result<Scalar, RuntimeError> {
        let w = me();
        let slot = &slots[w];
        let taken = slot.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut args = taken.unwrap_or_else(|| fixed.to_vec());
        for (&p, &v) in index_params.iter().zip(vals) {
            let t = f.var(f.params[p]).scalar_ty();
            args[p] = ArgValue::Scalar(Scalar::I64(v).convert(t));
        }
        let r = match counter {
            None => call(fid, &mut args),
            Some(c) => {
                let mut buf = counts[w].lock().unwrap_or_else(|e| e.into_inner());
                c.call(fid, &mut args, &mut buf)
            }
        };
        slot.lock().unwrap_or_else(|e| e.into_inner()).push(args);
        Ok(r?.expect("non-void entry returns a value"))
    };
    let take_cost = |_: &tessera_runtime::TaskShape| -> f64 {
        match counter {
            Some(c) => {
                let mut buf = counts[me()].lock().unwrap_or_else(|e| e.into_inner());
                c.take_gamma(&mut buf, footprint)
            }
            None => 0.0,
        }
    };
    let cost: Option<&tessera_runtime::CostFn<'_>> = counter.map(|_| &take_cost as _);
    let mut prelude = String::new();
    let cfg = {
        let mut c = match plan.window {
            Some((lo, hi)) => ControllerConfig::with_window(lo, hi),
            None => ControllerConfig::default(),
        };
        c.tau0 = plan.tau.unwrap_or(1);
        // With a calibrated model and no τ given, chunk's first τ comes from the predicted
        // time of the first element (counted, not timed): τ0 = target / predicted.
        if let (Some(cn), None, Some(k), Skeleton::Chunk, Some((lo, hi))) = (
            counter,
            plan.tau,
            counter.and_then(|c| c.k_ns),
            plan.skeleton,
            plan.window,
        ) {
            if index_params.len() == 1 && plan.lo < plan.hi {
                // Eight elements spread over the range (costs vary along it), counted.
                let n = plan.hi - plan.lo;
                let picks: Vec<i64> = (0..8i64.min(n))
                    .map(|i| plan.lo + (2 * i + 1) * n / (2 * 8i64.min(n)))
                    .collect();
                let p = index_params[0];
                let t = f.var(f.params[p]).scalar_ty();
                let mut buf = Vec::new();
                for &x in &picks {
                    let mut args = fixed.to_vec();
                    args[p] = ArgValue::Scalar(Scalar::I64(x).convert(t));
                    cn.call(fid, &mut args, &mut buf).map_err(Ok)?;
                }
                let g = cn.take_gamma(&mut buf, footprint);
                let pred_ms = (g / picks.len() as f64 * k / 1e6).max(1e-6);
                let target = (lo * hi).sqrt();
                c.tau0 = ((target / pred_ms).round() as usize).clamp(1, n as usize);
                prelude.push_str(&format!(
                    "{} predicts {pred_ms:.4} ms per element (mean of {} elements counted before the run): first tau {} (target {target:.1} ms)\n",
                    cn.name, picks.len(), c.tau0
                ));
            }
        }
        c.stride_tau0 = plan.tau;
        c.solve_below_threshold = true;
        c
    };
    let adaptive = plan.window.is_some();
    let mut log = prelude;
    let t0 = Instant::now();
    let fail = |e: SkelError<RuntimeError>| -> Result<RuntimeError, String> {
        match e {
            SkelError::Task(r) => Ok(r),
            other => Err(other.to_string()),
        }
    };
    let (results, tasks, decisions_log): (Vec<Scalar>, Vec<TaskRecord>, Option<String>) = match plan
        .skeleton
    {
        Skeleton::Chunk | Skeleton::Stride => {
            if index_params.len() != 1 {
                let names: Vec<String> = index_params
                    .iter()
                    .map(|&p| format!("`{}`", f.var(f.params[p]).name))
                    .collect();
                return Err(Err(format!(
                    "chunk/stride need exactly one unbound integer parameter (the element index); `{}` has {} unbound ({}): bind all but the index with -D NAME=VALUE",
                    f.name,
                    index_params.len(),
                    names.join(", ")
                )));
            }
            let xs: Vec<i64> = (plan.lo..plan.hi).collect();
            let g = |x: &i64| kernel(&[*x]);
            if adaptive {
                let c = Controller::new(&rt, cfg.clone());
                let r: AdaptiveRun<Vec<Scalar>> = if plan.skeleton == Skeleton::Chunk {
                    c.map_chunk(g, &xs, cost)
                } else {
                    c.map_stride(g, &xs, cost)
                }
                .map_err(fail)?;
                let l = r.log();
                (r.value, r.tasks, Some(l))
            } else {
                let tau = plan.tau.unwrap_or(1);
                let r = if plan.skeleton == Skeleton::Chunk {
                    rt.par_map_chunk_traced(tau, g, &xs, cost)
                } else {
                    rt.par_map_stride_traced(tau, g, &xs, cost)
                }
                .map_err(fail)?;
                (r.value, r.tasks, None)
            }
        }
        Skeleton::Rayon => {
            use rayon::prelude::*;
            if index_params.len() != 1 {
                return Err(Err(format!(
                    "rayon needs exactly one unbound integer parameter (the element index); `{}` has {} unbound",
                    f.name,
                    index_params.len()
                )));
            }
            let xs: Vec<i64> = (plan.lo..plan.hi).collect();
            let r: Result<Vec<Scalar>, RuntimeError> =
                rt.install(|| xs.par_iter().map(|x| kernel(&[*x])).collect());
            (r.map_err(Ok)?, Vec::new(), None)
        }
        Skeleton::DivconqThresh => {
            let want = match plan.divide {
                Divide::Fib => 1,
                Divide::Halves => 2,
            };
            if index_params.len() != want {
                return Err(Err(format!(
                    "divconq-thresh --divide {:?} needs {want} unbound integer parameter(s); `{}` has {}",
                    plan.divide,
                    f.name,
                    index_params.len()
                )
                .to_lowercase()));
            }
            let (lo, hi) = (plan.lo, plan.hi);
            let size = |p: &(i64, i64)| match plan.divide {
                Divide::Fib => p.0.max(0) as usize,
                Divide::Halves => (p.1 - p.0).max(0) as usize,
            };
            let div = |p: &(i64, i64)| match plan.divide {
                Divide::Fib if p.0 >= 2 => vec![(p.0 - 1, 0), (p.0 - 2, 0)],
                Divide::Halves if p.1 - p.0 >= 2 => {
                    let m = p.0 + (p.1 - p.0) / 2;
                    vec![(p.0, m), (m, p.1)]
                }
                _ => vec![],
            };
            let comb =
                |rs: Vec<Scalar>| -> Result<Scalar, RuntimeError> { Ok(sum_scalars(&rs, ret)) };
            let solve = |p: (i64, i64)| match plan.divide {
                Divide::Fib => kernel(&[p.0]),
                Divide::Halves => kernel(&[p.0, p.1]),
            };
            let root = match plan.divide {
                Divide::Fib => (hi, 0),
                Divide::Halves => (lo, hi),
            };
            let model = match plan.divide {
                Divide::Fib => CostDerivative::Exponential { base: PHI },
                Divide::Halves => CostDerivative::Linear,
            };
            if adaptive {
                let c = Controller::new(&rt, cfg.clone());
                let r = c
                    .divconq_thresh(model, size, div, comb, solve, root, cost)
                    .map_err(fail)?;
                let l = r.log();
                (vec![r.value], r.tasks, Some(l))
            } else {
                let tau = plan.tau.unwrap_or(1);
                let r = rt
                    .par_divconq_thresh_solver_traced(tau, size, div, comb, solve, root, cost)
                    .map_err(fail)?;
                (vec![r.value], r.tasks, None)
            }
        }
    };
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    for copy in slots
        .into_iter()
        .flat_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
    {
        for (k, (a, b)) in copy.iter().zip(fixed).enumerate() {
            if let (ArgValue::Array(a), ArgValue::Array(b)) = (a, b) {
                if a != b {
                    return Err(Err(format!(
                        "`{}` wrote to its array parameter `{}`: skel needs array parameters read-only (results would depend on the schedule)",
                        f.name,
                        f.var(f.params[k]).name
                    )));
                }
            }
        }
    }
    if let Some(d) = &decisions_log {
        if plan.verbose {
            log.push_str(d);
        } else {
            // The first decisions and the summary line.
            for l in d.lines().take(6) {
                log.push_str(l);
                log.push('\n');
            }
            if d.lines().count() > 7 {
                log.push_str(&format!(
                    "... ({} decisions; --verbose shows all)\n",
                    d.lines().count() - 1
                ));
                log.push_str(d.lines().last().unwrap_or(""));
                log.push('\n');
            }
        }
    } else if plan.verbose {
        for t in &tasks {
            log.push_str(&format!(
                "task {:>5} (batch {}): tau {}, {:.3} ms\n",
                t.index,
                t.batch,
                t.tau,
                t.elapsed_ms()
            ));
        }
    }
    log.push_str(&task_summary(
        "tasks",
        &tasks,
        plan.window.or(Some((10.0, 100.0))),
    ));
    if let Some(c) = counter {
        log.push_str(&k_summary(&c.name, &tasks));
    }
    let checksum = (plan.skeleton != Skeleton::DivconqThresh).then(|| {
        let bytes: Vec<u8> = results
            .iter()
            .flat_map(|r| match r.convert(ret) {
                Scalar::I32(x) => x.to_le_bytes().to_vec(),
                Scalar::I64(x) => x.to_le_bytes().to_vec(),
                // NaNs canonicalised, as in array checksums.
                Scalar::F32(x) if x.is_nan() => f32::NAN.to_le_bytes().to_vec(),
                Scalar::F64(x) if x.is_nan() => f64::NAN.to_le_bytes().to_vec(),
                Scalar::F32(x) => x.to_le_bytes().to_vec(),
                Scalar::F64(x) => x.to_le_bytes().to_vec(),
                Scalar::Bool(b) => vec![b as u8],
                Scalar::I8(x) => vec![x as u8],
            })
            .collect();
        tessera_ir::fnv1a(&bytes)
    });
    let total = sum_scalars(&results, ret);
    let int_sum = ret.is_integral().then(|| total.as_i64());
    Ok(Outcome {
        log,
        sum: num(total),
        int_sum,
        checksum,
        ms,
    })
}

/// Sums results in order: integers wrap in `long`, floats add in `double`.
fn sum_scalars(rs: &[Scalar], ret: ScalarTy) -> Scalar {
    if ret.is_float() {
        Scalar::F64(rs.iter().map(|r| num(*r)).sum())
    } else {
        Scalar::I64(rs.iter().fold(0i64, |a, r| a.wrapping_add(r.as_i64())))
    }
}
