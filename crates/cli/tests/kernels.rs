//! File tests for `examples/kernels/*.c`: the reference interpreter (`tessera run --mode
//! interp`) and the native JIT (`--mode jit`) must each equal the same file compiled by gcc
//! as plain C (`gcc -O0 -ffp-contract=off -fwrapv`), bit for bit, on seeded random inputs, at
//! every size listed in the kernel's `// TEST:` lines, for two seeds; the JIT also at the
//! kernel's default `// RUN:` size. The polyhedral optimiser (`--mode opt`) is held to the
//! same oracle, also with its loops marked parallel run in reverse order
//! (`--reverse-parallel`) and in a shuffled order (`--shuffle-parallel`), which change the
//! results if a mark is false. The C the optimiser
//! emits (`tessera emit --target openmp`), compiled by gcc with `-fopenmp` and run on two
//! threads, must equal the interpreter bit for bit at every TEST size.
//!
//! The kernels are `examples/kernels/*.c` and the corpus `tests/corpus/*.c` (kernels written in
//! others' conventions: counters declared at the top and reused, sizes as macros, `float`,
//! `int` and `long` variants), each with the expected number of SCoPs (`// SCOPS: N`).
//!
//! Header format of a kernel (read here and by the benchmark scripts):
//! `// ENTRY: name`, `// RUN: -D n=...` (default size), `// TEST: -D n=...` (tiny sizes, tested
//! here), `// BENCH: -D n=...` (large sizes for benchmarks).

mod common;
use common::*;
use std::path::Path;

