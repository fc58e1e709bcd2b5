//! Tessera's native back end: lowers the typed IR (TIR) to LLVM IR, optimises it with the
//! O3 pipeline for the host CPU, and JIT-compiles it.
//!
//! The compiled code has exactly the semantics of the reference interpreter
//! (`tessera-interp`): same results bit for bit (math builtins call the same C library
//! functions) and the same [`RuntimeError`]s (kind, function, location, index vectors and
//! shapes), including the resource limits of [`Limits`].
//!
//! ```
//! use std::collections::HashMap;
//! use tessera_ir::{ArgValue, ArrayData, ArrayElems, Scalar};
//! use tessera_jit::{Compiled, Options};
//!
//! let src = "double dot(int n, double x[n], double y[n]) {
//!     double s = 0;
//!     for (int i = 0; i < n; i++) s += x[i] * y[i];
//!     return s;
//! }";
//! let prog = tessera_sema::compile_source(src, &HashMap::new()).unwrap();
//! let jit = Compiled::compile(&prog, &Options::default()).unwrap();
//! let (fid, _) = prog.function("dot").unwrap();
//! let v = |e: Vec<f64>| ArgValue::Array(ArrayData { shape: vec![e.len()], elems: ArrayElems::F64(e) });
//! let mut args = vec![ArgValue::Scalar(Scalar::I32(3)), v(vec![1.0, 2.0, 3.0]), v(vec![4.0, 5.0, 6.0])];
//! assert_eq!(jit.call(fid, &mut args).unwrap(), Some(Scalar::F64(32.0)));
//!
//! // Errors are those of the interpreter.
//! let mut bad = vec![ArgValue::Scalar(Scalar::I32(4)), v(vec![1.0; 4]), v(vec![1.0; 3])];
//! let err = jit.call(fid, &mut bad).unwrap_err();
//! assert_eq!(err, tessera_interp::call(&prog, fid, &mut bad, Default::default()).unwrap_err());
//! ```
//!
//! # Guards
//!
//! Every array access, every sub-array argument, every integer division/remainder and every
//! shift is checked inline; the failing branch is marked cold with branch weights so that
//! the hot path is a compare and a not-taken branch, and LLVM is free to hoist or merge
//! checks it can prove redundant. `Options::guards = false` removes these checks (bounds,
//! division by zero, shift count). **That is unsafe**, so such code is refused by the safe
//! `call`s and runs only through the `unsafe` [`Compiled::call_unchecked`] /
//! [`Kernel::call_unchecked`]: an out-of-bounds index then reads or
//! writes arbitrary memory and a division by zero is undefined behaviour; it exists only to
//! measure the cost of the guards. Call-depth, step, arena and shape checks stay.
//!
//! # Stack use
//!
//! Recursion runs on the native stack; frames are small (scalars live in registers, local
//! arrays in a heap arena). A program that makes calls runs on a stack with room for
//! `max_call_depth` frames of 512 bytes (at most 256 MiB): the calling thread's if it has
//! that much left, else a fresh segment (`stacker`). Every call also compares its frame
//! address with the thread's real stack bound (plus a red zone), so running out of stack is
//! the error [`ErrorKind::NativeStackOverflow`], never a crash.

#![warn(missing_docs)]

pub mod blocks;
mod codegen;
mod kernel;
mod loop_md;
mod loopfeat;
mod rt;

pub use kernel::{
    interpret, Args, CallError, CompileError, Element, IntoScalar, Kernel, KernelBuilder,
};
/// The `ndarray` version [`Args::array_nd`] takes views of.
pub use ndarray;
pub use tessera_ir::{ErrorKind, Loc, RuntimeError, Scalar, ScalarTy};

use inkwell::context::Context;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine,
};
use inkwell::OptimizationLevel;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use tessera_ir::*;

pub use tessera_interp::Limits;

/// Compilation options.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Allow reassociation and contraction (FMA) of floating-point operations. Results may
    /// then differ from the interpreter's. Default `false`.
    pub fast_math: bool,
    /// Check array bounds, division by zero and shift counts (default `true`). `false` is
    /// unsafe and meant for measurement only: the safe calls refuse such code, only
    /// `call_unchecked` (an `unsafe fn`) runs it; see the crate documentation.
    pub guards: bool,
    /// Resource limits, compiled into the code.
    pub limits: Limits,
    /// LLVM optimisation level 0..=3 (default 3); values above 3 mean 3.
    pub opt_level: u8,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            fast_math: false,
            guards: true,
            limits: Limits::default(),
            opt_level: 3,
        }
    }
}

