//! UI tests, in the style of rustc's: every `tests/ui/*.c` is run through `tessera` with the
//! arguments of its `// ARGS:` line (default `check $FILE`; `$FILE` is the test's own path,
//! relative to the repository root) and must exit with the code of its `// EXIT:` line
//! (default 1) and print exactly `NAME.stderr` on standard error (and `NAME.stdout`, if
//! present, on standard output; lines `NAME_ms: VALUE` are compared as `NAME_ms: <ms>`). Set `TESSERA_BLESS=1` to (re)write the expectations, then
//! review the diff.
//!
//! Every case also must not panic, abort or die by a signal.

mod common;
use common::*;

#[test]
fn ui_diagnostics() {
    let dir = root().join("tests/ui");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 30,
        "expected at least 30 UI cases, found {}",
        cases.len()
    );
    let bless = std::env::var_os("TESSERA_BLESS").is_some();
    let mut failures = Vec::new();
    for case in &cases {
        let rel = case
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let src = std::fs::read_to_string(case).unwrap_or_default();
        let header = |key: &str| {
            src.lines()
                .find_map(|l| l.trim().strip_prefix(key).map(|x| x.trim().to_string()))
        };
        let args = header("// ARGS:").unwrap_or_else(|| "check $FILE".into());
        let exit: i32 = header("// EXIT:").map(|x| x.parse().unwrap()).unwrap_or(1);
        let argv: Vec<String> = args
            .split_whitespace()
            .map(|a| a.replace("$FILE", &rel))
            .collect();
        let o = tessera().args(&argv).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        // Timings vary from run to run: `compile_ms: 12.3` is compared as `compile_ms: <ms>`.
        let stdout: String = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| match l.split_once(':') {
                Some((k, _)) if k.ends_with("_ms") => format!("{k}: <ms>\n"),
                _ => format!("{}\n", mask_ms(l)),
            })
            .collect();
        let name = case.file_stem().unwrap().to_string_lossy().into_owned();
        let mut fail = |m: String| failures.push(format!("{name}: {m}"));
        match o.status.code() {
            None => fail("killed by a signal".into()),
            Some(c) if c != exit => {
                fail(format!("exit code {c}, expected {exit}\nstderr:\n{stderr}"))
            }
            _ => {}
        }
        if stderr.contains("panicked")
            || stderr.contains("RUST_BACKTRACE")
            || stderr.contains("internal compiler error")
        {
            fail(format!("panic:\n{stderr}"));
        }
        if exit != 0
            && !stderr.starts_with("error")
            && !stderr.contains(": error: ")
            && !stderr.contains(": runtime error: ")
        {
            fail(format!("no error message on stderr:\n{stderr}"));
        }
        let exp_err = case.with_extension("stderr");
        let exp_out = case.with_extension("stdout");
        if bless {
            std::fs::write(&exp_err, &stderr).unwrap();
            if !stdout.is_empty() {
                std::fs::write(&exp_out, &stdout).unwrap();
            }
            continue;
        }
        match std::fs::read_to_string(&exp_err) {
            Ok(e) if e == stderr => {}
            Ok(e) => fail(format!(
                "stderr differs\n--- expected\n{e}--- actual\n{stderr}"
            )),
            Err(_) => fail(format!(
                "missing {}; actual stderr:\n{stderr}",
                exp_err.display()
            )),
        }
        if let Ok(e) = std::fs::read_to_string(&exp_out) {
            if e != stdout {
                fail(format!(
                    "stdout differs\n--- expected\n{e}--- actual\n{stdout}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} UI failure(s):\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Masks durations (`12.3 ms` becomes `<ms> ms`), as `explain` prints per-phase times, and
/// the share of tasks whose time fell in a window (`20.0% in 10..100 ms` becomes `<share>% in
/// 10..100 ms`, as `skel` prints it: a timing too).
fn mask_ms(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let mut out = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        let next_is_ms = words
            .get(i + 1)
            .is_some_and(|n| n.trim_end_matches([',', ')', ';']) == "ms");
        let share_in_window = w
            .strip_suffix('%')
            .is_some_and(|x| x.parse::<f64>().is_ok())
            && words.get(i + 1) == Some(&"in")
            && words
                .get(i + 3)
                .is_some_and(|n| n.trim_end_matches([',', ')', ';']) == "ms");
        if next_is_ms && w.parse::<f64>().is_ok() {
            out.push("<ms>");
        } else if share_in_window {
            out.push("<share>%");
        } else {
            out.push(w);
        }
    }
    out.join(" ")
}
