//! Adaptive controller: results equal the skeletons', and with synthetic
//! tasks whose time is a known function of tau, tasks converge into the
//! window. Windows are small (1–16 ms, target 4 ms) so the tests are fast,
//! and wide enough (a factor 4 either side of the target) for a noisy,
//! shared machine.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tessera_runtime::{Controller, ControllerConfig, CostDerivative, Runtime, SkelError, PHI};

/// Busy-waits `d` of wall time (robust to preemption: a descheduled spin
/// ends as soon as it runs again).
fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The timing tests run one at a time so that they do not compete for the
/// (possibly only two) cores.
static TIMING: Mutex<()> = Mutex::new(());

fn timing() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|p| p.into_inner())
}

const PER_ELEMENT: Duration = Duration::from_micros(20);

fn cfg() -> ControllerConfig {
    ControllerConfig::with_window(1.0, 16.0)
}

#[test]
fn chunk_controller_converges_into_window() {
    let _serial = timing();
    let rt = Runtime::new(Some(2)).unwrap();
    let ctl = Controller::new(&rt, cfg());
    let xs: Vec<u64> = (0..24_000).collect();
    let run = ctl
        .map_chunk(
            |&x| {
                spin(PER_ELEMENT);
                Ok::<_, String>(x * 3 + 1)
            },
            &xs,
            None,
        )
        .unwrap();
    println!("{}", run.log());
    assert_eq!(run.value, xs.iter().map(|x| x * 3 + 1).collect::<Vec<_>>());
    assert!(run.decisions[0].noisy, "20 µs tasks must be flagged noisy");
    assert!(run.decisions[0].note.contains("noise"));
    let f = run.in_window_fraction.expect("batches after adaptation");
    assert!(f >= 0.9, "only {:.0}% in window\n{}", f * 100.0, run.log());
    // tau ≈ 4 ms / 20 µs = 200 (allow for noise).
    assert!((50..=800).contains(&run.final_tau), "tau {}", run.final_tau);
}

#[test]
fn chunk_controller_uses_measured_costs() {
    let _serial = timing();
    let rt = Runtime::new(Some(2)).unwrap();
    let ctl = Controller::new(&rt, cfg());
    let xs: Vec<u64> = (0..16_000).collect();
    let cost = |s: &tessera_runtime::TaskShape| s.len as f64 * 5.0;
    let run = ctl
        .map_chunk(
            |&x| {
                spin(PER_ELEMENT);
                Ok::<_, String>(x)
            },
            &xs,
            Some(&cost),
        )
        .unwrap();
    assert_eq!(run.value, xs);
    assert!(run.tasks.iter().all(|r| r.cost.is_some()));
    assert!(run.decisions.iter().any(|d| d.note.contains("measured")));
    let f = run.in_window_fraction.unwrap();
    assert!(f >= 0.9, "only {:.0}% in window\n{}", f * 100.0, run.log());
}

#[test]
fn stride_controller_converges_into_window() {
    let _serial = timing();
    let rt = Runtime::new(Some(2)).unwrap();
    let ctl = Controller::new(&rt, cfg());
    let xs: Vec<u64> = (0..24_000).collect();
    let run = ctl
        .map_stride(
            |&x| {
                spin(PER_ELEMENT);
                Ok::<_, String>(x ^ 0x55)
            },
            &xs,
            None,
        )
        .unwrap();
    println!("{}", run.log());
    assert_eq!(run.value, xs.iter().map(|x| x ^ 0x55).collect::<Vec<_>>());
    let f = run.in_window_fraction.expect("batches after adaptation");
    assert!(f >= 0.9, "only {:.0}% in window\n{}", f * 100.0, run.log());
}

type Range = (u64, u64);

fn halve(r: &Range) -> Vec<Range> {
    let (lo, hi) = *r;
    if hi - lo <= 1 {
        vec![]
    } else {
        let mid = lo + (hi - lo) / 2;
        vec![(lo, mid), (mid, hi)]
    }
}

