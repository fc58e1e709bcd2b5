//! Algorithmic skeletons (BACKGROUND §1): `par_map`, `par_map_chunk`,
//! `par_map_stride`, `par_divconq`, `par_divconq_thresh`.
//!
//! Each skeleton runs in the [`Runtime`]'s pool, returns its results in input
//! order. An error stops the work after it: the maps return the error of the
//! first failing element in input order, as a sequential map would (a task
//! past a failed element stops before its next element, tasks before it run
//! on in case they fail earlier), so the error reported does not depend on
//! the schedule; divide and conquer returns the first error observed. A
//! panic in a task becomes [`SkelError::Panic`]. The `*_traced` forms also return one
//! [`TaskRecord`] per executed task, with the cost γ from an optional
//! [`CostFn`].
//!
//! Cost derivatives (how a task's cost scales with tau; see
//! [`CostDerivative`]): chunk — [`CostDerivative::Linear`]; stride —
//! [`CostDerivative::Inverse`]; divconq-thresh — `Exponential { base: φ }`
//! for fib-like recursion, `Linear` for linear-work recursion.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use crate::cost::{CostFn, TaskRecord, TaskShape};
use crate::error::{panic_message, SkelError};
use crate::pool::Runtime;

/// A result together with the records of the tasks that produced it.
#[derive(Debug, Clone)]
pub struct Traced<R> {
    /// The skeleton's result.
    pub value: R,
    /// One record per executed task, sorted by task index.
    pub tasks: Vec<TaskRecord>,
}

/// Shared state of one skeleton call (or one controller batch).
pub(crate) struct Ctx<'a, E> {
    /// Input position of the earliest failure so far (`usize::MAX`: none).
    stop_at: AtomicUsize,
    err: Mutex<Option<(usize, SkelError<E>)>>,
    records: Mutex<Vec<TaskRecord>>,
    next_index: AtomicUsize,
    epoch: Instant,
    batch: usize,
    cost: Option<&'a CostFn<'a>>,
}

impl<'a, E> Ctx<'a, E> {
    pub(crate) fn new(epoch: Instant, batch: usize, cost: Option<&'a CostFn<'a>>) -> Self {
        Ctx {
            stop_at: AtomicUsize::new(usize::MAX),
            err: Mutex::new(None),
            records: Mutex::new(Vec::new()),
            next_index: AtomicUsize::new(0),
            epoch,
            batch,
            cost,
        }
    }

    /// Whether anything failed (divide and conquer stops everything).
    pub(crate) fn stopped(&self) -> bool {
        self.stop_at.load(Ordering::Acquire) != usize::MAX
    }

    /// Whether the element at input position `pos` comes after a failure.
    fn stopped_at(&self, pos: usize) -> bool {
        pos >= self.stop_at.load(Ordering::Acquire)
    }

    /// Records a failure at input position `pos`; the earliest position wins
    /// (on a tie, the first recorded).
    fn fail_at(&self, pos: usize, e: SkelError<E>) {
        let mut g = self.err.lock().unwrap_or_else(|p| p.into_inner());
        if g.as_ref().map_or(true, |(p, _)| pos < *p) {
            *g = Some((pos, e));
        }
        self.stop_at.fetch_min(pos, Ordering::AcqRel);
    }

    /// A failure without an input position (divide and conquer): stops all.
    fn fail(&self, e: SkelError<E>) {
        self.fail_at(0, e);
    }