#[test]
fn corpus_kernels_have_their_scops() {
    // The corpus (tests/corpus) is written as others write C: its `// SCOPS:` line says how
    // many SCoPs the optimiser must find, so that detection cannot silently regress to the
    // plain JIT on real code.
    let mut checked = 0;
    let mut failures = Vec::new();
    for k in example_kernels() {
        let Some(want) = k.scops else { continue };
        checked += 1;
        let o = tessera()
            .args(["explain", k.path.to_str().unwrap(), "--entry", &k.entry])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        let got = text
            .lines()
            .filter(|l| {
                l.strip_prefix("SCoP ")
                    .and_then(|r| r.split_once(" in `"))
                    .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
            })
            .count();
        if !o.status.success() || got != want {
            failures.push(format!(
                "{}: {got} SCoPs, expected {want} (exit {:?})\n{}",
                k.name,
                o.status.code(),
                text.lines()
                    .filter(|l| l.starts_with("not a SCoP"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
    }
    assert!(
        checked >= 8 || std::env::var_os("TESSERA_KERNELS").is_some(),
        "only {checked} kernels with a `// SCOPS:` line"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn interpreter_matches_gcc_on_every_example_kernel() {
    every_kernel("interp", "kernels");
}

#[test]
fn jit_matches_gcc_on_every_example_kernel() {
    every_kernel("jit", "kernels-jit");
}

#[test]
fn opt_matches_gcc_on_every_example_kernel() {
    every_kernel("opt", "kernels-opt");
}

#[test]
fn both_versions_of_every_scop_match_gcc() {
    // Four calls on fresh copies of the inputs: the JIT runs each optimised SCoP's
    // optimised code on calls 1 and 3 and its code as written on calls 2 and 4 (or only on
    // call 2, when that is over twice slower), and `--repeat` fails unless every call's
    // outputs equal the first's; the first's are compared with gcc's.
    every_kernel_with("opt", "kernels-opt-versions", &["--repeat", "4"]);
}

#[test]
fn opt_with_parallel_loops_reversed_matches_gcc() {
    // Small tiles, so that tile loops marked parallel have several iterations to reverse.
    every_kernel_with(
        "opt",
        "kernels-opt-rev",
        &["--reverse-parallel", "--tile-sizes", "4"],
    );
}

#[test]
fn opt_with_parallel_loops_shuffled_matches_gcc() {
    // The same, with the iterations of loops marked parallel run in a shuffled order (neither
    // forward nor backward: a permutation k -> (a k + b) mod n of each loop's n iterations).
    every_kernel_with(
        "opt",
        "kernels-opt-shuf",
        &["--shuffle-parallel", "20261204", "--tile-sizes", "4"],
    );
}

#[test]
fn opt_time_tiled_with_parallel_loops_shuffled_matches_gcc() {
    // Time tiling (off by default): the stencils' tiles of 4 run in wavefronts whose parallel
    // loops are shuffled; every other kernel as with the default.
    every_kernel_with(
        "opt",
        "kernels-opt-time-tile",
        &[
            "--time-tile",
            "--shuffle-parallel",
            "20261207",
            "--tile-sizes",
            "4",
        ],
    );
}

#[test]
fn opt_with_fast_math_within_1e9_of_gcc() {
    // `--fast-math` lets LLVM reassociate and contract floating-point operations (vectorised
    // reductions, FMAs): results within 1e-9 relative of the exact ones, integer outputs equal.
    every_kernel_within("opt", "kernels-opt-fast", &["--fast-math"], Some(1e-9));
}

#[test]
fn opt_with_small_tiles_matches_gcc() {
    // Tiles of 3 and 5: every TEST size is then several partial tiles.
    every_kernel_with("opt", "kernels-opt-t35", &["--tile-sizes", "3,5"]);
}

#[test]
fn emitted_openmp_matches_interpreter_on_every_example_kernel() {
    let kernels = example_kernels();
    let tmp = scratch_dir("kernels-omp");
    let failures = parallel_map(&kernels, |k| {
        let dir = tmp.join(&k.name);
        std::fs::create_dir_all(&dir).unwrap();
        let exe = match build_openmp_driver(k, &dir) {
            Ok(e) => e,
            Err(e) => return vec![format!("{}: {e}", k.name)],
        };
        let mut fails = Vec::new();
        for (ti, args) in k.tests.iter().enumerate() {
            for seed in [1u64, 7] {
                let case = dir.join(format!("t{ti}-s{seed}"));
                if let Err(e) = compare_with_gcc(k, &exe, args, seed, "interp", &case, None) {
                    fails.push(format!("{} [{}] seed {seed}: {e}", k.name, args.join(" ")));
                }
            }
        }
        fails
    });
    assert_no_failures(failures, &tmp);
}

/// The gcc driver of `k` with the kernel replaced by its optimised OpenMP C (small tiles, so
/// that parallel loops have several iterations even at TEST sizes).
fn build_openmp_driver(k: &Kernel, dir: &Path) -> Result<std::path::PathBuf, String> {
    let o = tessera()
        .arg("emit")
        .arg(&k.path)
        .args([
            "--entry",
            &k.entry,
            "--target",
            "openmp",
            "--tile-sizes",
            "4",
        ])
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(format!("emit openmp failed:\n{}", text(&o)));
    }
    let omp = dir.join("kernel-omp.c");
    std::fs::write(&omp, &o.stdout).unwrap();
    let o = tessera()
        .arg("emit")
        .arg(&k.path)
        .args(["--entry", &k.entry, "--target", "driver"])
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(format!("emit driver failed:\n{}", text(&o)));
    }
    let original = std::fs::canonicalize(&k.path).unwrap();
    let driver = String::from_utf8_lossy(&o.stdout).replace(
        &format!("#include \"{}\"", original.display()),
        &format!("#include \"{}\"", omp.display()),
    );
    if !driver.contains("kernel-omp.c") {
        return Err("driver does not include the kernel by its path".into());
    }
    let src = dir.join("driver-omp.c");
    std::fs::write(&src, driver).unwrap();
    let exe = dir.join("driver-omp");
    gcc_build(&src, &exe, &["-O2", "-fopenmp"])?;
    Ok(exe)
}

fn every_kernel(mode: &str, scratch: &str) {
    every_kernel_with(mode, scratch, &[]);
}

fn every_kernel_with(mode: &str, scratch: &str, extra: &[&str]) {
    every_kernel_within(mode, scratch, extra, None);
}

fn every_kernel_within(mode: &str, scratch: &str, extra: &[&str], rtol: Option<f64>) {
    let kernels = example_kernels();
    assert!(
        kernels.len() >= 25 || std::env::var_os("TESSERA_KERNELS").is_some(),
        "expected at least 25 example kernels, found {}",
        kernels.len()
    );
    let tmp = scratch_dir(scratch);
    let failures = parallel_map(&kernels, |k| {
        check_kernel(k, mode, extra, rtol, &tmp.join(k.name.clone()))
    });
    assert_no_failures(failures, &tmp);
}

fn check_kernel(
    k: &Kernel,
    mode: &str,
    extra: &[&str],
    rtol: Option<f64>,
    dir: &Path,
) -> Vec<String> {
    let mut fails = Vec::new();
    std::fs::create_dir_all(dir).unwrap();
    let exe = match build_gcc_driver(k, dir, "-O0") {
        Ok(e) => e,
        Err(e) => return vec![format!("{}: {e}", k.name)],
    };
    assert!(!k.tests.is_empty(), "{} has no TEST lines", k.name);
    let mut sizes: Vec<&Vec<String>> = k.tests.iter().collect();
    if mode != "interp" && !k.run.is_empty() {
        sizes.push(&k.run);
    }
    for (ti, args) in sizes.into_iter().enumerate() {
        let args: Vec<String> = args
            .iter()
            .cloned()
            .chain(extra.iter().map(|s| s.to_string()))
            .collect();
        let args = &args;
        for seed in [1u64, 7] {
            let case = dir.join(format!("t{ti}-s{seed}"));
            if let Err(e) = compare_with_gcc(k, &exe, args, seed, mode, &case, rtol) {
                fails.push(format!("{} [{}] seed {seed}: {e}", k.name, args.join(" ")));
            }
        }
    }
    fails
}
