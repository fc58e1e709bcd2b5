//! The thread pool ([`Runtime`]) and the safe parallel-for.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{panic_message, ParallelForError, RuntimeError};

/// Name of the environment variable that sizes pools built without an
/// explicit thread count.
pub const THREADS_ENV: &str = "TESSERA_THREADS";

/// A work-stealing thread pool (one `rayon::ThreadPool` per runtime).
///
/// All parallel work of the runtime (the parallel-for, the skeletons and the
/// controller) runs inside this pool. Nested parallel work started from a
/// task of the pool (a nested `parallel_for` or skeleton on the *same*
/// runtime) runs in the same pool: rayon's `install` executes inline when
/// already on one of the pool's workers, and its joins wait by stealing work,
/// so nesting neither deadlocks nor creates extra threads.
pub struct Runtime {
    pool: rayon::ThreadPool,
    threads: usize,
    /// What splitting a loop costs here ([`Runtime::split_costs`], measured when the pool
    /// is built).
    split_costs: OnceLock<SplitCosts>,
    /// When the pool was built; the origin of `last_region_end`.
    epoch: Instant,
    /// When the last parallel region of [`Runtime::parallel_for`] ended, in nanoseconds
    /// since `epoch` (0: never).
    last_region_end: AtomicU64,
    /// Estimated work (ns) of the loops run on the calling thread since the last parallel
    /// region only because the workers were asleep ([`Runtime::worth_splitting`]).
    cold_credit: AtomicU64,
    /// When the credit was last raised, as `last_region_end`.
    last_credit: AtomicU64,
}

/// What splitting a loop among the workers costs, measured per pool
/// ([`Runtime::split_costs`]), in nanoseconds. *Hot*: right after a parallel region, while
/// the workers still spin looking for work; *cold*: after [`IDLE_AFTER`], when they sleep.
/// On the 2-core VM where this was written: hot wake 0.6 us and spawn 0.2 us; cold wake
/// 17-37 us and spawn 6.5-8 us (and now and then 4 ms, the host not running the idle
/// virtual core).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitCosts {
    /// Handing the helpers their jobs, as the calling thread sees it, workers spinning.
    pub spawn_hot: u64,
    /// From handing a job to a spinning worker until it starts.
    pub wake_hot: u64,
    /// Handing the helpers their jobs when the workers sleep (waking one).
    pub spawn_cold: u64,
    /// From handing a job to a sleeping worker until it starts.
    pub wake_cold: u64,
}

/// How long after a parallel region the workers count as still spinning (rayon lets them
/// look for work some 10-30 us before it puts them to sleep; measured here: 1 us to wake
/// 10 us after a job, 17 us at 30 us after).
pub const IDLE_AFTER: Duration = Duration::from_micros(10);

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("threads", &self.threads)
            .finish()
    }
}

/// The absolute bound on a pool's threads, whatever the machine.
pub const MAX_THREADS: usize = 1024;

/// The most threads a pool may have on a machine with `available` cores: 64 per core, and
/// never more than [`MAX_THREADS`]. (Far more threads than cores only adds start-up and
/// scheduling cost; absurd counts would take minutes to spawn, or exhaust memory.)
pub fn max_threads(available: usize) -> usize {
    available.max(1).saturating_mul(64).min(MAX_THREADS)
}

/// Picks a thread count: `explicit` if given, else the value of
/// `TESSERA_THREADS` (`env`), else `available`; at least 1 and at most
/// [`max_threads`]`(available)`.
///
/// Pure so it can be tested without touching the process environment.
pub fn resolve_threads(
    explicit: Option<usize>,
    env: Option<&str>,
    available: usize,
) -> Result<usize, RuntimeError> {
    let n = match explicit {
        Some(0) => return Err(RuntimeError::ZeroThreads),
        Some(n) => n,
        None => match env {
            Some(s) => match s.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => return Err(RuntimeError::BadThreadsEnv(s.to_string())),
            },
            None => available.max(1),
        },
    };
    let max = max_threads(available);
    if n > max {
        return Err(RuntimeError::TooManyThreads {
            requested: n,
            max,
            cores: available.max(1),
        });
    }
    Ok(n)
}

