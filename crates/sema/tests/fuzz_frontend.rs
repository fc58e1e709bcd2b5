//! Mutation fuzzing of the front end: every example kernel and UI case, mutated many times
//! (bytes deleted, duplicated, inserted, truncated, invalid UTF-8 spliced in), must go
//! through lexing, parsing, checking and diagnostic rendering without a panic, and every
//! diagnostic must carry a real location. Deterministic (fixed seeds), so a failure is
//! reproducible; the failing input is written to the target directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tessera_syntax::diag::{render_all, SourceFile};

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const PIECES: &[&[u8]] = &[
    b"(",
    b")",
    b"{",
    b"}",
    b"[",
    b"]",
    b";",
    b",",
    b"*",
    b"#",
    b"/*",
    b"*/",
    b"//",
    b"\"",
    b"'",
    b"\\\n",
    b"\n",
    b"0x",
    b"1e",
    b"..",
    b"->",
    b"int ",
    b"double ",
    b"for (",
    b"if (",
    b"else ",
    b"return ",
    b"#define X ",
    b"#include <",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\x00",
    b"\t",
    b"\xc3\xa9",
    b"9999999999999999999999",
    b"A[",
    b"++",
    b"<<=",
    b"?:",
];

fn mutate(src: &[u8], rng: &mut XorShift) -> Vec<u8> {
    let mut s = src.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = s.len();
        let at = rng.below(len + 1);
        match rng.below(5) {
            0 => {
                let end = (at + 1 + rng.below(16)).min(len);
                s.drain(at..end.max(at));
            }
            1 => {
                let end = (at + 1 + rng.below(32)).min(len);
                let chunk = s[at..end.max(at)].to_vec();
                s.splice(at..at, chunk);
            }
            2 => {
                let p = PIECES[rng.below(PIECES.len())];
                s.splice(at..at, p.iter().copied());
            }
            3 => s.truncate(at),
            _ => {
                if at < len {
                    s[at] = rng.next() as u8;
                }
            }
        }
    }
    s
}

fn corpus() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["examples/kernels", "tests/ui"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            files.extend(
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "c")),
            );
        }
    }
    files.sort();
    files
}

#[test]
fn mutated_sources_never_panic() {
    fuzz(400, 0);
}

/// The long run: `TESSERA_FUZZ_SECS=600 cargo test --release -p tessera-sema --test
/// fuzz_frontend -- --ignored --nocapture` mutates for that many seconds (new seeds each
/// round) and prints the number of executions.
#[test]
#[ignore]
fn mutated_sources_never_panic_long() {
    let secs: u64 = std::env::var("TESSERA_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let t0 = std::time::Instant::now();
    let (mut round, mut total, mut accepted) = (1u64, 0usize, 0usize);
    while t0.elapsed().as_secs() < secs {
        let (n, ok) = fuzz(200, round);
        total += n;
        accepted += ok;
        round += 1;
    }
    eprintln!(
        "fuzz: {total} mutated inputs in {:.0} s ({round} rounds), {accepted} accepted by the checker, 0 failures",
        t0.elapsed().as_secs_f64()
    );
}

/// Mutates every corpus file `per_file` times with seeds from `round`; panics on a failure.
/// Returns (inputs tried, inputs accepted by the front end).
fn fuzz(per_file: usize, round: u64) -> (usize, usize) {
    let files = corpus();
    assert!(files.len() >= 40, "corpus too small: {}", files.len());
    std::panic::set_hook(Box::new(|_| {}));
    let overrides = HashMap::new();
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut accepted = 0;
    for (fi, f) in files.iter().enumerate() {
        let orig = std::fs::read(f).unwrap();
        let mut rng = XorShift(
            0x9E37_79B9_7F4A_7C15 ^ (fi as u64 + 1) ^ round.wrapping_mul(0xD1B5_4A32_D192_ED03),
        );
        for _ in 0..per_file {
            let bytes = mutate(&orig, &mut rng);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            cases += 1;
            // Ok(true): accepted; Ok(false): rejected with located diagnostics;
            // Err(message): a diagnostic without a location.
            let r = std::panic::catch_unwind(|| -> Result<bool, String> {
                let src = SourceFile::new("fuzz.c", text.clone());
                match tessera_sema::compile_source(&text, &overrides) {
                    Ok(_) => Ok(true),
                    Err(diags) => {
                        assert!(!render_all(&src, &diags).is_empty());
                        match diags.iter().find(|d| d.span.line == 0) {
                            Some(d) => Err(d.message.clone()),
                            None => Ok(false),
                        }
                    }
                }
            });
            let problem = match r {
                Ok(Ok(true)) => {
                    accepted += 1;
                    continue;
                }
                Ok(Ok(false)) => continue,
                Ok(Err(m)) => format!("diagnostic without a location: {m}"),
                Err(_) => "panic".to_string(),
            };
            let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("fuzz-fail-{}.c", failures.len()));
            let _ = std::fs::write(&out, &bytes);
            failures.push(format!(
                "{} (mutated): {problem}; input saved to {}",
                f.display(),
                out.display()
            ));
            if failures.len() >= 10 {
                break;
            }
        }
    }
    let _ = std::panic::take_hook();
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    (cases, accepted)
}
