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

    /// Instructions executed per machine class, given block counts.
    pub fn class_totals(&self, counts: &[i64]) -> Vec<f64> {
        let mut t = vec![0.0; tessera_jit::blocks::MACHINE_CLASSES.len()];
        for (b, &n) in self.blocks().iter().zip(counts) {
            for (a, &c) in t.iter_mut().zip(&b.classes) {
                *a += n as f64 * c as f64;
            }
        }
        t
    }

    /// γ of every block under per-class weights (ns per instruction).
    pub fn block_gammas(&self, weights: &[f64]) -> Vec<f64> {
        self.blocks()
            .iter()
            .map(|b| {
                b.classes
                    .iter()
                    .zip(weights)
                    .map(|(&c, w)| c as f64 * w)
                    .sum()
            })
            .collect()
    }
}
