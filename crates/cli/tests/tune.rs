//! `tessera run --mode opt --tune`: every candidate is timed and checked, the winner's results
//! are the interpreter's, and the choice is kept in the wisdom file and reused.

mod common;
use common::*;

fn run(args: &[&str], wisdom: &std::path::Path) -> (i32, String, String) {
    let o = tessera()
        .env("TESSERA_WISDOM", wisdom)
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
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
    let with = |extra: &[&'static str]| -> Vec<&str> {
        let mut v = vec!["run", k];
        v.extend_from_slice(&size);
        v.extend_from_slice(extra);
        v
    };
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
}
