//! The C ABI used by JIT-compiled code. **All `unsafe` code of the crate is
//! in this module.**
//!
//! # Safety contract (stated once for every item below)
//!
//! * `rt` is either null (meaning the current runtime: the one the calling thread has
//!   [entered](Runtime::enter), else [`Runtime::global`]) or a pointer obtained
//!   from [`tessera_runtime_new`] / [`tessera_runtime_global`] that has not
//!   been passed to [`tessera_runtime_free`]; it stays valid for the whole
//!   call.
//! * `body` is a valid function that may be called concurrently from several
//!   worker threads with the same `env` and disjoint `[lo, hi)` ranges. It
//!   must not unwind (an `extern "C"` function that panics aborts the
//!   process); it reports failure by returning a non-zero code.
//! * `env` is whatever `body` expects; the runtime never dereferences it. The
//!   caller guarantees that sharing it between threads for the duration of
//!   the call is sound (e.g. the body only reads it, or writes disjoint
//!   parts, or synchronises itself).
//!
//! Nested calls: a body may itself call [`tessera_parallel_for`] with the
//! same `rt` (or null: chunks run with their runtime [entered](Runtime::enter)). The
//! nested loop then runs in the same rayon pool — rayon runs `install`
//! inline on its own workers and waits on nested joins by stealing work — so
//! there is no deadlock and no extra threads (no oversubscription). Nesting
//! with a *different* runtime works too but blocks the calling worker while
//! the other pool runs the inner loop.

use std::cell::Cell;
use std::ffi::c_void;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::ParallelForError;
use crate::pool::Runtime;

thread_local! {
    /// The runtime [`Runtime::enter`]ed on this thread (null: none), for null handles.
    static CURRENT: Cell<*const Runtime> = const { Cell::new(std::ptr::null()) };
}

impl Runtime {
    /// Runs `op` on the calling thread with `self` as the *current* runtime: JIT-compiled
    /// parallel loops started by `op` on this thread (they pass a null handle to
    /// [`tessera_parallel_for`]) run on `self` instead of [`Runtime::global`]. The chunks
    /// of [`Runtime::parallel_for`] run entered too, so nested parallel loops stay on the
    /// same pool. Entering nests; the previous current runtime is restored when `op`
    /// returns or unwinds.
    ///
    /// ```
    /// use tessera_runtime::Runtime;
    /// let rt = Runtime::new(Some(2)).unwrap();
    /// assert_eq!(rt.enter(|| Runtime::with_current(|r| r.threads())), 2);
    /// assert_eq!(Runtime::with_current(|r| r.threads()), Runtime::global().threads());
    /// ```
    pub fn enter<R>(&self, op: impl FnOnce() -> R) -> R {
        struct Restore(*const Runtime);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.replace(self as *const Runtime)));
        op()
    }

    /// Calls `f` with the runtime that a null handle means on this thread: the innermost
    /// one [entered](Runtime::enter) here, else [`Runtime::global`].
    pub fn with_current<R>(f: impl FnOnce(&Runtime) -> R) -> R {
        let p = CURRENT.with(|c| c.get());
        if p.is_null() {
            f(Runtime::global())
        } else {
            // SAFETY: a non-null `p` was set by `enter` on this thread from a `&Runtime`
            // borrowed for the whole of `enter`'s `op`, and is reset when `op` returns or
            // unwinds; so this runs inside that `op` and the runtime is alive for the whole
            // of `f`, which cannot keep the reference.
            f(unsafe { &*p })
        }
    }
}

/// The opaque runtime handle seen by C / JIT code.
pub type RuntimeHandle = Runtime;

/// Signature of a parallel-for body: run iterations `[lo, hi)` with the
/// environment `env`; return 0 on success or a non-zero error code.
pub type TesseraBody = extern "C" fn(env: *mut c_void, lo: i64, hi: i64) -> i32;

/// Returned by [`tessera_parallel_for`] when a Rust-side panic was caught.
pub const TESSERA_ERR_PANIC: i32 = i32::MIN;

/// The environment pointer, shared read-only between workers.
#[derive(Clone, Copy)]
struct SharedEnv(*mut c_void);
// SAFETY: see the module contract: the caller guarantees that `env` may be
// used from several threads for the duration of the call.
unsafe impl Send for SharedEnv {}
// SAFETY: as above.
unsafe impl Sync for SharedEnv {}

