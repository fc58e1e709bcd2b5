//! Machine-level counting: block counters inserted into the LLVM IR **after** optimisation,
//! so that what is counted is what runs (vectorised, unrolled, with hoisted and folded
//! guards), the second level of Tessera's cost model (the first counts TIR fragments, see
//! `tessera-cost`).
//!
//! Every basic block of every body, shape and entry function (`tessera_fN`,
//! `tessera_shapesN`, `tessera_entryN`) gets, before its first non-phi instruction, an
//! increment of its own counter: a slot of a function-local array (promoted to registers by
//! SROA), added at every return to the block's slot of the counter buffer whose address the
//! call's context holds ([`crate::rt::Ctx::counts`]). The buffer belongs to one call on one
//! thread, so the counts are exact; an error exit returns through the same `ret`s. Outlined parallel-loop bodies (`tessera_parN`, only in optimised
//! programs) are not counted.
//!
//! The instructions of each block, as optimised, are classified by opcode into
//! [`MACHINE_CLASSES`]; a block's instructions times its count, summed over blocks, are the
//! per-class totals of a run.

use inkwell::module::Module;
use inkwell::targets::TargetData;
use inkwell::values::{FunctionValue, InstructionOpcode, InstructionValue};
use inkwell::AddressSpace;

/// The instruction classes of optimised LLVM IR, in the order of [`BlockInfo::classes`].
///
/// The first [`BASE_CLASSES`] partition a block's instructions by opcode. The others are
/// features of the loop a block is in (see `loopfeat.rs`): `strided`, the block's loads and
/// stores whose address moves by more than their width per iteration or irregularly (also
/// counted as `load`/`store`), and `chain_*`, the instructions of the critical loop-carried
/// recurrence of the loop the block heads, per class (also counted in their own class).
pub const MACHINE_CLASSES: [&str; 18] = [
    "load",
    "store",
    "int",
    "float",
    "vector",
    "math",
    "branch",
    "call",
    "alloc",
    "entry",
    "vmem",
    "strided",
    "branch_data",
    "chain_int",
    "chain_float",
    "chain_idiv",
    "chain_fmath",
    "chain_mem",
];

/// How many of [`MACHINE_CLASSES`] count instructions (the rest are loop features).
pub const BASE_CLASSES: usize = 11;
/// The index of `strided` in [`MACHINE_CLASSES`].
pub const STRIDED: usize = 11;
/// The index of `branch_data` in [`MACHINE_CLASSES`].
pub const BRANCH_DATA: usize = 12;
/// The index of `chain_int`, the first of the five chain classes, in [`MACHINE_CLASSES`].
pub const CHAIN: usize = 13;

/// A counted basic block.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockInfo {
    /// The LLVM function it is in.
    pub function: String,
    /// Its index in that function.
    pub index: usize,
    /// Instructions per class ([`MACHINE_CLASSES`] order; `entry` is 1 for the first block of
    /// an entry wrapper: one per call from Rust, whose fixed cost — argument checks, context,
    /// arena — is outside the JIT'd code); `phi`, unconditional branches,
    /// returns, `alloca` and debug/lifetime intrinsics are not counted; `alloc` is a call of
    /// the run-time allocator (local arrays); the loop features follow).
    pub classes: [u32; 18],
    /// The index (among all counted blocks) of the header of the innermost loop this block
    /// is in, if any.
    pub loop_head: Option<usize>,
}

const LOAD: usize = 0;
const STORE: usize = 1;
const INT: usize = 2;
const FLOAT: usize = 3;
const VECTOR: usize = 4;
const MATH: usize = 5;
const BRANCH: usize = 6;
const CALL: usize = 7;
const ALLOC: usize = 8;
const ENTRY: usize = 9;
const VMEM: usize = 10;

