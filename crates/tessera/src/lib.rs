//! Tessera from Rust: compile a loop-nest kernel written in Tessera's C subset once, call it
//! many times on your own memory, in any of the three execution modes of the `tessera` CLI.
//!
//! * [`Mode::Interp`]: the reference interpreter (the semantic definition);
//! * [`Mode::Jit`]: native code through the LLVM JIT, guarded like the interpreter;
//! * [`Mode::Opt`]: the polyhedral optimiser (SCoP detection, isl scheduling, tiling,
//!   parallel marks) and then the JIT; parallel loops run on a work-stealing pool of
//!   [`threads`](KernelBuilder::threads) workers.
//!
//! All three take the same arguments ([`Args`]: scalars by value, arrays as `&mut [T]`
//! slices or standard-layout `ndarray` views, written in place; the compiled modes copy
//! nothing) and check them the same way against the entry's declaration, and all three
//! report the same [`CallError`]s: a bad argument before anything runs, or a
//! [`RuntimeError`] naming the array, the index and the source location.
//!
//! ```
//! use tessera::{Args, Kernel, Mode};
//!
//! let src = "void gemm(int ni, int nj, int nk, double alpha, double beta,
//!                      double C[ni][nj], double A[ni][nk], double B[nk][nj]) {
//!     for (int i = 0; i < ni; i++)
//!         for (int j = 0; j < nj; j++) {
//!             C[i][j] *= beta;
//!             for (int k = 0; k < nk; k++) C[i][j] += alpha * A[i][k] * B[k][j];
//!         }
//! }";
//! let (ni, nj, nk) = (3, 4, 5);
//! let a: Vec<f64> = (0..ni * nk).map(|x| x as f64).collect();
//! let b: Vec<f64> = (0..nk * nj).map(|x| (x % 7) as f64).collect();
//! let mut results = Vec::new();
//! for mode in [Mode::Interp, Mode::Jit, Mode::Opt] {
//!     let gemm = Kernel::builder(src, "gemm").mode(mode).threads(2).compile().unwrap();
//!     let (mut a, mut b, mut c) = (a.clone(), b.clone(), vec![1.0; ni * nj]);
//!     gemm.call(
//!         &mut Args::new()
//!             .scalar("ni", ni)
//!             .scalar("nj", nj)
//!             .scalar("nk", nk)
//!             .scalar("alpha", 1.5)
//!             .scalar("beta", 1.2)
//!             .array("C", &mut c, &[ni, nj])
//!             .array("A", &mut a, &[ni, nk])
//!             .array("B", &mut b, &[nk, nj]),
//!     )
//!     .unwrap();
//!     results.push(c);
//! }
//! assert_eq!(results[0], results[1]);
//! assert_eq!(results[0], results[2]);
//! ```
//!
//! [`Kernel::explain`] shows what the polyhedral optimiser does with the entry, as
//! `tessera explain` prints it.

#![warn(missing_docs)]

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Options of the native back end (fast math, guards, resource limits, LLVM level), used by
/// [`Mode::Jit`] and [`Mode::Opt`].
pub use tessera_jit::Options as JitOptions;
pub use tessera_jit::{
    ndarray, Args, CallError, Element, ErrorKind, IntoScalar, Limits, Loc, RuntimeError, Scalar,
    ScalarTy,
};
pub use tessera_poly::{Fusion, GenOptions, PolyOptions};
/// Thread-count errors of the runtime, as in [`Error::Threads`].
pub use tessera_runtime::RuntimeError as ThreadsError;
pub use tessera_runtime::{max_threads, MAX_THREADS};
pub use tessera_syntax::Diagnostic;

use tessera_ir::{FuncId, Program};
use tessera_runtime::Runtime;

/// How a [`Kernel`] runs.
///
/// ```
/// use tessera::Mode;
/// assert_eq!(Mode::default(), Mode::Jit);
/// assert_eq!(Mode::Opt.to_string(), "opt");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The reference interpreter. Arrays are copied in and out of the interpreter.
    Interp,
    /// Native code through the LLVM JIT, for the host CPU (the default).
    #[default]
    Jit,
    /// The polyhedral optimiser, then the JIT; parallel loops run on the thread pool.
    Opt,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Interp => "interp",
            Mode::Jit => "jit",
            Mode::Opt => "opt",
        })
    }
}

