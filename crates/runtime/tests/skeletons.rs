//! Skeleton results against sequential oracles.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tessera_runtime::{Runtime, SkelError};

fn rt() -> Runtime {
    Runtime::new(Some(2)).unwrap()
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Euler's totient by counting (the SumEuler kernel).
fn totient(k: u64) -> u64 {
    (1..=k).filter(|&i| gcd(i, k) == 1).count() as u64
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

const SIZES: [usize; 7] = [0, 1, 2, 7, 13, 97, 101];

fn taus(n: usize) -> Vec<usize> {
    vec![1, 3, n.max(1), n + 1, 2 * n + 5]
}

type R<T> = Result<T, SkelError<String>>;

#[test]
fn par_map_matches_sequential_totients() {
    let rt = rt();
    for n in SIZES {
        let xs: Vec<u64> = (1..=n as u64).collect();
        let seq: Vec<u64> = xs.iter().map(|&k| totient(k)).collect();
        let par: R<Vec<u64>> = rt.par_map(|&k| Ok(totient(k)), &xs);
        assert_eq!(par.unwrap(), seq, "n = {n}");
    }
}

#[test]
fn par_map_chunk_matches_sequential_for_all_taus() {
    let rt = rt();
    for n in SIZES {
        let xs: Vec<i64> = (0..n as i64).map(|i| i * 7 - 30).collect();
        let seq: Vec<i64> = xs.iter().map(|x| x * x - 3 * x + 1).collect();
        for tau in taus(n) {
            let par: R<Vec<i64>> = rt.par_map_chunk(tau, |x| Ok(x * x - 3 * x + 1), &xs);
            assert_eq!(par.unwrap(), seq, "n = {n}, tau = {tau}");
        }
    }
}

#[test]
fn par_map_stride_matches_sequential_for_all_taus() {
    let rt = rt();
    for n in SIZES {
        let xs: Vec<u64> = (1..=n as u64).collect();
        let seq: Vec<u64> = xs.iter().map(|&k| totient(k)).collect();
        for tau in taus(n) {
            let par: R<Vec<u64>> = rt.par_map_stride(tau, |&k| Ok(totient(k)), &xs);
            assert_eq!(par.unwrap(), seq, "n = {n}, tau = {tau}");
        }
    }
}

#[test]
fn sum_euler_chunk_and_stride_agree() {
    let rt = rt();
    let xs: Vec<u64> = (1..=400).collect();
    let seq: u64 = xs.iter().map(|&k| totient(k)).sum();
    let c: R<Vec<u64>> = rt.par_map_chunk(17, |&k| Ok(totient(k)), &xs);
    let s: R<Vec<u64>> = rt.par_map_stride(17, |&k| Ok(totient(k)), &xs);
    assert_eq!(c.unwrap().iter().sum::<u64>(), seq);
    assert_eq!(s.unwrap().iter().sum::<u64>(), seq);
}

#[test]
fn stride_tasks_take_every_tau_th_element_and_reassemble_in_order() {
    let rt = rt();
    let xs: Vec<usize> = (0..23).collect();
    let tau = 5;
    // Each element reports which task ran it (the thread-independent
    // pattern is: element i belongs to task i % tau).
    let t = rt
        .par_map_stride_traced(tau, |&i| Ok::<_, String>(i), &xs, None)
        .unwrap();
    assert_eq!(t.value, xs);
    assert_eq!(t.tasks.len(), tau);
    for (j, rec) in t.tasks.iter().enumerate() {
        assert_eq!(rec.index, j);
        assert_eq!(rec.tau, tau);
    }
    // The cost callback sees each task's shape.
    let shapes = std::sync::Mutex::new(Vec::new());
    let cost = |s: &tessera_runtime::TaskShape| {
        shapes.lock().unwrap().push(*s);
        s.len as f64
    };
    let t = rt
        .par_map_stride_traced(tau, |&i| Ok::<_, String>(i * 10), &xs, Some(&cost))
        .unwrap();
    assert_eq!(t.value, xs.iter().map(|i| i * 10).collect::<Vec<_>>());
    let mut shapes = shapes.into_inner().unwrap();
    shapes.sort_by_key(|s| s.index);
    for (j, s) in shapes.iter().enumerate() {
        assert_eq!((s.first, s.step), (j, tau));
        assert_eq!(s.len, (23 - j).div_ceil(tau));
        assert_eq!(t.tasks[j].cost, Some(s.len as f64));
    }
}

#[test]
fn chunk_records_one_task_per_chunk() {
    let rt = rt();
    let xs: Vec<u32> = (0..50).collect();
    let t = rt
        .par_map_chunk_traced(7, |&x| Ok::<_, String>(x + 1), &xs, Some(&|s| s.len as f64))
        .unwrap();
    assert_eq!(t.tasks.len(), 8);
    assert_eq!(t.tasks.last().unwrap().cost, Some(1.0));
    assert!(t.tasks.iter().all(|r| r.tau == 7));
}

#[test]
fn zero_tau_is_an_error() {
    let rt = rt();
    let r: R<Vec<u32>> = rt.par_map_chunk(0, |&x: &u32| Ok(x), &[1, 2]);
    assert_eq!(r, Err(SkelError::ZeroTau));
    let r: R<Vec<u32>> = rt.par_map_stride(0, |&x: &u32| Ok(x), &[1, 2]);
    assert_eq!(r, Err(SkelError::ZeroTau));
}

#[test]
fn error_in_one_task_stops_the_rest_and_pool_stays_usable() {
    let rt = rt();
    let n = 10_000;
    let xs: Vec<usize> = (0..n).collect();
    let ran = AtomicUsize::new(0);
    let r: R<Vec<usize>> = rt.par_map(
        |&i| {
            ran.fetch_add(1, Ordering::Relaxed);
            spin(Duration::from_micros(20));
            if i == 5 {
                Err(format!("bad element {i}"))
            } else {
                Ok(i)
            }
        },
        &xs,
    );
    assert_eq!(r, Err(SkelError::Task("bad element 5".to_string())));
    let ran = ran.into_inner();
    assert!(ran < n, "all {n} tasks ran despite the error");
    // Same for chunk and stride.
    let r: R<Vec<usize>> =
        rt.par_map_chunk(10, |&i| if i == 77 { Err("x".into()) } else { Ok(i) }, &xs);
    assert_eq!(r, Err(SkelError::Task("x".into())));
    let r: R<Vec<usize>> =
        rt.par_map_stride(10, |&i| if i == 77 { Err("y".into()) } else { Ok(i) }, &xs);
    assert_eq!(r, Err(SkelError::Task("y".into())));
    // The pool is still usable.
    let ok: R<Vec<usize>> = rt.par_map_chunk(100, |&i| Ok(i * 2), &xs);
    assert_eq!(ok.unwrap(), xs.iter().map(|i| i * 2).collect::<Vec<_>>());
}

#[test]
fn panic_in_task_becomes_error() {
    let rt = rt();
    let xs: Vec<u32> = (0..100).collect();
    let r: R<Vec<u32>> = rt.par_map_chunk(
        3,
        |&i| {
            if i == 42 {
                panic!("task {i} exploded");
            }
            Ok(i)
        },
        &xs,
    );
    match r {
        Err(SkelError::Panic(m)) => assert!(m.contains("task 42 exploded"), "{m}"),
        other => panic!("expected a panic error, got {other:?}"),
    }
    let again: R<Vec<u32>> = rt.par_map(|&i| Ok(i), &xs);
    assert_eq!(again.unwrap(), xs);
}

fn fib_div(n: &u64) -> Vec<u64> {
    if *n < 2 {
        vec![]
    } else {
        vec![n - 1, n - 2]
    }
}

fn sum_ok(v: Vec<u64>) -> Result<u64, String> {
    Ok(v.iter().sum())
}

#[test]
fn par_divconq_fib_matches_sequential() {
    let rt = rt();
    for n in [0u64, 1, 2, 3, 7, 13, 20] {
        let r = rt.par_divconq(fib_div, sum_ok, Ok, |n: &u64| *n < 2, n);
        assert_eq!(r.unwrap(), fib(n), "fib {n}");
    }
}

#[test]
fn par_divconq_thresh_fib_matches_sequential_for_all_taus() {
    let rt = rt();
    for n in [0u64, 1, 2, 3, 7, 13, 22] {
        for tau in [0usize, 1, 5, n as usize, n as usize + 1, 100] {
            let r = rt.par_divconq_thresh(tau, |n: &u64| *n as usize, fib_div, sum_ok, Ok, n);
            assert_eq!(r.unwrap(), fib(n), "fib {n}, tau {tau}");
        }
    }
}

type Range = (u64, u64);

fn range_div(r: &Range) -> Vec<Range> {
    let (lo, hi) = *r;
    if hi - lo <= 1 {
        vec![]
    } else {
        let mid = lo + (hi - lo) / 2;
        vec![(lo, mid), (mid, hi)]
    }
}

fn range_leaf(r: Range) -> Result<u64, String> {
    Ok(if r.1 > r.0 { totient(r.0) } else { 0 })
}

#[test]
fn par_divconq_thresh_sum_euler_over_range() {
    let rt = rt();
    for n in [0u64, 1, 2, 13, 97, 300] {
        let seq: u64 = (0..n).map(totient).sum();
        for tau in [1usize, 4, n as usize, n as usize + 1] {
            let r = rt.par_divconq_thresh(
                tau,
                |r: &Range| (r.1 - r.0) as usize,
                range_div,
                sum_ok,
                range_leaf,
                (0, n),
            );
            assert_eq!(r.unwrap(), seq, "n {n}, tau {tau}");
        }
    }
}

#[test]
fn divconq_thresh_records_tasks_at_threshold() {
    let rt = rt();
    let t = rt
        .par_divconq_thresh_traced(
            8,
            |r: &Range| (r.1 - r.0) as usize,
            range_div,
            sum_ok,
            range_leaf,
            (0, 64),
            Some(&|s| s.len as f64),
        )
        .unwrap();
    assert_eq!(t.value, (0..64).map(totient).sum::<u64>());
    assert_eq!(t.tasks.len(), 8);
    assert!(t.tasks.iter().all(|r| r.cost == Some(8.0)));
}

#[test]
fn divconq_errors_and_panics() {
    let rt = rt();
    let leaves = AtomicUsize::new(0);
    let r = rt.par_divconq_thresh(
        2,
        |r: &Range| (r.1 - r.0) as usize,
        range_div,
        sum_ok,
        |r: Range| {
            leaves.fetch_add(1, Ordering::Relaxed);
            spin(Duration::from_micros(20));
            if r.0 == 3 {
                Err("leaf 3".to_string())
            } else {
                Ok(r.0)
            }
        },
        (0, 4096),
    );
    assert_eq!(r, Err(SkelError::Task("leaf 3".into())));
    assert!(leaves.into_inner() < 4096);
    let r = rt.par_divconq(
        fib_div,
        |v: Vec<u64>| -> Result<u64, String> {
            if v.contains(&5) {
                panic!("comb saw 5")
            }
            Ok(v.iter().sum())
        },
        Ok,
        |n: &u64| *n < 2,
        10,
    );
    assert!(matches!(r, Err(SkelError::Panic(m)) if m.contains("comb saw 5")));
    let r = rt.par_divconq_thresh(3, |n: &u64| *n as usize, fib_div, sum_ok, Ok, 15);
    assert_eq!(r.unwrap(), fib(15));
}

#[test]
fn nested_skeletons_in_the_same_pool() {
    let rt = rt();
    let rows: Vec<u64> = (0..16).collect();
    let r: R<Vec<u64>> = rt.par_map(
        |&i| {
            let cols: Vec<u64> = (0..50).collect();
            let inner: R<Vec<u64>> = rt.par_map_chunk(4, |&j| Ok(i * j), &cols);
            inner.map(|v| v.iter().sum()).map_err(|e| e.to_string())
        },
        &rows,
    );
    let seq: Vec<u64> = rows.iter().map(|i| (0..50).map(|j| i * j).sum()).collect();
    assert_eq!(r.unwrap(), seq);
}

#[test]
fn the_earliest_failing_element_is_reported_whatever_the_schedule() {
    // Elements from 600 on fail, the later ones fast and the earliest one
    // after a delay, so a schedule-dependent "first error" would often name a
    // later element. Sequential semantics name element 600.
    let rt = rt();
    let xs: Vec<usize> = (0..2000).collect();
    let f = |&i: &usize| {
        if i == 600 {
            spin(Duration::from_millis(3));
        }
        if i >= 600 {
            Err(format!("bad element {i}"))
        } else {
            Ok(i)
        }
    };
    let want = Err(SkelError::Task("bad element 600".to_string()));
    for round in 0..5 {
        for tau in [1, 7, 64, 599, 601, 5000] {
            let r: R<Vec<usize>> = rt.par_map_chunk(tau, f, &xs);
            assert_eq!(r, want, "chunk tau {tau} round {round}");
            let r: R<Vec<usize>> = rt.par_map_stride(tau, f, &xs);
            assert_eq!(r, want, "stride tau {tau} round {round}");
        }
        let ctl =
            tessera_runtime::Controller::new(&rt, tessera_runtime::ControllerConfig::default());
        let r = ctl.map_chunk(f, &xs, None).map(|r| r.value);
        assert_eq!(r, want, "adaptive chunk round {round}");
        let r = ctl.map_stride(f, &xs, None).map(|r| r.value);
        assert_eq!(r, want, "adaptive stride round {round}");
    }
}
