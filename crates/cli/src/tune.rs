//! `tessera run --mode opt --tune`: an empirical choice among candidate optimisations, for
//! users who run a kernel many times (as FFTW's wisdom and ATLAS do).
//!
//! The candidates are the code as written (the plain JIT) and the polyhedral optimiser under
//! settings that its rules choose between without knowing the machine: the default, the
//! micro-kernel twice as wide, maximal fusion, no fusion, no tiling, tiles half and twice
//! the cache model's size, no register tiles, no reordering of point loops. A candidate whose program equals an earlier one's is not run
//! again. Each is compiled (the optimised versions without the run-time choice of the code as
//! written, so that each is measured as it is) and called once on a copy of the real inputs;
//! its outputs are checked against the plain JIT's, bit for bit (to 1e-9 relative with
//! `--fast-math`): a candidate that differs is reported and never chosen. Then four timed
//! rounds, interleaved across the candidates (a candidate is not timed again once its fastest
//! run is over 4x the fastest of all before the first round, 2x after it); each candidate's
//! time is the median of its runs.
//! The winner is kept in a wisdom file — `$TESSERA_WISDOM`, else
//! `~/.cache/tessera/wisdom-v1.json` — under a key of the source text, the entry, the `-D`
//! bindings, the thread count and the host CPU; a later `--tune` run with the same key
//! compiles the winner directly.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use tessera_ir::{ArgValue, FuncId, Program};
use tessera_poly::{Fusion, GenOptions, PolyOptions};

/// One candidate: a name and the optimiser's settings (`None`: the code as written).
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its name, as printed and kept in the wisdom file.
    pub name: String,
    /// The optimiser's settings, or `None` for the plain JIT.
    pub poly: Option<PolyOptions>,
}

/// The candidates derived from the settings given on the command line.
pub fn candidates(base: &PolyOptions) -> Vec<Candidate> {
    let mut out = vec![
        Candidate {
            name: "as written".into(),
            poly: None,
        },
        Candidate {
            name: "optimised".into(),
            poly: Some(base.clone()),
        },
    ];
    let mut add = |name: &str, o: PolyOptions| {
        out.push(Candidate {
            name: name.into(),
            poly: Some(o),
        })
    };
    if base.micro_kernel_cols > 0 && base.micro_kernel_cols * 2 <= 64 {
        let mut o = base.clone();
        o.micro_kernel_cols *= 2;
        add(&format!("micro-kernel {} columns", o.micro_kernel_cols), o);
    }
    if base.fusion != Fusion::Max {
        let mut o = base.clone();
        o.fusion = Fusion::Max;
        add("maximal fusion", o);
    }
    if base.fusion != Fusion::None {
        let mut o = base.clone();
        o.fusion = Fusion::None;
        add("no fusion", o);
    }
    if base.tile {
        let mut o = base.clone();
        o.tile = false;
        add("no tiling", o);
    }
    if base.tile && base.tile_sizes.is_none() {
        for (name, f) in [
            ("tiles half the cache model's", 0.5),
            ("tiles twice the cache model's", 2.0),
        ] {
            let mut o = base.clone();
            o.tile_scale = base.tile_scale * f;
            add(name, o);
        }
    }
    if base.register_tile > 1 || base.micro_kernel_cols > 0 {
        let mut o = base.clone();
        o.register_tile = 1;
        o.micro_kernel_cols = 0;
        add("no register tiles", o);
    }
    if base.permute {
        let mut o = base.clone();
        o.permute = false;
        add("no loop reordering", o);
    }
    out
}

/// Where the wisdom lives.
pub fn wisdom_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_WISDOM") {
        return Some(PathBuf::from(p));
    }
    Some(tessera_cost::calibrate::cache_dir()?.join("wisdom-v1.json"))
}

/// The wisdom key of a run (FNV-1a of what determines the best choice).
pub fn key(
    source: &str,
    entry: &str,
    defs: &[(String, String)],
    threads: usize,
    host: &str,
) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |s: &str| {
        for b in s.bytes().chain(std::iter::once(0)) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(source);
    eat(entry);
    for (n, v) in defs {
        eat(n);
        eat(v);
    }
    eat(&threads.to_string());
    eat(host);
    format!("{entry}-{h:016x}")
}

fn load_wisdom(path: &PathBuf) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn save_wisdom(path: &PathBuf, w: &BTreeMap<String, String>) -> Result<(), String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let text = serde_json::to_string_pretty(w).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The outputs of a call, for comparison: the result as printed and every array.
fn outputs(r: String, args: Vec<ArgValue>) -> (String, Vec<ArgValue>) {
    (
        r,
        args.into_iter()
            .filter(|a| matches!(a, ArgValue::Array(_)))
            .collect(),
    )
}

/// A candidate that compiled, gave the reference's outputs and differs from every earlier
/// one.
struct Live {
    /// Its index in the candidates.
    cand: usize,
    program: Program,
    code: tessera_jit::Compiled,
    /// Its call times, ms, the first call's first.
    times: Vec<f64>,
}

fn close(a: &[ArgValue], b: &[ArgValue], rel: f64) -> bool {
    use tessera_ir::ArrayElems::*;
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (ArgValue::Array(x), ArgValue::Array(y)) => match (&x.elems, &y.elems) {
                (F64(p), F64(q)) => p.iter().zip(q).all(|(u, v)| {
                    u.to_bits() == v.to_bits() || (u - v).abs() <= rel * u.abs().max(v.abs())
                }),
                (F32(p), F32(q)) => p.iter().zip(q).all(|(u, v)| {
                    u.to_bits() == v.to_bits()
                        || ((u - v).abs() as f64) <= rel * (u.abs().max(v.abs()) as f64)
                }),
                _ => x == y,
            },
            _ => x == y,
        })
}