/// A failure of [`KernelBuilder::compile`].
///
/// ```
/// use tessera::{Error, Kernel};
///
/// let err = Kernel::builder("void f(int n) { n = m; }", "f")
///     .file_name("f.c")
///     .compile()
///     .unwrap_err();
/// let d = &err.diagnostics()[0];
/// assert_eq!((d.span.line, d.span.col), (1, 21));
/// assert!(err.to_string().starts_with("f.c:1:21: error:"), "{err}");
///
/// let err = Kernel::builder("void f(int n) {}", "f").threads(0).compile().unwrap_err();
/// assert!(matches!(err, Error::Threads(_)));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source was rejected (diagnostics with their locations), the entry does not
    /// exist, or the back end failed.
    #[error(transparent)]
    Compile(#[from] tessera_jit::CompileError),
    /// The thread count is 0 or above [`max_threads`] for this machine (the check of
    /// `tessera run --threads`).
    #[error("threads: {0}")]
    Threads(#[source] ThreadsError),
    /// Options that do not go together or are out of range (guards or fast math for the
    /// interpreter, a tile size below 1, ...).
    #[error("{0}")]
    Options(String),
}

impl Error {
    /// The front end's diagnostics (each with its [`span`](Diagnostic::span): line and
    /// column), if the source was rejected; empty otherwise.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Error::Compile(tessera_jit::CompileError::Frontend { diagnostics, .. }) => diagnostics,
            _ => &[],
        }
    }
}

/// Settings for compiling a [`Kernel`], made by [`Kernel::builder`]: `-D` overrides, a file
/// name for diagnostics, the [`Mode`], threads, and the options of the back end and of the
/// polyhedral optimiser. Every setting has the CLI's default.
///
/// ```
/// use tessera::{Fusion, Kernel, Mode};
///
/// let k = Kernel::builder("#define N 8\nvoid z(double x[N]) { for (int i = 0; i < N; i++) x[i] = 0; }", "z")
///     .define("N", 16)
///     .file_name("z.c")
///     .mode(Mode::Opt)
///     .threads(2)
///     .tile_sizes([32, 32])
///     .register_tile(1)
///     .fusion(Fusion::Max)
///     .compile()
///     .unwrap();
/// assert_eq!(k.signature(), "void z(double x[16L])");
/// ```
#[derive(Clone, Debug)]
pub struct KernelBuilder<'s> {
    inner: tessera_jit::KernelBuilder<'s>,
    jit: JitOptions,
    mode: Mode,
    threads: Option<usize>,
    poly: PolyOptions,
    gen: GenOptions,
}

impl<'s> KernelBuilder<'s> {
    /// Overrides `#define name ...` with `value`, like `-D name=value` on the command line.
    ///
    /// ```
    /// let k = tessera::Kernel::builder("#define N 2\nint n() { return N; }", "n").define("N", 5).compile().unwrap();
    /// assert_eq!(k.call(&mut tessera::Args::new()).unwrap(), Some(tessera::Scalar::I32(5)));
    /// ```
    pub fn define(mut self, name: &str, value: impl fmt::Display) -> Self {
        self.inner = self.inner.define(name, value);
        self
    }

    /// Several [`define`](Self::define)s.
    ///
    /// ```
    /// let k = tessera::Kernel::builder("#define A 1\n#define B 2\nint s() { return A + B; }", "s")
    ///     .defines([("A", 10), ("B", 20)])
    ///     .compile()
    ///     .unwrap();
    /// assert_eq!(k.call(&mut tessera::Args::new()).unwrap(), Some(tessera::Scalar::I32(30)));
    /// ```
    pub fn defines<K: AsRef<str>, V: fmt::Display>(
        mut self,
        defs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.inner = self.inner.defines(defs);
        self
    }

    /// The file name shown in diagnostics (default `<source>`).
    ///
    /// ```
    /// let err = tessera::Kernel::builder("void f() { x = 1; }", "f").file_name("k.c").compile().unwrap_err();
    /// assert!(err.to_string().starts_with("k.c:1:12: error"), "{err}");
    /// ```
    pub fn file_name(mut self, name: &str) -> Self {
        self.inner = self.inner.file_name(name);
        self
    }