    /// Runs `f` without recording it (combine steps); errors and panics stop
    /// the call.
    fn call<R>(&self, f: impl FnOnce() -> Result<R, E>) -> Option<R> {
        if self.stopped() {
            return None;
        }
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => {
                self.fail(SkelError::Task(e));
                None
            }
            Err(p) => {
                self.fail(SkelError::Panic(panic_message(&*p)));
                None
            }
        }
    }

    /// Runs one task and records it. `shape.index == usize::MAX` asks for
    /// the next free index.
    fn task<R>(&self, mut shape: TaskShape, f: impl FnOnce() -> Result<R, E>) -> Option<R> {
        if self.stopped() {
            return None;
        }
        if shape.index == usize::MAX {
            shape.index = self.next_index.fetch_add(1, Ordering::Relaxed);
        }
        let start = Instant::now();
        let r = self.call(f);
        let elapsed_ns = start.elapsed().as_nanos() as u64;
        if r.is_some() {
            let rec = TaskRecord {
                batch: self.batch,
                tau: shape.tau,
                index: shape.index,
                start_ns: start.duration_since(self.epoch).as_nanos() as u64,
                elapsed_ns,
                cost: self.cost.map(|c| c(&shape)),
            };
            self.records
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(rec);
        }
        r
    }

    /// Runs one map task over `items` (input position, element) and records
    /// it. The task stops before an element after a failure; a failing
    /// element records its position.
    fn map_task<'x, X: 'x, T>(
        &self,
        shape: TaskShape,
        items: impl Iterator<Item = (usize, &'x X)>,
        f: &(impl Fn(&X) -> Result<T, E> + Sync),
    ) -> Option<Vec<T>> {
        if self.stopped_at(shape.first) {
            return None;
        }
        let start = Instant::now();
        let mut at = shape.first;
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut v = Vec::with_capacity(shape.len);
            for (pos, x) in items {
                at = pos;
                if self.stopped_at(pos) {
                    return Ok(None);
                }
                v.push(f(x)?);
            }
            Ok(Some(v))
        }));
        let v = match r {
            Ok(Ok(Some(v))) => v,
            Ok(Ok(None)) => return None,
            Ok(Err(e)) => {
                self.fail_at(at, SkelError::Task(e));
                return None;
            }
            Err(p) => {
                self.fail_at(at, SkelError::Panic(panic_message(&*p)));
                return None;
            }
        };
        let rec = TaskRecord {
            batch: self.batch,
            tau: shape.tau,
            index: shape.index,
            start_ns: start.duration_since(self.epoch).as_nanos() as u64,
            elapsed_ns: start.elapsed().as_nanos() as u64,
            cost: self.cost.map(|c| c(&shape)),
        };
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(rec);
        Some(v)
    }

    /// Ends the call: the first error, else the task records sorted by index.
    pub(crate) fn finish(self) -> Result<Vec<TaskRecord>, SkelError<E>> {
        if let Some((_, e)) = self.err.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        let mut recs = self.records.into_inner().unwrap_or_else(|p| p.into_inner());
        recs.sort_by_key(|r| r.index);
        Ok(recs)
    }
}

/// Chunked map over `xs` (global offset `offset`), tasks of `tau` elements.
pub(crate) fn chunk_core<X, T, E, F>(
    ctx: &Ctx<'_, E>,
    tau: usize,
    f: &F,
    xs: &[X],
    offset: usize,
) -> Option<Vec<T>>
where
    X: Sync,
    T: Send,
    E: Send,
    F: Fn(&X) -> Result<T, E> + Sync,
{
    let parts: Vec<Option<Vec<T>>> = xs
        .par_chunks(tau)
        .with_max_len(1)
        .enumerate()
        .map(|(j, c)| {
            let shape = TaskShape {
                index: j,
                tau,
                first: offset + j * tau,
                step: 1,
                len: c.len(),
            };
            let first = shape.first;
            ctx.map_task(shape, c.iter().enumerate().map(|(k, x)| (first + k, x)), f)
        })
        .collect();
    let mut out = Vec::with_capacity(xs.len());
    for p in parts {
        out.extend(p?);
    }
    Some(out)
}

