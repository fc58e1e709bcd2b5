//! The counting build: the instrumented program compiled by the LLVM JIT, so that exact
//! fragment counts come at native speed (the interpreter's [`count_run`](crate::count_run)
//! is the oracle it is tested against).
//!
//! Counting happens at labels and branch arms only (one `++` of a `long` array element per
//! node execution), never per instruction; LLVM keeps a counter of an inner loop in a
//! register when it can, so the overhead is a few percent on loop nests (measured in
//! `docs/costmodel.md`).

use crate::fragments::{instrument, FragmentMap, NodeKind};
use crate::model::{CostModel, Profile};
use crate::CostError;
use serde::{Deserialize, Serialize};
use tessera_ir::{
    ArgValue, ArrayData, ArrayElems, FuncId, Program, RuntimeError, Scalar, ScalarTy,
};

/// A program compiled with counters at every label and arm (see [`instrument`]).
pub struct CountingBuild {
    compiled: tessera_jit::Compiled,
    map: FragmentMap,
}

/// γ of every node's own straight-line code under a model, so that the Γ of a run is the dot
/// product of the node counts with it (a fragment's cost is the sum of its nodes' code, and a
/// node's code runs as often as the node is reached). Under CM0 a label costs 1 and an arm 0.
pub fn node_gammas(map: &FragmentMap, model: &CostModel) -> Vec<f64> {
    map.nodes
        .iter()
        .map(|n| match model {
            CostModel::Cm0 => match n.kind {
                NodeKind::Label(_) => 1.0,
                NodeKind::Arm { .. } => 0.0,
            },
            m => m.gamma(&n.own),
        })
        .collect()
}

/// Γ of a run from its node counts and [`node_gammas`].
pub fn gamma_of(counts: &[i64], gammas: &[f64]) -> f64 {
    counts.iter().zip(gammas).map(|(&c, &g)| c as f64 * g).sum()
}

impl CountingBuild {
    /// Instruments `prog` and compiles it with the JIT.
    pub fn compile(
        prog: &Program,
        opts: &tessera_jit::Options,
    ) -> Result<CountingBuild, CostError> {
        let (inst, map) = instrument(prog);
        let compiled = tessera_jit::Compiled::compile(&inst, opts)
            .map_err(|e| CostError::Jit(e.to_string()))?;
        Ok(CountingBuild { compiled, map })
    }

    /// The labels, arms and fragments counted.
    pub fn map(&self) -> &FragmentMap {
        &self.map
    }

    /// The id of function `name`.
    pub fn func_id(&self, name: &str) -> Option<FuncId> {
        self.compiled.func_id(name)
    }

    /// A zeroed counter array for [`call_with`](Self::call_with): one `long` per node.
    pub fn counters(&self) -> Result<ArrayData, CostError> {
        let n = self.map.nodes.len();
        ArrayData::zeros(ScalarTy::I64, &[n]).ok_or(CostError::TooLarge(n))
    }

    /// Calls `func` with `args` followed by the counter array `counters`, which the call
    /// increments (it is not zeroed first: counts accumulate over calls). `counters` must come
    /// from [`counters`](Self::counters) of this build.
    #[allow(clippy::result_large_err)] // the interpreter's error type, as everywhere
    pub fn call_with(
        &self,
        func: FuncId,
        args: &mut Vec<ArgValue>,
        counters: &mut ArrayData,
    ) -> Result<Option<Scalar>, RuntimeError> {
        args.push(ArgValue::Array(std::mem::replace(
            counters,
            ArrayData {
                shape: vec![0],
                elems: ArrayElems::I64(Vec::new()),
            },
        )));
        let r = self.compiled.call(func, args);
        if let Some(ArgValue::Array(c)) = args.pop() {
            *counters = c;
        }
        r
    }

    /// Calls `entry` once with fresh counters and returns its exact profile; the arrays of
    /// `args` are updated as a normal call would update them.
    pub fn count(&self, entry: &str, args: &mut [ArgValue]) -> Result<Profile, CostError> {
        let fid = self
            .func_id(entry)
            .ok_or_else(|| CostError::UnknownFunction(entry.to_string()))?;
        let mut all = args.to_vec();
        let mut c = self.counters()?;
        let result = self.call_with(fid, &mut all, &mut c).map_err(Box::new)?;
        for (a, b) in args.iter_mut().zip(all) {
            *a = b;
        }
        Ok(Profile {
            map: self.map.clone(),
            node_counts: counts_of(&c).iter().map(|&x| x as u64).collect(),
            result,
        })
    }
}