    /// The execution mode (default [`Mode::Jit`]).
    ///
    /// ```
    /// let k = tessera::Kernel::builder("int one() { return 1; }", "one").mode(tessera::Mode::Interp).compile().unwrap();
    /// assert_eq!(k.mode(), tessera::Mode::Interp);
    /// ```
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Worker threads for the parallel loops of [`Mode::Opt`]: at least 1, at most
    /// [`max_threads`]`(cores)` (1024, and 64 per available core), checked by
    /// [`compile`](Self::compile) in every mode as `tessera run --threads` checks it. Without
    /// it, `Opt` kernels run on the process-wide pool (sized by `TESSERA_THREADS`, else the
    /// available cores). Kernels with the same thread count share one pool.
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f() {}", "f").mode(tessera::Mode::Opt).threads(2).compile().unwrap();
    /// assert_eq!(k.threads(), Some(2));
    /// assert!(tessera::Kernel::builder("void f() {}", "f").threads(1 << 20).compile().is_err());
    /// ```
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// All options of the native back end at once (default [`JitOptions::default`]: guards
    /// on, no fast math, default limits, LLVM `-O3`).
    ///
    /// ```
    /// let opts = tessera::JitOptions { opt_level: 1, ..Default::default() };
    /// let k = tessera::Kernel::builder("void f() {}", "f").jit_options(&opts).compile().unwrap();
    /// assert!(k.call(&mut tessera::Args::new()).is_ok());
    /// ```
    pub fn jit_options(mut self, opts: &JitOptions) -> Self {
        self.jit = *opts;
        self
    }

    /// Allow floating-point reassociation and contraction (FMA) in the compiled modes;
    /// results may then differ from the interpreter's in the last bits (default off; an
    /// error with [`Mode::Interp`]).
    ///
    /// ```
    /// let b = tessera::Kernel::builder("void f() {}", "f").fast_math(true);
    /// assert!(b.clone().compile().is_ok());
    /// assert!(b.mode(tessera::Mode::Interp).compile().is_err());
    /// ```
    pub fn fast_math(mut self, on: bool) -> Self {
        self.jit.fast_math = on;
        self
    }

    /// Whether the compiled code checks array bounds, divisions and shift counts (default
    /// `true`). A kernel compiled with `false` is refused by [`Kernel::call`]
    /// ([`CallError::Unguarded`]) and runs only through the `unsafe`
    /// [`Kernel::call_unchecked`]. An error with [`Mode::Interp`], which always checks.
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f() {}", "f").guards(false).compile().unwrap();
    /// assert!(matches!(k.call(&mut tessera::Args::new()), Err(tessera::CallError::Unguarded { .. })));
    /// // SAFETY: `f` accesses no array, divides by nothing and shifts nothing.
    /// assert!(unsafe { k.call_unchecked(&mut tessera::Args::new()) }.is_ok());
    /// ```
    pub fn guards(mut self, on: bool) -> Self {
        self.jit.guards = on;
        self
    }

    /// Resource limits (call depth, local-array arena, steps) in every mode.
    ///
    /// ```
    /// let src = "void spin(int n) { for (int i = 0; i < n; i++) {} }";
    /// let limits = tessera::Limits { max_steps: Some(100), ..Default::default() };
    /// let k = tessera::Kernel::builder(src, "spin").mode(tessera::Mode::Interp).limits(limits).compile().unwrap();
    /// let err = k.call(&mut tessera::Args::new().scalar("n", 1000)).unwrap_err();
    /// assert!(matches!(err.runtime().unwrap().kind, tessera::ErrorKind::StepLimit { .. }), "{err}");
    /// ```
    pub fn limits(mut self, limits: Limits) -> Self {
        self.jit.limits = limits;
        self
    }

    /// All options of the polyhedral optimiser at once (default [`PolyOptions::default`],
    /// as `tessera run --mode opt`).
    ///
    /// ```
    /// let opts = tessera::PolyOptions { tile: false, ..Default::default() };
    /// let k = tessera::Kernel::builder("void f() {}", "f").poly_options(opts).compile().unwrap();
    /// assert!(!k.explain().is_empty());
    /// ```
    pub fn poly_options(mut self, opts: PolyOptions) -> Self {
        self.poly = opts;
        self
    }

    /// The code generation options of the polyhedral stage (default: parallel loops run
    /// on the pool, in order).
    ///
    /// ```
    /// let gen = tessera::GenOptions { reverse_parallel: true, ..Default::default() };
    /// let k = tessera::Kernel::builder("void f() {}", "f").mode(tessera::Mode::Opt).gen_options(gen).compile().unwrap();
    /// assert!(k.call(&mut tessera::Args::new()).is_ok());
    /// ```
    pub fn gen_options(mut self, gen: GenOptions) -> Self {
        self.gen = gen;
        self
    }