/// What `tune` chose.
pub struct Choice {
    /// The program to compile (optimised or as written).
    pub program: Program,
    /// What was done, to print.
    pub log: String,
}

/// Timed rounds per candidate.
const ROUNDS: usize = 4;

/// Chooses among [`candidates`] for this call (or takes the choice from the wisdom file).
pub fn tune(
    prog: &Program,
    fid: FuncId,
    args: &[ArgValue],
    jit_opts: &tessera_jit::Options,
    base: &PolyOptions,
    gen: GenOptions,
    key: &str,
) -> Result<Choice, String> {
    let cands = candidates(base);
    let path = wisdom_path();
    let mut wisdom = path.as_ref().map(load_wisdom).unwrap_or_default();
    let build = |c: &Candidate| -> Program {
        match &c.poly {
            None => prog.clone(),
            Some(o) => {
                tessera::optimize(
                    prog,
                    o,
                    GenOptions {
                        versions: false,
                        ..gen
                    },
                )
                .program
            }
        }
    };
    if let Some(name) = wisdom.get(key) {
        if let Some(c) = cands.iter().find(|c| c.name == *name) {
            return Ok(Choice {
                program: build(c),
                log: format!(
                    "tune: the wisdom of {} chose `{}` for this kernel, size and machine\n",
                    path.as_ref()
                        .map_or("-".into(), |p| p.display().to_string()),
                    c.name
                ),
            });
        }
    }
    let mut log = String::new();
    let mut reference: Option<(String, Vec<ArgValue>)> = None;
    let mut live: Vec<Live> = Vec::new();
    for (k, c) in cands.iter().enumerate() {
        let t0 = Instant::now();
        let p = build(c);
        if let Some(same) = live.iter().find(|l| l.program == p) {
            log.push_str(&format!(
                "tune: `{}`: the same code as `{}`\n",
                c.name, cands[same.cand].name
            ));
            continue;
        }
        let jit = match tessera_jit::Compiled::compile(&p, jit_opts) {
            Ok(j) => j,
            Err(e) => {
                log.push_str(&format!("tune: `{}`: not compiled ({e})\n", c.name));
                continue;
            }
        };
        let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        // The first call warms the code and gives the outputs to check.
        let mut a = args.to_vec();
        let t = Instant::now();
        let r = match jit.call(fid, &mut a) {
            Ok(r) => format!("{r:?}"),
            Err(e) => format!("error: {e}"),
        };
        let first_ms = t.elapsed().as_secs_f64() * 1e3;
        let out = outputs(r, a);
        let same = match &reference {
            None => {
                reference = Some(out);
                true
            }
            Some((rr, ra)) => {
                out.0 == *rr && close(&out.1, ra, if jit_opts.fast_math { 1e-9 } else { 0.0 })
            }
        };
        if !same {
            log.push_str(&format!(
                "tune: `{}`: outputs differ from the code as written; left out\n",
                c.name
            ));
            continue;
        }
        log.push_str(&format!(
            "tune: `{}`: compiled in {compile_ms:.0} ms, first call {first_ms:.3} ms\n",
            c.name
        ));
        live.push(Live {
            cand: k,
            program: p,
            code: jit,
            times: vec![first_ms],
        });
    }
    // Timed rounds, interleaved so that a change in the machine's load between candidates
    // falls on all of them. A candidate is not timed again when its fastest run is more
    // than 4x the fastest of all (before the first round: a first call can be slow by
    // accident, 2mm's default once took 223 ms against 140) or 2x (after it). Each
    // candidate's time is the median of its runs (the first call included). Not the
    // fastest: code that relies on the shared last-level cache runs fast only while the
    // machine's other tenants leave it alone (the untiled gemm: 108 and 283 ms in two
    // runs), and the fastest run would reward that.
    for round in 0..ROUNDS {
        let floor = live
            .iter()
            .filter_map(|l| l.times.iter().copied().reduce(f64::min))
            .reduce(f64::min)
            .unwrap_or(f64::INFINITY);
        let cut = if round == 0 { 4.0 } else { 2.0 };
        for l in live.iter_mut() {
            let fastest = l.times.iter().copied().fold(f64::INFINITY, f64::min);
            if fastest > cut * floor {
                continue;
            }
            let mut a = args.to_vec();
            let t = Instant::now();
            let _ = l.code.call(fid, &mut a);
            l.times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let mut best: Option<(f64, usize)> = None;
    for (i, l) in live.iter().enumerate() {
        let mut ts = l.times.clone();
        ts.sort_by(f64::total_cmp);
        let n = ts.len();
        let m = if n % 2 == 1 {
            ts[n / 2]
        } else {
            (ts[n / 2 - 1] + ts[n / 2]) / 2.0
        };
        let runs = if n == 1 {
            "the first call only; not timed again".to_string()
        } else {
            format!("median of {n} interleaved runs")
        };
        log.push_str(&format!(
            "tune: `{}`: {m:.3} ms ({runs})\n",
            cands[l.cand].name
        ));
        if best.is_none_or(|b| m < b.0) {
            best = Some((m, i));
        }
    }
    let (_, i) = best.ok_or("tune: no candidate ran")?;
    let Live { cand, program, .. } = live.swap_remove(i);
    let name = cands[cand].name.clone();
    log.push_str(&format!("tune: chose `{name}`"));
    if let Some(path) = &path {
        wisdom.insert(key.to_string(), name.clone());
        match save_wisdom(path, &wisdom) {
            Ok(()) => log.push_str(&format!(" (kept in {})", path.display())),
            Err(e) => log.push_str(&format!(" (not kept: {e})")),
        }
    }
    log.push('\n');
    Ok(Choice { program, log })
}