/// The counts held in a counter array (empty if it is not one).
pub fn counts_of(c: &ArrayData) -> &[i64] {
    match &c.elems {
        ArrayElems::I64(v) => v,
        _ => &[],
    }
}

/// Sets every count of a counter array to zero.
pub fn reset(c: &mut ArrayData) {
    if let ArrayElems::I64(v) = &mut c.elems {
        v.iter_mut().for_each(|x| *x = 0);
    }
}

/// The features of the machine-level cost model: the instruction classes of optimised LLVM
/// IR (`tessera_jit::blocks::MACHINE_CLASSES`, up to `entry`), strided accesses by where the
/// call's data lives (`strided`: within L2, `strided_l3`: within the last-level cache,
/// `strided_mem`: beyond it), every load and store again when the data is beyond L2
/// (`mem_l3`) or beyond the last-level cache (`mem_mem`), conditional branches on loaded
/// data (`branch_data`), and the instructions of the critical recurrences of loops per
/// iteration (`chain_*`).
pub const MACHINE_FEATURES: [&str; 22] = {
    use tessera_jit::blocks::{BASE_CLASSES, CHAIN, MACHINE_CLASSES};
    // The instruction classes and the five chain classes are the blocks' own; the memory
    // and branch features are derived here.
    let derived = [
        "strided",
        "strided_l3",
        "strided_mem",
        "mem_l3",
        "mem_mem",
        "branch_data",
    ];
    let mut out = [""; 22];
    let mut i = 0;
    while i < BASE_CLASSES {
        out[i] = MACHINE_CLASSES[i];
        i += 1;
    }
    let mut j = 0;
    while j < derived.len() {
        out[BASE_CLASSES + j] = derived[j];
        j += 1;
    }
    let mut k = 0;
    while k < 5 {
        out[BASE_CLASSES + 6 + k] = MACHINE_CLASSES[CHAIN + k];
        k += 1;
    }
    out
};

/// The index of `entry` (one per call from Rust) in [`MACHINE_FEATURES`].
pub const ENTRY_FEATURE: usize = 9;

/// How many of [`MACHINE_FEATURES`] measure throughput (the rest are recurrences).
pub const THROUGHPUT: usize = 17;

/// A loop with a loop-carried recurrence: its throughput features (all iterations, all its
/// blocks) and its recurrence features (all iterations).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopTerm {
    /// Throughput features ([`MACHINE_FEATURES`] up to [`THROUGHPUT`]).
    pub t: Vec<f64>,
    /// Recurrence features (the five `chain_*`).
    pub l: [f64; 5],
}

/// The machine-level features of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Totals of every feature ([`MACHINE_FEATURES`] order).
    pub totals: Vec<f64>,
    /// The loops with a recurrence.
    pub loops: Vec<LoopTerm>,
}

impl Machine {
    /// Γ under `weights` ([`MACHINE_FEATURES`] order): Σ throughput of the code outside loops
    /// with a recurrence, plus for each such loop max(throughput, recurrence).
    pub fn gamma(&self, weights: &[f64]) -> f64 {
        let (t, l) = weights.split_at(THROUGHPUT.min(weights.len()));
        let dot = |a: &[f64], w: &[f64]| a.iter().zip(w).map(|(x, y)| x * y).sum::<f64>();
        let mut g = dot(&self.totals[..THROUGHPUT.min(self.totals.len())], t);
        for lp in &self.loops {
            let lt = dot(&lp.t, t);
            let ll = dot(&lp.l, l);
            if ll > lt {
                g += ll - lt;
            }
        }
        g
    }
}

/// Where data of `bytes` lives: 0 within L2, 1 within the last-level cache, 2 beyond.
pub fn memory_level(bytes: u64) -> usize {
    let (l2, l3) = cache_sizes();
    if bytes <= l2 {
        0
    } else if bytes <= l3 {
        1
    } else {
        2
    }
}

