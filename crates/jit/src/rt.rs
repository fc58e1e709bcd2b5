//! Every `unsafe` operation of the crate lives in this module.
//!
//! # Safety contract (stated once)
//!
//! * JIT'd code is only entered through [`call_entry`], with a pointer to a live [`Ctx`]
//!   created by [`Ctx::new`] on the caller's stack, a slot array laid out exactly as the entry
//!   wrapper of that function expects (built by `Compiled::call` from the function's
//!   signature: one 8-byte slot per scalar, a data pointer plus one slot per extent per array)
//!   and a return slot. Array data pointers point into `ArgValue` vectors that the caller
//!   borrows mutably for the whole call, and the extents passed are exactly their shapes, so
//!   guarded code (the default) never touches memory outside them. With
//!   `Options::guards == false` the caller of `Compiled::call` takes that obligation over.
//! * The runtime callbacks (`tessera_jit_*`) are only called by JIT'd code, with the `Ctx`
//!   pointer it was given; they touch nothing but that context and its arena.
//! * [`LlvmBox`] owns an LLVM context and the execution engine created in it; the engine is
//!   dropped before the context. After construction nothing but `Drop` touches either of
//!   them (the compiled code is reached through raw function addresses, and the optimised
//!   IR was captured as a `String`), so sharing the box between threads is sound even
//!   though LLVM contexts are not thread-safe: the machine code itself is immutable and every
//!   call uses its own `Ctx` and arena.

use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{IntValue, PointerValue};
use std::alloc::Layout;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

/// Largest array rank the error record can describe.
pub const MAX_RANK: usize = 16;

/// Field indices of [`Ctx`] seen as an array of `i64` (used by the code generator).
pub mod field {
    /// Error code, 0 while no error happened.
    pub const ERR: u64 = 0;
    /// Site id of the failing operation.
    pub const SITE: u64 = 1;
    /// Extra scalar: shift count, requested bytes.
    pub const A: u64 = 2;
    /// Number of valid entries of `V1`/`V2`.
    pub const RANK: u64 = 3;
    /// Steps taken (loop iterations plus calls).
    pub const STEPS: u64 = 4;
    /// First vector: indices, given shape, extents.
    pub const V1: u64 = 5;
    /// Second vector: shape, declared shape.
    pub const V2: u64 = 5 + super::MAX_RANK as u64;
    /// The arena pointer.
    pub const ARENA: u64 = 5 + 2 * super::MAX_RANK as u64;
    /// The lowest stack address a frame may start at (the last word); see
    /// [`super::stack_limit`].
    pub const STACK_LIMIT: u64 = ARENA + 1;
    /// The block counter buffer of a counting build (null otherwise); see `crate::blocks`.
    pub const COUNTS: u64 = STACK_LIMIT + 1;
}

/// Error codes stored in [`Ctx::err`].
pub mod code {
    /// Index out of bounds (`v1` = indices, `v2` = shape).
    pub const OOB: i64 = 1;
    /// Integer division by zero.
    pub const DIV_ZERO: i64 = 2;
    /// Invalid shift count (`a` = count).
    pub const SHIFT: i64 = 3;
    /// Bad local array extent (`v1` = shape).
    pub const BAD_EXTENT: i64 = 4;
    /// Arena exhausted (`a` = requested bytes).
    pub const OOM: i64 = 5;
    /// Array shape mismatch (`v1` = given, `v2` = declared).
    pub const SHAPE: i64 = 6;
    /// Value function fell off its end.
    pub const MISSING_RETURN: i64 = 7;
    /// Call depth limit reached.
    pub const STACK_OVERFLOW: i64 = 8;
    /// Step limit reached.
    pub const CANCELLED: i64 = 9;
    /// The thread's native stack is nearly exhausted.
    pub const NATIVE_STACK: i64 = 10;
}