/// Intrinsics that generate no code.
const FREE_CALLS: &[&str] = &[
    "llvm.lifetime",
    "llvm.dbg",
    "llvm.assume",
    "llvm.experimental.noalias",
];
/// Calls of the math class: square root and the C library's transcendental functions.
const MATH_CALLS: &[&str] = &[
    "llvm.sqrt",
    "tessera_libm",
    "llvm.exp",
    "llvm.log",
    "llvm.pow",
    "llvm.sin",
    "llvm.cos",
];
/// Intrinsics that are one floating-point instruction.
const FLOAT_CALLS: &[&str] = &[
    "llvm.fmuladd",
    "llvm.fma",
    "llvm.fabs",
    "llvm.minnum",
    "llvm.maxnum",
    "llvm.floor",
    "llvm.ceil",
    "llvm.vector.reduce.f",
];

fn callee_name(i: &InstructionValue<'_>) -> String {
    let n = i.get_num_operands();
    if n == 0 {
        return String::new();
    }
    match i.get_operand(n - 1) {
        Some(inkwell::values::Operand::Value(v)) if v.is_pointer_value() => v
            .into_pointer_value()
            .get_name()
            .to_string_lossy()
            .into_owned(),
        _ => String::new(),
    }
}

/// The class of an instruction, or `None` if it is free.
fn class(i: &InstructionValue<'_>) -> Option<usize> {
    use InstructionOpcode::*;
    let vector = i.get_type().is_vector_type();
    let c = match i.get_opcode() {
        Load => LOAD,
        Store => STORE,
        Phi | Return | Alloca | Unreachable => return None,
        Br => {
            // A conditional branch has three operands.
            if i.get_num_operands() == 3 {
                BRANCH
            } else {
                return None;
            }
        }
        Switch | IndirectBr => BRANCH,
        UDiv | SDiv | URem | SRem | FDiv | FRem => MATH,
        FAdd | FSub | FMul | FNeg | FCmp | FPExt | FPTrunc | SIToFP | UIToFP | FPToSI | FPToUI => {
            FLOAT
        }
        Call => {
            let name = callee_name(i);
            let is = |ps: &[&str]| ps.iter().any(|p| name.starts_with(p));
            if is(FREE_CALLS) {
                return None;
            }
            if is(MATH_CALLS) {
                MATH
            } else if name == "tessera_jit_alloc" {
                ALLOC
            } else if is(FLOAT_CALLS) {
                FLOAT
            } else if name.starts_with("llvm.") {
                INT
            } else {
                CALL
            }
        }
        _ => INT,
    };
    // A vector load or store moves a vector's bytes (two passes of a 256-bit pipe for a
    // 512-bit one on some machines): its own class.
    Some(if vector && (c == LOAD || c == STORE) {
        VMEM
    } else if vector {
        VECTOR
    } else {
        c
    })
}

fn counted(f: &FunctionValue<'_>) -> bool {
    let n = f.get_name().to_string_lossy();
    f.count_basic_blocks() > 0
        && (n.starts_with("tessera_f")
            || n.starts_with("tessera_shapes")
            || n.starts_with("tessera_entry"))
}

