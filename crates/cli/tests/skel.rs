//! The paper's skeleton benchmarks, at small sizes, through `tessera skel`: every skeleton
//! (chunk, stride, divconq-thresh, rayon), fixed τ (1, a middle value, larger than the
//! input) and adaptive from a bad τ, 1 and 2 threads, interpreter and JIT, must give the
//! sequential results: the checksum of the per-element results in input order equals the
//! one computed from sequential `tessera run` calls of the same entry, element by element,
//! and integer sums equal the whole-program entries (sumeuler, mandelbrot, fib).
//! A fault in one task of many is reported with the interpreter's error, from both modes.

mod common;
use common::*;

/// One `tessera` invocation; panics with its output if the exit code is not `want`.
fn tess(args: &[String], want: i32) -> (String, String) {
    let o = tessera().args(args).output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert_eq!(
        o.status.code(),
        Some(want),
        "tessera {}\n{out}{err}",
        args.join(" ")
    );
    (out, err)
}

fn field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no `{key}` in:\n{out}"))
        .trim()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[derive(Clone, Copy)]
enum Ret {
    Int,
    Long,
    Double,
}

/// The sequential per-element results (as LE bytes, as `skel` hashes them) and their sum.
fn sequential(
    file: &str,
    entry: &str,
    index: &str,
    range: std::ops::Range<i64>,
    defs: &[&str],
    ret: Ret,
) -> (u64, String) {
    let mut bytes = Vec::new();
    let (mut isum, mut fsum) = (0i64, 0f64);
    for i in range {
        let mut a = s(&["run", file, "--entry", entry, "-D"]);
        a.push(format!("{index}={i}"));
        for d in defs {
            a.push("-D".into());
            a.push(d.to_string());
        }
        let (out, _) = tess(&a, 0);
        let r = field(&out, "result:");
        match ret {
            Ret::Int => {
                let v: i32 = r.parse().unwrap();
                isum += v as i64;
                bytes.extend(v.to_le_bytes());
            }
            Ret::Long => {
                let v: i64 = r.parse().unwrap();
                isum += v;
                bytes.extend(v.to_le_bytes());
            }
            Ret::Double => {
                let v: f64 = r.parse().unwrap();
                fsum += v;
                bytes.extend(v.to_le_bytes());
            }
        }
    }
    let sum = match ret {
        Ret::Double => format!("{fsum}"),
        _ => format!("{isum}"),
    };
    (tessera_ir::fnv1a(&bytes), sum)
}