/// The number of cores the process may use (1 if unknown).
pub fn available_parallelism() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Stack size of the pool's workers. Kernels called on a worker (skeletons) and parallel
/// loops' chunks recurse on it: 64 MiB leaves room for the default call-depth limit
/// (10,000 calls) of interpreted and JIT-compiled kernels without switching stacks, and is
/// only reserved address space until used. Both back ends also check the real remaining
/// stack, so a deeper recursion is an error, never a crash.
pub const WORKER_STACK: usize = 64 << 20;

/// The process-wide runtime (see [`Runtime::global`]).
static GLOBAL: OnceLock<Runtime> = OnceLock::new();

impl Runtime {
    /// Builds a runtime with `threads` workers; `None` reads
    /// `TESSERA_THREADS`, else uses the available parallelism.
    pub fn new(threads: Option<usize>) -> Result<Runtime, RuntimeError> {
        let env = std::env::var(THREADS_ENV).ok();
        let n = resolve_threads(threads, env.as_deref(), available_parallelism())?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("tessera-worker-{i}"))
            .stack_size(WORKER_STACK)
            .build()
            .map_err(|e| RuntimeError::PoolBuild(e.to_string()))?;
        let rt = Runtime {
            pool,
            threads: n,
            split_costs: OnceLock::new(),
            epoch: Instant::now(),
            last_region_end: AtomicU64::new(0),
            cold_credit: AtomicU64::new(0),
            last_credit: AtomicU64::new(0),
        };
        if n > 1 {
            // Calibrated now, not inside the first parallel loop a kernel times.
            rt.split_costs();
        }
        Ok(rt)
    }

    /// The process-wide runtime, built on first use like `Runtime::new(None)`
    /// unless [`Runtime::init_global`] built it before. A bad `TESSERA_THREADS`
    /// value falls back to the available parallelism. JIT-compiled parallel
    /// loops run on it.
    pub fn global() -> &'static Runtime {
        GLOBAL.get_or_init(|| {
            Runtime::new(None)
                .or_else(|_| Runtime::new(Some(available_parallelism())))
                .expect("cannot build the global tessera runtime")
        })
    }

    /// Builds the process-wide runtime with `threads` workers (`None`: as
    /// [`Runtime::new`]) if it does not exist yet, and returns it. If it
    /// exists with another thread count, that is an error.
    pub fn init_global(threads: Option<usize>) -> Result<&'static Runtime, RuntimeError> {
        if let Some(rt) = GLOBAL.get() {
            return match threads {
                Some(t) if t != rt.threads => Err(RuntimeError::GlobalExists(rt.threads)),
                _ => Ok(rt),
            };
        }
        let rt = Runtime::new(threads)?;
        Ok(GLOBAL.get_or_init(|| rt))
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `op` inside the pool (inline when already on one of its workers).
    pub fn install<R: Send>(&self, op: impl FnOnce() -> R + Send) -> R {
        self.pool.install(op)
    }

    /// Default chunk for a range of `n` iterations: about four chunks per
    /// thread; the whole range on one thread.
    pub fn default_chunk(&self, n: u64) -> u64 {
        if self.threads == 1 {
            return n.max(1);
        }
        n.div_ceil(self.threads as u64 * 4).max(1)
    }

    /// What splitting a loop costs on this pool: five hand-overs of a job to a worker that
    /// has just finished one (hot) and five after 2 ms of sleep (cold), the medians of the
    /// time the calling thread spends handing it over and of the time until the worker
    /// starts it. Measured when a pool of more than one thread is built (some 12 ms) and
    /// kept: a per-machine, per-pool calibration.
    pub fn split_costs(&self) -> SplitCosts {
        *self.split_costs.get_or_init(|| {
            let sample = |sleep: bool| -> (u64, u64) {
                let mut spawn = Vec::new();
                let mut wake = Vec::new();
                for _ in 0..5 {
                    // A job first, so that a worker has just been busy.
                    let done = Arc::new(AtomicU64::new(0));
                    let d = Arc::clone(&done);
                    self.pool.spawn(move || d.store(1, Ordering::SeqCst));
                    while done.load(Ordering::SeqCst) == 0 {
                        std::hint::spin_loop();
                    }
                    if sleep {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    let t0 = Instant::now();
                    let started = Arc::new(AtomicU64::new(0));
                    let s = Arc::clone(&started);
                    self.pool.spawn(move || {
                        s.store(t0.elapsed().as_nanos() as u64 + 1, Ordering::SeqCst)
                    });
                    spawn.push(t0.elapsed().as_nanos() as u64);
                    let w = loop {
                        let w = started.load(Ordering::SeqCst);
                        if w != 0 {
                            break w - 1;
                        }
                        std::hint::spin_loop();
                    };
                    wake.push(w);
                }
                spawn.sort_unstable();
                wake.sort_unstable();
                (spawn[2], wake[2])
            };
            let (spawn_hot, wake_hot) = sample(false);
            let (spawn_cold, wake_cold) = sample(true);
            SplitCosts {
                spawn_hot,
                wake_hot,
                spawn_cold: spawn_cold.max(spawn_hot),
                wake_cold: wake_cold.max(wake_hot),
            }
        })
    }

    /// Nanoseconds since `epoch`, at least 1 (0 means never in `last_region_end`).
    fn now_ns(&self) -> u64 {
        (self.epoch.elapsed().as_nanos() as u64).max(1)
    }

    /// Whether a loop whose remaining iterations would take `estimate` ns on one thread
    /// should be split among the pool's `T` threads. The calling thread works through the
    /// region ([`Runtime::parallel_for`]): it pays the hand-over (spawn) and, until the
    /// helpers wake, works alone, so splitting takes about spawn + wake + (estimate - wake) / T
    /// instead of estimate. Split when the estimate is at least twice the break-even point,
    /// `estimate >= 2 (wake + spawn T / (T - 1))`, with the hot costs if a region ended
    /// less than [`IDLE_AFTER`] ago, else the cold ones. Waking sleeping workers is paid once
    /// for a run of loops (the next ones find them spinning), so a loop worth splitting hot
    /// but not cold runs alone and its estimate is credited; once the credit reaches the
    /// cold threshold the workers are woken anyway (rent until the rent paid equals the
    /// price of buying: at most twice the best choice in hindsight, for the small loops of
    /// a time loop). The credit counts only loops that follow each other closely: it is
    /// dropped when more time than the cold threshold has passed since the last credited
    /// one (a kernel of one small loop called now and then never wakes the workers).
    fn worth_splitting(&self, estimate: u64) -> bool {
        let c = self.split_costs();
        let t = self.threads as u64;
        let threshold =
            |spawn: u64, wake: u64| 2 * (wake + (spawn * t).div_ceil(t.saturating_sub(1).max(1)));
        if estimate < threshold(c.spawn_hot, c.wake_hot) {
            return false;
        }
        let last = self.last_region_end.load(Ordering::Relaxed);
        if last != 0 && self.now_ns().saturating_sub(last) < IDLE_AFTER.as_nanos() as u64 {
            return true;
        }
        let cold = threshold(c.spawn_cold, c.wake_cold);
        let now = self.now_ns();
        let since = now.saturating_sub(self.last_credit.load(Ordering::Relaxed));
        let credit = if since > cold.saturating_add(estimate) {
            0
        } else {
            self.cold_credit.load(Ordering::Relaxed)
        };
        if estimate >= cold || credit.saturating_add(estimate) >= cold {
            self.cold_credit.store(0, Ordering::Relaxed);
            return true;
        }
        self.cold_credit
            .store(credit.saturating_add(estimate), Ordering::Relaxed);
        self.last_credit.store(now, Ordering::Relaxed);
        false
    }

    /// Runs `body(lo', hi')` over `[lo, hi)` split into chunks of `chunk`
    /// iterations (`chunk <= 0`: [`Runtime::default_chunk`]), in parallel.
    ///
    /// With `chunk <= 0` the loop first runs a probe, its first `n / 256` iterations (at
    /// least one) on the calling thread, timed; where the rest is not worth splitting
    /// (`worth_splitting`: the estimate against the measured cost of handing work to the
    /// workers and of waking them, [`Runtime::split_costs`]) the rest runs there too as one
    /// range, else it is split. Small parallel loops inside sequential ones (a stencil's
    /// rows) then cost no more than sequential code. Split, the chunks are taken in order
    /// by the calling thread and up to `T - 1` workers, the calling thread working, not
    /// waiting (`Runtime::share`).
    ///
    /// `body` returns `Err(code)` to fail. A failure (or panic) in a chunk
    /// skips every chunk after it that has not started (a shared position
    /// checked before each chunk); chunks before it still run, and the error
    /// of the earliest failing chunk is returned, so the error reported does
    /// not depend on the schedule (as for a sequential loop). Each chunk runs with
    /// this runtime [entered](Runtime::enter). A panic in
    /// `body` is caught and becomes [`ParallelForError::Panic`]. An empty
    /// range returns `Ok(())`.
    pub fn parallel_for<F>(
        &self,
        lo: i64,
        hi: i64,
        chunk: i64,
        body: F,
    ) -> Result<(), ParallelForError>
    where
        F: Fn(i64, i64) -> Result<(), i32> + Sync,
    {
        if hi <= lo {
            return Ok(());
        }
        let mut n = (hi as i128 - lo as i128) as u64;
        let mut lo = lo;
        if chunk <= 0 && self.threads > 1 {
            let probe = (n / 256).max(1);
            let mid = (lo as i128 + probe as i128) as i64;
            let t = std::time::Instant::now();
            let r = catch_unwind(AssertUnwindSafe(|| body(lo, mid)));
            let took = t.elapsed().as_nanos();
            match r {
                Ok(Ok(())) => {}
                Ok(Err(code)) => return Err(ParallelForError::Body(code)),
                Err(p) => return Err(ParallelForError::Panic(panic_message(&*p))),
            }
            let rest = n - probe;
            if rest == 0 {
                return Ok(());
            }
            let estimate = took.saturating_mul(rest as u128) / probe as u128;
            if !self.worth_splitting(u64::try_from(estimate).unwrap_or(u64::MAX)) {
                return match catch_unwind(AssertUnwindSafe(|| body(mid, hi))) {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(code)) => Err(ParallelForError::Body(code)),
                    Err(p) => Err(ParallelForError::Panic(panic_message(&*p))),
                };
            }
            lo = mid;
            n = rest;
        }
        let chunk = if chunk <= 0 {
            self.default_chunk(n)
        } else {
            chunk as u64
        };
        let chunks = usize::try_from(n.div_ceil(chunk)).unwrap_or(usize::MAX);
        let run = |c: usize| -> Result<(), ParallelForError> {
            let a = lo as i128 + c as i128 * chunk as i128;
            let b = (a + chunk as i128).min(hi as i128);
            // Entered, so that nested JIT-compiled parallel loops (null handle) stay here.
            match catch_unwind(AssertUnwindSafe(|| self.enter(|| body(a as i64, b as i64)))) {
                Ok(Ok(())) => Ok(()),
                Ok(Err(code)) => Err(ParallelForError::Body(code)),
                Err(p) => Err(ParallelForError::Panic(panic_message(&*p))),
            }
        };
        if self.threads == 1 {
            // One worker: the chunks in order on the calling thread (no hand-over to the
            // pool's thread and back, which cost jacobi-2d 5% on one thread); the first
            // failure is the earliest.
            return (0..chunks).try_for_each(run);
        }
        self.share(chunks, &run)
    }

    /// Runs `run(c)` for every chunk `c` in `0..chunks`, the calling thread and up to
    /// `threads - 1` of the pool's workers taking chunks in order from a shared counter.
    ///
    /// The calling thread works rather than waits: it does not depend on when the workers
    /// wake up. (On a virtual machine a sleeping worker's core may take milliseconds to come
    /// back; a fork-join that waited for it made 2 threads slower than 1, and one that
    /// lands on a worker that never wakes in time costs nothing here: the caller takes every
    /// chunk, and the late helper finds none left.) Helpers are reference-counted jobs that
    /// may outlive this call; they reach `run` only through [`Region::enter`], and this call
    /// returns only once the region is closed and no helper is inside it.
    ///
    /// A failure in chunk `c` stops the taking of chunks after `c`; chunks taken before it
    /// still run, and the earliest failure is returned (as for a sequential loop).
    pub(crate) fn share(
        &self,
        chunks: usize,
        run: &(dyn Fn(usize) -> Result<(), ParallelForError> + Sync),
    ) -> Result<(), ParallelForError> {
        let r = crate::ffi::share_chunks(&self.pool, self.threads, chunks, run);
        self.last_region_end.store(self.now_ns(), Ordering::Relaxed);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::sync::Mutex;

    /// A runtime whose split costs are given, not measured.
    fn with_costs(threads: usize, c: SplitCosts) -> Runtime {
        let rt = Runtime {
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap(),
            threads,
            split_costs: OnceLock::new(),
            epoch: Instant::now(),
            last_region_end: AtomicU64::new(0),
            cold_credit: AtomicU64::new(0),
            last_credit: AtomicU64::new(0),
        };
        rt.split_costs.set(c).unwrap();
        rt
    }

    #[test]
    fn sleeping_workers_are_woken_once_the_small_loops_run_alone_add_up_to_the_wake_up() {
        // 2 threads: hot threshold 2 (100 + 2 x 50) = 400 ns, cold 2 (10,000 + 2 x 5,000)
        // = 40,000 ns.
        let rt = with_costs(
            2,
            SplitCosts {
                spawn_hot: 50,
                wake_hot: 100,
                spawn_cold: 5_000,
                wake_cold: 10_000,
            },
        );
        // Never worth it, hot or cold: no credit.
        assert!(!rt.worth_splitting(399));
        assert_eq!(rt.cold_credit.load(Ordering::Relaxed), 0);
        // Worth it hot, not cold (no region yet): run alone, credited.
        assert!(!rt.worth_splitting(15_000));
        assert!(!rt.worth_splitting(15_000));
        assert_eq!(rt.cold_credit.load(Ordering::Relaxed), 30_000);
        // 30,000 + 15,000 >= 40,000: split, the credit spent.
        assert!(rt.worth_splitting(15_000));
        assert_eq!(rt.cold_credit.load(Ordering::Relaxed), 0);
        // Worth a cold wake-up on its own.
        assert!(rt.worth_splitting(40_000));
        // Long after the last credited loop, the credit is gone.
        assert!(!rt.worth_splitting(15_000));
        std::thread::sleep(Duration::from_millis(1));
        assert!(!rt.worth_splitting(15_000));
        assert_eq!(rt.cold_credit.load(Ordering::Relaxed), 15_000);
        // Right after a region the workers spin: the hot threshold. (Assumes the two
        // lines run within IDLE_AFTER, 10 us, of each other; retried so that a
        // descheduling cannot fail the test.)
        let hot = (0..100).any(|_| {
            rt.last_region_end.store(rt.now_ns(), Ordering::Relaxed);
            rt.worth_splitting(400)
        });
        assert!(hot);
    }

    /// Counts the chunks run by `callers_do_every_chunk_when_the_workers_are_busy`'s loop.
    static RAN: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn callers_do_every_chunk_when_the_workers_are_busy() {
        let rt = with_costs(
            2,
            SplitCosts {
                spawn_hot: 0,
                wake_hot: 0,
                spawn_cold: 0,
                wake_cold: 0,
            },
        );
        // Both workers blocked until `release`.
        let release = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let (r, s) = (Arc::clone(&release), Arc::clone(&started));
            rt.pool.spawn(move || {
                s.fetch_add(1, Ordering::SeqCst);
                while !r.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_micros(100));
                }
            });
        }
        while started.load(Ordering::SeqCst) < 2 {
            std::thread::yield_now();
        }
        // The loop's helpers cannot start: the calling thread runs every chunk and returns.
        let local = vec![1u64; 1000];
        let sum = AtomicU64::new(0);
        let r = rt.parallel_for(0, 1000, 10, |a, b| {
            RAN.fetch_add(1, Ordering::SeqCst);
            let s: u64 = local[a as usize..b as usize].iter().sum();
            sum.fetch_add(s, Ordering::SeqCst);
            Ok(())
        });
        assert_eq!(r, Ok(()));
        assert_eq!(sum.load(Ordering::SeqCst), 1000);
        assert_eq!(RAN.load(Ordering::SeqCst), 100);
        drop(local);
        // The stale helpers run now, find the region closed and do not call the body.
        release.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(50));
        rt.pool.broadcast(|_| ());
        assert_eq!(RAN.load(Ordering::SeqCst), 100);
    }

    #[test]
    fn thread_count_resolution_order() {
        assert_eq!(resolve_threads(Some(3), Some("5"), 8), Ok(3));
        assert_eq!(resolve_threads(None, Some("5"), 8), Ok(5));
        assert_eq!(resolve_threads(None, Some(" 6 "), 8), Ok(6));
        assert_eq!(resolve_threads(None, None, 8), Ok(8));
        assert_eq!(resolve_threads(None, None, 0), Ok(1));
        assert_eq!(
            resolve_threads(Some(0), None, 8),
            Err(RuntimeError::ZeroThreads)
        );
        assert!(matches!(
            resolve_threads(None, Some("lots"), 8),
            Err(RuntimeError::BadThreadsEnv(_))
        ));
        assert!(resolve_threads(None, Some("0"), 8).is_err());
        assert_eq!(resolve_threads(Some(512), None, 8), Ok(512));
        assert!(matches!(
            resolve_threads(Some(513), None, 8),
            Err(RuntimeError::TooManyThreads { max: 512, .. })
        ));
        assert!(matches!(
            resolve_threads(Some(usize::MAX), None, 64),
            Err(RuntimeError::TooManyThreads { max: 1024, .. })
        ));
        assert!(matches!(
            resolve_threads(None, Some("100000"), 2),
            Err(RuntimeError::TooManyThreads { max: 128, .. })
        ));
    }

    #[test]
    fn an_entered_runtime_is_current_also_in_its_chunks() {
        let rt = Runtime::new(Some(3)).unwrap();
        let on = |r: &Runtime| std::ptr::eq(r, &rt);
        assert!(rt.enter(|| Runtime::with_current(on)));
        let seen = Mutex::new(Vec::new());
        rt.parallel_for(0, 12, 1, |_, _| {
            seen.lock().unwrap().push(Runtime::with_current(on));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.into_inner().unwrap(), vec![true; 12]);
        // Nested, and restored after an unwind.
        let inner = Runtime::new(Some(1)).unwrap();
        rt.enter(|| {
            assert!(inner.enter(|| Runtime::with_current(|r| std::ptr::eq(r, &inner))));
            assert!(Runtime::with_current(on));
            let _ = catch_unwind(AssertUnwindSafe(|| inner.enter(|| panic!("boom"))));
            assert!(Runtime::with_current(on));
        });
        assert!(Runtime::with_current(|r| std::ptr::eq(
            r,
            Runtime::global()
        )));
    }

    #[test]
    fn explicit_thread_count_builds_that_many() {
        let rt = Runtime::new(Some(3)).unwrap();
        assert_eq!(rt.threads(), 3);
        assert_eq!(rt.install(rayon::current_num_threads), 3);
        assert_eq!(rt.default_chunk(100), 9);
    }
}