#[test]
fn divconq_controller_converges_linear_recursion() {
    let _serial = timing();
    let rt = Runtime::new(Some(2)).unwrap();
    // 64 work-list sub-problems of 256 elements, in 8 batches of 8.
    let ctl = Controller::new(&rt, cfg());
    // Leaves of 128/256/512 elements take 2.6/5.1/10.2 ms: all in the window.
    let n = 1u64 << 14;
    let run = ctl
        .divconq_thresh(
            CostDerivative::Linear,
            |r: &Range| (r.1 - r.0) as usize,
            halve,
            |v: Vec<u64>| Ok::<_, String>(v.iter().sum()),
            |r: Range| {
                if r.1 > r.0 {
                    spin(PER_ELEMENT);
                    Ok(r.0)
                } else {
                    Ok(0)
                }
            },
            (0, n),
            None,
        )
        .unwrap();
    println!("{}", run.log());
    assert_eq!(run.value, n * (n - 1) / 2);
    let f = run.in_window_fraction.expect("batches after adaptation");
    assert!(f >= 0.9, "only {:.0}% in window\n{}", f * 100.0, run.log());
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[test]
fn divconq_controller_fib_exponential_model() {
    let rt = Runtime::new(Some(2)).unwrap();
    let ctl = Controller::new(&rt, ControllerConfig::with_window(0.2, 1.0));
    for n in [0u64, 1, 2, 10, 24] {
        let run = ctl
            .divconq_thresh(
                CostDerivative::Exponential { base: PHI },
                |n: &u64| *n as usize,
                |n: &u64| if *n < 2 { vec![] } else { vec![n - 1, n - 2] },
                |v: Vec<u64>| Ok::<_, String>(v.iter().sum()),
                Ok,
                n,
                None,
            )
            .unwrap();
        assert_eq!(run.value, fib(n), "fib {n}");
        assert!(run
            .decisions
            .iter()
            .all(|d| d.tau_new >= 1 && d.tau_new <= (n as usize).max(1)));
    }
}

#[test]
fn controller_errors_are_returned() {
    let rt = Runtime::new(Some(2)).unwrap();
    let ctl = Controller::new(&rt, cfg());
    let xs: Vec<u64> = (0..5000).collect();
    let r = ctl.map_chunk(|&x| if x == 4321 { Err("bad") } else { Ok(x) }, &xs, None);
    assert!(matches!(r, Err(SkelError::Task("bad"))));
    let r = ctl.map_stride(
        |&x| {
            if x == 17 {
                panic!("p17")
            } else {
                Ok::<_, &str>(x)
            }
        },
        &xs,
        None,
    );
    assert!(matches!(r, Err(SkelError::Panic(m)) if m == "p17"));
    // Empty input.
    let r = ctl
        .map_chunk(|&x: &u64| Ok::<_, String>(x), &[], None)
        .unwrap();
    assert!(r.value.is_empty() && r.decisions.is_empty());
    assert_eq!(r.in_window_fraction, None);
}

#[test]
fn chunk_cut_off_bounds_tasks_when_cost_jumps() {
    let _serial = timing();
    let rt = Runtime::new(Some(2)).unwrap();
    let ctl = Controller::new(&rt, cfg());
    // 3000 cheap elements (5 µs), then 1000 costly ones (200 µs): a tau
    // tuned on the cheap part would make 100+ ms tasks without the cut-off.
    let xs: Vec<u64> = (0..4000).collect();
    let run = ctl
        .map_chunk(
            |&x| {
                spin(Duration::from_micros(if x < 3000 { 5 } else { 200 }));
                Ok::<_, String>(x + 7)
            },
            &xs,
            None,
        )
        .unwrap();
    println!("{}", run.log());
    assert_eq!(run.value, xs.iter().map(|x| x + 7).collect::<Vec<_>>());
    assert!(
        run.decisions.iter().any(|d| d.note.contains("cut off")),
        "{}",
        run.log()
    );
}

#[test]
fn chunk_probe_caps_a_too_large_initial_tau() {
    let rt = Runtime::new(Some(2)).unwrap();
    let ctl = Controller::new(
        &rt,
        ControllerConfig {
            tau0: 3200,
            ..cfg()
        },
    );
    let xs: Vec<u64> = (0..3200).collect();
    let run = ctl
        .map_chunk(
            |&x| {
                spin(Duration::from_micros(2));
                Ok::<_, String>(x)
            },
            &xs,
            None,
        )
        .unwrap();
    assert_eq!(run.value, xs);
    // probe_parts = 32: no task before the first trusted decision takes
    // more than 100 of the 3200 elements.
    let first = &run.tasks[0];
    assert!(first.tau <= 100, "first task took {} elements", first.tau);
    assert!(run.tasks.len() > 2);
}

#[test]
fn divconq_agglomerates_small_leftovers() {
    let _serial = timing();
    let rt = Runtime::new(Some(2)).unwrap();
    let ctl = Controller::new(&rt, ControllerConfig { tau0: 16, ..cfg() });
    // The depth-first descent to the first 16-element leaf leaves siblings
    // of 16, 32, 64, ... elements on the stack; once tau is ~200, the small
    // ones are predicted under 1 ms and run together as one task.
    let n = 1u64 << 14;
    let run = ctl
        .divconq_thresh(
            CostDerivative::Linear,
            |r: &Range| (r.1 - r.0) as usize,
            halve,
            |v: Vec<u64>| Ok::<_, String>(v.iter().sum()),
            |r: Range| {
                spin(PER_ELEMENT);
                Ok(r.0)
            },
            (0, n),
            None,
        )
        .unwrap();
    println!("{}", run.log());
    assert_eq!(run.value, n * (n - 1) / 2);
    assert!(
        run.decisions
            .iter()
            .any(|d| d.note.contains("agglomerated")),
        "{}",
        run.log()
    );
}
