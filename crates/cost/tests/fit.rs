//! CMW calibration: design rows, NNLS fits, R² and leave-one-out errors.

use std::collections::HashMap;
use tessera_cost::*;
use tessera_ir::{ArgValue, ArrayData, Scalar, ScalarTy};

/// A deterministic pseudo-random number in [0, 1).
fn lcg(s: &mut u64) -> f64 {
    *s = s
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*s >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn recovers_known_weights_from_synthetic_rows() {
    // Weights with zeros, as in the paper's fit (some classes get weight 0).
    let w_true = [0.0, 1.5, 2.0, 12.0, 0.7, 0.0, 40.0, 5.0];
    let mut s = 42;
    let rows: Vec<Vec<f64>> = (0..30)
        .map(|_| (0..NCLASSES).map(|_| (lcg(&mut s) * 1e4).round()).collect())
        .collect();
    let times: Vec<f64> = rows
        .iter()
        .map(|r| r.iter().zip(&w_true).map(|(a, b)| a * b).sum())
        .collect();
    let w = fit_cmw(&rows, &times).unwrap();
    for (a, b) in w.iter().zip(&w_true) {
        assert!((a - b).abs() < 1e-8, "{w:?}");
    }
    assert!((r_squared(&rows, &times, &w).unwrap() - 1.0).abs() < 1e-12);
    let loo = loo_errors(&rows, &times).unwrap();
    assert_eq!(loo.len(), rows.len());
    assert!(loo.iter().all(|e| e.abs() < 1e-6), "{loo:?}");
    assert!(loo_rmse(&rows, &times).unwrap() < 1e-6);
}

#[test]
fn negative_weights_are_clamped_and_noise_lowers_r2() {
    // Times that would need a negative weight for class 0: NNLS returns w ≥ 0.
    let mut s = 7;
    let rows: Vec<Vec<f64>> = (0..20)
        .map(|_| (0..NCLASSES).map(|_| lcg(&mut s) * 100.0).collect())
        .collect();
    let w_true = [-1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
    let times: Vec<f64> = rows
        .iter()
        .map(|r| r.iter().zip(&w_true).map(|(a, b)| a * b).sum::<f64>() + 50.0 * lcg(&mut s))
        .collect();
    let w = fit_cmw(&rows, &times).unwrap();
    assert!(w.iter().all(|&x| x >= 0.0));
    let r2 = r_squared(&rows, &times, &w).unwrap();
    assert!(r2 < 1.0 && r2 > 0.0, "{r2}");
    assert!(loo_rmse(&rows, &times).unwrap() > 0.0);
}

#[test]
fn design_rows_of_real_kernels() {
    let prog = tessera_sema::compile_source(
        "#include <math.h>
        double k(int n, double A[n]) {
            double s = 0.0;
            for (int i = 0; i < n; i++) {
                if (A[i] > 0.5) s += sqrt(A[i]); else s -= A[i] * 3.0;
            }
            return s;
        }",
        &HashMap::new(),
    )
    .unwrap();
    let args = |n: usize| {
        let mut a = ArrayData::zeros(ScalarTy::F64, &[n]).unwrap();
        a.fill_random(3, "A");
        vec![ArgValue::Scalar(Scalar::I32(n as i32)), ArgValue::Array(a)]
    };
    let w_true = [1.0, 0.5, 1.0, 20.0, 0.25, 0.1, 100.0, 10.0];
    let mut rows = vec![];
    for n in [1, 5, 20, 100, 400] {
        let a = args(n);
        let row = design_row(&prog, "k", &a).unwrap();
        assert_eq!(row.len(), NCLASSES);
        // The caller's arguments are untouched and the row is Σ n_j · classes_j.
        assert_eq!(a, args(n));
        let mut a2 = a.clone();
        let p = count_run(&prog, "k", &mut a2, Default::default()).unwrap();
        assert_eq!(row, p.class_totals().to_vec());
        let by_row = row.iter().zip(&w_true).map(|(a, b)| a * b).sum::<f64>();
        let gamma = p.gamma(&CostModel::Cmw(Weights(w_true)));
        assert!(
            (by_row - gamma).abs() <= 1e-12 * gamma,
            "{by_row} vs {gamma}"
        );
        rows.push(row);
    }
    // Rows grow with n.
    assert!(rows
        .windows(2)
        .all(|w| w[1].iter().sum::<f64>() > w[0].iter().sum::<f64>()));
    let times: Vec<f64> = rows
        .iter()
        .map(|r| r.iter().zip(&w_true).map(|(a, b)| a * b).sum())
        .collect();
    // The columns are collinear (one kernel), so the weights are not identified, but the
    // fit reproduces the times.
    let w = fit_cmw(&rows, &times).unwrap();
    assert!(r_squared(&rows, &times, &w).unwrap() > 1.0 - 1e-9);
}

#[test]
fn malformed_input_is_an_error() {
    assert!(matches!(
        fit_cmw(&[vec![1.0; NCLASSES]], &[1.0, 2.0]),
        Err(CostError::Mismatch { rows: 1, times: 2 })
    ));
    assert!(matches!(
        fit_cmw(&[], &[]),
        Err(CostError::Nnls(NnlsError::Empty { .. }))
    ));
    assert!(matches!(
        r_squared(&[vec![1.0, 2.0]], &[1.0], &[1.0]),
        Err(CostError::Width { .. })
    ));
    assert!(matches!(
        loo_errors(&[vec![1.0]], &[1.0]),
        Err(CostError::TooFewSamples(1))
    ));
    let prog = tessera_sema::compile_source("int k(int n) { return n; }", &HashMap::new()).unwrap();
    assert!(matches!(
        design_row(&prog, "k", &[]),
        Err(CostError::Runtime(_))
    ));
}

mod profile {
    use tessera_cost::calibrate::*;
    use tessera_cost::jit::{LoopTerm, Machine, MACHINE_FEATURES, THROUGHPUT};
    use tessera_cost::NCLASSES;

    const NM: usize = MACHINE_FEATURES.len();

    fn samples() -> Vec<Sample> {
        // Times exactly linear in the class totals (CMW and CMW-M fit them exactly), labels
        // unrelated to them (CM0 does not).
        let w = [0.5, 1.0, 2.0, 10.0, 0.25, 0.0, 30.0, 4.0];
        let wm: Vec<f64> = (0..NM)
            .map(|k| [1.0, 2.0, 0.5, 0.25, 1.5, 8.0, 0.75, 3.0][k % 8])
            .collect();
        let mut st = 99u64;
        (0..24)
            .map(|i| {
                let mut c = [0.0; NCLASSES];
                for x in c.iter_mut() {
                    *x = (super::lcg(&mut st) * 1e4).round() + 1.0;
                }
                // No loop with a recurrence: the recurrence features are zero.
                let m: Vec<f64> = (0..NM)
                    .map(|k| {
                        let x = (super::lcg(&mut st) * 1e4).round() + 1.0;
                        if k < THROUGHPUT {
                            x
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let t: f64 = c.iter().zip(&w).map(|(a, b)| a * b).sum();
                let tm: f64 = m.iter().zip(&wm).map(|(a, b)| a * b).sum();
                Sample {
                    name: format!("p{i}"),
                    size: "n=1".into(),
                    labels: (i % 3 + 1) as f64 * 1e4,
                    classes: c,
                    // Both exact at once: scale the machine rows to the same time.
                    machine: m.iter().map(|x| x * t / tm).collect(),
                    loops: Vec::new(),
                    time_ns: t,
                }
            })
            .collect()
    }

    #[test]
    fn exact_data_fits_exactly_and_the_profile_round_trips() {
        let names = MACHINE_FEATURES.iter().map(|k| k.to_string()).collect();
        let p = MachineProfile::from_samples(samples(), "test-cpu".into(), names).unwrap();
        let cmw = p.fit(Family::Cmw).unwrap();
        assert!((cmw.r2 - 1.0).abs() < 1e-9, "{cmw:?}");
        assert!(cmw.loo_median < 1e-6 && cmw.loo_p90 < 1e-6, "{cmw:?}");
        let w = [0.5, 1.0, 2.0, 10.0, 0.25, 0.0, 30.0, 4.0];
        for (a, b) in cmw.coef.iter().zip(w) {
            assert!((a - b).abs() < 1e-6, "{:?}", cmw.coef);
        }
        assert!((p.fit(Family::Mcw).unwrap().r2 - 1.0).abs() < 1e-9);
        assert!(p.fit(Family::Cm0).unwrap().r2 < 0.9);
        let dir = std::env::temp_dir().join(format!("tessera-profile-{}", std::process::id()));
        let path = dir.join("sub").join("profile.json");
        p.save(&path).unwrap();
        let q = MachineProfile::load(&path).unwrap();
        assert_eq!(p, q);
        assert!(
            q.model(Family::Cmw).is_some() && q.block_weights(Family::Mcw).unwrap().len() == NM
        );
        // Another version, or garbage, is a clear error.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"version\": 2", "\"version\": 99")).unwrap();
        let e = MachineProfile::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("version 99") && e.contains("tessera calibrate"),
            "{e}"
        );
        std::fs::write(&path, "{ not json").unwrap();
        assert!(MachineProfile::load(&path).is_err());
        assert!(MachineProfile::load(&dir.join("missing.json")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn cmw_m_fits_the_max_of_throughput_and_recurrence() {
        // Times made by the max model itself with known weights: every sample has loops
        // with a recurrence, some bound by it and some by their throughput. The alternating
        // fit must find a model that predicts every time (the decisions are what is hard).
        let mut st = 7u64;
        let mut w = vec![0.0; NM];
        for (k, x) in w.iter_mut().enumerate() {
            *x = if k < THROUGHPUT {
                [0.2, 0.5, 1.0, 0.0][k % 4]
            } else {
                1.0 + k as f64
            };
        }
        let samples: Vec<Sample> = (0..40)
            .map(|i| {
                let mut totals = vec![0.0; NM];
                for x in totals.iter_mut().take(THROUGHPUT) {
                    *x = (super::lcg(&mut st) * 1e3).round();
                }
                let mut loops = Vec::new();
                for _ in 0..3 {
                    let t: Vec<f64> = (0..THROUGHPUT)
                        .map(|_| (super::lcg(&mut st) * 1e4).round())
                        .collect();
                    let mut l = [0.0; 5];
                    let heavy = super::lcg(&mut st) * 2.0;
                    for x in l.iter_mut() {
                        *x = (super::lcg(&mut st) * 1e3 * heavy).round();
                    }
                    for (a, b) in totals.iter_mut().zip(&t) {
                        *a += b;
                    }
                    for (a, b) in totals.iter_mut().skip(THROUGHPUT).zip(&l) {
                        *a += b;
                    }
                    loops.push(LoopTerm { t, l });
                }
                let m = Machine { totals, loops };
                Sample {
                    name: format!("p{i}"),
                    size: "n=1".into(),
                    labels: 1.0,
                    classes: [1.0; NCLASSES],
                    time_ns: m.gamma(&w),
                    machine: m.totals,
                    loops: m.loops,
                }
            })
            .collect();
        // Both kinds of decision occur.
        let bound = |s: &Sample| {
            s.loops
                .iter()
                .filter(|l| {
                    let t: f64 = l.t.iter().zip(&w).map(|(a, b)| a * b).sum();
                    let r: f64 = l.l.iter().zip(&w[THROUGHPUT..]).map(|(a, b)| a * b).sum();
                    r > t
                })
                .count()
        };
        let nb: usize = samples.iter().map(bound).sum();
        assert!(
            nb > 10 && nb < 110,
            "{nb} of 120 loops bound by their recurrence"
        );
        let f = fit(&samples, Family::Mcw).unwrap();
        assert!(f.r2 > 0.999_999, "{f:?}");
        assert!(f.loo_median < 1e-4, "{f:?}");
        for (s, p) in samples.iter().zip(&f.predicted) {
            assert!(
                (p - s.time_ns).abs() <= 1e-6 * s.time_ns,
                "{p} vs {}",
                s.time_ns
            );
        }
        // The sum model (CMC-M's shape with per-class weights) cannot do this.
        assert!(fit(&samples, Family::Mcc).unwrap().r2 < 0.99);
    }

    #[test]
    fn bad_samples_are_errors() {
        let mut s = samples();
        assert!(fit(&s[..1], Family::Cmw).is_err());
        s[3].time_ns = 0.0;
        assert!(fit(&s, Family::Cmc).is_err());
        s[3].time_ns = f64::NAN;
        assert!(fit(&s, Family::Cmc).is_err());
    }

    #[test]
    fn quantiles_and_define_lines() {
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 0.5), 2.0);
        assert_eq!(
            quantile(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 0.9),
            9.0
        );
        assert_eq!(
            parse_define_line("-D n=10 -Dm=3 -D alpha=1.5"),
            vec![
                ("n".to_string(), "10".to_string()),
                ("m".to_string(), "3".to_string()),
                ("alpha".to_string(), "1.5".to_string())
            ]
        );
    }
}

/// The prepared Γ of the block models (used per task by `skel --cost`) equals the Γ computed
/// from the run's features, at every memory level, on a program with recurrences.
#[test]
fn gamma_plan_equals_the_feature_gamma() {
    use tessera_cost::jit::{cache_sizes, memory_level, BlockBuild, MACHINE_FEATURES};
    let src = "double f(int n, double A[n]) { double s = 0.0; long x = 3; for (int i = 0; i < n; i++) { s = s / 1.5 + A[(i * 7) % n]; x = x * 31 + 1; if (A[i] > 0.5) s += 1.0; } return s + x; }";
    let prog = tessera_sema::compile_source(src, &HashMap::new()).unwrap();
    let b = BlockBuild::compile(&prog, &tessera_jit::Options::default()).unwrap();
    let fid = b.compiled().func_id("f").unwrap();
    let n = 1000usize;
    let mut a = ArrayData::zeros(ScalarTy::F64, &[n]).unwrap();
    a.fill_random(3, "A");
    let mut args = vec![ArgValue::Scalar(Scalar::I32(n as i32)), ArgValue::Array(a)];
    let mut counts = vec![0i64; b.blocks().len()];
    b.call_counted(fid, &mut args, &mut counts).unwrap();
    let (l2, l3) = cache_sizes();
    let mut st = 5u64;
    for trial in 0..20 {
        let w: Vec<f64> = (0..MACHINE_FEATURES.len())
            .map(|_| {
                if lcg(&mut st) < 0.3 {
                    0.0
                } else {
                    lcg(&mut st) * 3.0
                }
            })
            .collect();
        for fp in [0, l2 + 1, l3 + 1] {
            let level = memory_level(fp);
            let want = b.gamma(&counts, fp, &w);
            let got = b.gamma_plan(&w, level).gamma(&counts);
            assert!(
                (want - got).abs() <= 1e-9 * want.abs().max(1.0),
                "trial {trial} level {level}: {want} vs {got}"
            );
        }
    }
}