/// Parallel for over `[lo, hi)` in chunks of `chunk` iterations
/// (`chunk <= 0`: about four chunks per thread).
///
/// Returns 0 on success, else the non-zero code returned by the earliest
/// failing chunk (chunks after a failed one are skipped, those before it
/// run; see [`Runtime::parallel_for`]), or [`TESSERA_ERR_PANIC`] if a panic
/// was caught. An empty range
/// (`hi <= lo`) returns 0 without calling `body`.
///
/// A body may call `tessera_parallel_for` again with the same `rt`: the
/// nested loop runs in the same rayon pool (no deadlock, no extra threads).
///
/// # Safety
/// See the safety contract of the crate's `ffi` module: `rt` is null or a
/// live handle, `body` may run concurrently on disjoint ranges and must not
/// unwind, and sharing `env` between threads for the call is sound.
#[no_mangle]
pub unsafe extern "C" fn tessera_parallel_for(
    rt: *const RuntimeHandle,
    lo: i64,
    hi: i64,
    chunk: i64,
    body: TesseraBody,
    env: *mut c_void,
) -> i32 {
    let env = SharedEnv(env);
    let run = |rt: &Runtime| {
        let res = rt.parallel_for(lo, hi, chunk, move |a, b| {
            let env = env;
            match body(env.0, a, b) {
                0 => Ok(()),
                code => Err(code),
            }
        });
        match res {
            Ok(()) => 0,
            Err(e) => e.code(),
        }
    };
    if rt.is_null() {
        Runtime::with_current(run)
    } else {
        // SAFETY: non-null and valid per the module contract.
        run(unsafe { &*rt })
    }
}

/// Builds a runtime with `threads` workers (`threads <= 0`: from
/// `TESSERA_THREADS` or the available parallelism). Returns null on failure.
/// Free it with [`tessera_runtime_free`].
#[no_mangle]
pub extern "C" fn tessera_runtime_new(threads: i64) -> *mut RuntimeHandle {
    let t = if threads <= 0 {
        None
    } else {
        Some(threads as usize)
    };
    match Runtime::new(t) {
        Ok(rt) => Box::into_raw(Box::new(rt)),
        Err(_) => std::ptr::null_mut(),
    }
}

/// The global runtime (never freed).
#[no_mangle]
pub extern "C" fn tessera_runtime_global() -> *const RuntimeHandle {
    Runtime::global() as *const Runtime
}

/// Frees a runtime from [`tessera_runtime_new`]; null is ignored.
///
/// # Safety
/// `rt` is null or came from [`tessera_runtime_new`], is freed once, and no
/// call using it is running or will run.
#[no_mangle]
pub unsafe extern "C" fn tessera_runtime_free(rt: *mut RuntimeHandle) {
    if !rt.is_null() {
        // SAFETY: per the contract above it is a live Box from
        // `tessera_runtime_new`.
        drop(unsafe { Box::from_raw(rt) });
    }
}

