//! Adaptive granularity controller (BACKGROUND §1, "retuning rule").
//!
//! The controller runs a skeleton's work in successive *batches*. After each
//! batch a [`Tuner`] looks at the batch's task records: the mean task time
//! t0 and, when a cost callback supplied one, the mean cost γ0 (otherwise
//! the cost implied by tau through the skeleton's [`CostDerivative`] is the
//! proxy). It computes `k = t0/γ0`, picks the target time t1 at the
//! geometric middle of the window, the target cost `γ1 = t1/k`, and the
//! tau1 whose cost ratio `γ1/γ0` the cost derivative predicts
//! (chunk: `tau1 = tau0·t1/t0`; stride: `tau1 = tau0·t0/t1`; exponential:
//! `tau1 = tau0 + log_base(t1/t0)`).
//!
//! Safeguards: tau is clamped to `[1, tau_max]`; one step changes the task
//! cost by at most `max_step` (16×); a step in the opposite direction from
//! the previous one is halved (in log space) to damp oscillation; while a
//! batch's mean lies in the window (and so do at least half of its tasks;
//! otherwise the median task time decides) tau is left alone; and batches
//! whose mean
//! task time is below `noise_floor_ms` (~100 µs) are treated as noisy: k is
//! not trusted and the task cost is grown geometrically by `max_step`
//! instead. Every decision is a [`Decision`] record.
//!
//! Batches:
//! * chunk: each batch covers the next `threads * tasks_per_thread` tasks of
//!   the current tau (so all threads are busy), starting at
//!   `ControllerConfig::tau0`.
//! * stride: the input is cut into `stride_batches` contiguous batches of
//!   equal length B; in a batch, tau is the number of interleaved tasks, so
//!   a task costs ∝ B/tau ([`CostDerivative::Inverse`]). The first batch
//!   uses `ControllerConfig::stride_tau0`, by default tau = B (one element
//!   per task, the smallest tasks).
//! * divconq-thresh: the root problem is first divided breadth-first
//!   (sequentially, with `div`) into a work list of at least
//!   `threads * worklist_per_thread` sub-problems (or until nothing more
//!   divides); the work list is processed in batches of
//!   `threads * tasks_per_thread` sub-problems, each solved by the
//!   `par_divconq_thresh` recursion with the current tau; finally the
//!   results are combined bottom-up along the recorded division tree.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use rayon::prelude::*;

use crate::cost::{CostDerivative, CostFn, TaskRecord};
use crate::error::{panic_message, SkelError};
use crate::pool::Runtime;
use crate::skeleton::{chunk_core, stride_core, thresh_core, Ctx};

/// Tuning knobs of the [`Controller`].
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerConfig {
    /// Target task-time window in ms, `(low, high)`; default 10–100 ms.
    pub window_ms: (f64, f64),
    /// Initial tau for the chunk and divconq-thresh controllers (default 1).
    pub tau0: usize,
    /// Mean task times below this (ms) are treated as noise (default 0.1).
    pub noise_floor_ms: f64,
    /// Largest change of the task cost in one step (default 16).
    pub max_step: f64,
    /// Tasks (chunk) or sub-problems (divconq) per thread in one batch
    /// (default 4).
    pub tasks_per_thread: usize,
    /// Number of batches for the stride controller (default 16).
    pub stride_batches: usize,
    /// Initial tau (tasks per batch) of the stride controller; `None` (the
    /// default) starts at the batch length B, i.e. one element per task.
    pub stride_tau0: Option<usize>,
    /// Work-list sub-problems per thread for divconq-thresh (default 64).
    pub worklist_per_thread: usize,
    /// divconq-thresh: when true, a problem at or below the threshold is
    /// solved by one call of `conq` (a sequential solver of whole problems,
    /// such as a compiled kernel) instead of the sequential recursion through
    /// `div`/`comb` down to the leaves (default false).
    pub solve_below_threshold: bool,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            window_ms: (10.0, 100.0),
            tau0: 1,
            noise_floor_ms: 0.1,
            max_step: 16.0,
            tasks_per_thread: 4,
            stride_batches: 16,
            stride_tau0: None,
            worklist_per_thread: 64,
            solve_below_threshold: false,
        }
    }
}