/// Strided map over `xs` (global offset `offset`): `min(tau, len)` tasks,
/// task j takes elements j, j+tau, j+2tau, ...; results in input order.
pub(crate) fn stride_core<X, T, E, F>(
    ctx: &Ctx<'_, E>,
    tau: usize,
    f: &F,
    xs: &[X],
    offset: usize,
) -> Option<Vec<T>>
where
    X: Sync,
    T: Send,
    E: Send,
    F: Fn(&X) -> Result<T, E> + Sync,
{
    let n = xs.len();
    let tasks = tau.min(n);
    let parts: Vec<Option<Vec<T>>> = (0..tasks)
        .into_par_iter()
        .with_max_len(1)
        .map(|j| {
            let shape = TaskShape {
                index: j,
                tau,
                first: offset + j,
                step: tau,
                len: (n - j).div_ceil(tau),
            };
            let items = xs[j..].iter().step_by(tau).enumerate();
            ctx.map_task(shape, items.map(|(k, x)| (offset + j + k * tau, x)), f)
        })
        .collect();
    let mut iters = Vec::with_capacity(tasks);
    for p in parts {
        iters.push(p?.into_iter());
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(iters[i % tau].next().expect("stride reassembly"));
    }
    Some(out)
}

/// Sequential divide and conquer: a problem whose `div` is empty is a leaf.
pub(crate) fn seq_divconq<P, R, E>(
    div: &(impl Fn(&P) -> Vec<P> + Sync),
    comb: &(impl Fn(Vec<R>) -> Result<R, E> + Sync),
    conq: &(impl Fn(P) -> Result<R, E> + Sync),
    x: P,
) -> Result<R, E> {
    let subs = div(&x);
    if subs.is_empty() {
        return conq(x);
    }
    let rs = subs
        .into_iter()
        .map(|s| seq_divconq(div, comb, conq, s))
        .collect::<Result<Vec<R>, E>>()?;
    comb(rs)
}

/// Parallel divide and conquer with a size threshold: problems with
/// `size(x) <= tau` are one sequential task.
#[allow(clippy::too_many_arguments)]
pub(crate) fn thresh_core<P, R, E>(
    ctx: &Ctx<'_, E>,
    tau: usize,
    solve_below: bool,
    size: &(impl Fn(&P) -> usize + Sync),
    div: &(impl Fn(&P) -> Vec<P> + Sync),
    comb: &(impl Fn(Vec<R>) -> Result<R, E> + Sync),
    conq: &(impl Fn(P) -> Result<R, E> + Sync),
    x: P,
) -> Option<R>
where
    P: Send,
    R: Send,
    E: Send,
{
    if ctx.stopped() {
        return None;
    }
    let s = size(&x);
    let shape = TaskShape {
        index: usize::MAX,
        tau,
        first: 0,
        step: 0,
        len: s,
    };
    if s <= tau {
        if solve_below {
            // `conq` is a sequential solver for whole problems (e.g. a compiled kernel).
            return ctx.task(shape, || conq(x));
        }
        return ctx.task(shape, || seq_divconq(div, comb, conq, x));
    }
    let subs = div(&x);
    if subs.is_empty() {
        return ctx.task(shape, || conq(x));
    }
    let rs: Vec<Option<R>> = subs
        .into_par_iter()
        .with_max_len(1)
        .map(|p| thresh_core(ctx, tau, solve_below, size, div, comb, conq, p))
        .collect();
    let rs: Vec<R> = rs.into_iter().collect::<Option<Vec<R>>>()?;
    ctx.call(|| comb(rs))
}

fn divconq_core<P, R, E>(
    ctx: &Ctx<'_, E>,
    div: &(impl Fn(&P) -> Vec<P> + Sync),
    comb: &(impl Fn(Vec<R>) -> Result<R, E> + Sync),
    conq: &(impl Fn(P) -> Result<R, E> + Sync),
    is_leaf: &(impl Fn(&P) -> bool + Sync),
    x: P,
) -> Option<R>
where
    P: Send,
    R: Send,
    E: Send,
{
    if ctx.stopped() {
        return None;
    }
    if is_leaf(&x) {
        let shape = TaskShape {
            index: usize::MAX,
            tau: 0,
            first: 0,
            step: 0,
            len: 1,
        };
        return ctx.task(shape, || conq(x));
    }
    let rs: Vec<Option<R>> = div(&x)
        .into_par_iter()
        .with_max_len(1)
        .map(|p| divconq_core(ctx, div, comb, conq, is_leaf, p))
        .collect();
    let rs: Vec<R> = rs.into_iter().collect::<Option<Vec<R>>>()?;
    ctx.call(|| comb(rs))
}