/// Runs `run(c)` for every chunk `c` in `0..chunks` on the calling thread and up to
/// `threads - 1` helper jobs spawned on `pool`, all taking chunks in order from a shared
/// counter ([`Runtime::share`](crate::Runtime) documents the behaviour). The lifetime of
/// `run` is erased so that the helpers, `'static` jobs that may start after this function
/// has returned, can hold it; the protocol of [`Region::enter`] keeps them from using it
/// after that.
pub(crate) fn share_chunks(
    pool: &rayon::ThreadPool,
    threads: usize,
    chunks: usize,
    run: &(dyn Fn(usize) -> Result<(), ParallelForError> + Sync),
) -> Result<(), ParallelForError> {
    let region = Arc::new(Region {
        next: AtomicUsize::new(0),
        chunks,
        stop_at: AtomicUsize::new(usize::MAX),
        first: Mutex::new(None),
        active: AtomicUsize::new(0),
        closed: AtomicBool::new(false),
        // SAFETY: the lifetime is erased so that helper jobs ('static) can hold the
        // pointer; `Region::enter` lets them dereference it only while the region is
        // open, and this function does not return (so `run` outlives every use) until
        // it has closed the region and seen no helper inside.
        run: RunPtr(unsafe {
            std::mem::transmute::<
                *const (dyn Fn(usize) -> Result<(), ParallelForError> + Sync + '_),
                *const (dyn Fn(usize) -> Result<(), ParallelForError> + Sync + 'static),
            >(run)
        }),
    });
    for _ in 1..threads.min(chunks) {
        let r = Arc::clone(&region);
        pool.spawn(move || r.enter());
    }
    region.take_chunks(run);
    region.closed.store(true, Ordering::SeqCst);
    let mut spins = 0u32;
    while region.active.load(Ordering::SeqCst) != 0 {
        // A helper inside is running one chunk (it takes no more: none are left).
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let e = region
        .first
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    match e {
        None => Ok(()),
        Some((_, e)) => Err(e),
    }
}

/// The chunk body of one parallel loop, with its lifetime erased ([`Runtime::share`]).
struct RunPtr(*const (dyn Fn(usize) -> Result<(), ParallelForError> + Sync + 'static));

// SAFETY: the pointee is `Sync` (called from several threads at once by design), and it is
// dereferenced only inside an open region (see `Region::enter`).
unsafe impl Send for RunPtr {}
unsafe impl Sync for RunPtr {}

/// What the threads running one parallel loop share ([`Runtime::share`]).
struct Region {
    /// The next chunk to take.
    next: AtomicUsize,
    /// How many chunks there are.
    chunks: usize,
    /// The earliest failed chunk so far (`usize::MAX`: none); no chunk after it is taken.
    stop_at: AtomicUsize,
    /// That chunk's error.
    first: Mutex<Option<(usize, ParallelForError)>>,
    /// Helpers between their check of `closed` and their last use of `run`.
    active: AtomicUsize,
    /// Set by the calling thread once every chunk is taken; `run` may dangle after it.
    closed: AtomicBool,
    /// The chunk body, valid while the region is open or a helper is active.
    run: RunPtr,
}

impl Region {
    /// A helper's whole job: takes chunks if the region is still open, else nothing.
    ///
    /// `active` is raised before `closed` is read and the caller sets `closed` before it
    /// reads `active`, all sequentially consistent: if this helper sees the region open,
    /// its increment comes before the caller's read, which then waits for the decrement
    /// below (after the helper's last use of `run`); if it sees it closed, it does not
    /// touch `run`.
    fn enter(&self) {
        self.active.fetch_add(1, Ordering::SeqCst);
        if !self.closed.load(Ordering::SeqCst) {
            // SAFETY: the region is open and stays alive while `active` > 0 (above).
            let run = unsafe { &*self.run.0 };
            self.take_chunks(run);
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    /// Takes chunks in order and runs them until none is left or one has failed before.
    fn take_chunks(&self, run: &(dyn Fn(usize) -> Result<(), ParallelForError> + Sync)) {
        loop {
            let c = self.next.fetch_add(1, Ordering::AcqRel);
            if c >= self.chunks || c > self.stop_at.load(Ordering::Acquire) {
                return;
            }
            if let Err(e) = run(c) {
                let mut g = self.first.lock().unwrap_or_else(|p| p.into_inner());
                if g.as_ref().map_or(true, |(d, _)| c < *d) {
                    *g = Some((c, e));
                }
                self.stop_at.fetch_min(c, Ordering::AcqRel);
            }
        }
    }
}

/// C ABI for JIT code, at the start of an execution of a versioned region: returns a token,
/// `start_ns * 2 + version` (the version in the low bit), to pass to [`tessera_version_end`].
///
/// # Safety
/// `site` must point to a live [`VersionSite`](crate::VersionSite) (the JIT keeps one per region for as long as
/// the code exists).
#[no_mangle]
pub unsafe extern "C" fn tessera_version_begin(site: *const crate::VersionSite) -> i64 {
    // SAFETY: guaranteed by the caller.
    let site = unsafe { &*site };
    site.begin_token() as i64
}

/// C ABI for JIT code, at the end of an execution of a versioned region: `token` is what
/// [`tessera_version_begin`] returned.
///
/// # Safety
/// As for [`tessera_version_begin`].
#[no_mangle]
pub unsafe extern "C" fn tessera_version_end(site: *const crate::VersionSite, token: i64) {
    // SAFETY: guaranteed by the caller.
    let site = unsafe { &*site };
    site.end_token(token as u64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_version_abi_times_and_decodes_the_version() {
        let s = crate::VersionSite::new();
        for _ in 0..4 {
            // SAFETY: `s` is alive.
            unsafe {
                let t = tessera_version_begin(&s);
                tessera_version_end(&s, t);
            }
        }
        // Calls 1 and 2 run the optimised code and the original, timed; by call 4 a
        // choice is made (after call 2 already if the original took over twice as long).
        let r = s.report();
        assert!(r.runs[0] >= 1 && r.runs[1] >= 1, "{r:?}");
        assert!(r.chosen.is_some());
    }

    #[test]
    fn a_null_handle_runs_on_the_entered_runtime() {
        extern "C" fn body(env: *mut std::ffi::c_void, _lo: i64, _hi: i64) -> i32 {
            // SAFETY: `env` is the `AtomicUsize` below, alive for the whole call.
            let seen = unsafe { &*(env as *const AtomicUsize) };
            // Chunks run on the calling thread or the pool's workers, inside the runtime
            // entered (nested parallel loops would go to it).
            seen.fetch_max(Runtime::with_current(|r| r.threads()), Ordering::Relaxed);
            0
        }
        let n = Runtime::global().threads() + 1;
        let rt = Runtime::new(Some(n)).unwrap();
        let seen = AtomicUsize::new(0);
        let env = &seen as *const AtomicUsize as *mut std::ffi::c_void;
        // SAFETY: null handle; `body` does not unwind and only reads `env` atomically.
        let rc =
            rt.enter(|| unsafe { tessera_parallel_for(std::ptr::null(), 0, 64, 1, body, env) });
        assert_eq!((rc, seen.load(Ordering::Relaxed)), (0, n));
    }
}
