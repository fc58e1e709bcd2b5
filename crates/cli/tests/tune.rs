//! `tessera run --mode opt --tune`: every candidate is timed and checked, the winner's results
//! are the interpreter's, and the choice is kept in the wisdom file and reused; the samples it
//! records fit the schedule cost model's weights (`calibrate --schedules`), which
//! `explain --candidates` then uses.

mod common;
use common::*;

fn run(args: &[&str], wisdom: &std::path::Path) -> (i32, String, String) {
    // Samples and fitted weights beside the wisdom file, never in the user's cache.
    let o = tessera()
        .env("TESSERA_WISDOM", wisdom)
        .env(
            "TESSERA_MODEL_SAMPLES",
            wisdom.with_file_name("samples.tsv"),
        )
        .env(
            "TESSERA_SCHEDULE_WEIGHTS",
            wisdom.with_file_name("weights.json"),
        )
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `run FILE SIZE... EXTRA...`.
fn run_args<'a>(file: &'a str, size: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["run", file];
    v.extend_from_slice(size);
    v.extend_from_slice(extra);
    v
}

/// The checksum lines of a run's output.
fn checksums(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with("checksum ")).collect()
}

#[test]
fn tune_checks_chooses_and_remembers() {
    let dir = scratch_dir("tune");
    let wisdom = dir.join("wisdom.json");
    let k = "examples/kernels/2mm.c";
    let size = [
        "--entry",
        "mm2",
        "-D",
        "ni=7",
        "-D",
        "nj=11",
        "-D",
        "nk=13",
        "-D",
        "nl=5",
        "-D",
        "alpha=0.25",
        "-D",
        "beta=-1.0",
    ];
    let with = |extra: &[&'static str]| run_args(k, &size, extra);
    let (code, oracle, err) = run(&with(&["--mode", "interp"]), &wisdom);
    assert_eq!(code, 0, "{oracle}{err}");
    let want = checksums(&oracle);
    assert_eq!(want.len(), 5, "{oracle}");

    let (code, out, err) = run(&with(&["--mode", "opt", "--tune"]), &wisdom);
    assert_eq!(code, 0, "{out}{err}");
    for c in [
        "as written",
        "optimised",
        "maximal fusion",
        "no fusion",
        "no tiling",
        "tiles half the cache model's",
        "tiles twice the cache model's",
        "no register tiles",
        "no loop reordering",
    ] {
        assert!(
            out.contains(&format!("tune: `{c}`: ")),
            "candidate `{c}` not reported:\n{out}"
        );
    }
    assert!(!out.contains("outputs differ"), "{out}");
    let chosen = out
        .lines()
        .find_map(|l| l.strip_prefix("tune: chose `"))
        .and_then(|l| l.split('`').next())
        .unwrap_or_else(|| panic!("no choice in:\n{out}"))
        .to_string();
    assert_eq!(checksums(&out), want, "{out}");
    let kept = std::fs::read_to_string(&wisdom).unwrap();
    assert!(kept.contains(&format!("\"{chosen}\"")), "{kept}");

    // The second run takes the choice from the wisdom file and times nothing.
    let (code, out, err) = run(&with(&["--mode", "opt", "--tune"]), &wisdom);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("chose `{chosen}` for this kernel"))
            && !out.contains("ms (median of"),
        "{out}"
    );
    assert_eq!(checksums(&out), want, "{out}");

    // Another size is another key: tuned again.
    let (code, out, err) = run(
        &[
            "run",
            k,
            "--entry",
            "mm2",
            "-D",
            "ni=1",
            "-D",
            "nj=2",
            "-D",
            "nk=1",
            "-D",
            "nl=2",
            "-D",
            "alpha=1.5",
            "-D",
            "beta=1.2",
            "--mode",
            "opt",
            "--tune",
        ],
        &wisdom,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("ms (median of"), "{out}");

    // An unreadable wisdom file is replaced, never trusted; --tune needs --mode opt.
    std::fs::write(&wisdom, "{ not json").unwrap();
    let (code, out, err) = run(&with(&["--mode", "opt", "--tune"]), &wisdom);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(checksums(&out), want, "{out}");
    assert!(out.contains("ms (median of"), "{out}");
    let (code, out, err) = run(&with(&["--mode", "jit", "--tune"]), &wisdom);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("--tune") && err.contains("--mode opt"),
        "{err}"
    );

    // Every tuned run recorded its candidates' model terms and times: one line per
    // predicted candidate, five tab-separated fields.
    let samples = std::fs::read_to_string(dir.join("samples.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = samples.lines().map(|l| l.split('\t').collect()).collect();
    assert!(rows.len() >= 6, "{samples}");
    assert!(rows.iter().all(|r| r.len() == 5), "{samples}");
    assert!(rows.iter().any(|r| r[1] == "optimised"), "{samples}");
    let mut keys: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 2, "two sizes tuned:\n{samples}");

    // The weights fitted to them are written and then used by explain --candidates.
    let (code, out, err) = run(&["calibrate", "--schedules"], &wisdom);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("leave one kernel out"), "{out}");
    let w = std::fs::read_to_string(dir.join("weights.json")).unwrap();
    assert!(w.contains("\"weights\""), "{w}");
    let (code, out, err) = run(
        &[
            "explain",
            k,
            "--entry",
            "mm2",
            "--candidates",
            "--threads",
            "1",
            "-D",
            "ni=40",
            "-D",
            "nj=50",
            "-D",
            "nk=60",
            "-D",
            "nl=70",
        ],
        &wisdom,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("weights calibrated"), "{out}");
}