/// A failure to compile.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// LLVM reported an error (verification, optimisation, code generation, JIT).
    #[error("LLVM error: {0}")]
    Llvm(String),
    /// The program uses something the back end does not support.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The source text did not compile (from [`Compiled::cached`]).
    #[error("front end: {0}")]
    Frontend(String),
    /// The requested entry function does not exist.
    #[error("no function named `{0}`")]
    NoSuchFunction(String),
}

/// An argument of [`Compiled::call_raw`]: a scalar, or an array's data pointer and shape.
pub(crate) enum RawArg {
    Scalar(Scalar),
    Array {
        elem: ScalarTy,
        ptr: *mut u8,
        shape: Vec<usize>,
    },
}

#[derive(Clone, Debug)]
enum ParamSig {
    Scalar(ScalarTy),
    Array { elem: ScalarTy, rank: usize },
}

#[derive(Clone, Debug)]
struct Sig {
    params: Vec<ParamSig>,
    ret: Option<ScalarTy>,
}

/// Per function of a program, the arrays it may write, computed once when first needed.
pub(crate) type Written = std::sync::OnceLock<Vec<std::collections::HashSet<tessera_ir::VarId>>>;

/// A JIT-compiled program. `Send + Sync`: any number of threads may [`call`](Self::call)
/// it at once (every call has its own context and arena).
pub struct Compiled {
    _llvm: rt::LlvmBox,
    entries: Vec<usize>,
    entry_sites: Vec<u64>,
    sigs: Vec<Sig>,
    names: Vec<String>,
    sites: Vec<codegen::Site>,
    ir: String,
    cpu: String,
    features: String,
    compile_ms: f64,
    phase_ms: Vec<(&'static str, f64)>,
    opts: Options,
    /// Whether any function calls another (then calls need stack; see `call_raw`).
    calls: bool,
    /// The program, for the argument checks of [`Compiled::call`].
    prog: Arc<Program>,
    /// Per function, the arrays it may write (`tessera_ir::alias::written_arrays`), found at
    /// the first call with a read-only argument.
    pub(crate) written: Written,
    /// The counted blocks of a counting build ([`Compiled::compile_counting`]).
    blocks: Option<Vec<blocks::BlockInfo>>,
    /// Per versioned region ([`Stmt::Versioned`]), by site number: where it starts and its
    /// state (boxed: the code holds its address).
    versions: Vec<(Span, Box<tessera_runtime::VersionSite>)>,
}

thread_local! {
    /// The counter buffer of the counting call running on this thread (see
    /// [`Compiled::call_counted`]); null outside one.
    static COUNT_BUF: std::cell::Cell<*mut i64> = const { std::cell::Cell::new(std::ptr::null_mut()) };
}

/// The message of the [`ErrorKind::BadCall`] refusing a program compiled without guards.
const UNGUARDED: &str = "the kernel was compiled without guards (`Options::guards == false`); \
     only the unsafe `call_unchecked` may call it";

/// Native stack reserved per call level for programs with calls (JIT'd frames are small:
/// scalars live in registers, local arrays in the arena).
const FRAME_BUDGET: usize = 512;

/// The most stack a call switches to (see `Compiled::call_raw`).
const MAX_STACK: usize = 256 << 20;

/// Process-wide LLVM options, set once before the first compilation.
///
/// `-hoist-runtime-checks=false`: LLVM 19's loop vectoriser by default hoists the memory
/// runtime checks of an inner loop into the outer loop, checking the accesses of *all* outer
/// iterations at once. For kernels where one outer iteration really aliases (Floyd-Warshall's
/// `path[i][j]` vs `path[k][j]` at `i == k`) that check then always fails and the inner loop
/// never runs vectorised (measured 5-9x slower than gcc, which checks per outer iteration).
fn llvm_options() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // `TESSERA_LLVM_ARGS` adds LLVM options for debugging, e.g. "-time-passes".
        let extra: Vec<std::ffi::CString> = std::env::var("TESSERA_LLVM_ARGS")
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|a| std::ffi::CString::new(a).ok())
            .collect();
        let mut args = vec![c"tessera".as_ptr(), c"-hoist-runtime-checks=false".as_ptr()];
        args.extend(extra.iter().map(|a| a.as_ptr()));
        // SAFETY: `args` holds valid NUL-terminated strings (`extra` owns the added ones and
        // outlives the call), the overview string is a valid empty C string, and the call
        // runs once, before any other LLVM use in this process (guarded by `ONCE`, called
        // first by `host_machine`).
        unsafe {
            llvm_sys::support::LLVMParseCommandLineOptions(
                args.len() as i32,
                args.as_ptr(),
                c"".as_ptr(),
            )
        };
    });
}

