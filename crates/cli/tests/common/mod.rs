//! Helpers shared by the file tests: kernel headers, running `tessera`, the gcc oracle.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The `tessera` binary under test.
pub fn tessera() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.current_dir(root());
    c
}

/// A fresh scratch directory under the target directory.
pub fn scratch_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An example kernel and its header lines.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    pub path: PathBuf,
    pub entry: String,
    pub run: Vec<String>,
    pub tests: Vec<Vec<String>>,
    pub bench: Vec<String>,
    /// `// SCOPS: N`: how many SCoPs `tessera explain` must find in the entry's program.
    pub scops: Option<usize>,
}

fn split_args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// Reads `examples/kernels/*.c` and the corpus of kernels written in others' conventions,
/// `tests/corpus/*.c` (counters declared at the top, sizes as macros, PolyBench style).
pub fn example_kernels() -> Vec<Kernel> {
    let mut v: Vec<Kernel> = ["examples/kernels", "tests/corpus"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root().join(d)).unwrap())
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut k = Kernel {
                name: path.file_stem().unwrap().to_string_lossy().into_owned(),
                path: path.clone(),
                entry: String::new(),
                run: vec![],
                tests: vec![],
                bench: vec![],
                scops: None,
            };
            for line in text.lines() {
                let l = line.trim();
                if let Some(x) = l.strip_prefix("// ENTRY:") {
                    k.entry = x.trim().to_string();
                } else if let Some(x) = l.strip_prefix("// RUN:") {
                    k.run = split_args(x);
                } else if let Some(x) = l.strip_prefix("// TEST:") {
                    k.tests.push(split_args(x));
                } else if let Some(x) = l.strip_prefix("// BENCH:") {
                    k.bench = split_args(x);
                } else if let Some(x) = l.strip_prefix("// SCOPS:") {
                    k.scops = Some(x.trim().parse().expect("// SCOPS: N"));
                }
            }
            assert!(
                !k.entry.is_empty(),
                "{} has no `// ENTRY:` line",
                path.display()
            );
            k
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    // For development: `TESSERA_KERNELS=gemm,lu` keeps only those (CI sets nothing).
    if let Ok(only) = std::env::var("TESSERA_KERNELS") {
        let keep: Vec<&str> = only.split(',').collect();
        v.retain(|k| keep.contains(&k.name.as_str()));
    }
    v
}

/// Runs `f` over `items` on two threads, preserving order.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: std::sync::Mutex<Vec<(usize, R)>> = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                out.lock().unwrap().push((i, r));
            });
        }
    });
    let mut v = out.into_inner().unwrap();
    v.sort_by_key(|(i, _)| *i);
    v.into_iter().map(|(_, r)| r).collect()
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The entry's scalar parameter names in order and its return type, from `tessera check`.
pub fn signature(k: &Kernel) -> (Vec<String>, String) {
    let o = tessera().arg("check").arg(&k.path).output().unwrap();
    assert!(
        o.status.success(),
        "{} does not check:\n{}",
        k.name,
        text(&o)
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = out
        .lines()
        .find(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|n| n.starts_with(&format!("{}(", k.entry)))
        })
        .unwrap_or_else(|| panic!("entry {} not in `check` output:\n{out}", k.entry))
        .trim()
        .to_string();
    let ret = line.split_whitespace().next().unwrap().to_string();
    let params = line[line.find('(').unwrap() + 1..line.rfind(')').unwrap()].to_string();
    let scalars = params
        .split(", ")
        .filter(|p| !p.is_empty() && !p.contains('['))
        .map(|p| p.split_whitespace().last().unwrap().to_string())
        .collect();
    (scalars, ret)
}

/// Compiles the kernel file as C with a generated driver; returns the executable.
pub fn build_gcc_driver(k: &Kernel, dir: &Path, opt: &str) -> Result<PathBuf, String> {
    let o = tessera()
        .args(["emit"])
        .arg(&k.path)
        .args(["--entry", &k.entry, "--target", "driver"])
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(format!("emit driver failed:\n{}", text(&o)));
    }
    let src = dir.join("driver.c");
    std::fs::write(&src, &o.stdout).unwrap();
    let exe = dir.join("driver");
    gcc_build(&src, &exe, &[opt])?;
    Ok(exe)
}

/// Compiles a generated driver `src` to `exe` with gcc, Tessera's semantics
/// (`-ffp-contract=off -fwrapv`, the prelude's `min`/`max`) and the extra `flags`.
pub fn gcc_build(src: &Path, exe: &Path, flags: &[&str]) -> Result<(), String> {
    let o = Command::new("gcc")
        .args(flags)
        .args([
            "-ffp-contract=off",
            "-fwrapv",
            "-std=gnu99",
            "-w",
            "-include",
        ])
        .arg(root().join("tests/gcc-prelude.h"))
        .arg(src)
        .arg("-o")
        .arg(exe)
        .arg("-lm")
        .output()
        .map_err(|e| format!("cannot run gcc: {e}"))?;
    if !o.status.success() {
        return Err(format!("gcc {} failed:\n{}", flags.join(" "), text(&o)));
    }
    Ok(())
}