    /// Tile sizes per band member, overriding the cache model (the last one repeats), like
    /// `--tile-sizes 32,32,64`. Each must be at least 1.
    ///
    /// ```
    /// assert!(tessera::Kernel::builder("void f() {}", "f").tile_sizes([0]).compile().is_err());
    /// ```
    pub fn tile_sizes(mut self, sizes: impl IntoIterator<Item = i64>) -> Self {
        self.poly.tile_sizes = Some(sizes.into_iter().collect());
        self
    }

    /// Whether to tile (default `true`; `false` is `--no-tile`).
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f() {}", "f").tile(false).compile().unwrap();
    /// assert!(k.call(&mut tessera::Args::new()).is_ok());
    /// ```
    pub fn tile(mut self, on: bool) -> Self {
        self.poly.tile = on;
        self
    }

    /// Register tiles: unroll and jam by `n`, 1 to 16 (1: off; default 4), like
    /// `--register-tile N`.
    ///
    /// ```
    /// assert!(tessera::Kernel::builder("void f() {}", "f").register_tile(17).compile().is_err());
    /// ```
    pub fn register_tile(mut self, n: i64) -> Self {
        self.poly.register_tile = n;
        self
    }

    /// Rows of the register micro-kernel of matrix-product-like nests, 2 to 16; default 8
    /// on hosts with AVX-512, else 4. Like `--micro-kernel-rows N`.
    ///
    /// ```
    /// assert!(tessera::Kernel::builder("void f() {}", "f").micro_kernel_rows(1).compile().is_err());
    /// ```
    pub fn micro_kernel_rows(mut self, n: i64) -> Self {
        self.poly.micro_kernel_rows = n;
        self
    }

    /// Columns of the register micro-kernel of matrix-product-like nests, 0 (off) or 2 to
    /// 64; default 8. Like `--micro-kernel-cols N`.
    ///
    /// ```
    /// assert!(tessera::Kernel::builder("void f() {}", "f").micro_kernel_cols(1).compile().is_err());
    /// ```
    pub fn micro_kernel_cols(mut self, n: i64) -> Self {
        self.poly.micro_kernel_cols = n;
        self
    }

    /// Fusion of the scheduler (default [`Fusion::Smart`]), like `--fusion`.
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f() {}", "f").fusion(tessera::Fusion::None).compile().unwrap();
    /// assert!(k.call(&mut tessera::Args::new()).is_ok());
    /// ```
    pub fn fusion(mut self, fusion: Fusion) -> Self {
        self.poly.fusion = fusion;
        self
    }

    /// Whether loops marked parallel run on the pool (default `true`); `false` runs them
    /// sequentially in order, like `--no-parallel`.
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f() {}", "f").mode(tessera::Mode::Opt).parallel(false).compile().unwrap();
    /// assert!(k.call(&mut tessera::Args::new()).is_ok());
    /// ```
    pub fn parallel(mut self, on: bool) -> Self {
        self.gen.sequential = !on;
        self
    }