/// The host CPU's name and feature string, as the JIT compiles for them.
pub fn host_cpu() -> (String, String) {
    (
        TargetMachine::get_host_cpu_name().to_string(),
        TargetMachine::get_host_cpu_features().to_string(),
    )
}

fn host_machine(level: OptimizationLevel) -> Result<(TargetMachine, String, String), JitError> {
    llvm_options();
    Target::initialize_native(&InitializationConfig::default()).map_err(JitError::Llvm)?;
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(|e| JitError::Llvm(e.to_string()))?;
    let (cpu, features) = host_cpu();
    let tm = target
        .create_target_machine(
            &triple,
            &cpu,
            &features,
            level,
            RelocMode::Default,
            CodeModel::JITDefault,
        )
        .ok_or_else(|| JitError::Llvm("cannot create a target machine for the host".into()))?;
    Ok((tm, cpu, features))
}

/// Instructions (before optimisation) above which a function counts as huge (see `build`).
const BIG_FUNCTION: usize = 20_000;

/// The instruction count of the module's largest function.
fn largest_function(m: &inkwell::module::Module<'_>) -> usize {
    m.get_functions()
        .map(|f| {
            f.get_basic_block_iter()
                .map(|b| b.get_instructions().count())
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0)
}

/// Conditional branches (and switch cases) in a huge function above which it gets no
/// optimisation pipeline after its first simplification (see `build`).
const MANY_BRANCHES: usize = 2_000;

/// The number of two-way branches and switch cases of the module's function with most.
fn most_branches(m: &inkwell::module::Module<'_>) -> usize {
    use inkwell::values::InstructionOpcode;
    m.get_functions()
        .map(|f| {
            f.get_basic_block_iter()
                .filter_map(|b| b.get_terminator())
                .map(|t| match t.get_opcode() {
                    InstructionOpcode::Br if t.is_conditional() == Ok(true) => 1,
                    // operands: the condition, the default, then a (value, block) per case
                    InstructionOpcode::Switch => (t.get_num_operands() as usize) / 2,
                    _ => 0,
                })
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0)
}

fn opt_level(o: u8) -> OptimizationLevel {
    match o {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    }
}

struct Built {
    entries: Vec<usize>,
    entry_sites: Vec<u64>,
    sites: Vec<codegen::Site>,
    ir: String,
    cpu: String,
    features: String,
    phase_ms: Vec<(&'static str, f64)>,
    blocks: Option<Vec<blocks::BlockInfo>>,
}

fn build(
    cx: &'static Context,
    prog: &Program,
    opts: &Options,
    count: bool,
    version_sites: &[usize],
) -> Result<(ExecutionEngine<'static>, Built), JitError> {
    let mut phase_ms = Vec::new();
    let mut clock = Instant::now();
    let mut lap = |name: &'static str| {
        let now = Instant::now();
        phase_ms.push((name, (now - clock).as_secs_f64() * 1e3));
        clock = now;
    };
    let level = opt_level(opts.opt_level);
    let (tm, cpu, features) = host_machine(level)?;
    let low = codegen::lower(cx, prog, opts, &cpu, &features, version_sites)?;
    let m = &low.module;
    m.set_triple(&tm.get_triple());
    m.set_data_layout(&tm.get_target_data().get_data_layout());
    m.verify()
        .map_err(|e| JitError::Llvm(format!("invalid IR: {e}")))?;
    lap("lowering");
    let level_n = opts.opt_level.min(3);
    let huge = level_n > 0 && largest_function(m) > BIG_FUNCTION;
    if huge {
        // Huge functions (long straight-line code: one guard per access, thousands of
        // guards on the same extents): InstCombine's known-bits queries scan every
        // dominating branch on a value, quadratic in the number of guards. Promoting the
        // variables and folding the guards implied by earlier ones first (SimplifyCFG on
        // dominating conditions) leaves the pipeline a fraction of them. Normal kernels stay
        // below the threshold and get the plain pipeline; huge ones the O1 pipeline, whose
        // passes scale better on them, unless thousands of branches are left: then
        // InstCombine (the same dominating-branch scans) and SimplifyCFG (folding thousands
        // of empty blocks into one join or switch, each fold linear in the join's
        // predecessors) are quadratic whatever the pipeline, and the function gets only the
        // promotion and the first simplification (a 10,000-arm `else if` chain: 0.3 s
        // instead of 14 s).
        m.run_passes(
            "function(sroa,early-cse,simplifycfg)",
            &tm,
            PassBuilderOptions::create(),
        )
        .map_err(|e| JitError::Llvm(e.to_string()))?;
        if most_branches(m) <= MANY_BRANCHES {
            m.run_passes("default<O1>", &tm, PassBuilderOptions::create())
                .map_err(|e| JitError::Llvm(e.to_string()))?;
        }
    } else {
        m.run_passes(
            &format!("default<O{level_n}>"),
            &tm,
            PassBuilderOptions::create(),
        )
        .map_err(|e| JitError::Llvm(e.to_string()))?;
    }
    let blocks = if count {
        let b = blocks::instrument(m).map_err(JitError::Llvm)?;
        m.verify()
            .map_err(|e| JitError::Llvm(format!("invalid IR after block counting: {e}")))?;
        // Counters in registers (see `blocks`); nothing else has allocas left to promote.
        m.run_passes("function(sroa)", &tm, PassBuilderOptions::create())
            .map_err(|e| JitError::Llvm(e.to_string()))?;
        Some(b)
    } else {
        None
    };
    let ir = m.print_to_string().to_string();
    lap("IR passes");
    // Machine code for a huge function with the fast instruction selector and register
    // allocator: SelectionDAG scheduling and the machine scheduler are superlinear in the
    // size of such functions (20,000 straight-line statements: 6.9 s of 10.7 s at -O3,
    // 0.25 s here).
    let ee = m
        .create_jit_execution_engine(if huge { OptimizationLevel::None } else { level })
        .map_err(|e| JitError::Llvm(e.to_string()))?;
    for (name, addr) in rt::runtime_addrs() {
        if let Some(f) = m.get_function(name) {
            ee.add_global_mapping(&f, addr);
        }
    }
    for (name, c) in &low.libm {
        if let (Some(f), Some(addr)) = (m.get_function(name), rt::libm_addr(c)) {
            ee.add_global_mapping(&f, addr);
        }
    }
    let mut entries = Vec::new();
    for i in 0..prog.functions.len() {
        let a = ee
            .get_function_address(&format!("tessera_entry{i}"))
            .map_err(|e| JitError::Llvm(format!("entry of function {i}: {e:?}")))?;
        entries.push(a);
    }
    lap("machine code");
    Ok((
        ee,
        Built {
            entries,
            entry_sites: low.entry_sites,
            sites: low.sites,
            ir,
            cpu,
            features,
            phase_ms,
            blocks,
        },
    ))
}

impl Compiled {
    /// Compiles every function of `prog`.
    pub fn compile(prog: &Program, opts: &Options) -> Result<Compiled, JitError> {
        Self::compile_with(prog, opts, false)
    }

    /// Compiles every function of `prog` with a counter at every basic block of the
    /// optimised code (see [`blocks`]); [`call_counted`](Self::call_counted) reads them.
    /// The code is the optimised code of [`compile`](Self::compile) plus the counters.
    pub fn compile_counting(prog: &Program, opts: &Options) -> Result<Compiled, JitError> {
        Self::compile_with(prog, opts, true)
    }

    /// What each versioned region ([`Stmt::Versioned`]: the optimiser's code and the code
    /// as written) has measured and chosen so far, with where it starts, by site number.
    /// The choice is made after the first few executions (`tessera_runtime::VersionSite`).
    pub fn versions(&self) -> Vec<(Span, tessera_runtime::VersionReport)> {
        self.versions
            .iter()
            .map(|(sp, s)| (*sp, s.report()))
            .collect()
    }

    /// The counted blocks of a counting build (`None` for other builds).
    pub fn blocks(&self) -> Option<&[blocks::BlockInfo]> {
        self.blocks.as_deref()
    }

    /// [`call`](Self::call) on a counting build, adding each counted block's executions
    /// to `counts` (one slot per block of [`blocks`](Self::blocks)). A build without
    /// counters, or a buffer of another length, is an [`ErrorKind::BadCall`].
    #[allow(clippy::result_large_err)]
    pub fn call_counted(
        &self,
        func: FuncId,
        args: &mut [ArgValue],
        counts: &mut [i64],
    ) -> Result<Option<Scalar>, RuntimeError> {
        let n = self.blocks.as_ref().map(|b| b.len());
        if n != Some(counts.len()) {
            return Err(RuntimeError {
                kind: ErrorKind::BadCall {
                    message: match n {
                        None => "call_counted on a build without block counters".to_string(),
                        Some(n) => format!(
                            "call_counted with {} counters for {n} counted blocks",
                            counts.len()
                        ),
                    },
                },
                function: self.names[func.0 as usize].clone(),
                loc: Loc::default(),
            });
        }
        let prev = COUNT_BUF.with(|c| c.replace(counts.as_mut_ptr()));
        let r = self.call(func, args);
        COUNT_BUF.with(|c| c.set(prev));
        r
    }

    fn compile_with(prog: &Program, opts: &Options, count: bool) -> Result<Compiled, JitError> {
        let t0 = Instant::now();
        // Code generation recurses once per level of the tree (see `tessera_syntax::deep_stack`).
        // One `VersionSite` per versioned region, at a fixed address the code embeds, alive
        // as long as the `Compiled`.
        let mut versions: Vec<(Span, Box<tessera_runtime::VersionSite>)> = Vec::new();
        for f in &prog.functions {
            walk_stmts(
                &f.body,
                &mut |s| {
                    if let Stmt::Versioned { site, span, .. } = s {
                        let k = *site as usize;
                        if versions.len() <= k {
                            versions.resize_with(k + 1, || {
                                (
                                    Span::default(),
                                    Box::new(tessera_runtime::VersionSite::new()),
                                )
                            });
                        }
                        versions[k].0 = *span;
                    }
                },
                &mut |_| {},
            );
        }
        let addrs: Vec<usize> = versions
            .iter()
            .map(|(_, s)| &**s as *const tessera_runtime::VersionSite as usize)
            .collect();
        let (llvm, b) = tessera_syntax::deep_stack(|| {
            rt::LlvmBox::build(|cx| build(cx, prog, opts, count, &addrs))
        })?;
        let sigs = prog
            .functions
            .iter()
            .map(|f| Sig {
                params: f
                    .params
                    .iter()
                    .map(|p| match f.var(*p).kind {
                        VarKind::Scalar(t) => ParamSig::Scalar(t),
                        VarKind::Array { elem, rank } => ParamSig::Array { elem, rank },
                    })
                    .collect(),
                ret: f.ret,
            })
            .collect();
        Ok(Compiled {
            _llvm: llvm,
            entries: b.entries,
            entry_sites: b.entry_sites,
            sigs,
            names: prog.functions.iter().map(|f| f.name.clone()).collect(),
            sites: b.sites,
            ir: b.ir,
            cpu: b.cpu,
            features: b.features,
            compile_ms: t0.elapsed().as_secs_f64() * 1e3,
            phase_ms: b.phase_ms,
            opts: *opts,
            prog: Arc::new(prog.clone()),
            written: Written::default(),
            blocks: b.blocks,
            versions,
            calls: prog.functions.iter().any(|f| {
                let mut any = false;
                walk_stmts(&f.body, &mut |_| {}, &mut |x| {
                    any |= matches!(x.kind, ExprKind::Call(..))
                });
                any
            }),
        })
    }

    /// Compiles `source` (with no `-D` overrides) through the process-wide cache that
    /// [`Kernel::compile`] also uses, keyed by the source text, the overrides, the options
    /// and the host CPU name and features. `entry` must name a function of the program; the
    /// whole program is compiled (so every entry of one source shares the compiled code).
    /// Front-end errors are rendered with the file name `<source>`.
    pub fn cached(source: &str, entry: &str, opts: &Options) -> Result<Arc<Compiled>, JitError> {
        let (_, c) = cached_program(source, &BTreeMap::new(), opts).map_err(|e| match e {
            CacheError::Frontend(ds) => JitError::Frontend(tessera_syntax::diag::render_all(
                &tessera_syntax::SourceFile::new("<source>", source),
                &ds,
            )),
            CacheError::Jit(e) => e,
        })?;
        if c.func_id(entry).is_none() {
            return Err(JitError::NoSuchFunction(entry.to_string()));
        }
        Ok(c)
    }

    /// The id of the function called `name`, if the program has one.
    pub fn func_id(&self, name: &str) -> Option<FuncId> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| FuncId(i as u32))
    }

    /// The options this program was compiled with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Calls `func` with `args` (one per parameter, in order); arrays are modified in place.
    /// Same contract as `tessera_interp::call` with the limits of [`Options::limits`]: the
    /// arguments are checked first (`tessera_interp::check_args`: count, kinds, element
    /// types, shapes that describe their elements, extents within `long`; a malformed
    /// argument is an [`ErrorKind::BadCall`] naming it), then every array's shape against its
    /// declared shape.
    ///
    /// A program compiled with `Options::guards == false` is refused with
    /// [`ErrorKind::BadCall`]: its code does not check indices, so calling it is only
    /// possible through the `unsafe` [`call_unchecked`](Self::call_unchecked).
    #[allow(clippy::result_large_err)] // the interpreter's signature, on purpose
    pub fn call(
        &self,
        func: FuncId,
        args: &mut [ArgValue],
    ) -> Result<Option<Scalar>, RuntimeError> {
        if !self.opts.guards {
            return Err(RuntimeError {
                kind: ErrorKind::BadCall {
                    message: UNGUARDED.to_string(),
                },
                function: self.names[func.0 as usize].clone(),
                loc: Loc::default(),
            });
        }
        // SAFETY: the code is guarded, so with the arguments checked by `call_checked`
        // every access stays inside the arrays passed.
        unsafe { self.call_checked(func, args) }
    }

    /// [`call`](Self::call) without refusing a program compiled with `Options::guards ==
    /// false`. The arguments are still checked.
    ///
    /// # Safety
    /// If the program was compiled without guards, the caller must ensure that the call
    /// performs no out-of-bounds array access, no integer division or remainder by zero and
    /// no shift by an invalid count (all undefined behaviour in unguarded code). With guards
    /// it is exactly [`call`](Self::call).
    #[allow(clippy::result_large_err)]
    pub unsafe fn call_unchecked(
        &self,
        func: FuncId,
        args: &mut [ArgValue],
    ) -> Result<Option<Scalar>, RuntimeError> {
        self.call_checked(func, args)
    }

    /// # Safety
    /// As [`call_unchecked`](Self::call_unchecked).
    #[allow(clippy::result_large_err)]
    unsafe fn call_checked(
        &self,
        func: FuncId,
        args: &mut [ArgValue],
    ) -> Result<Option<Scalar>, RuntimeError> {
        // Shared with the interpreter, so both report the same error for malformed
        // arguments; after it every array holds the product of its shape elements.
        tessera_interp::check_args(&self.prog, func, args)?;
        let raw: Vec<RawArg> = args
            .iter_mut()
            .map(|a| match a {
                ArgValue::Scalar(s) => RawArg::Scalar(*s),
                ArgValue::Array(d) => RawArg::Array {
                    elem: d.elems.ty(),
                    ptr: elems_ptr(&mut d.elems),
                    shape: d.shape.clone(),
                },
            })
            .collect();
        self.call_raw(func, &raw)
    }

    /// The zero-copy core of [`call`](Self::call): array arguments are data pointers plus
    /// shapes, already checked against the parameters (one argument per parameter, of the
    /// parameter's kind and element type; every extent at most `i64::MAX`).
    ///
    /// # Safety
    /// Every pointer must be valid for reads and writes of the product of its shape
    /// elements of its element type, and exclusively borrowed by the caller for the call;
    /// the safe callers (`call`, [`Kernel::call`]) derive them from `&mut` borrows that
    /// outlive the call. A program compiled without guards must only be called where its
    /// accesses stay in bounds (see [`call_unchecked`](Self::call_unchecked)).
    #[allow(clippy::result_large_err)]
    pub(crate) unsafe fn call_raw(
        &self,
        func: FuncId,
        args: &[RawArg],
    ) -> Result<Option<Scalar>, RuntimeError> {
        let sig = &self.sigs[func.0 as usize];
        assert_eq!(
            args.len(),
            sig.params.len(),
            "argument count checked by the caller"
        );
        let mut slots: Vec<u64> = Vec::new();
        for (p, a) in sig.params.iter().zip(args.iter()) {
            match (p, a) {
                (ParamSig::Scalar(t), RawArg::Scalar(s)) => slots.push(scalar_bits(s.convert(*t))),
                (ParamSig::Array { elem: pe, rank }, RawArg::Array { elem, ptr, shape }) => {
                    assert_eq!(
                        elem, pe,
                        "array argument of element type {elem} for a parameter of type {pe}"
                    );
                    slots.push(*ptr as u64);
                    if shape.len() == *rank {
                        slots.extend(shape.iter().map(|&x| {
                            assert!(x as u64 <= i64::MAX as u64, "extent checked by the caller");
                            x as u64
                        }));
                    } else {
                        // Rank mismatch: extents that never match a declared shape; the
                        // real shape is put back into the error below.
                        slots.extend(std::iter::repeat_n(i64::MIN as u64, *rank));
                    }
                }
                _ => panic!("argument kinds checked by the caller"),
            }
        }
        let mut run = || {
            let mut arena = rt::Arena::new(self.opts.limits.arena_bytes);
            let mut ctx = rt::Ctx::new(&mut arena);
            // A counting build's code writes its block counters through the context: the
            // buffer of `call_counted` on this thread, or a scratch buffer for other calls.
            let mut scratch = Vec::new();
            if let Some(b) = &self.blocks {
                let p = COUNT_BUF.with(|c| c.get());
                ctx.counts = if p.is_null() {
                    scratch.resize(b.len().max(1), 0i64);
                    scratch.as_mut_ptr()
                } else {
                    p
                };
            }
            let mut ret = 0u64;
            // SAFETY: the entry address belongs to `self._llvm`, alive for this call, and the
            // slots were laid out from the function's signature above (see `rt`); the array
            // pointers are valid for their shapes (this function's contract).
            unsafe {
                rt::call_entry(
                    self.entries[func.0 as usize],
                    &mut ctx,
                    &mut slots,
                    &mut ret,
                )
            };
            if ctx.err != 0 {
                return Err(self.decode(&ctx, func, args));
            }
            Ok(sig.ret.map(|t| bits_scalar(ret, t)))
        };
        if !self.calls {
            return run();
        }
        // Calls nest up to `max_call_depth` deep on this thread's native stack. Make sure
        // there is room for that many frames of a typical size (switching to a fresh stack
        // segment if this thread's stack is too small); a deeper native stack than that
        // still fails cleanly with `NativeStackOverflow` (`rt::stack_limit`).
        let need = (self.opts.limits.max_call_depth.saturating_mul(FRAME_BUDGET))
            .saturating_add(rt::STACK_RED_ZONE * 2)
            .min(MAX_STACK);
        stacker::maybe_grow(need, need, run)
    }

    fn decode(&self, ctx: &rt::Ctx, func: FuncId, args: &[RawArg]) -> RuntimeError {
        use codegen::SiteKind as K;
        let site = &self.sites[ctx.site as usize];
        let n = (ctx.rank as usize).min(rt::MAX_RANK);
        let v1 = ctx.v1[..n].to_vec();
        let v2 = ctx.v2[..n].to_vec();
        let kind = match &site.kind {
            K::Oob { array } => {
                let dim = v1
                    .iter()
                    .zip(&v2)
                    .position(|(&i, &s)| i < 0 || i >= s)
                    .unwrap_or(0);
                ErrorKind::IndexOutOfBounds {
                    array: array.clone(),
                    index: v1,
                    shape: v2,
                    dim,
                }
            }
            K::DivZero => ErrorKind::DivisionByZero,
            K::Shift { width } => ErrorKind::InvalidShift {
                count: ctx.a,
                width: *width,
            },
            K::Alloc { array } => {
                if ctx.err == rt::code::BAD_EXTENT {
                    ErrorKind::BadExtent {
                        array: array.clone(),
                        shape: v1,
                    }
                } else {
                    ErrorKind::OutOfMemory {
                        requested: ctx.a as u64,
                        limit: self.opts.limits.arena_bytes,
                    }
                }
            }
            K::Shape { param, callee } => {
                let base = self.entry_sites[func.0 as usize];
                let k = (ctx.site as u64).wrapping_sub(base) as usize;
                let mut given = v1;
                if k < args.len() && ctx.site as u64 >= base {
                    // An entry check: report the shape actually passed.
                    given = match &args[k] {
                        RawArg::Array { shape, .. } => shape.iter().map(|&x| x as i64).collect(),
                        RawArg::Scalar(_) => vec![],
                    };
                }
                ErrorKind::ShapeMismatch {
                    param: param.clone(),
                    function: callee.clone(),
                    given,
                    declared: v2,
                }
            }
            K::MissingReturn => ErrorKind::MissingReturn {
                function: site.func.clone(),
            },
            K::StackOverflow => ErrorKind::StackOverflow {
                limit: self.opts.limits.max_call_depth,
            },
            K::NativeStack => ErrorKind::NativeStackOverflow,
            K::Cancelled => ErrorKind::StepLimit {
                limit: self.opts.limits.max_steps.unwrap_or(0),
            },
        };
        RuntimeError {
            kind,
            function: site.func.clone(),
            loc: site.loc,
        }
    }

    /// The optimised LLVM IR of the whole program.
    pub fn llvm_ir(&self) -> String {
        self.ir.clone()
    }

    /// The host assembly of the optimised program (compiled afresh from the IR).
    pub fn asm(&self) -> Result<String, JitError> {
        let cx = Context::create();
        let buf = MemoryBuffer::create_from_memory_range_copy(self.ir.as_bytes(), "tessera");
        let m = cx
            .create_module_from_ir(buf)
            .map_err(|e| JitError::Llvm(e.to_string()))?;
        let (tm, _, _) = host_machine(opt_level(self.opts.opt_level))?;
        let out = tm
            .write_to_memory_buffer(&m, FileType::Assembly)
            .map_err(|e| JitError::Llvm(e.to_string()))?;
        Ok(String::from_utf8_lossy(out.as_slice()).into_owned())
    }

    /// Wall-clock milliseconds the compilation took (lowering, O3, machine code).
    pub fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    /// The compilation's phases and their milliseconds: lowering to LLVM IR (with the
    /// verifier), the IR pass pipeline, machine code.
    pub fn phase_ms(&self) -> &[(&'static str, f64)] {
        &self.phase_ms
    }

    /// The host CPU name and feature string the code was compiled for.
    pub fn host(&self) -> (&str, &str) {
        (&self.cpu, &self.features)
    }
}

pub(crate) enum CacheError {
    Frontend(Vec<tessera_syntax::Diagnostic>),
    Jit(JitError),
}

type CacheKey = (u64, Vec<(String, String)>, String, String, String);
type CacheVal = (String, Arc<Program>, Arc<Compiled>);

/// The process-wide compile cache: source (its hash, and the text itself to rule out
/// collisions), `-D` overrides, options, host CPU name and features → the checked program
/// and its compiled code. Failures are not cached. The lock is not held while compiling; if
/// two threads compile the same key at once, both get the entry inserted first.
pub(crate) fn cached_program(
    source: &str,
    defines: &BTreeMap<String, String>,
    opts: &Options,
) -> Result<(Arc<Program>, Arc<Compiled>), CacheError> {
    static CACHE: OnceLock<Mutex<HashMap<CacheKey, CacheVal>>> = OnceLock::new();
    let cpu = TargetMachine::get_host_cpu_name().to_string();
    let features = TargetMachine::get_host_cpu_features().to_string();
    let key = (
        fnv1a(source.as_bytes()),
        defines
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        format!("{opts:?}"),
        cpu,
        features,
    );
    let cache = CACHE.get_or_init(Default::default);
    if let Some((src, p, c)) = cache.lock().unwrap().get(&key) {
        if src == source {
            return Ok((p.clone(), c.clone()));
        }
    }
    let overrides: HashMap<String, String> = defines.clone().into_iter().collect();
    let prog =
        Arc::new(tessera_sema::compile_source(source, &overrides).map_err(CacheError::Frontend)?);
    let c = Arc::new(Compiled::compile(&prog, opts).map_err(CacheError::Jit)?);
    let mut map = cache.lock().unwrap();
    let e = map
        .entry(key)
        .and_modify(|e| {
            if e.0 != source {
                *e = (source.to_string(), prog.clone(), c.clone());
            }
        })
        .or_insert_with(|| (source.to_string(), prog, c));
    Ok((e.1.clone(), e.2.clone()))
}

fn elems_ptr(e: &mut ArrayElems) -> *mut u8 {
    match e {
        ArrayElems::Bool(v) => v.as_mut_ptr() as *mut u8,
        ArrayElems::I8(v) => v.as_mut_ptr() as *mut u8,
        ArrayElems::I32(v) => v.as_mut_ptr() as *mut u8,
        ArrayElems::I64(v) => v.as_mut_ptr() as *mut u8,
        ArrayElems::F32(v) => v.as_mut_ptr() as *mut u8,
        ArrayElems::F64(v) => v.as_mut_ptr() as *mut u8,
    }
}

fn scalar_bits(s: Scalar) -> u64 {
    match s {
        Scalar::Bool(b) => b as u64,
        Scalar::I8(v) => v as u8 as u64,
        Scalar::I32(v) => v as u32 as u64,
        Scalar::I64(v) => v as u64,
        Scalar::F32(v) => v.to_bits() as u64,
        Scalar::F64(v) => v.to_bits(),
    }
}

fn bits_scalar(b: u64, t: ScalarTy) -> Scalar {
    match t {
        ScalarTy::Bool => Scalar::Bool(b & 0xff != 0),
        ScalarTy::I8 => Scalar::I8(b as u8 as i8),
        ScalarTy::I32 => Scalar::I32(b as u32 as i32),
        ScalarTy::I64 => Scalar::I64(b as i64),
        ScalarTy::F32 => Scalar::F32(f32::from_bits(b as u32)),
        ScalarTy::F64 => Scalar::F64(f64::from_bits(b)),
    }
}