impl ControllerConfig {
    /// The default configuration with another window (ms).
    pub fn with_window(low_ms: f64, high_ms: f64) -> Self {
        ControllerConfig {
            window_ms: (low_ms, high_ms),
            ..Default::default()
        }
    }

    /// The target task time: the geometric middle of the window (ms).
    pub fn target_ms(&self) -> f64 {
        (self.window_ms.0 * self.window_ms.1).sqrt()
    }

    /// Whether a task time (ms) lies in the window.
    pub fn in_window(&self, ms: f64) -> bool {
        ms >= self.window_ms.0 && ms <= self.window_ms.1
    }
}

/// One retuning decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Batch the decision was made after.
    pub batch: usize,
    /// Tau the batch ran with.
    pub tau_old: usize,
    /// Tau for the next batch.
    pub tau_new: usize,
    /// Mean task time of the batch (ms).
    pub observed_mean_ms: f64,
    /// Predicted mean task time at `tau_new` (ms).
    pub predicted_ms: f64,
    /// Number of tasks in the batch.
    pub tasks: usize,
    /// Fraction of the batch's tasks whose time was in the window.
    pub in_window_fraction: f64,
    /// True when the batch was under the noise floor (k not trusted).
    pub noisy: bool,
    /// Human-readable reasoning (k, costs, clamping, damping, noise).
    pub note: String,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "batch {:>3}: tau {} -> {} | observed {:.4} ms, predicted {:.4} ms | {} tasks, {:.0}% in window | {}",
            self.batch,
            self.tau_old,
            self.tau_new,
            self.observed_mean_ms,
            self.predicted_ms,
            self.tasks,
            self.in_window_fraction * 100.0,
            self.note
        )
    }
}

/// The retuning rule as a small state machine (usable on its own, e.g. by a
/// JIT that runs its own batches).
#[derive(Debug, Clone)]
pub struct Tuner {
    cfg: ControllerConfig,
    model: CostDerivative,
    tau_max: usize,
    last_sign: f64,
}

impl Tuner {
    /// A tuner for a skeleton with cost derivative `model`, tau in
    /// `[1, tau_max]`.
    pub fn new(cfg: ControllerConfig, model: CostDerivative, tau_max: usize) -> Self {
        Tuner {
            cfg,
            model,
            tau_max: tau_max.max(1),
            last_sign: 0.0,
        }
    }