    /// Checks the settings and the source and compiles the kernel for its mode:
    /// [`Mode::Jit`] through the JIT's process-wide compile cache (shared with
    /// `tessera_jit::Kernel`); [`Mode::Opt`] runs the polyhedral optimiser and compiles
    /// the result (not cached: compile once, call many times); [`Mode::Interp`] only
    /// checks. Errors: see [`Error`].
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f(int n) {}", "g").compile();
    /// assert!(k.unwrap_err().to_string().contains("no function named `g`"));
    /// ```
    pub fn compile(self) -> Result<Kernel, Error> {
        if self.mode == Mode::Interp && (self.jit.fast_math || !self.jit.guards) {
            return Err(Error::Options(
                "fast math and unguarded code apply to Mode::Jit and Mode::Opt only".into(),
            ));
        }
        self.poly.check().map_err(Error::Options)?;
        let cores = tessera_runtime::available_parallelism();
        if let Some(n) = self.threads {
            // The check of `tessera run --threads` (an explicit count ignores the variable).
            tessera_runtime::resolve_threads(Some(n), None, cores).map_err(Error::Threads)?;
        }
        let pool = match (self.mode, self.threads) {
            (Mode::Opt, Some(n)) => Some(pool(n).map_err(Error::Threads)?),
            _ => None,
        };
        let entry = self.inner.entry().to_string();
        let builder = self.inner.options(&self.jit);
        let (backend, prog, explained) = match self.mode {
            Mode::Jit => {
                let k = builder.compile()?;
                let prog = k.program().clone();
                (Backend::Native(k, None), prog, None)
            }
            Mode::Interp => {
                let (prog, func) = builder.check()?;
                (Backend::Interp(func, self.jit.limits), Arc::new(prog), None)
            }
            Mode::Opt => {
                let (prog, _) = builder.check()?;
                let opt = optimize(&prog, &self.poly, self.gen);
                let compiled = tessera_jit::Compiled::compile(&opt.program, &self.jit)
                    .map_err(tessera_jit::CompileError::Jit)?;
                let k = tessera_jit::Kernel::from_compiled(Arc::new(compiled), &entry)
                    .expect("the optimiser keeps every function");
                let text = opt.report.explain(&opt.program, &[entry.as_str()]);
                let summary = opt.report.summary();
                (
                    Backend::Native(k, pool),
                    Arc::new(prog),
                    Some((text, summary)),
                )
            }
        };
        let func = prog
            .function(&entry)
            .map(|(f, _)| f)
            .expect("the entry was checked");
        let explain = OnceLock::new();
        let mut summary = None;
        if let Some((text, s)) = explained {
            let _ = explain.set(text);
            summary = Some(s);
        }
        Ok(Kernel {
            inner: Arc::new(Inner {
                mode: self.mode,
                threads: self.threads,
                backend,
                prog,
                func,
                poly: self.poly,
                gen: self.gen,
                explain,
                summary,
            }),
        })
    }
}

/// The polyhedral optimiser's output for a program: what `tessera run --mode opt` compiles
/// and reports.
#[derive(Debug)]
pub struct Optimized {
    /// The transformed program (same functions and parameters; optimised loop nests).
    pub program: Program,
    /// What happened to every SCoP and loop nest ([`tessera_poly::Report::explain`]).
    pub report: tessera_poly::Report,
    /// Wall-clock milliseconds of the optimisation.
    pub ms: f64,
}

/// Runs the polyhedral optimiser on `prog` (on a deep enough stack for any program the
/// front end accepts) and times it: the first step of [`Mode::Opt`] and of
/// `tessera run --mode opt`.
///
/// ```
/// use std::collections::HashMap;
/// let prog = tessera_sema::compile_source(
///     "void z(int n, double x[n]) { for (int i = 0; i < n; i++) x[i] = 0; }",
///     &HashMap::new(),
/// )
/// .unwrap();
/// let opt = tessera::optimize(&prog, &Default::default(), Default::default());
/// assert_eq!(opt.report.scops.len(), 1);
/// assert!(opt.report.summary().starts_with("poly: 1 of 1 SCoP optimised"));
/// ```
pub fn optimize(prog: &Program, opts: &PolyOptions, gen: GenOptions) -> Optimized {
    let t0 = std::time::Instant::now();
    let (program, report) = tessera_syntax::deep_stack(|| tessera_poly::optimize(prog, opts, gen));
    Optimized {
        program,
        report,
        ms: t0.elapsed().as_secs_f64() * 1e3,
    }
}

/// The pool of `n` workers shared by the kernels compiled with `threads(n)` while any of
/// them lives.
fn pool(n: usize) -> Result<Arc<Runtime>, ThreadsError> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Weak<Runtime>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(rt) = pools.get(&n).and_then(Weak::upgrade) {
        return Ok(rt);
    }
    let rt = Arc::new(Runtime::new(Some(n))?);
    pools.retain(|_, w| w.strong_count() > 0);
    pools.insert(n, Arc::downgrade(&rt));
    Ok(rt)
}

enum Backend {
    Interp(FuncId, Limits),
    Native(tessera_jit::Kernel, Option<Arc<Runtime>>),
}

struct Inner {
    mode: Mode,
    threads: Option<usize>,
    backend: Backend,
    /// The checked program (before optimisation).
    prog: Arc<Program>,
    func: FuncId,
    poly: PolyOptions,
    gen: GenOptions,
    explain: OnceLock<String>,
    summary: Option<String>,
}

