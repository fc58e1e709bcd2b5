//! The safe parallel-for and the C ABI entry.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tessera_runtime::{
    tessera_parallel_for, tessera_runtime_free, tessera_runtime_new, ParallelForError, Runtime,
    RuntimeHandle, TESSERA_ERR_PANIC,
};

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn every_iteration_runs_exactly_once() {
    // One thread runs the chunks in order on the calling thread, two on the pool.
    for threads in [1, 2] {
        every_iteration_runs_exactly_once_on(threads);
    }
}

fn every_iteration_runs_exactly_once_on(threads: usize) {
    let rt = Runtime::new(Some(threads)).unwrap();
    let (lo, hi) = (-50i64, 1000i64);
    for chunk in [-1i64, 0, 1, 7, 1049, 1050, 5000] {
        let seen: Vec<AtomicU8> = (lo..hi).map(|_| AtomicU8::new(0)).collect();
        rt.parallel_for(lo, hi, chunk, |a, b| {
            assert!(a < b);
            for i in a..b {
                seen[(i - lo) as usize].fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
        .unwrap();
        assert!(
            seen.iter().all(|s| s.load(Ordering::Relaxed) == 1),
            "chunk {chunk}"
        );
    }
}

#[test]
fn empty_range_runs_nothing() {
    let rt = Runtime::new(Some(2)).unwrap();
    let calls = AtomicUsize::new(0);
    for (lo, hi) in [(0, 0), (5, 3), (i64::MAX, i64::MIN)] {
        rt.parallel_for(lo, hi, 4, |_, _| {
            calls.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    }
    assert_eq!(calls.into_inner(), 0);
}

#[test]
fn first_error_stops_other_chunks_and_pool_is_reusable() {
    let rt = Runtime::new(Some(2)).unwrap();
    let chunks = AtomicUsize::new(0);
    let r = rt.parallel_for(0, 10_000, 1, |a, _| {
        chunks.fetch_add(1, Ordering::Relaxed);
        spin(Duration::from_micros(20));
        if a == 3 {
            Err(42)
        } else {
            Ok(())
        }
    });
    assert_eq!(r, Err(ParallelForError::Body(42)));
    assert!(chunks.into_inner() < 10_000);
    // On one thread the chunks run in order: exactly those up to the failing one.
    let one = Runtime::new(Some(1)).unwrap();
    let ran = AtomicUsize::new(0);
    let r = one.parallel_for(0, 10_000, 1, |a, _| {
        ran.fetch_add(1, Ordering::Relaxed);
        if a == 3 {
            Err(42)
        } else {
            Ok(())
        }
    });
    assert_eq!(r, Err(ParallelForError::Body(42)));
    assert_eq!(ran.into_inner(), 4);
    let sum = AtomicU64::new(0);
    rt.parallel_for(0, 100, 3, |a, b| {
        sum.fetch_add((a..b).sum::<i64>() as u64, Ordering::Relaxed);
        Ok(())
    })
    .unwrap();
    assert_eq!(sum.into_inner(), 4950);
}

#[test]
fn panic_in_body_becomes_error() {
    let rt = Runtime::new(Some(2)).unwrap();
    let r = rt.parallel_for(0, 100, 10, |a, _| {
        if a == 50 {
            panic!("chunk at {a}");
        }
        Ok(())
    });
    assert_eq!(r, Err(ParallelForError::Panic("chunk at 50".into())));
    assert_eq!(r.unwrap_err().code(), TESSERA_ERR_PANIC);
    assert_eq!(rt.parallel_for(0, 10, 1, |_, _| Ok(())), Ok(()));
}

#[test]
fn nested_parallel_for_in_same_pool() {
    // One worker thread: any blocking nested wait would deadlock here.
    for threads in [1, 2] {
        let rt = Runtime::new(Some(threads)).unwrap();
        let count = AtomicUsize::new(0);
        rt.parallel_for(0, 8, 1, |_, _| {
            rt.parallel_for(0, 100, 10, |a, b| {
                count.fetch_add((b - a) as usize, Ordering::Relaxed);
                Ok(())
            })
            .map_err(|e| e.code())
        })
        .unwrap();
        assert_eq!(count.into_inner(), 800);
    }
}

// ---- C ABI ----

struct Env {
    sum: AtomicU64,
    calls: AtomicUsize,
    fail_at: i64,
    rt: *const RuntimeHandle,
}

extern "C" fn sum_body(env: *mut c_void, lo: i64, hi: i64) -> i32 {
    // SAFETY (test): env points to a live `Env` shared read-only.
    let env = unsafe { &*(env as *const Env) };
    env.calls.fetch_add(1, Ordering::Relaxed);
    if (lo..hi).contains(&env.fail_at) {
        return 7;
    }
    env.sum
        .fetch_add((lo..hi).map(|i| i as u64).sum::<u64>(), Ordering::Relaxed);
    0
}

extern "C" fn nested_body(env: *mut c_void, lo: i64, hi: i64) -> i32 {
    // SAFETY (test): as above.
    let e = unsafe { &*(env as *const Env) };
    for _ in lo..hi {
        // SAFETY (test): e.rt is live for the outer call; env is an Env.
        let rc = unsafe { tessera_parallel_for(e.rt, 0, 100, 7, sum_body, env) };
        if rc != 0 {
            return rc;
        }
    }
    0
}

fn env(rt: *const RuntimeHandle, fail_at: i64) -> Env {
    Env {
        sum: AtomicU64::new(0),
        calls: AtomicUsize::new(0),
        fail_at,
        rt,
    }
}

#[test]
fn c_abi_entry_sums_and_reports_errors() {
    let rt = tessera_runtime_new(2);
    assert!(!rt.is_null());
    let e = env(rt, -1);
    let p = &e as *const Env as *mut c_void;
    // SAFETY (test): rt from tessera_runtime_new, e outlives the call.
    let rc = unsafe { tessera_parallel_for(rt, 0, 1000, 16, sum_body, p) };
    assert_eq!(rc, 0);
    assert_eq!(e.sum.load(Ordering::Relaxed), 499_500);

    let e = env(rt, 13);
    let p = &e as *const Env as *mut c_void;
    // SAFETY (test): as above.
    let rc = unsafe { tessera_parallel_for(rt, 0, 100_000, 1, sum_body, p) };
    assert_eq!(rc, 7);
    assert!(e.calls.load(Ordering::Relaxed) < 100_000);

    // Empty range, then the null (global) handle.
    // SAFETY (test): as above.
    assert_eq!(unsafe { tessera_parallel_for(rt, 5, 5, 1, sum_body, p) }, 0);
    let e = env(std::ptr::null(), -1);
    let p = &e as *const Env as *mut c_void;
    // SAFETY (test): null means the global runtime.
    let rc = unsafe { tessera_parallel_for(std::ptr::null(), 0, 10, 0, sum_body, p) };
    assert_eq!(rc, 0);
    assert_eq!(e.sum.load(Ordering::Relaxed), 45);
    // SAFETY (test): rt from tessera_runtime_new, no call in flight.
    unsafe { tessera_runtime_free(rt) };
}

#[test]
fn c_abi_nested_calls() {
    for threads in [1, 2] {
        let rt = tessera_runtime_new(threads);
        let e = env(rt, -1);
        let p = &e as *const Env as *mut c_void;
        // SAFETY (test): as above.
        let rc = unsafe { tessera_parallel_for(rt, 0, 10, 1, nested_body, p) };
        assert_eq!(rc, 0);
        assert_eq!(e.sum.load(Ordering::Relaxed), 10 * 4950);
        let e = env(rt, 50);
        let p = &e as *const Env as *mut c_void;
        // SAFETY (test): as above.
        let rc = unsafe { tessera_parallel_for(rt, 0, 10, 1, nested_body, p) };
        assert_eq!(rc, 7);
        // SAFETY (test): as above.
        unsafe { tessera_runtime_free(rt) };
    }
}

#[test]
fn global_runtime_has_threads() {
    assert!(Runtime::global().threads() >= 1);
    assert!(std::ptr::eq(
        tessera_runtime::tessera_runtime_global(),
        Runtime::global()
    ));
}

#[test]
fn the_earliest_failing_chunk_is_reported_whatever_the_schedule() {
    // Every chunk from 300 on fails, the earliest one only after a delay: a
    // first-observed rule would often report a later chunk.
    for threads in [1, 2] {
        let rt = Runtime::new(Some(threads)).unwrap();
        for round in 0..10 {
            let r = rt.parallel_for(0, 1000, 10, |a, _| {
                if a == 300 {
                    spin(Duration::from_millis(2));
                }
                if a >= 300 {
                    Err(a as i32)
                } else {
                    Ok(())
                }
            });
            assert_eq!(
                r,
                Err(ParallelForError::Body(300)),
                "{threads} threads, round {round}"
            );
        }
    }
}