    /// Decides the next tau from the records of a batch run with `tau`.
    pub fn decide(&mut self, batch: usize, tau: usize, records: &[TaskRecord]) -> Decision {
        let cfg = &self.cfg;
        let tasks = records.len();
        let mut d = Decision {
            batch,
            tau_old: tau,
            tau_new: tau,
            observed_mean_ms: 0.0,
            predicted_ms: 0.0,
            tasks,
            in_window_fraction: 0.0,
            noisy: false,
            note: String::new(),
        };
        if tasks == 0 {
            d.note = "no tasks: keep tau".into();
            return d;
        }
        let t0 = records.iter().map(|r| r.elapsed_ms()).sum::<f64>() / tasks as f64;
        d.observed_mean_ms = t0;
        d.in_window_fraction = records
            .iter()
            .filter(|r| cfg.in_window(r.elapsed_ms()))
            .count() as f64
            / tasks as f64;
        let mut note = String::new();
        let mut t0 = t0;
        if cfg.in_window(t0) {
            if d.in_window_fraction >= 0.5 {
                d.predicted_ms = t0;
                d.note = "mean in window: keep tau".into();
                return d;
            }
            // A few slow (e.g. preempted) tasks can pull the mean into the
            // window while most tasks are outside it: decide on the median.
            let mut ms: Vec<f64> = records.iter().map(|r| r.elapsed_ms()).collect();
            ms.sort_by(f64::total_cmp);
            let median = ms[ms.len() / 2];
            note = format!(
                "mean in window but only {:.0}% of tasks: deciding on median {median:.4} ms; ",
                d.in_window_fraction * 100.0
            );
            if cfg.in_window(median) {
                d.predicted_ms = d.observed_mean_ms;
                note.push_str("median in window: keep tau");
                d.note = note;
                return d;
            }
            t0 = median;
        }
        let t1 = cfg.target_ms();
        let mut ratio;
        if t0 < cfg.noise_floor_ms {
            ratio = cfg.max_step;
            d.noisy = true;
            note += &format!(
                "tasks under noise floor ({t0:.4} ms < {} ms): k not trusted, grow task cost x{}",
                cfg.noise_floor_ms, cfg.max_step
            );
        } else {
            let measured = records.iter().map(|r| r.cost).collect::<Option<Vec<f64>>>();
            let (g0, src) = match measured {
                Some(c) if c.iter().sum::<f64>() > 0.0 => {
                    (c.iter().sum::<f64>() / tasks as f64, "measured")
                }
                _ => (self.model.cost_ratio(1.0, tau as f64), "tau proxy"),
            };
            let k = t0 / g0;
            let g1 = t1 / k;
            ratio = g1 / g0;
            note += &format!(
                "k = {k:.4e} ms/cost ({src} γ0 = {g0:.4}), target {t1:.3} ms, γ1 = {g1:.4}"
            );
            let limit = cfg.max_step;
            if ratio > limit || ratio < 1.0 / limit {
                ratio = ratio.clamp(1.0 / limit, limit);
                note.push_str(&format!("; step limited to x{ratio:.3}"));
            }
            let sign = ratio.ln().signum();
            if self.last_sign != 0.0 && sign != self.last_sign {
                ratio = ratio.sqrt();
                note.push_str("; direction reversed: step halved (damping)");
            }
            // Only trusted steps count for damping; noisy growth does not.
            self.last_sign = sign;
        }
        let tf = self.model.tau_for_cost_ratio(tau as f64, ratio);
        let mut t = tf.round().clamp(1.0, self.tau_max as f64) as usize;
        if t == tau {
            let nudged = if tf > tau as f64 {
                (tau + 1).min(self.tau_max)
            } else {
                tau.saturating_sub(1).max(1)
            };
            if nudged != tau {
                note.push_str("; rounding gave no change: nudged by 1");
            }
            t = nudged;
        }
        if t == self.tau_max && tf > self.tau_max as f64 {
            note.push_str("; clamped to tau_max");
        } else if t == 1 && tf < 1.0 {
            note.push_str("; clamped to 1");
        }
        d.tau_new = t;
        d.predicted_ms = t0 * self.model.cost_ratio(tau as f64, t as f64);
        d.note = note;
        d
    }
}

/// Result of an adaptive run.
#[derive(Debug, Clone)]
pub struct AdaptiveRun<R> {
    /// The skeleton's result (same as the non-adaptive skeleton's).
    pub value: R,
    /// One decision per batch.
    pub decisions: Vec<Decision>,
    /// All task records, batch by batch.
    pub tasks: Vec<TaskRecord>,
    /// Tau after the last decision.
    pub final_tau: usize,
    /// Fraction of the tasks, in the batches after the first adaptation that
    /// trusted k (the first non-noisy decision), whose time was in the
    /// window; `None` when no task ran after it.
    pub in_window_fraction: Option<f64>,
}

impl<R> AdaptiveRun<R> {
    /// The decision log, one line per decision.
    pub fn log(&self) -> String {
        let mut s = String::new();
        for d in &self.decisions {
            s.push_str(&d.to_string());
            s.push('\n');
        }
        if let Some(f) = self.in_window_fraction {
            s.push_str(&format!(
                "in window after first adaptation: {:.1}%\n",
                f * 100.0
            ));
        }
        s
    }
}

/// Runs skeletons adaptively on a [`Runtime`] (see the module docs).
#[derive(Debug)]
pub struct Controller<'rt> {
    rt: &'rt Runtime,
    cfg: ControllerConfig,
}

impl<'rt> Controller<'rt> {
    /// A controller on `rt` with configuration `cfg`.
    pub fn new(rt: &'rt Runtime, cfg: ControllerConfig) -> Self {
        Controller { rt, cfg }
    }

    /// The configuration.
    pub fn config(&self) -> &ControllerConfig {
        &self.cfg
    }

    fn batch_tasks(&self) -> usize {
        (self.rt.threads() * self.cfg.tasks_per_thread).max(1)
    }

