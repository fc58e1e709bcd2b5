//! The thread pool ([`Runtime`]) and the safe parallel-for.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

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
    /// What handing a range to the pool and joining costs here, in nanoseconds (median
    /// of a few empty fork-joins, measured on first use; see [`Runtime::fork_join_ns`]).
    fork_join_ns: OnceLock<u64>,
}

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
            fork_join_ns: OnceLock::new(),
        };
        if n > 1 {
            // Calibrated now, not inside the first parallel loop a kernel times.
            rt.fork_join_ns();
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

    /// The cost of one fork-join on this pool (handing chunks to every worker, waking
    /// them, joining), in nanoseconds: the median of 15 empty fork-joins, measured when the
    /// pool is built and kept (a per-machine, per-pool calibration).
    pub fn fork_join_ns(&self) -> u64 {
        *self.fork_join_ns.get_or_init(|| {
            let chunks = self.threads * 4;
            let mut v: Vec<u64> = (0..15)
                .map(|_| {
                    let t = std::time::Instant::now();
                    self.install(|| {
                        (0..chunks).into_par_iter().with_max_len(1).for_each(|c| {
                            std::hint::black_box(c);
                        })
                    });
                    t.elapsed().as_nanos() as u64
                })
                .collect();
            v.sort_unstable();
            v[v.len() / 2]
        })
    }

    /// Runs `body(lo', hi')` over `[lo, hi)` split into chunks of `chunk`
    /// iterations (`chunk <= 0`: [`Runtime::default_chunk`]), in parallel.
    ///
    /// With `chunk <= 0` the loop first runs a probe, its first `n / 256` iterations (at
    /// least one) on the calling thread, timed; where the rest would take less than
    /// twice what parallel execution could save against a fork-join
    /// ([`Runtime::fork_join_ns`]: rest < 2 fork-join x T / (T - 1)), the rest runs there too
    /// as one range, else it is split among the workers. Small parallel loops inside
    /// sequential ones (a stencil's rows) then cost no more than sequential code.
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
            let t_ = self.threads as u128;
            let worth = 2 * self.fork_join_ns() as u128 * t_ / (t_ - 1);
            if estimate < worth {
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
        // The earliest failed chunk so far (usize::MAX: none) and its error.
        let stop_at = AtomicUsize::new(usize::MAX);
        let first: Mutex<Option<(usize, ParallelForError)>> = Mutex::new(None);
        let fail = |c: usize, e: ParallelForError| {
            let mut g = first.lock().unwrap_or_else(|p| p.into_inner());
            if g.as_ref().map_or(true, |(d, _)| c < *d) {
                *g = Some((c, e));
            }
            stop_at.fetch_min(c, Ordering::AcqRel);
        };
        self.install(|| {
            (0..chunks).into_par_iter().with_max_len(1).for_each(|c| {
                if c > stop_at.load(Ordering::Acquire) {
                    return;
                }
                if let Err(e) = run(c) {
                    fail(c, e);
                }
            })
        });
        let e = first.into_inner().unwrap_or_else(|p| p.into_inner());
        match e {
            None => Ok(()),
            Some((_, e)) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