/// The per-call context shared by all JIT'd frames of one call.
#[repr(C)]
pub struct Ctx {
    /// Error code (see [`code`]), 0 = no error.
    pub err: i64,
    /// Site id of the error.
    pub site: i64,
    /// Extra scalar of the error.
    pub a: i64,
    /// Valid length of `v1`/`v2`.
    pub rank: i64,
    /// Steps counter.
    pub steps: i64,
    /// First error vector.
    pub v1: [i64; MAX_RANK],
    /// Second error vector.
    pub v2: [i64; MAX_RANK],
    /// The arena of local arrays (owned by the caller of the JIT'd code).
    pub arena: *mut Arena,
    /// Calls fail with [`code::NATIVE_STACK`] when the caller's frame address is below this
    /// ([`stack_limit`] of the calling thread).
    pub stack_limit: usize,
    /// The block counters of a counting build's call (null in other builds).
    pub counts: *mut i64,
}

impl Ctx {
    /// A fresh context using `arena`, for code running on the current thread.
    pub fn new(arena: &mut Arena) -> Ctx {
        Ctx {
            err: 0,
            site: 0,
            a: 0,
            rank: 0,
            steps: 0,
            v1: [0; MAX_RANK],
            v2: [0; MAX_RANK],
            arena,
            stack_limit: stack_limit(),
            counts: std::ptr::null_mut(),
        }
    }
}

/// Stack reserved below the limit for what runs after a call's check: the callee's own
/// frame, the runtime callbacks and the C library's math functions.
pub const STACK_RED_ZONE: usize = 256 * 1024;

/// The lowest address the frame of a JIT'd function may have on the current thread: the
/// thread's real stack bound (read by `stacker`, which knows the bounds of the thread's
/// stack, or of the segment it switched to) plus [`STACK_RED_ZONE`]. 0 (no check) if the
/// bound is unknown.
pub fn stack_limit() -> usize {
    let here = 0u8;
    let sp = std::ptr::addr_of!(here) as usize;
    match stacker::remaining_stack() {
        Some(rem) => sp.saturating_sub(rem).saturating_add(STACK_RED_ZONE),
        None => 0,
    }
}

/// The stack limit of the calling thread, for the private context of a parallel loop's
/// chunk (which may run on another thread than the loop's caller).
pub extern "C" fn tessera_jit_stack_limit() -> i64 {
    stack_limit() as i64
}

/// Local array storage of one call: a stack of zeroed allocations, each with the bytes it
/// counts toward the limit (none for the optimiser's scratch arrays).
pub struct Arena {
    blocks: Vec<(NonNull<u8>, Layout, u64)>,
    used: u64,
    limit: u64,
}