/// Fails the test with every failure message, if there are any; on success removes the
/// scratch directory `tmp` (on failure it is kept, with the failing cases' files).
pub fn assert_no_failures(failures: Vec<Vec<String>>, tmp: &Path) {
    let failures: Vec<String> = failures.into_iter().flatten().collect();
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    let _ = std::fs::remove_dir_all(tmp);
}

/// The value of `-D name=value` in `args`.
pub fn define_value(args: &[String], name: &str) -> Option<String> {
    args.windows(2).find_map(|w| {
        (w[0] == "-D")
            .then(|| w[1].split_once('='))
            .flatten()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
    })
}

fn result_line(s: &str) -> Option<String> {
    s.lines()
        .find_map(|l| l.strip_prefix("result: ").map(|x| x.trim().to_string()))
}

fn same_number(a: &str, b: &str, ret: &str) -> bool {
    if a == b {
        return true;
    }
    match ret {
        "float" => a
            .parse::<f32>()
            .ok()
            .zip(b.parse::<f32>().ok())
            .is_some_and(|(x, y)| x.to_bits() == y.to_bits()),
        "double" => a
            .parse::<f64>()
            .ok()
            .zip(b.parse::<f64>().ok())
            .is_some_and(|(x, y)| x.to_bits() == y.to_bits()),
        _ => false,
    }
}

/// Runs `tessera run --mode MODE` and the gcc driver on the same inputs; compares every
/// output array byte for byte and the returned value exactly, or, with `rtol`, floating-point
/// arrays and results within `rtol` relative error (see [`close_floats`]; integer and boolean
/// outputs stay exact). The case directory `dir`
/// (inputs and both outputs as `.npy`, up to tens of MB at RUN sizes) is removed when the
/// comparison passes and kept for inspection when it fails: the whole kernel suite would
/// otherwise leave several GB behind.
pub fn compare_with_gcc(
    k: &Kernel,
    exe: &Path,
    args: &[String],
    seed: u64,
    mode: &str,
    dir: &Path,
    rtol: Option<f64>,
) -> Result<(), String> {
    let r = compare_with_gcc_in(k, exe, args, seed, mode, dir, rtol);
    if r.is_ok() {
        let _ = std::fs::remove_dir_all(dir);
    }
    r
}

fn compare_with_gcc_in(
    k: &Kernel,
    exe: &Path,
    args: &[String],
    seed: u64,
    mode: &str,
    dir: &Path,
    rtol: Option<f64>,
) -> Result<(), String> {
    let (scalars, ret) = signature(k);
    let inp = dir.join("in");
    let ours = dir.join("tessera");
    let theirs = dir.join("gcc");
    std::fs::create_dir_all(&theirs).unwrap();
    let o = tessera()
        .arg("run")
        .arg(&k.path)
        .args([
            "--entry",
            &k.entry,
            "--mode",
            mode,
            "--init",
            &format!("random:{seed}"),
        ])
        .args(args)
        .arg("--save-inputs")
        .arg(&inp)
        .arg("--out")
        .arg(&ours)
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(format!("tessera run failed:\n{}", text(&o)));
    }
    let t_out = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut cmd = Command::new(exe);
    cmd.arg(&inp).arg(&theirs);
    for s in &scalars {
        cmd.arg(format!(
            "{s}={}",
            define_value(args, s).ok_or(format!("no -D for scalar `{s}`"))?
        ));
    }
    let g = cmd.output().unwrap();
    if !g.status.success() {
        return Err(format!("gcc build failed at run time:\n{}", text(&g)));
    }
    let g_out = String::from_utf8_lossy(&g.stdout).into_owned();
    match (result_line(&t_out), result_line(&g_out)) {
        (None, None) => {}
        (Some(a), Some(b)) if same_number(&a, &b, &ret) => {}
        (Some(a), Some(b))
            if rtol.is_some_and(|t| {
                matches!(ret.as_str(), "float" | "double")
                    && a.parse::<f64>()
                        .ok()
                        .zip(b.parse::<f64>().ok())
                        .is_some_and(|(x, y)| close(x, y, t))
            }) => {}
        (a, b) => return Err(format!("results differ: tessera {a:?}, gcc {b:?}")),
    }
    let mut compared = 0;
    for e in std::fs::read_dir(&ours).map_err(|e| e.to_string())? {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap();
        // NaNs compare by class only: their sign and payload are unspecified.
        let a = canonical_nans(std::fs::read(&p).unwrap());
        let b = canonical_nans(
            std::fs::read(theirs.join(name)).map_err(|e| format!("gcc wrote no {name:?}: {e}"))?,
        );
        if let (Some(t), true) = (rtol, a != b) {
            if let Some(e) = close_floats(&a, &b, t)? {
                return Err(format!("array {name:?}: {e}"));
            }
            compared += 1;
            continue;
        }
        if a != b {
            let n = a
                .iter()
                .zip(&b)
                .position(|(x, y)| x != y)
                .unwrap_or(a.len().min(b.len()));
            return Err(format!(
                "array {name:?} differs (first differing byte {n} of {}/{})",
                a.len(),
                b.len()
            ));
        }
        compared += 1;
    }
    if compared == 0 && result_line(&t_out).is_none() {
        return Err("nothing to compare: no arrays and no result".into());
    }
    Ok(())
}