#[test]
fn calibrate_schedules_needs_samples() {
    let dir = scratch_dir("tune-calibrate-empty");
    let wisdom = dir.join("wisdom.json");
    let (code, out, err) = run(&["calibrate", "--schedules"], &wisdom);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("samples.tsv") && err.contains("--tune"),
        "{err}"
    );
    std::fs::write(dir.join("samples.tsv"), "k\toptimised\t1,2,3,4\t1.0\t2.0\n").unwrap();
    let (code, out, err) = run(&["calibrate", "--schedules"], &wisdom);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("too few"), "{err}");
    assert!(!dir.join("weights.json").exists());
}

/// `explain --candidates`: every candidate ranked or shown as the same code as another,
/// with its terms, and the reason for the first; sizes are required.
#[test]
fn explain_ranks_the_candidates() {
    let dir = scratch_dir("tune-explain");
    let wisdom = dir.join("wisdom.json");
    let k = "examples/kernels/gemm.c";
    let (code, out, err) = run(
        &[
            "explain",
            k,
            "--entry",
            "gemm",
            "--candidates",
            "--threads",
            "2",
            "-D",
            "ni=200",
            "-D",
            "nj=230",
            "-D",
            "nk=250",
        ],
        &wisdom,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("candidates for `gemm` at ni=200, nj=230, nk=250 on 2 threads"),
        "{out}"
    );
    assert!(
        out.contains("weights fitted on the reference machine"),
        "{out}"
    );
    for c in [
        "as written",
        "optimised",
        "no tiling",
        "no register tiles",
        "no loop reordering",
    ] {
        assert!(
            out.lines()
                .any(|l| l.ends_with(&format!("  {c}")) || l.ends_with(&format!(": {c}"))),
            "candidate `{c}` missing:\n{out}"
        );
    }
    // Rank 1 is a row of six numbers and the name; the reason names a term.
    let first = out
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_else(|| panic!("no rank 1:\n{out}"));
    let nums = first
        .split_whitespace()
        .skip(1)
        .take(6)
        .filter(|x| x.parse::<f64>().is_ok())
        .count();
    assert_eq!(nums, 6, "{first}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("chosen: `") && l.contains("largest difference")),
        "{out}"
    );

    // Without the sizes: a usage error naming the parameters.
    let (code, out, err) = run(&["explain", k, "--entry", "gemm", "--candidates"], &wisdom);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("`ni`, `nj`, `nk`"), "{err}");
    let (code, out, err) = run(
        &["explain", k, "--entry", "gemm", "--threads", "2"],
        &wisdom,
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("--candidates"), "{err}");
}

/// `run --mode opt --model-choice`: the candidate the model predicts fastest runs, with
/// the interpreter's results, and nothing is timed; the flag's misuse is a usage error.
#[test]
fn model_choice_runs_the_predicted_best() {
    let dir = scratch_dir("tune-model-choice");
    let wisdom = dir.join("wisdom.json");
    let k = "examples/kernels/syrk.c";
    let size = [
        "--entry",
        "syrk",
        "-D",
        "n=37",
        "-D",
        "m=29",
        "-D",
        "alpha=1.5",
        "-D",
        "beta=1.2",
    ];
    let with = |extra: &[&'static str]| run_args(k, &size, extra);
    let (code, oracle, err) = run(&with(&["--mode", "interp"]), &wisdom);
    assert_eq!(code, 0, "{oracle}{err}");
    let want = checksums(&oracle);
    assert!(!want.is_empty(), "{oracle}");
    for threads in ["1", "2"] {
        let (code, out, err) = run(
            &with(&["--mode", "opt", "--model-choice", "--threads", threads]),
            &wisdom,
        );
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("model: chose `") && l.contains("predicted")),
            "{out}"
        );
        assert!(!out.contains("median of"), "{out}");
        assert_eq!(checksums(&out), want, "{out}");
    }
    assert!(!wisdom.exists(), "--model-choice keeps no wisdom");
    for bad in [
        with(&["--mode", "jit", "--model-choice"]),
        with(&["--mode", "opt", "--model-choice", "--tune"]),
        with(&["--mode", "opt", "--tune", "--tune-prune", "0.5"]),
    ] {
        let (code, out, err) = run(&bad, &wisdom);
        assert_eq!(code, 2, "{bad:?}: {out}{err}");
    }
}

/// A stencil's candidates include time tiling (off by default), which `--tune` runs and
/// checks against the code as written like every other candidate.
#[test]
fn tune_runs_time_tiling_on_a_stencil() {
    let dir = scratch_dir("tune-time-tile");
    let wisdom = dir.join("wisdom.json");
    let k = "examples/kernels/jacobi-2d.c";
    let size = ["--entry", "jacobi_2d", "-D", "tsteps=6", "-D", "n=37"];
    let with = |extra: &[&'static str]| run_args(k, &size, extra);
    let (code, oracle, err) = run(&with(&["--mode", "interp"]), &wisdom);
    assert_eq!(code, 0, "{oracle}{err}");
    let want = checksums(&oracle);
    assert_eq!(want.len(), 2, "{oracle}");
    let (code, out, err) = run(
        &with(&["--mode", "opt", "--tune", "--tune-prune", "0"]),
        &wisdom,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("tune: `time tiling`: "), "{out}");
    assert!(!out.contains("outputs differ"), "{out}");
    assert_eq!(checksums(&out), want, "{out}");
    // Asked for directly: the same results.
    let (code, out, err) = run(&with(&["--mode", "opt", "--time-tile"]), &wisdom);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(checksums(&out), want, "{out}");
}