impl Arena {
    /// An empty arena with a byte limit.
    pub fn new(limit: u64) -> Arena {
        Arena {
            blocks: Vec::new(),
            used: 0,
            limit,
        }
    }
    fn release_to(&mut self, mark: usize) {
        while self.blocks.len() > mark {
            let (p, l, counted) = self.blocks.pop().unwrap();
            self.used -= counted;
            if l.size() != 0 {
                // SAFETY: `p` was allocated with layout `l` by `alloc_zeroed` below.
                unsafe { std::alloc::dealloc(p.as_ptr(), l) };
            }
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        self.release_to(0);
    }
}

/// Allocates a zeroed local array of `rank` extents read from `dims`, each element
/// `elem_size` bytes. Returns null after recording `BadExtent` or `OutOfMemory` in `ctx`.
/// A `scratch` array (non-zero; see `tessera_ir::Var::scratch`) does not count toward the
/// arena limit.
pub extern "C" fn tessera_jit_alloc(
    ctx: *mut Ctx,
    site: i64,
    elem_size: i64,
    rank: i64,
    dims: *const i64,
    scratch: i64,
) -> *mut u8 {
    // SAFETY: see the module contract: `ctx` is live and `dims` has `rank` entries.
    let ctx = unsafe { &mut *ctx };
    let dims = unsafe { std::slice::from_raw_parts(dims, rank as usize) };
    let arena = unsafe { &mut *ctx.arena };
    let len = dims.iter().try_fold(
        1u64,
        |a, &d| {
            if d < 0 {
                None
            } else {
                a.checked_mul(d as u64)
            }
        },
    );
    let fail = |ctx: &mut Ctx, code: i64, a: i64| {
        ctx.err = code;
        ctx.site = site;
        ctx.a = a;
        ctx.rank = rank;
        ctx.v1[..dims.len()].copy_from_slice(dims);
        std::ptr::null_mut()
    };
    let Some(len) = len else {
        return fail(ctx, code::BAD_EXTENT, 0);
    };
    let bytes = len.saturating_mul(elem_size as u64);
    let counted = if scratch != 0 { 0 } else { bytes };
    let total = arena.used.saturating_add(counted);
    if total > arena.limit {
        return fail(ctx, code::OOM, total as i64);
    }
    // Cache-line aligned: a panel copy's row of 8 doubles (`tessera_poly::model::Pack`)
    // is then one line, and vector loads never straddle two.
    let Ok(layout) = Layout::from_size_align(bytes as usize, 64) else {
        return fail(ctx, code::OOM, total as i64);
    };
    let p = if bytes == 0 {
        NonNull::<u64>::dangling().cast::<u8>()
    } else {
        // SAFETY: non-zero size.
        match NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }) {
            Some(p) => p,
            None => return fail(ctx, code::OOM, total as i64),
        }
    };
    arena.used = total;
    arena.blocks.push((p, layout, counted));
    p.as_ptr()
}

/// The current arena mark (number of live local arrays).
pub extern "C" fn tessera_jit_mark(ctx: *mut Ctx) -> i64 {
    // SAFETY: module contract.
    unsafe { (*(*ctx).arena).blocks.len() as i64 }
}

/// Frees the local arrays allocated after `mark`.
pub extern "C" fn tessera_jit_release(ctx: *mut Ctx, mark: i64) {
    // SAFETY: module contract.
    unsafe { (*(*ctx).arena).release_to(mark as usize) }
}

mod libm {
    extern "C" {
        pub fn exp(x: f64) -> f64;
        pub fn log(x: f64) -> f64;
        pub fn pow(x: f64, y: f64) -> f64;
        pub fn sin(x: f64) -> f64;
        pub fn cos(x: f64) -> f64;
        pub fn tanh(x: f64) -> f64;
        pub fn fmin(x: f64, y: f64) -> f64;
        pub fn fmax(x: f64, y: f64) -> f64;
        pub fn expf(x: f32) -> f32;
        pub fn logf(x: f32) -> f32;
        pub fn powf(x: f32, y: f32) -> f32;
        pub fn sinf(x: f32) -> f32;
        pub fn cosf(x: f32) -> f32;
        pub fn tanhf(x: f32) -> f32;
        pub fn fminf(x: f32, y: f32) -> f32;
        pub fn fmaxf(x: f32, y: f32) -> f32;
    }
}

/// Address of the C library function `name` (the same symbols the interpreter calls).
pub fn libm_addr(name: &str) -> Option<usize> {
    use libm::*;
    Some(match name {
        "exp" => exp as *const () as usize,
        "log" => log as *const () as usize,
        "pow" => pow as *const () as usize,
        "sin" => sin as *const () as usize,
        "cos" => cos as *const () as usize,
        "tanh" => tanh as *const () as usize,
        "fmin" => fmin as *const () as usize,
        "fmax" => fmax as *const () as usize,
        "expf" => expf as *const () as usize,
        "logf" => logf as *const () as usize,
        "powf" => powf as *const () as usize,
        "sinf" => sinf as *const () as usize,
        "cosf" => cosf as *const () as usize,
        "tanhf" => tanhf as *const () as usize,
        "fminf" => fminf as *const () as usize,
        "fmaxf" => fmaxf as *const () as usize,
        _ => return None,
    })
}