    fn finish<R>(
        &self,
        value: R,
        decisions: Vec<Decision>,
        tasks: Vec<TaskRecord>,
        final_tau: usize,
    ) -> AdaptiveRun<R> {
        let first = decisions
            .iter()
            .find(|d| !d.noisy && d.tasks > 0)
            .map(|d| d.batch);
        let in_window_fraction = first.and_then(|b| {
            let after: Vec<&TaskRecord> = tasks.iter().filter(|r| r.batch > b).collect();
            if after.is_empty() {
                None
            } else {
                let hit = after
                    .iter()
                    .filter(|r| self.cfg.in_window(r.elapsed_ms()))
                    .count();
                Some(hit as f64 / after.len() as f64)
            }
        });
        AdaptiveRun {
            value,
            decisions,
            tasks,
            final_tau,
            in_window_fraction,
        }
    }

    /// Adaptive `par_map_chunk` over `xs` (cost derivative Linear).
    pub fn map_chunk<X, T, E, F>(
        &self,
        f: F,
        xs: &[X],
        cost: Option<&CostFn<'_>>,
    ) -> Result<AdaptiveRun<Vec<T>>, SkelError<E>>
    where
        X: Sync,
        T: Send,
        E: Send,
        F: Fn(&X) -> Result<T, E> + Sync,
    {
        let n = xs.len();
        let mut tuner = Tuner::new(self.cfg.clone(), CostDerivative::Linear, n);
        let mut tau = self.cfg.tau0.clamp(1, n.max(1));
        let (mut out, mut decisions, mut tasks) = (Vec::with_capacity(n), vec![], vec![]);
        let epoch = Instant::now();
        let (mut pos, mut batch) = (0, 0);
        while pos < n {
            let len = (self.batch_tasks() * tau).min(n - pos);
            let ctx = Ctx::new(epoch, batch, cost);
            let v = self
                .rt
                .install(|| chunk_core(&ctx, tau, &f, &xs[pos..pos + len], pos));
            let recs = ctx.finish()?;
            out.extend(v.expect("batch without error has a value"));
            let d = tuner.decide(batch, tau, &recs);
            tau = d.tau_new;
            decisions.push(d);
            tasks.extend(recs);
            pos += len;
            batch += 1;
        }
        Ok(self.finish(out, decisions, tasks, tau))
    }

    /// Adaptive `par_map_stride` over `xs` (cost derivative Inverse; tau is
    /// the number of interleaved tasks in a batch of B elements).
    pub fn map_stride<X, T, E, F>(
        &self,
        f: F,
        xs: &[X],
        cost: Option<&CostFn<'_>>,
    ) -> Result<AdaptiveRun<Vec<T>>, SkelError<E>>
    where
        X: Sync,
        T: Send,
        E: Send,
        F: Fn(&X) -> Result<T, E> + Sync,
    {
        let n = xs.len();
        let b = n.div_ceil(self.cfg.stride_batches.max(1)).max(1);
        let mut tuner = Tuner::new(self.cfg.clone(), CostDerivative::Inverse, b);
        let mut tau = self.cfg.stride_tau0.unwrap_or(b).clamp(1, b);
        let (mut out, mut decisions, mut tasks) = (Vec::with_capacity(n), vec![], vec![]);
        let epoch = Instant::now();
        let (mut pos, mut batch) = (0, 0);
        while pos < n {
            let len = b.min(n - pos);
            let ctx = Ctx::new(epoch, batch, cost);
            let v = self
                .rt
                .install(|| stride_core(&ctx, tau, &f, &xs[pos..pos + len], pos));
            let recs = ctx.finish()?;
            out.extend(v.expect("batch without error has a value"));
            let d = tuner.decide(batch, tau, &recs);
            tau = d.tau_new;
            decisions.push(d);
            tasks.extend(recs);
            pos += len;
            batch += 1;
        }
        Ok(self.finish(out, decisions, tasks, tau))
    }