fn done<R, E>(ctx: Ctx<'_, E>, v: Option<R>) -> Result<Traced<R>, SkelError<E>> {
    let tasks = ctx.finish()?;
    Ok(Traced {
        value: v.expect("skeleton finished without error but without a value"),
        tasks,
    })
}

impl Runtime {
    /// `parMap f xs`: one task per element.
    pub fn par_map<X, T, E, F>(&self, f: F, xs: &[X]) -> Result<Vec<T>, SkelError<E>>
    where
        X: Sync,
        T: Send,
        E: Send,
        F: Fn(&X) -> Result<T, E> + Sync,
    {
        self.par_map_chunk(1, f, xs)
    }

    /// `parMapChunk tau f xs`: tasks of `tau` consecutive elements (the last
    /// may be shorter). Cost derivative: [`crate::CostDerivative::Linear`].
    pub fn par_map_chunk<X, T, E, F>(
        &self,
        tau: usize,
        f: F,
        xs: &[X],
    ) -> Result<Vec<T>, SkelError<E>>
    where
        X: Sync,
        T: Send,
        E: Send,
        F: Fn(&X) -> Result<T, E> + Sync,
    {
        self.par_map_chunk_traced(tau, f, xs, None).map(|t| t.value)
    }

    /// [`Runtime::par_map_chunk`] with task records and optional costs.
    pub fn par_map_chunk_traced<X, T, E, F>(
        &self,
        tau: usize,
        f: F,
        xs: &[X],
        cost: Option<&CostFn<'_>>,
    ) -> Result<Traced<Vec<T>>, SkelError<E>>
    where
        X: Sync,
        T: Send,
        E: Send,
        F: Fn(&X) -> Result<T, E> + Sync,
    {
        if tau == 0 {
            return Err(SkelError::ZeroTau);
        }
        let ctx = Ctx::new(Instant::now(), 0, cost);
        let v = self.install(|| chunk_core(&ctx, tau, &f, xs, 0));
        done(ctx, v)
    }

    /// `parMapStride tau f xs`: `tau` interleaved tasks, task j takes
    /// elements j, j+tau, j+2tau, ... (with `tau > len`, only `len`
    /// non-empty tasks run); results reassembled in input order. Cost
    /// derivative: [`crate::CostDerivative::Inverse`].
    pub fn par_map_stride<X, T, E, F>(
        &self,
        tau: usize,
        f: F,
        xs: &[X],
    ) -> Result<Vec<T>, SkelError<E>>
    where
        X: Sync,
        T: Send,
        E: Send,
        F: Fn(&X) -> Result<T, E> + Sync,
    {
        self.par_map_stride_traced(tau, f, xs, None)
            .map(|t| t.value)
    }

    /// [`Runtime::par_map_stride`] with task records and optional costs.
    pub fn par_map_stride_traced<X, T, E, F>(
        &self,
        tau: usize,
        f: F,
        xs: &[X],
        cost: Option<&CostFn<'_>>,
    ) -> Result<Traced<Vec<T>>, SkelError<E>>
    where
        X: Sync,
        T: Send,
        E: Send,
        F: Fn(&X) -> Result<T, E> + Sync,
    {
        if tau == 0 {
            return Err(SkelError::ZeroTau);
        }
        let ctx = Ctx::new(Instant::now(), 0, cost);
        let v = self.install(|| stride_core(&ctx, tau, &f, xs, 0));
        done(ctx, v)
    }