/// A compiled kernel: one entry function, ready to be called many times in its [`Mode`].
///
/// `Send + Sync` and cheap to clone; any number of threads may call one kernel at once,
/// each with its own arguments.
///
/// ```
/// use tessera::{Args, Kernel, Mode};
///
/// let src = "void scale(int n, double a, double x[n]) { for (int i = 0; i < n; i++) x[i] *= a; }";
/// let k = Kernel::builder(src, "scale").mode(Mode::Opt).threads(2).compile().unwrap();
/// let mut x = vec![1.0, 2.0, 3.0];
/// k.call(&mut Args::new().scalar("n", 3).scalar("a", 2.0).array("x", &mut x, &[3])).unwrap();
/// assert_eq!(x, [2.0, 4.0, 6.0]);
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let mut y = vec![1.0; 5];
///         k.call(&mut Args::new().scalar("n", 5).scalar("a", 3.0).array("x", &mut y, &[5])).unwrap();
///         assert_eq!(y, [3.0; 5]);
///     });
/// });
/// ```
#[derive(Clone)]
pub struct Kernel {
    inner: Arc<Inner>,
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Kernel>();
};

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("signature", &self.signature())
            .field("mode", &self.inner.mode)
            .field("threads", &self.inner.threads)
            .finish_non_exhaustive()
    }
}

