//! `tessera calibrate` and `tessera skel --cost` end to end: a small calibration writes a
//! profile that `skel --cost` then reads; every model gives per-task costs whose results are
//! those of the uncounted run; a missing or bad profile is a clear error.

mod common;
use common::*;

fn run(args: &[&str]) -> (i32, String, String) {
    let o = tessera().args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{out}"))
}

#[test]
fn calibrate_then_skel_with_every_model() {
    let dir = std::env::temp_dir().join(format!("tessera-cal-{}", std::process::id()));
    let prof = dir.join("profile.json");
    let plots = dir.join("plots");
    let root = env!("CARGO_MANIFEST_DIR").to_string() + "/../..";
    let suite = format!("{root}/examples/calibrate");
    let (code, out, err) = run(&[
        "calibrate",
        "--suite",
        &suite,
        "--runs",
        "1",
        "--scale",
        "0.25",
        "--profile",
        prof.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    for m in ["CM0 ", "CMC ", "CMW ", "CMC-M ", "CMW-M "] {
        line(&out, m);
    }
    assert!(prof.exists() && plots.join("predicted_vs_measured.svg").exists());
    let svg = std::fs::read_to_string(plots.join("predicted_vs_measured.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("CMW-M"), "{svg}");

    let sumeuler = format!("{root}/examples/kernels/sumeuler.c");
    let base = [
        "skel",
        &sumeuler,
        "--entry",
        "totient",
        "--skeleton",
        "chunk",
        "--over",
        "1..400",
        "--tau",
        "37",
        "--mode",
        "jit",
        "--threads",
        "2",
    ];
    let (code, plain, err) = run(&base);
    assert_eq!(code, 0, "{err}");
    for m in ["cm0", "cmc", "cmw", "cmc-m", "cmw-m"] {
        let mut a = base.to_vec();
        a.extend(["--cost", m, "--profile", prof.to_str().unwrap()]);
        let (code, out, err) = run(&a);
        assert_eq!(code, 0, "{m}: {out}{err}");
        assert_eq!(line(&out, "result:"), line(&plain, "result:"), "{m}");
        assert_eq!(line(&out, "checksum"), line(&plain, "checksum"), "{m}");
        let c = line(&out, "cost ");
        assert!(c.contains("k = t/Γ"), "{m}: {c}");
    }
    // Adaptive with a calibrated model: the first τ is predicted before the run.
    let mut a = base.to_vec();
    a.retain(|x| *x != "--tau" && *x != "37");
    a.extend([
        "--adaptive",
        "--cost",
        "cmw-m",
        "--profile",
        prof.to_str().unwrap(),
    ]);
    let (code, out, err) = run(&a);
    assert_eq!(code, 0, "{out}{err}");
    assert!(line(&out, "CMW-M predicts").contains("first tau"), "{out}");
    assert_eq!(line(&out, "result:"), line(&plain, "result:"));

    // Predicted before running: gemm's statement instances counted by isl at the requested
    // sizes (C *= beta: ni·nj; the update: ni·nj·nk), the prediction and the check.
    let gemm = format!("{root}/examples/kernels/gemm.c");
    let mut a = vec![
        "predict", &gemm, "--entry", "gemm", "--check", "--runs", "1",
    ];
    for d in ["ni=100", "nj=110", "nk=120", "alpha=1.5", "beta=1.2"] {
        a.extend(["-D", d]);
    }
    a.extend(["--profile", prof.to_str().unwrap()]);
    let (code, out, err) = run(&a);
    assert_eq!(code, 0, "{out}{err}");
    let counts: Vec<u64> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("0/S"))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(counts.contains(&(100 * 110)), "{out}");
    assert!(counts.contains(&(100 * 110 * 120)), "{out}");
    assert!(line(&out, "predicted:").contains(" ms"), "{out}");
    assert!(
        line(&out, "measured:").contains("predicted / measured"),
        "{out}"
    );
    // A kernel whose loop is not affine cannot be counted before running.
    let collatz = format!("{root}/examples/kernels/collatz.c");
    let (code, _, err) = run(&[
        "predict",
        &collatz,
        "--entry",
        "collatz",
        "-D",
        "n=100",
        "--profile",
        prof.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("polyhedral model"), "{err}");

    // Errors: a model that needs a profile without one, a bad profile, --cost without jit.
    let missing = dir.join("none.json");
    let mut a = base.to_vec();
    a.extend(["--cost", "cmw", "--profile", missing.to_str().unwrap()]);
    let (code, _, err) = run(&a);
    assert_eq!(code, 1);
    assert!(err.contains("tessera calibrate"), "{err}");
    std::fs::write(&missing, "[]").unwrap();
    let (code, _, err) = run(&a);
    assert_eq!(code, 1, "{err}");
    let mut a: Vec<&str> = base
        .iter()
        .map(|s| if *s == "jit" { "interp" } else { s })
        .collect();
    a.extend(["--cost", "cm0"]);
    let (code, _, err) = run(&a);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--mode jit"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn run_count_gives_exact_label_counts_in_both_modes() {
    let root = env!("CARGO_MANIFEST_DIR").to_string() + "/../..";
    let gemm = format!("{root}/examples/kernels/gemm.c");
    let args = |mode: &'static str, count: bool| {
        let mut v = vec![
            "run".to_string(),
            gemm.clone(),
            "--entry".into(),
            "gemm".into(),
        ];
        for d in ["ni=5", "nj=7", "nk=3", "alpha=1.5", "beta=1.2"] {
            v.push("-D".into());
            v.push(d.into());
        }
        v.extend(["--mode".into(), mode.into()]);
        if count {
            v.push("--count".into());
        }
        v
    };
    let go = |a: Vec<String>| {
        let o = tessera()
            .args(&a)
            .env("TESSERA_PROFILE", "/nonexistent/tessera-profile.json")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{a:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let plain = go(args("jit", false));
    let sums = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("checksum"))
            .map(String::from)
            .collect()
    };
    let counted: Vec<String> = ["interp", "jit"]
        .iter()
        .map(|m| go(args(m, true)))
        .collect();
    let labels = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("counts:") || l.starts_with("  ") || l.starts_with("gamma:"))
            .map(String::from)
            .collect()
    };
    for c in &counted {
        assert_eq!(sums(c), sums(&plain));
        // i loop: ni + 1 tests; innermost j loop of the k nest: ni * nk * (nj + 1).
        assert!(c.contains("13:21 loop header of `gemm`: 6\n"), "{c}");
        assert!(c.contains("18:29 loop header of `gemm`: 120\n"), "{c}");
        assert!(c.contains("373 label executions"), "{c}");
        assert!(c.contains("gamma: CM0 3.730000e2, CMC "), "{c}");
    }
    assert_eq!(labels(&counted[0]), labels(&counted[1]));
    let o = tessera().args(args("opt", true)).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}