    /// `parDivconq div comb conq isLeaf x`: leaves (`is_leaf`) are solved by
    /// `conq`, one task each; other problems are split by `div` and their
    /// sub-problems solved in parallel (rayon joins), then `comb`ined in
    /// order.
    pub fn par_divconq<P, R, E>(
        &self,
        div: impl Fn(&P) -> Vec<P> + Sync,
        comb: impl Fn(Vec<R>) -> Result<R, E> + Sync,
        conq: impl Fn(P) -> Result<R, E> + Sync,
        is_leaf: impl Fn(&P) -> bool + Sync,
        x: P,
    ) -> Result<R, SkelError<E>>
    where
        P: Send,
        R: Send,
        E: Send,
    {
        let ctx = Ctx::new(Instant::now(), 0, None);
        let v = self.install(|| divconq_core(&ctx, &div, &comb, &conq, &is_leaf, x));
        done(ctx, v).map(|t| t.value)
    }

    /// `parDivconqThresh tau div comb conq x`: a problem with
    /// `size(x) <= tau` is one task solved sequentially by the same
    /// recursion (a problem whose `div` returns no sub-problems is a leaf,
    /// solved by `conq`); larger problems are split and their sub-problems
    /// spawned in parallel. Cost derivative: `Exponential { base: φ }` for
    /// fib-like recursion, `Linear` for linear-work recursion.
    pub fn par_divconq_thresh<P, R, E>(
        &self,
        tau: usize,
        size: impl Fn(&P) -> usize + Sync,
        div: impl Fn(&P) -> Vec<P> + Sync,
        comb: impl Fn(Vec<R>) -> Result<R, E> + Sync,
        conq: impl Fn(P) -> Result<R, E> + Sync,
        x: P,
    ) -> Result<R, SkelError<E>>
    where
        P: Send,
        R: Send,
        E: Send,
    {
        self.par_divconq_thresh_traced(tau, size, div, comb, conq, x, None)
            .map(|t| t.value)
    }

    /// Like [`Runtime::par_divconq_thresh_traced`], but a problem with
    /// `size(x) <= tau` is one task solved by a single call of `solve` (a
    /// sequential solver of whole problems, such as a compiled kernel), not by
    /// recursing sequentially through `div`/`comb`. Problems whose `div`
    /// returns no sub-problems are also solved by `solve`.
    #[allow(clippy::too_many_arguments)]
    pub fn par_divconq_thresh_solver_traced<P, R, E>(
        &self,
        tau: usize,
        size: impl Fn(&P) -> usize + Sync,
        div: impl Fn(&P) -> Vec<P> + Sync,
        comb: impl Fn(Vec<R>) -> Result<R, E> + Sync,
        solve: impl Fn(P) -> Result<R, E> + Sync,
        x: P,
        cost: Option<&CostFn<'_>>,
    ) -> Result<Traced<R>, SkelError<E>>
    where
        P: Send,
        R: Send,
        E: Send,
    {
        if tau == 0 {
            return Err(SkelError::ZeroTau);
        }
        let ctx = Ctx::new(Instant::now(), 0, cost);
        let v = self.install(|| thresh_core(&ctx, tau, true, &size, &div, &comb, &solve, x));
        done(ctx, v)
    }

    /// [`Runtime::par_divconq_thresh`] with task records and optional costs
    /// (the [`TaskShape::len`] handed to the cost callback is `size` of the
    /// task's problem).
    #[allow(clippy::too_many_arguments)]
    pub fn par_divconq_thresh_traced<P, R, E>(
        &self,
        tau: usize,
        size: impl Fn(&P) -> usize + Sync,
        div: impl Fn(&P) -> Vec<P> + Sync,
        comb: impl Fn(Vec<R>) -> Result<R, E> + Sync,
        conq: impl Fn(P) -> Result<R, E> + Sync,
        x: P,
        cost: Option<&CostFn<'_>>,
    ) -> Result<Traced<R>, SkelError<E>>
    where
        P: Send,
        R: Send,
        E: Send,
    {
        let ctx = Ctx::new(Instant::now(), 0, cost);
        let v = self.install(|| thresh_core(&ctx, tau, false, &size, &div, &comb, &conq, x));
        done(ctx, v)
    }
}