/// Runs `entry` over `lo..hi` with every map skeleton and setting; each must reproduce the
/// sequential checksum and sum.
fn check_map(file: &str, entry: &str, index: &str, lo: i64, hi: i64, defs: &[&str], ret: Ret) {
    let (want_ck, want_sum) = sequential(file, entry, index, lo..hi, defs, ret);
    let n = (hi - lo).max(1);
    let over = format!("{lo}..{hi}");
    let mut runs = 0;
    for mode in ["interp", "jit"] {
        for threads in ["1", "2"] {
            let mut settings: Vec<Vec<String>> = Vec::new();
            for sk in ["chunk", "stride"] {
                for tau in [1, 3, n + 5] {
                    settings.push(s(&["--skeleton", sk, "--tau", &tau.to_string()]));
                }
                // Adaptive from a too small and a too large τ, with a tiny window so that
                // the controller really retunes on these small inputs.
                for tau in [1, n] {
                    settings.push(s(&[
                        "--skeleton",
                        sk,
                        "--tau",
                        &tau.to_string(),
                        "--adaptive",
                        "--target-ms",
                        "0.05..0.5",
                    ]));
                }
            }
            settings.push(s(&["--skeleton", "rayon"]));
            for set in settings {
                let mut a = s(&[
                    "skel",
                    file,
                    "--entry",
                    entry,
                    "--over",
                    &over,
                    "--mode",
                    mode,
                    "--threads",
                    threads,
                ]);
                a.extend(set.iter().cloned());
                for d in defs {
                    a.push("-D".into());
                    a.push(d.to_string());
                }
                let (out, _) = tess(&a, 0);
                assert_eq!(
                    field(&out, "checksum:"),
                    format!("{want_ck:016x}"),
                    "per-element results differ from sequential: tessera {}\n{out}",
                    a.join(" ")
                );
                let sum = field(&out, "result: sum");
                match ret {
                    Ret::Double => assert_eq!(
                        sum.parse::<f64>().unwrap(),
                        want_sum.parse::<f64>().unwrap(),
                        "{}",
                        a.join(" ")
                    ),
                    _ => assert_eq!(sum, want_sum, "{}", a.join(" ")),
                }
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 2 * 2 * 11);
}

fn whole(file: &str, entry: &str, defs: &[&str]) -> String {
    let mut a = s(&["run", file, "--entry", entry]);
    for d in defs {
        a.push("-D".into());
        a.push(d.to_string());
    }
    let (out, _) = tess(&a, 0);
    field(&out, "result:").to_string()
}

#[test]
fn sumeuler_chunk_and_stride() {
    let f = "examples/kernels/sumeuler.c";
    check_map(f, "totient", "k", 1, 61, &[], Ret::Long);
    let (_, sum) = sequential(f, "totient", "k", 1..61, &[], Ret::Long);
    assert_eq!(sum, whole(f, "sumeuler", &["n=60"]));
}

#[test]
fn mandelbrot_rows() {
    let f = "examples/kernels/mandelbrot.c";
    let defs = ["w=23", "h=17", "maxit=50"];
    check_map(f, "mandel_row", "row", 0, 17, &defs, Ret::Long);
    let (_, sum) = sequential(f, "mandel_row", "row", 0..17, &defs, Ret::Long);
    assert_eq!(sum, whole(f, "mandelbrot", &defs));
}

#[test]
fn matmul_rows() {
    // A and B are filled from --init (the same seeded fill in `run` and `skel`).
    check_map(
        "examples/kernels/matmul.c",
        "matmul_row_sum",
        "i",
        0,
        13,
        &["n=13"],
        Ret::Double,
    );
}

#[test]
fn kmeans_classify() {
    check_map(
        "examples/kernels/kmeans.c",
        "classify",
        "i",
        0,
        37,
        &["n=37", "k=5", "d=3"],
        Ret::Int,
    );
}

#[test]
fn fib_divconq_thresh() {
    let f = "examples/kernels/fib.c";
    for n in [0, 1, 2, 15, 21] {
        let want = whole(f, "fib", &[&format!("n={n}")]);
        for mode in ["interp", "jit"] {
            for threads in ["1", "2"] {
                let mut sets: Vec<Vec<String>> = [1, 2, 5, 30]
                    .iter()
                    .map(|t| s(&["--tau", &t.to_string()]))
                    .collect();
                sets.push(s(&["--tau", "2", "--adaptive", "--target-ms", "0.05..0.5"]));
                sets.push(s(&[
                    "--tau",
                    "40",
                    "--adaptive",
                    "--target-ms",
                    "0.05..0.5",
                ]));
                for set in sets {
                    let mut a = s(&[
                        "skel",
                        f,
                        "--entry",
                        "fib",
                        "--skeleton",
                        "divconq-thresh",
                        "--over",
                    ]);
                    a.push(format!("0..{n}"));
                    a.extend(s(&["--mode", mode, "--threads", threads]));
                    a.extend(set);
                    let (out, _) = tess(&a, 0);
                    assert_eq!(
                        field(&out, "result: sum"),
                        want,
                        "tessera {}\n{out}",
                        a.join(" ")
                    );
                }
            }
        }
    }
}

#[test]
fn divconq_halves_sums_a_range() {
    // --divide halves: the entry gets [lo, hi) and returns its partial result.
    let src = scratch_dir("skel-halves").join("range.c");
    std::fs::write(&src, "long range_sum(int lo, int hi) { long s = 0; for (int i = lo; i < hi; i++) s += (long)i * i % 7; return s; }\n").unwrap();
    let want: i64 = (0..1000i64).map(|i| i * i % 7).sum();
    for tau in ["1", "7", "64", "5000"] {
        for mode in ["interp", "jit"] {
            let a = s(&[
                "skel",
                src.to_str().unwrap(),
                "--entry",
                "range_sum",
                "--skeleton",
                "divconq-thresh",
                "--divide",
                "halves",
                "--over",
                "0..1000",
                "--tau",
                tau,
                "--mode",
                mode,
                "--threads",
                "2",
            ]);
            let (out, _) = tess(&a, 0);
            assert_eq!(
                field(&out, "result: sum"),
                want.to_string(),
                "{}\n{out}",
                a.join(" ")
            );
        }
    }
}

#[test]
fn a_fault_in_one_task_of_many_is_reported() {
    // Element 97 of 200 reads out of bounds; every other task succeeds.
    let src = scratch_dir("skel-fault").join("fault.c");
    std::fs::write(
        &src,
        "long work(int i) {\n    long t[4];\n    long s = 0;\n    for (int j = 0; j < 20000; j++) s += (j ^ i) % 3;\n    if (i == 97) s += t[i];\n    return s;\n}\n",
    )
    .unwrap();
    let file = src.to_str().unwrap();
    for mode in ["interp", "jit"] {
        for (sk, extra) in [
            ("chunk", "--tau=5"),
            ("stride", "--tau=3"),
            ("rayon", "--verbose"),
            ("chunk", "--adaptive"),
        ] {
            let a = s(&[
                "skel",
                file,
                "--entry",
                "work",
                "--skeleton",
                sk,
                "--over",
                "0..200",
                extra,
                "--threads",
                "2",
                "--mode",
                mode,
            ]);
            let (_, err) = tess(&a, 1);
            let want = "fault.c:5:23: runtime error: index out of bounds: t[97] but `t` has shape [4] (index 97 of dimension 0 is not in 0..4) (in `work`)";
            assert!(err.contains(want), "tessera {}\n{err}", a.join(" "));
            assert_eq!(
                err.matches("runtime error").count(),
                1,
                "reported once:\n{err}"
            );
        }
    }
}