/// A `.npy` file's bytes with every `<f8`/`<f4` NaN replaced by the canonical quiet NaN
/// (docs/language.md: the sign and payload of a NaN result are unspecified). Other files are
/// returned unchanged.
pub fn canonical_nans(mut b: Vec<u8>) -> Vec<u8> {
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return b;
    }
    let (hlen, start) = match b[6] {
        1 => (u16::from_le_bytes([b[8], b[9]]) as usize, 10),
        _ if b.len() >= 12 => (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12),
        _ => return b,
    };
    let Some(h) = b.get(start..start + hlen) else {
        return b;
    };
    let h = String::from_utf8_lossy(h);
    let data = start + hlen;
    if h.contains("'<f8'") {
        for c in b[data..].chunks_exact_mut(8) {
            if f64::from_le_bytes(c.try_into().unwrap()).is_nan() {
                c.copy_from_slice(&f64::NAN.to_le_bytes());
            }
        }
    } else if h.contains("'<f4'") {
        for c in b[data..].chunks_exact_mut(4) {
            if f32::from_le_bytes(c.try_into().unwrap()).is_nan() {
                c.copy_from_slice(&f32::NAN.to_le_bytes());
            }
        }
    }
    b
}

/// Whether `x` and `y` agree within `rtol` relative error (`|x - y| <= rtol * max(|x|, |y|)`;
/// two NaNs agree).
fn close(x: f64, y: f64, rtol: f64) -> bool {
    (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= rtol * x.abs().max(y.abs())
}

/// Compares two `.npy` files (`ours`, `gcc`): `<f8`/`<f4` data element by element within
/// `rtol` relative to the element or to the array's largest magnitude (`<f4` within `rtol`
/// scaled by the ratio of the two types' epsilons, 2^29), other types byte for byte. `Ok(None)`: they agree; `Ok(Some(why))`: the first disagreement.
pub fn close_floats(ours: &[u8], gcc: &[u8], rtol: f64) -> Result<Option<String>, String> {
    fn split(b: &[u8]) -> Result<(String, &[u8]), String> {
        if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
            return Err("not a .npy file".into());
        }
        let (hlen, start) = match b[6] {
            1 => (u16::from_le_bytes([b[8], b[9]]) as usize, 10),
            _ if b.len() >= 12 => (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12),
            _ => return Err("truncated .npy header".into()),
        };
        let h = b.get(start..start + hlen).ok_or("truncated .npy header")?;
        let h = String::from_utf8_lossy(h);
        let descr = h
            .split("'descr':")
            .nth(1)
            .and_then(|r| r.split('\'').nth(1))
            .ok_or("no descr in .npy header")?
            .to_string();
        Ok((descr, &b[start + hlen..]))
    }
    let ((da, a), (db, b)) = (split(ours)?, split(gcc)?);
    if da != db || a.len() != b.len() {
        return Ok(Some(format!("dtype or length differs ({da} vs {db})")));
    }
    let vals = |d: &[u8]| -> Vec<f64> {
        match da.as_str() {
            "<f8" => d
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
            _ => d
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect(),
        }
    };
    let t = match da.as_str() {
        "<f8" => rtol,
        "<f4" => rtol * (1u64 << 29) as f64,
        _ => {
            return Ok((a != b).then(|| format!("{da} data differs (compared exactly)")));
        }
    };
    let (va, vb) = (vals(a), vals(b));
    // Reassociation errors scale with the operands, not the result: an element that cancels
    // to near zero is held to the array's largest magnitude (a normwise bound), others to
    // their own.
    let scale = vb
        .iter()
        .filter(|y| y.is_finite())
        .fold(0f64, |m, y| m.max(y.abs()));
    Ok(va
        .iter()
        .zip(&vb)
        .position(|(&x, &y)| !(close(x, y, t) || (x - y).abs() <= t * scale))
        .map(|i| {
            format!(
                "element {i} of {}: {} vs gcc {} (relative tolerance {t:e})",
                va.len(),
                va[i],
                vb[i]
            )
        }))
}