impl Kernel {
    /// A builder for the function `entry` of `source`; see [`KernelBuilder`].
    ///
    /// ```
    /// let k = tessera::Kernel::builder("double half(double x) { return x / 2; }", "half").compile().unwrap();
    /// assert_eq!(k.call(&mut tessera::Args::new().scalar("x", 3.0)).unwrap(), Some(tessera::Scalar::F64(1.5)));
    /// ```
    pub fn builder<'s>(source: &'s str, entry: &str) -> KernelBuilder<'s> {
        KernelBuilder {
            inner: tessera_jit::Kernel::builder(source, entry),
            jit: JitOptions::default(),
            mode: Mode::default(),
            threads: None,
            poly: PolyOptions::default(),
            gen: GenOptions::default(),
        }
    }

    /// Checks `args` against the entry's parameters and runs the kernel on them in its
    /// mode; arrays are modified in place. Returns the entry's value (`None` for `void`).
    ///
    /// Errors are the same values in every mode: a bad argument (missing, unknown, of the
    /// wrong kind, type or shape; see [`CallError`]) before anything runs, or
    /// [`CallError::Runtime`] with the [`RuntimeError`] of the first failing operation in
    /// program order (kind, array, index, source location). A kernel compiled with
    /// [`guards(false)`](KernelBuilder::guards) is refused with [`CallError::Unguarded`].
    ///
    /// ```
    /// use tessera::{Args, CallError, ErrorKind, Kernel, Mode};
    ///
    /// let src = "void shift(int n, int d, double x[n]) {\n    for (int i = 0; i < n; i++) x[i] = x[i + d];\n}";
    /// for mode in [Mode::Interp, Mode::Jit, Mode::Opt] {
    ///     let k = Kernel::builder(src, "shift").mode(mode).compile().unwrap();
    ///     let mut x = vec![1.0, 2.0, 3.0, 4.0];
    ///     // A bad argument: `x` is declared `double x[n]` with n = 3.
    ///     let err = k.call(&mut Args::new().scalar("n", 3).scalar("d", 0).array("x", &mut x, &[4]));
    ///     assert!(matches!(err, Err(CallError::Shape { .. })));
    ///     // A run-time error: x[4] is read when i = 3.
    ///     let err = k.call(&mut Args::new().scalar("n", 4).scalar("d", 1).array("x", &mut x, &[4])).unwrap_err();
    ///     let rt = err.runtime().unwrap();
    ///     assert!(matches!(&rt.kind, ErrorKind::IndexOutOfBounds { array, index, .. } if array == "x" && index == &[4]));
    ///     assert_eq!(rt.loc.line, 2, "{mode}");
    /// }
    /// ```
    #[allow(clippy::result_large_err)] // the JIT's and interpreter's error, as is
    pub fn call(&self, args: &mut Args<'_>) -> Result<Option<Scalar>, CallError> {
        match &self.inner.backend {
            Backend::Interp(func, limits) => {
                tessera_jit::interpret(&self.inner.prog, *func, args, *limits)
            }
            Backend::Native(k, pool) => match pool {
                Some(rt) => rt.enter(|| k.call(args)),
                None => k.call(args),
            },
        }
    }

    /// [`call`](Self::call), also for a kernel compiled with
    /// [`guards(false)`](KernelBuilder::guards). The arguments are checked all the same.
    ///
    /// # Safety
    /// If the kernel was compiled without guards, the caller must ensure that the call
    /// performs no out-of-bounds array access, no integer division or remainder by zero
    /// and no shift by an invalid count: unguarded code does not check them, and they are
    /// undefined behaviour. With guards (and in [`Mode::Interp`]) this is exactly
    /// [`call`](Self::call).
    ///
    /// ```
    /// let src = "void inc(int n, long x[n]) { for (int i = 0; i < n; i++) x[i]++; }";
    /// let k = tessera::Kernel::builder(src, "inc").guards(false).compile().unwrap();
    /// let mut x = vec![1i64, 2];
    /// // SAFETY: `inc` touches x[0..n) only, and n is x's length (checked).
    /// unsafe { k.call_unchecked(&mut tessera::Args::new().scalar("n", 2).array("x", &mut x, &[2])) }.unwrap();
    /// assert_eq!(x, [2, 3]);
    /// ```
    #[allow(clippy::result_large_err)]
    pub unsafe fn call_unchecked(&self, args: &mut Args<'_>) -> Result<Option<Scalar>, CallError> {
        match &self.inner.backend {
            Backend::Interp(..) => self.call(args),
            // SAFETY: the caller's obligation, passed on.
            Backend::Native(k, pool) => match pool {
                Some(rt) => rt.enter(|| unsafe { k.call_unchecked(args) }),
                None => unsafe { k.call_unchecked(args) },
            },
        }
    }

    /// What the polyhedral optimiser does with the entry, as text (what `tessera explain`
    /// prints for it): per SCoP its domains, accesses and dependences in isl notation, the
    /// schedule tree, tile sizes, parallel loops and the generated loop nest, and why other
    /// loop nests are not SCoPs. For [`Mode::Opt`] this is the report of the optimisation
    /// that was compiled; in the other modes the optimiser runs on the first call, with the
    /// builder's options.
    ///
    /// ```
    /// let src = "void z(int n, double x[n]) { for (int i = 0; i < n; i++) x[i] = 0; }";
    /// let k = tessera::Kernel::builder(src, "z").mode(tessera::Mode::Opt).compile().unwrap();
    /// assert!(k.explain().contains("SCoP 1 in `z`"), "{}", k.explain());
    /// ```
    pub fn explain(&self) -> &str {
        let i = &self.inner;
        i.explain.get_or_init(|| {
            let opt = optimize(&i.prog, &i.poly, i.gen);
            opt.report.explain(&opt.program, &[self.name()])
        })
    }

    /// For [`Mode::Opt`], the optimiser's one-line summary as `tessera run --mode opt`
    /// prints it (`poly: 1 of 1 SCoP optimised, 0 loop nests not SCoPs`); `None` otherwise.
    ///
    /// ```
    /// let src = "void z(int n, double x[n]) { for (int i = 0; i < n; i++) x[i] = 0; }";
    /// let k = tessera::Kernel::builder(src, "z").mode(tessera::Mode::Opt).compile().unwrap();
    /// assert_eq!(k.poly_summary(), Some("poly: 1 of 1 SCoP optimised, 0 loop nests not SCoPs"));
    /// ```
    pub fn poly_summary(&self) -> Option<&str> {
        self.inner.summary.as_deref()
    }

    /// The mode the kernel runs in.
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f() {}", "f").compile().unwrap();
    /// assert_eq!(k.mode(), tessera::Mode::Jit);
    /// ```
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// The thread count given to the builder, if any.
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f() {}", "f").compile().unwrap();
    /// assert_eq!(k.threads(), None);
    /// ```
    pub fn threads(&self) -> Option<usize> {
        self.inner.threads
    }

    /// The entry's name.
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f() {}", "f").compile().unwrap();
    /// assert_eq!(k.name(), "f");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.prog.func(self.inner.func).name
    }

    /// The entry's signature as C, with `-D` overrides applied
    /// (`void gemm(int ni, ..., double C[ni][nj], ...)`).
    ///
    /// ```
    /// let k = tessera::Kernel::builder("void f(int n, float y[n][2]) {}", "f").compile().unwrap();
    /// assert_eq!(k.signature(), "void f(int n, float y[n][2L])");
    /// ```
    pub fn signature(&self) -> String {
        let p = &self.inner.prog;
        tessera_ir::print::signature(p, p.func(self.inner.func))
    }
}