/// The host's L2 and last-level cache sizes in bytes (Linux sysfs; 1 MiB and 32 MiB when
/// unknown).
pub fn cache_sizes() -> (u64, u64) {
    static SIZES: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
    *SIZES.get_or_init(|| {
        let mut l2 = None;
        let mut l3 = None;
        for i in 0..8 {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
            let (Some(level), Some(size)) = (read("level"), read("size")) else {
                continue;
            };
            let size = size.trim();
            let bytes = if let Some(k) = size.strip_suffix('K') {
                k.parse::<u64>().ok().map(|k| k * 1024)
            } else if let Some(m) = size.strip_suffix('M') {
                m.parse::<u64>().ok().map(|m| m << 20)
            } else {
                size.parse::<u64>().ok()
            };
            match level.trim() {
                "2" => l2 = bytes.or(l2),
                "3" => l3 = bytes.or(l3),
                _ => {}
            }
        }
        let l2 = l2.unwrap_or(1 << 20);
        (l2, l3.unwrap_or(32 << 20).max(l2))
    })
}

/// The bytes of the arrays among `args`.
pub fn footprint(args: &[ArgValue]) -> u64 {
    args.iter()
        .map(|a| match a {
            ArgValue::Array(d) => (d.elems.len() * d.elems.ty().size_bytes()) as u64,
            _ => 0,
        })
        .sum()
}

/// A machine-level counting build: the optimised code with a counter per basic block (see
/// `tessera_jit::blocks`).
pub struct BlockBuild {
    compiled: tessera_jit::Compiled,
}

impl BlockBuild {
    /// Compiles `prog` with block counters.
    pub fn compile(prog: &Program, opts: &tessera_jit::Options) -> Result<BlockBuild, CostError> {
        let compiled = tessera_jit::Compiled::compile_counting(prog, opts)
            .map_err(|e| CostError::Jit(e.to_string()))?;
        Ok(BlockBuild { compiled })
    }

    /// The counted blocks.
    pub fn blocks(&self) -> &[tessera_jit::blocks::BlockInfo] {
        self.compiled.blocks().unwrap_or(&[])
    }

    /// The compiled code (its `call` runs with a scratch counter buffer).
    pub fn compiled(&self) -> &tessera_jit::Compiled {
        &self.compiled
    }

    /// Calls `func`, adding each block's executions to `counts` (one slot per block).
    #[allow(clippy::result_large_err)]
    pub fn call_counted(
        &self,
        func: FuncId,
        args: &mut [ArgValue],
        counts: &mut [i64],
    ) -> Result<Option<Scalar>, RuntimeError> {
        self.compiled.call_counted(func, args, counts)
    }

    /// The machine-level features of a run, given block counts and the bytes of the arrays
    /// the call works on (see [`MACHINE_FEATURES`]).
    pub fn machine(&self, counts: &[i64], footprint: u64) -> Machine {
        use tessera_jit::blocks::{BASE_CLASSES, BRANCH_DATA, CHAIN, STRIDED};
        let level = memory_level(footprint);
        let features = |b: &tessera_jit::blocks::BlockInfo, n: f64, into: &mut [f64]| {
            for (a, &c) in into.iter_mut().zip(&b.classes[..BASE_CLASSES]) {
                *a += n * c as f64;
            }
            into[BASE_CLASSES + level] += n * b.classes[STRIDED] as f64;
            if level > 0 {
                into[BASE_CLASSES + 2 + level] +=
                    n * (b.classes[0] + b.classes[1] + b.classes[10]) as f64;
            }
            into[BASE_CLASSES + 5] += n * b.classes[BRANCH_DATA] as f64;
        };
        let blocks = self.blocks();
        let mut totals = vec![0.0; MACHINE_FEATURES.len()];
        let mut loops: Vec<(usize, LoopTerm)> = Vec::new();
        let mut at: std::collections::HashMap<usize, usize> = Default::default();
        for (b, &n) in blocks.iter().zip(counts) {
            if n <= 0 {
                continue;
            }
            let n = n as f64;
            features(b, n, &mut totals[..THROUGHPUT]);
            // Blocks of a loop with a recurrence are gathered into its term.
            let Some(h) = b.loop_head.filter(|&h| {
                blocks
                    .get(h)
                    .is_some_and(|hb| hb.classes[CHAIN..CHAIN + 5].iter().any(|&c| c > 0))
            }) else {
                continue;
            };
            let k = *at.entry(h).or_insert_with(|| {
                let hn = counts.get(h).copied().unwrap_or(0).max(0) as f64;
                let mut l = [0.0; 5];
                for (x, &c) in l.iter_mut().zip(&blocks[h].classes[CHAIN..CHAIN + 5]) {
                    *x = hn * c as f64;
                }
                loops.push((
                    h,
                    LoopTerm {
                        t: vec![0.0; THROUGHPUT],
                        l,
                    },
                ));
                loops.len() - 1
            });
            features(b, n, &mut loops[k].1.t);
        }
        for (_, l) in &loops {
            for (a, x) in totals[THROUGHPUT..].iter_mut().zip(&l.l) {
                *a += x;
            }
        }
        Machine {
            totals,
            loops: loops.into_iter().map(|(_, l)| l).collect(),
        }
    }