/// Addresses of the runtime callbacks, by the symbol names the generated code uses.
pub fn runtime_addrs() -> [(&'static str, usize); 7] {
    [
        (
            "tessera_version_begin",
            tessera_runtime::tessera_version_begin as *const () as usize,
        ),
        (
            "tessera_version_end",
            tessera_runtime::tessera_version_end as *const () as usize,
        ),
        (
            "tessera_jit_stack_limit",
            tessera_jit_stack_limit as *const () as usize,
        ),
        (
            "tessera_parallel_for",
            tessera_runtime::tessera_parallel_for as *const () as usize,
        ),
        ("tessera_jit_alloc", tessera_jit_alloc as *const () as usize),
        ("tessera_jit_mark", tessera_jit_mark as *const () as usize),
        (
            "tessera_jit_release",
            tessera_jit_release as *const () as usize,
        ),
    ]
}

/// `getelementptr inbounds ty, ptr, idx`.
pub fn gep<'ctx>(
    b: &Builder<'ctx>,
    ty: BasicTypeEnum<'ctx>,
    ptr: PointerValue<'ctx>,
    idx: IntValue<'ctx>,
) -> Result<PointerValue<'ctx>, BuilderError> {
    // SAFETY: building a GEP instruction is not itself unsafe; the generated code only
    // dereferences it after the bounds guard (or under the documented `guards: false`).
    unsafe { b.build_in_bounds_gep(ty, ptr, &[idx], "p") }
}

/// Calls the entry wrapper at `addr`.
///
/// # Safety
/// `addr` must be the address of an entry wrapper of a live [`LlvmBox`], and `slots` must be
/// laid out as that wrapper expects (see the module contract).
pub unsafe fn call_entry(addr: usize, ctx: &mut Ctx, slots: &mut [u64], ret: &mut u64) {
    type Entry = unsafe extern "C" fn(*mut Ctx, *mut u64, *mut u64);
    let f: Entry = std::mem::transmute::<usize, Entry>(addr);
    f(ctx, slots.as_mut_ptr(), ret);
}

/// Owner of an LLVM context and the execution engine holding the compiled code.
pub struct LlvmBox {
    ee: ManuallyDrop<ExecutionEngine<'static>>,
    ctx: NonNull<Context>,
}

// SAFETY: see the module contract: nothing touches the LLVM objects after construction
// except `Drop`, which runs once, when no other reference exists.
unsafe impl Send for LlvmBox {}
// SAFETY: as above; `&LlvmBox` gives no access to the LLVM objects at all.
unsafe impl Sync for LlvmBox {}

impl LlvmBox {
    /// Creates a context, lets `f` build and JIT a module in it, and keeps the engine.
    /// Whatever `f` created in the context and did not return is dropped before the
    /// context (it cannot escape: `R` is plain data chosen by the caller).
    pub fn build<R, E>(
        f: impl FnOnce(&'static Context) -> Result<(ExecutionEngine<'static>, R), E>,
    ) -> Result<(LlvmBox, R), E> {
        let ctx = NonNull::from(Box::leak(Box::new(Context::create())));
        // SAFETY: the context lives until `LlvmBox::drop` (or the error path below), after
        // everything created in it is gone.
        let r = f(unsafe { &*ctx.as_ptr() });
        match r {
            Ok((ee, r)) => Ok((
                LlvmBox {
                    ee: ManuallyDrop::new(ee),
                    ctx,
                },
                r,
            )),
            Err(e) => {
                // SAFETY: `f` has returned, so nothing of the context is alive any more.
                drop(unsafe { Box::from_raw(ctx.as_ptr()) });
                Err(e)
            }
        }
    }
}

impl Drop for LlvmBox {
    fn drop(&mut self) {
        // SAFETY: the engine is dropped exactly once, before the context it lives in.
        unsafe {
            ManuallyDrop::drop(&mut self.ee);
            drop(Box::from_raw(self.ctx.as_ptr()));
        }
    }
}