/// Classifies every block of the counted functions and inserts its counter increment.
pub(crate) fn instrument(m: &Module<'static>) -> Result<Vec<BlockInfo>, String> {
    let cx = m.get_context();
    let b = cx.create_builder();
    let i64t = cx.i64_type();
    let ptr = cx.ptr_type(AddressSpace::default());
    let e = |e: inkwell::builder::BuilderError| e.to_string();
    let layout = m.get_data_layout();
    let td = TargetData::create(layout.as_str().to_str().map_err(|e| e.to_string())?);
    let mut out = Vec::new();
    for f in m.get_functions().filter(counted) {
        let features = crate::loopfeat::analyse(&f, &td);
        let fname = f.get_name().to_string_lossy().into_owned();
        let ctx = f
            .get_nth_param(0)
            .filter(|p| p.is_pointer_value())
            .ok_or_else(|| format!("{fname}: first parameter is not the context"))?
            .into_pointer_value();
        // The blocks to count, with their classes and insertion points; the returns.
        let mut sites = Vec::new();
        let mut rets = Vec::new();
        for (k, bb) in f.get_basic_block_iter().enumerate() {
            let mut classes = [0u32; 18];
            classes[STRIDED] = features.strided[k];
            classes[BRANCH_DATA] = features.data_branches[k];
            classes[CHAIN..CHAIN + 5].copy_from_slice(&features.chain[k]);
            if k == 0 && fname.starts_with("tessera_entry") {
                classes[ENTRY] = 1;
            }
            let mut first_non_phi = None;
            let mut it = bb.get_first_instruction();
            while let Some(i) = it {
                if first_non_phi.is_none() && i.get_opcode() != InstructionOpcode::Phi {
                    first_non_phi = Some(i);
                }
                if i.get_opcode() == InstructionOpcode::Return {
                    rets.push(i);
                }
                if let Some(c) = class(&i) {
                    classes[c] += 1;
                }
                it = i.get_next_instruction();
            }
            if let Some(at) = first_non_phi {
                sites.push((k, classes, at));
            }
            if sites.len() != k + 1 {
                return Err(format!("{fname}: block {k} has no instruction"));
            }
        }
        if sites.is_empty() {
            continue;
        }
        let nf = sites.len() as u32;
        let first_slot = out.len() as u64;
        // The function's own counters: a local array, zeroed on entry, incremented in each
        // block, added to the call's buffer before every return. Its address never escapes,
        // so SROA (run after this pass) turns every slot into an SSA value: an increment is
        // one register add, not a load-add-store chain through memory.
        let entry = f.get_first_basic_block().ok_or("no entry block")?;
        let first = entry.get_first_instruction().ok_or("empty entry block")?;
        b.position_before(&first);
        let arr_t = i64t.array_type(nf);
        let local = b.build_alloca(arr_t, "cnt.local").map_err(e)?;
        let slot_ptr = |j: u32| {
            // SAFETY (of the IR): j < nf, the array's length.
            unsafe {
                b.build_gep(
                    arr_t,
                    local,
                    &[i64t.const_zero(), i64t.const_int(j as u64, false)],
                    "cnt.l",
                )
            }
            .map_err(e)
        };
        for j in 0..nf {
            b.build_store(slot_ptr(j)?, i64t.const_zero()).map_err(e)?;
        }
        for (j, (k, classes, at)) in sites.into_iter().enumerate() {
            b.position_before(&at);
            let sp = slot_ptr(j as u32)?;
            let v = b.build_load(i64t, sp, "cnt.v").map_err(e)?;
            let v1 = b
                .build_int_add(v.into_int_value(), i64t.const_int(1, false), "cnt.v1")
                .map_err(e)?;
            b.build_store(sp, v1).map_err(e)?;
            out.push(BlockInfo {
                function: fname.clone(),
                index: k,
                classes,
                loop_head: features.inner[k].map(|h| first_slot as usize + h),
            });
        }
        for r in rets {
            b.position_before(&r);
            // SAFETY (of the IR): the context has `COUNTS` words; the buffer has one slot per
            // counted block of the module (see `Compiled::call_counted`).
            let cp = unsafe {
                b.build_gep(
                    i64t,
                    ctx,
                    &[i64t.const_int(crate::rt::field::COUNTS, false)],
                    "cnt.p",
                )
            }
            .map_err(e)?;
            let base = b.build_load(ptr, cp, "cnt.base").map_err(e)?;
            for j in 0..nf {
                let v = b.build_load(i64t, slot_ptr(j)?, "cnt.v").map_err(e)?;
                let gp = unsafe {
                    b.build_gep(
                        i64t,
                        base.into_pointer_value(),
                        &[i64t.const_int(first_slot + j as u64, false)],
                        "cnt.g",
                    )
                }
                .map_err(e)?;
                let w = b.build_load(i64t, gp, "cnt.w").map_err(e)?;
                let s = b
                    .build_int_add(w.into_int_value(), v.into_int_value(), "cnt.s")
                    .map_err(e)?;
                b.build_store(gp, s).map_err(e)?;
            }
        }
    }
    Ok(out)
}