    /// Γ of a run under machine-level weights ([`MACHINE_FEATURES`] order): every loop with a
    /// recurrence costs the larger of its throughput and its recurrence per iteration, the
    /// rest its throughput (see [`Machine::gamma`]).
    pub fn gamma(&self, counts: &[i64], footprint: u64, weights: &[f64]) -> f64 {
        self.machine(counts, footprint).gamma(weights)
    }

    /// The same Γ as [`BlockBuild::gamma`] for calls whose data lives at `level` (see
    /// [`memory_level`]), prepared once for many calls: a γ per block and the loops with a
    /// recurrence, so that a call costs one pass over the counts and allocates nothing.
    pub fn gamma_plan(&self, weights: &[f64], level: usize) -> GammaPlan {
        use tessera_jit::blocks::{BASE_CLASSES, BRANCH_DATA, CHAIN, STRIDED};
        let blocks = self.blocks();
        let w = |k: usize| weights.get(k).copied().unwrap_or(0.0);
        let gammas: Vec<f64> = blocks
            .iter()
            .map(|b| {
                let mut g: f64 = (0..BASE_CLASSES).map(|k| b.classes[k] as f64 * w(k)).sum();
                g += b.classes[STRIDED] as f64 * w(BASE_CLASSES + level.min(2));
                if level > 0 {
                    g += (b.classes[0] + b.classes[1] + b.classes[10]) as f64
                        * w(BASE_CLASSES + 2 + level.min(2));
                }
                g + b.classes[BRANCH_DATA] as f64 * w(BASE_CLASSES + 5)
            })
            .collect();
        let mut loops: Vec<(usize, f64, Vec<usize>)> = Vec::new();
        for (i, b) in blocks.iter().enumerate() {
            let Some(h) = b.loop_head else { continue };
            let Some(hb) = blocks.get(h) else { continue };
            let lat: f64 = (0..5)
                .map(|c| hb.classes[CHAIN + c] as f64 * w(THROUGHPUT + c))
                .sum();
            if lat <= 0.0 {
                continue;
            }
            match loops.iter_mut().find(|l| l.0 == h) {
                Some(l) => l.2.push(i),
                None => loops.push((h, lat, vec![i])),
            }
        }
        GammaPlan { gammas, loops }
    }
}

/// Γ under machine-level weights, prepared by [`BlockBuild::gamma_plan`].
#[derive(Clone, Debug)]
pub struct GammaPlan {
    gammas: Vec<f64>,
    /// (header, recurrence γ per iteration, blocks of the loop).
    loops: Vec<(usize, f64, Vec<usize>)>,
}

impl GammaPlan {
    /// Γ of a run with these block counts.
    pub fn gamma(&self, counts: &[i64]) -> f64 {
        let mut g = gamma_of(counts, &self.gammas);
        for (h, lat, members) in &self.loops {
            let n = counts.get(*h).copied().unwrap_or(0) as f64;
            let t: f64 = members
                .iter()
                .map(|&b| counts.get(b).copied().unwrap_or(0) as f64 * self.gammas[b])
                .sum();
            if n * lat > t {
                g += n * lat - t;
            }
        }
        g
    }
}