    /// Adaptive `par_divconq_thresh` (cost derivative `model`, e.g.
    /// `Exponential { base: PHI }` for fib, `Linear` for a range sum);
    /// tau starts at `ControllerConfig::tau0` and stays in
    /// `[1, size(x)]`. See the module docs for the work-list approach.
    #[allow(clippy::too_many_arguments)]
    pub fn divconq_thresh<P, R, E>(
        &self,
        model: CostDerivative,
        size: impl Fn(&P) -> usize + Sync,
        div: impl Fn(&P) -> Vec<P> + Sync,
        comb: impl Fn(Vec<R>) -> Result<R, E> + Sync,
        conq: impl Fn(P) -> Result<R, E> + Sync,
        x: P,
        cost: Option<&CostFn<'_>>,
    ) -> Result<AdaptiveRun<R>, SkelError<E>>
    where
        P: Send,
        R: Send,
        E: Send,
    {
        let tau_max = size(&x).max(1);
        let mut tuner = Tuner::new(self.cfg.clone(), model, tau_max);
        let mut tau = self.cfg.tau0.clamp(1, tau_max);

        // Division tree: children lists for internal nodes, None for work items.
        let target = (self.rt.threads() * self.cfg.worklist_per_thread).max(1);
        let mut children: Vec<Option<Vec<usize>>> = vec![None];
        let expand = catch_unwind(AssertUnwindSafe(|| {
            let mut frontier: Vec<(usize, P)> = vec![(0, x)];
            while frontier.len() < target {
                let mut next = Vec::new();
                let mut expanded = false;
                for (id, p) in frontier {
                    let subs = div(&p);
                    if subs.is_empty() {
                        next.push((id, p));
                        continue;
                    }
                    expanded = true;
                    let mut ch = Vec::with_capacity(subs.len());
                    for s in subs {
                        let cid = children.len();
                        children.push(None);
                        ch.push(cid);
                        next.push((cid, s));
                    }
                    children[id] = Some(ch);
                }
                frontier = next;
                if !expanded {
                    break;
                }
            }
            frontier
        }));
        let frontier = expand.map_err(|p| SkelError::Panic(panic_message(&*p)))?;

        let mut slots: Vec<Option<R>> = (0..children.len()).map(|_| None).collect();
        let (mut decisions, mut tasks) = (vec![], vec![]);
        let epoch = Instant::now();
        let mut batch = 0;
        let mut items = frontier.into_iter();
        loop {
            let work: Vec<(usize, P)> = items.by_ref().take(self.batch_tasks()).collect();
            if work.is_empty() {
                break;
            }
            let ctx = Ctx::new(epoch, batch, cost);
            let res: Vec<(usize, Option<R>)> = self.rt.install(|| {
                work.into_par_iter()
                    .with_max_len(1)
                    .map(|(id, p)| {
                        (
                            id,
                            thresh_core(
                                &ctx,
                                tau,
                                self.cfg.solve_below_threshold,
                                &size,
                                &div,
                                &comb,
                                &conq,
                                p,
                            ),
                        )
                    })
                    .collect()
            });
            let recs = ctx.finish()?;
            for (id, r) in res {
                slots[id] = r;
            }
            let d = tuner.decide(batch, tau, &recs);
            tau = d.tau_new;
            decisions.push(d);
            tasks.extend(recs);
            batch += 1;
        }

        // Combine bottom-up: children always have larger ids than parents.
        for id in (0..children.len()).rev() {
            if let Some(ch) = children[id].take() {
                let rs: Vec<R> = ch
                    .iter()
                    .map(|c| slots[*c].take().expect("child result present"))
                    .collect();
                let r = match catch_unwind(AssertUnwindSafe(|| comb(rs))) {
                    Ok(Ok(r)) => r,
                    Ok(Err(e)) => return Err(SkelError::Task(e)),
                    Err(p) => return Err(SkelError::Panic(panic_message(&*p))),
                };
                slots[id] = Some(r);
            }
        }
        let value = slots[0].take().expect("root result present");
        Ok(self.finish(value, decisions, tasks, tau))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::PHI;

    fn recs(tau: usize, ms: &[f64]) -> Vec<TaskRecord> {
        ms.iter()
            .enumerate()
            .map(|(i, &m)| TaskRecord {
                batch: 0,
                tau,
                index: i,
                start_ns: 0,
                elapsed_ns: (m * 1e6) as u64,
                cost: None,
            })
            .collect()
    }

    fn cfg() -> ControllerConfig {
        ControllerConfig::with_window(10.0, 100.0)
    }

    #[test]
    fn chunk_rule_scales_tau_by_time_ratio() {
        let mut t = Tuner::new(cfg(), CostDerivative::Linear, 1_000_000);
        // target = sqrt(10*100) = 31.62 ms; t0 = 2 ms at tau 100 -> x15.8.
        let d = t.decide(0, 100, &recs(100, &[2.0; 8]));
        assert_eq!(d.tau_new, 1581);
        assert!(!d.noisy);
        assert!((d.predicted_ms - 31.62).abs() < 0.05);
    }

    #[test]
    fn stride_rule_divides_tau() {
        let mut t = Tuner::new(cfg(), CostDerivative::Inverse, 10_000);
        let d = t.decide(0, 1000, &recs(1000, &[2.0; 8]));
        assert_eq!(d.tau_new, 63); // 1000 * 2 / 31.62
    }

    #[test]
    fn exponential_rule_adds_log() {
        let mut t = Tuner::new(cfg(), CostDerivative::Exponential { base: PHI }, 40);
        let d = t.decide(0, 15, &recs(15, &[4.0; 8]));
        // 15 + log_phi(31.62 / 4) = 15 + 4.30
        assert_eq!(d.tau_new, 19);
    }

    #[test]
    fn noisy_batches_grow_geometrically_and_say_so() {
        let mut t = Tuner::new(cfg(), CostDerivative::Linear, 1_000_000);
        let d = t.decide(0, 3, &recs(3, &[0.01; 8]));
        assert!(d.noisy);
        assert!(d.note.contains("noise floor"));
        assert_eq!(d.tau_new, 48);
    }

    #[test]
    fn step_limited_clamped_and_kept_in_window() {
        let mut t = Tuner::new(cfg(), CostDerivative::Linear, 1000);
        let d = t.decide(0, 10, &recs(10, &[0.2; 4]));
        assert_eq!(d.tau_new, 160); // x16 limit, not x158
        assert!(d.note.contains("limited"));
        let d = t.decide(1, 160, &recs(160, &[0.5; 4]));
        assert_eq!(d.tau_new, 1000);
        assert!(d.note.contains("clamped"));
        let d = t.decide(2, 1000, &recs(1000, &[50.0, 20.0, 200.0]));
        assert_eq!(d.tau_new, 1000);
        assert!((d.in_window_fraction - 2.0 / 3.0).abs() < 1e-9);
        let mut t = Tuner::new(cfg(), CostDerivative::Linear, 1000);
        let d = t.decide(0, 1, &recs(1, &[500.0]));
        assert_eq!(d.tau_new, 1);
    }

    #[test]
    fn skewed_batch_decides_on_median() {
        let mut t = Tuner::new(cfg(), CostDerivative::Linear, 1_000_000);
        // Mean 12.5 ms is in the window, but 7 of 8 tasks took 2 ms.
        let mut ms = [2.0; 8];
        ms[7] = 86.0;
        let d = t.decide(0, 100, &recs(100, &ms));
        assert!(d.note.contains("median"), "{}", d.note);
        assert_eq!(d.tau_new, 1581);
    }

    #[test]
    fn reversal_is_damped() {
        let mut t = Tuner::new(cfg(), CostDerivative::Linear, 1_000_000);
        let d = t.decide(0, 100, &recs(100, &[5.0]));
        assert!(d.tau_new > 100);
        let d = t.decide(1, 632, &recs(632, &[400.0]));
        assert!(d.note.contains("damping"));
        // undamped: 632 * 31.62/400 = 50; damped: 632 * sqrt(0.079) = 178
        assert_eq!(d.tau_new, 178);
    }

    #[test]
    fn measured_costs_give_k() {
        let mut t = Tuner::new(cfg(), CostDerivative::Linear, 1_000_000);
        let mut r = recs(10, &[1.0; 4]);
        for x in &mut r {
            x.cost = Some(500.0);
        }
        let d = t.decide(0, 10, &r);
        assert!(d.note.contains("measured"));
        assert!(d.note.contains("k = 2.0000e-3"));
        assert_eq!(d.tau_new, 160);
        assert!(d.to_string().contains("batch   0: tau 10 -> 160"));
    }
}
