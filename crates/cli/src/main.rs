//! `tessera`: check, run and inspect Tessera kernels.
//!
//! Exit codes: 0 success; 1 the kernel was rejected (diagnostics) or failed at run time;
//! 2 bad invocation (unknown flag, missing file or entry, bad `-D`/`--input`, unavailable
//! mode).

#![allow(clippy::result_large_err)]
mod calibrate;
mod driver;
mod predict;
mod query;
mod skel;
mod tune;

use clap::{Parser, Subcommand, ValueEnum};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use tessera_ir::{ArgValue, ArrayData, FuncId, Program, RuntimeError, Scalar, Span, VarKind};

use tessera_syntax::diag::{render_all, Diagnostic, SourceFile};

#[derive(Parser)]
#[command(
    name = "tessera",
    version,
    about = "Tessera: a compiler and runtime for loop-nest kernels written in a C subset",
    long_about = "Tessera parses and checks kernels written in a C subset (see docs/language.md) and runs them.\n\n\
Examples:\n  tessera check examples/kernels/gemm.c\n  \
tessera run examples/kernels/gemm.c --entry gemm -D ni=64 -D nj=64 -D nk=64 -D alpha=1.5 -D beta=1.2 --out /tmp/out"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Parse and type-check a kernel file; print diagnostics.
    ///
    /// Example: tessera check examples/kernels/gemm.c
    Check {
        /// The kernel source file.
        file: PathBuf,
        /// Bind a #define'd constant: -D N=100 (repeatable).
        #[arg(short = 'D', value_name = "NAME=VALUE")]
        defines: Vec<String>,
        /// Print the typed IR as C, with every implicit conversion explicit.
        #[arg(long)]
        print_ir: bool,
    },
    /// Run one function of a kernel file.
    ///
    /// Example: tessera run examples/kernels/jacobi-2d.c --entry jacobi_2d -D n=100 -D tsteps=20 --init random:7 --out out/
    Run(RunArgs),
    /// Run a kernel function over an index range with a parallel skeleton.
    ///
    /// Example: tessera skel examples/kernels/sumeuler.c --entry totient --skeleton chunk --over 1..20001 --adaptive --target-ms 10..100
    Skel(SkelArgs),
    /// Calibrate the cost models on this machine: time a suite of kernels through the JIT,
    /// count their fragments exactly, fit CM0/CMC/CMW by non-negative least squares, print
    /// R² and leave-one-out errors, and write the machine profile.
    ///
    /// Example: tessera calibrate --plots target/calibration
    Calibrate(calibrate::CalibrateArgs),
    /// Predict the time of a call before running it: statement instances counted by isl at
    /// the given sizes, their cost fitted on counted runs at smaller sizes under the machine
    /// profile's CMW-M model; --check runs the call and compares.
    ///
    /// Example: tessera predict examples/kernels/gemm.c --entry gemm -D ni=1000 -D nj=1100 -D nk=1200 -D alpha=1.5 -D beta=1.2 --check
    Predict(predict::PredictArgs),
    /// Run a SQL query over CSV, Parquet or .npy files, compiled to one fused JIT pipeline
    /// per query (filters, projections, group-by aggregates, sort, top-k, limit), with user
    /// functions written in the kernel language.
    ///
    /// Example: tessera query "SELECT k, sum(v) FROM t GROUP BY k" --table t=data.parquet
    Query(query::QueryArgs),
    /// Show what the polyhedral optimiser does with a function: per SCoP the domains,
    /// accesses and dependences in isl notation, the schedule tree, tile sizes, parallel
    /// loops, bounds proofs and the generated loop nest; and why other loop nests are not SCoPs.
    ///
    /// Example: tessera explain examples/kernels/seed.c --entry seed
    Explain {
        /// The kernel source file.
        file: PathBuf,
        /// The function to explain.
        #[arg(long)]
        entry: String,
        /// Bind a #define'd constant: -D N=100 (repeatable). With --candidates, also the
        /// values of the entry's integer parameters (-D n=1000).
        #[arg(short = 'D', value_name = "NAME=VALUE")]
        defines: Vec<String>,
        /// Instead of the report: the candidates of `run --tune` ranked by the schedule cost
        /// model (work after vectorisation, cache lines per level from isl footprints) for
        /// the parameter values given with -D, and why the first wins.
        #[arg(long)]
        candidates: bool,
        /// With --candidates: the threads to predict for (default: TESSERA_THREADS or all
        /// cores).
        #[arg(long)]
        threads: Option<usize>,
        /// With --candidates: predict for code compiled with --fast-math.
        #[arg(long)]
        fast_math: bool,
        #[command(flatten)]
        poly: PolyArgs,
    },
    /// Print code generated for an entry.
    ///
    /// Example: tessera emit examples/kernels/gemm.c --entry gemm --target driver > main.c
    Emit {
        /// The kernel source file.
        file: PathBuf,
        /// The function to emit code for.
        #[arg(long)]
        entry: String,
        /// What to print: `driver` (a C main() that runs the kernel compiled by a C compiler
        /// on .npy inputs from `run --save-inputs`); `llvm` (optimised LLVM IR), `asm` (host
        /// assembly); `c` (the kernel after polyhedral optimisation, as C), `openmp` (the same
        /// with `#pragma omp parallel for` on its parallel loops).
        #[arg(long, value_enum)]
        target: EmitTarget,
        /// Bind a #define'd constant: -D N=100 (repeatable).
        #[arg(short = 'D', value_name = "NAME=VALUE")]
        defines: Vec<String>,
        /// For llvm/asm: allow floating-point reassociation and contraction.
        #[arg(long)]
        fast_math: bool,
        /// For llvm/asm: drop the bounds/division guards (unsafe; to inspect their cost).
        #[arg(long)]
        no_guards: bool,
        /// For llvm/asm: the code of the program after the polyhedral optimiser (what
        /// `run --mode opt` runs), parallel loop bodies outlined.
        #[arg(long)]
        optimized: bool,
        #[command(flatten)]
        poly: PolyArgs,
    },
}

/// Options of the polyhedral optimiser (`--mode opt`, `explain`, `emit --target c`).
#[derive(clap::Args, Clone, Debug)]
struct PolyArgs {
    /// Fusion of the scheduler: smart (isl's default), max (whole components), none.
    #[arg(long, value_enum, default_value = "smart")]
    fusion: FusionArg,
    /// Tile sizes per band member, overriding the cache model: --tile-sizes 32,32,64 (the
    /// last repeats).
    #[arg(long, value_name = "T0,T1,...")]
    tile_sizes: Option<String>,
    /// Do not tile.
    #[arg(long)]
    no_tile: bool,
    /// Register tiles: unroll and jam an outer member of each untiled or point band around its
    /// innermost loop by N (1: off; micro-kernels have their own shape and
    /// `--micro-kernel-cols 0` turns them off).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(i64).range(1..=16))]
    register_tile: i64,
    /// Rows of the register micro-kernel of matrix-product-like nests, 2 to 16; default: 8
    /// where the host has AVX-512, else 4.
    #[arg(long, value_name = "N")]
    micro_kernel_rows: Option<i64>,
    /// Columns of the register micro-kernel of matrix-product-like nests, 0 (none) or 2 to
    /// 64; default: 8.
    #[arg(long, value_name = "N")]
    micro_kernel_cols: Option<i64>,
    /// The most statement instances a loop nest with register tiles may have; beyond it the
    /// nest is generated without them (compile time grows with the code).
    #[arg(long, value_name = "N", default_value_t = 256)]
    register_tile_budget: usize,
    /// The most elementary isl operations that generating a loop nest with register tiles
    /// may take; beyond it the nest is generated without them (their AST can cost isl
    /// seconds before its size is known).
    #[arg(long, value_name = "N", default_value_t = tessera_poly::PolyOptions::default().register_tile_ast_ops)]
    register_tile_ast_ops: u64,
    /// Never materialise a scalar of the source as a scratch array (one element per loop
    /// iteration); schedules that would need one are given up as before.
    #[arg(long)]
    no_scratch: bool,
    /// Never copy a register micro-kernel's read-only operands into panels before its
    /// loop nest (by default gemm's `B[k][j]`, read a row apart per step of `k`, is copied
    /// so that each step reads the next adjacent panel row).
    #[arg(long)]
    no_pack: bool,
    /// Tile stencils in time: a first band with no parallel member whose dependences have
    /// constant distances is tiled in time and space (parallelogram tiles, run in wavefronts)
    /// instead of being scheduled again with its outer loop sequential and the loops inside
    /// parallel. Off by default (it wins on some stencils, loses on others); `--tune` tries it.
    /// `--tile-sizes` applies to the time tiles too, rounded down to powers of two up to 32
    /// (other sizes can cost isl seconds).
    #[arg(long)]
    time_tile: bool,
    /// Never tile a first band with no parallel member whose dependences are not uniform
    /// (lu, cholesky) to run its tiles in wavefronts; schedule it again with the outer loop
    /// sequential and the loops inside parallel instead.
    #[arg(long)]
    no_wavefront_tiles: bool,
    /// The most bytes of scratch arrays one run of an optimised loop nest may allocate; above
    /// it (checked at run time) the nest's original code runs.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    scratch_limit: u64,
    /// Test mode: run loops marked parallel in reverse order (a false parallel mark then
    /// changes the results).
    #[arg(long)]
    reverse_parallel: bool,
    /// Test mode: run loops marked parallel sequentially in a shuffled order drawn from SEED
    /// (a false parallel mark then changes the results).
    #[arg(long, value_name = "SEED")]
    shuffle_parallel: Option<u64>,
    /// Run loops marked parallel sequentially (in order) instead of on the thread pool.
    #[arg(long)]
    no_parallel: bool,
    /// Do not keep the code as written next to each optimised SCoP. By default the JIT
    /// times both versions on the first executions of a SCoP and keeps the faster (with
    /// --repeat, the choice is printed as `versions:`).
    #[arg(long)]
    no_versions: bool,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
enum FusionArg {
    Smart,
    Max,
    None,
}

impl PolyArgs {
    fn options(&self) -> Result<(tessera_poly::PolyOptions, tessera_poly::GenOptions), Failure> {
        let tile_sizes = match &self.tile_sizes {
            None => None,
            Some(t) => Some(
                t.split(',')
                    .map(|x| match x.trim().parse::<i64>() {
                        Ok(v) if v >= 1 => Ok(v),
                        _ => Err(usage(format!(
                            "--tile-sizes expects positive integers separated by commas, got `{t}`"
                        ))),
                    })
                    .collect::<Result<Vec<i64>, Failure>>()?,
            ),
        };
        let popts = tessera_poly::PolyOptions {
            fusion: match self.fusion {
                FusionArg::Smart => tessera_poly::Fusion::Smart,
                FusionArg::Max => tessera_poly::Fusion::Max,
                FusionArg::None => tessera_poly::Fusion::None,
            },
            tile_sizes,
            tile: !self.no_tile,
            register_tile: self.register_tile,
            register_tile_budget: self.register_tile_budget,
            register_tile_ast_ops: self.register_tile_ast_ops,
            micro_kernel_rows: self
                .micro_kernel_rows
                .unwrap_or(tessera_poly::PolyOptions::default().micro_kernel_rows),
            micro_kernel_cols: self
                .micro_kernel_cols
                .unwrap_or(tessera_poly::PolyOptions::default().micro_kernel_cols),
            scratch: !self.no_scratch,
            pack: !self.no_pack,
            time_tile: self.time_tile,
            wavefront_tiles: !self.no_wavefront_tiles,
            scratch_limit: self.scratch_limit,
            ..Default::default()
        };
        popts.check().map_err(usage)?;
        Ok((
            popts,
            tessera_poly::GenOptions {
                reverse_parallel: self.reverse_parallel,
                shuffle_parallel: self.shuffle_parallel,
                sequential: self.no_parallel,
                versions: !self.no_versions,
            },
        ))
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
enum EmitTarget {
    /// A C main() driver for the kernel compiled as plain C.
    Driver,
    /// The optimised LLVM IR of the JIT (whole program).
    Llvm,
    /// The host machine code of the JIT (whole program).
    Asm,
    /// The kernel after polyhedral optimisation, as C (the typed IR printed as C).
    C,
    /// Optimised C with `#pragma omp parallel for` on the parallel loops (compile with
    /// `-fopenmp`).
    Openmp,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
enum Mode {
    /// The reference interpreter (the semantic definition).
    Interp,
    /// Native code through the LLVM JIT, for the host CPU, guarded like the interpreter.
    Jit,
    /// Polyhedral optimisation (isl), then the JIT.
    Opt,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The kernel source file.
    file: PathBuf,
    /// The function to call, e.g. --entry gemm.
    #[arg(long)]
    entry: String,
    /// Bind a scalar parameter of the entry or a #define'd constant: -D n=100 -D alpha=1.5.
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    defines: Vec<String>,
    /// Load an array parameter from a .npy file (dtype and shape must match the
    /// declaration): --input A=a.npy.
    #[arg(long = "input", value_name = "ARRAY=PATH")]
    inputs: Vec<String>,
    /// How to fill arrays not given by --input: `random` (seeded, default seed 1),
    /// `random:SEED` or `zeros`. Floats are uniform in [0,1), integers in [0,100].
    #[arg(long, default_value = "random:1", value_name = "random[:SEED]|zeros")]
    init: String,
    /// Write every array parameter after the call to DIR/<name>.npy: --out results/.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write every array parameter before the call to DIR/<name>.npy (the inputs as
    /// initialised), e.g. to feed another implementation: --save-inputs inputs/.
    #[arg(long, value_name = "DIR")]
    save_inputs: Option<PathBuf>,
    /// Execution mode: interp (reference interpreter), jit, opt.
    #[arg(long, value_enum, default_value = "interp")]
    mode: Mode,
    /// Worker threads for parallel modes: --threads 2 (default: TESSERA_THREADS or all cores;
    /// 1 to 1024, and at most 64 per available core).
    #[arg(long)]
    threads: Option<usize>,
    /// Stop with an error after this many loop iterations and calls (guards against
    /// non-terminating kernels): --max-steps 1000000.
    #[arg(long)]
    max_steps: Option<u64>,
    /// jit/opt: allow floating-point reassociation and contraction (FMA); results may then
    /// differ from the interpreter's in the last bits.
    #[arg(long)]
    fast_math: bool,
    /// jit/opt: compile without bounds, division and shift guards. UNSAFE (an out-of-bounds
    /// access is then undefined behaviour); exists to measure what the guards cost.
    #[arg(long)]
    no_guards: bool,
    /// Count the entry's fragments exactly (interp: the interpreter's counting run; jit: the
    /// counting build) and print every label's count with its source location and Γ under
    /// CM0, CMC and, with a machine profile (`tessera calibrate`), CMW with its predicted
    /// time. Not with --mode opt.
    #[arg(long)]
    count: bool,
    /// Call the entry this many times, each on a fresh copy of the same inputs, and report
    /// the median call time (`time_ms`) and every call's (`times_ms`); the outputs of every
    /// call must be equal (else an error). Compilation happens once, before the first call.
    /// For timing kernels of microseconds, whose first call pays cold caches and sleeping
    /// workers: --repeat 5.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10000))]
    repeat: u32,
    /// With --mode opt: time candidate optimisations (the code as written, the optimiser's
    /// default, a wider micro-kernel, maximal fusion, no fusion, no tiling, tiles half and
    /// twice the cache model's size, no register tiles, no loop reordering, no panel
    /// copies of a micro-kernel's operands) on these
    /// inputs, check their outputs against the code as written, and run the fastest; the
    /// choice is kept per kernel, sizes, threads and machine in $TESSERA_WISDOM or
    /// ~/.cache/tessera/wisdom-v1.json and reused.
    #[arg(long)]
    tune: bool,
    /// With --mode opt: choose among the candidates of --tune by the schedule cost model
    /// (`explain --candidates`) for these arguments, without timing anything.
    #[arg(long, conflicts_with = "tune")]
    model_choice: bool,
    /// With --tune: candidates that the schedule cost model predicts over this factor
    /// slower than its best prediction are not run (0: run every candidate).
    #[arg(long, value_name = "FACTOR", default_value_t = tune::PRUNE)]
    tune_prune: f64,
    #[command(flatten)]
    poly: PolyArgs,
}

#[derive(clap::Args)]
struct SkelArgs {
    /// The kernel source file.
    file: PathBuf,
    /// The function run per task; all its parameters are scalars. Parameters not given with
    /// -D are the element index (chunk, stride, divconq-thresh --divide fib) or the range
    /// `lo, hi` (divconq-thresh --divide halves).
    #[arg(long)]
    entry: String,
    /// chunk (parMapChunk), stride (parMapStride), divconq-thresh (parDivconqThresh), or
    /// rayon (rayon's own par_iter splitting, for comparison).
    #[arg(long, value_enum)]
    skeleton: skel::Skeleton,
    /// The index range `lo..hi` (exclusive): elements for chunk/stride; for divconq-thresh the
    /// root problem (`--divide fib`: size `hi`; `--divide halves`: the range).
    #[arg(long, value_name = "LO..HI")]
    over: String,
    /// Fixed tuning parameter τ (chunk size, stride, threshold); with --adaptive, the start.
    #[arg(long)]
    tau: Option<usize>,
    /// Retune τ between batches so that tasks last --target-ms.
    #[arg(long)]
    adaptive: bool,
    /// Target task-time window for --adaptive, in ms: --target-ms 10..100 (default).
    #[arg(long, default_value = "10..100", value_name = "LO..HI")]
    target_ms: String,
    /// How divconq-thresh divides: fib (n -> n-1, n-2) or halves ([lo,hi) -> two halves).
    #[arg(long, value_enum, default_value = "fib")]
    divide: skel::Divide,
    /// Bind a scalar parameter of the entry or a #define: -D maxit=1000.
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    defines: Vec<String>,
    /// How to fill array parameters (read-only inputs shared by all tasks): `random`
    /// (seeded, default seed 1), `random:SEED` or `zeros`.
    #[arg(long, default_value = "random:1", value_name = "random[:SEED]|zeros")]
    init: String,
    /// How tasks run the entry: interp (reference interpreter) or jit.
    #[arg(long, value_enum, default_value = "interp")]
    mode: Mode,
    /// Give the controller each task's cost γ from a cost model over the task's own JIT
    /// code, counted as it runs (instead of τ as the cost proxy): cm0, cmc, cmw (fragments
    /// of the TIR), cmc-m, cmw-m (basic blocks of the optimised LLVM IR). cmw, cmc-m and
    /// cmw-m need a machine profile (`tessera calibrate`); with one, chunk's first τ is
    /// chosen from the predicted cost of the first element. Needs --mode jit.
    #[arg(long, value_enum)]
    cost: Option<skel::CostArg>,
    /// The machine profile for --cost (default: $TESSERA_PROFILE, else
    /// ~/.cache/tessera/profile-v2.json).
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Worker threads (default: TESSERA_THREADS or all cores; 1 to 1024, and at most 64 per
    /// available core).
    #[arg(long)]
    threads: Option<usize>,
    /// Print every decision (adaptive) or every task (fixed τ).
    #[arg(long)]
    verbose: bool,
    /// Write the decision log / task list to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

fn parse_range_i64(s: &str, what: &str) -> Result<(i64, i64), Failure> {
    let bad = || usage(format!("{what} expects LO..HI with integers, got `{s}`"));
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    Ok((
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    ))
}

/// Checks a `--threads` value (and `TESSERA_THREADS` where it is not given) before any work:
/// at least 1, at most 1024 and at most 64 per available core (exit 2 otherwise, in `run` and
/// `skel` alike).
fn check_threads(threads: Option<usize>) -> Result<(), Failure> {
    let env = std::env::var(tessera_runtime::THREADS_ENV).ok();
    let cores = tessera_runtime::available_parallelism();
    match tessera_runtime::resolve_threads(threads, env.as_deref(), cores) {
        Ok(_) => Ok(()),
        Err(tessera_runtime::RuntimeError::ZeroThreads) => {
            Err(usage("--threads must be at least 1, got 0"))
        }
        Err(tessera_runtime::RuntimeError::TooManyThreads { requested, max, .. }) => {
            let what = match threads {
                Some(_) => "--threads",
                None => tessera_runtime::THREADS_ENV,
            };
            Err(usage(if requested > tessera_runtime::MAX_THREADS {
                format!(
                    "{what} {requested}: at most {} worker threads are allowed (and at most 64 per available core)",
                    tessera_runtime::MAX_THREADS
                )
            } else {
                format!(
                    "{what} {requested}: at most 64 worker threads per available core are allowed ({max} with {cores} core{} here)",
                    if cores == 1 { "" } else { "s" }
                )
            }))
        }
        Err(e) => Err(usage(e.to_string())),
    }
}

/// The most elements `skel --over LO..HI` may span.
const MAX_SKEL_RANGE: i64 = 1 << 30;

fn skel_cmd(a: SkelArgs) -> Result<(), Failure> {
    check_threads(a.threads)?;
    // The trace file is created before the run, so that a bad path fails at once (exit 2).
    let trace = match &a.trace {
        Some(path) => Some(std::fs::File::create(path).map_err(|e| {
            usage(format!(
                "--trace {}: cannot create the file: {e}",
                path.display()
            ))
        })?),
        None => None,
    };
    let (lo, hi) = parse_range_i64(&a.over, "--over")?;
    // The elements are materialised (chunk, stride, rayon) or halved (divconq): the size
    // must be representable and modest.
    match hi.checked_sub(lo) {
        Some(n) if n <= MAX_SKEL_RANGE => {}
        _ => {
            return Err(usage(format!(
            "--over {lo}..{hi}: the range has more than {MAX_SKEL_RANGE} elements (at most 2^30)"
        )))
        }
    }
    let window = if a.adaptive {
        let bad = || {
            usage(format!(
                "--target-ms expects LO..HI in ms with 0 < LO <= HI, got `{}`",
                a.target_ms
            ))
        };
        let (x, y) = a.target_ms.split_once("..").ok_or_else(bad)?;
        let (x, y): (f64, f64) = (
            x.trim().parse().map_err(|_| bad())?,
            y.trim().parse().map_err(|_| bad())?,
        );
        if !(x > 0.0 && x <= y) {
            return Err(bad());
        }
        Some((x, y))
    } else {
        if a.tau.is_none() && a.skeleton != skel::Skeleton::Rayon {
            return Err(usage("give a fixed --tau N, or --adaptive"));
        }
        None
    };
    if a.tau == Some(0) {
        return Err(usage("--tau must be at least 1"));
    }
    if a.mode == Mode::Opt {
        return Err(usage(
            "--mode opt is not available for skel; use interp or jit",
        ));
    }
    let defs = parse_defines(&a.defines)?;
    let (src, prog) = load(&a.file, &defs)?;
    let (fid, f) = find_entry(&src, &prog, &a.entry)?;
    let mut fixed = Vec::new();
    let mut index_params = Vec::new();
    let mut array_params = Vec::new();
    for (k, p) in f.params.iter().enumerate() {
        let v = f.var(*p);
        if v.is_array() {
            // Filled below, once the scalars that give its extents are known.
            fixed.push(ArgValue::Scalar(Scalar::I64(0)));
            array_params.push(k);
            continue;
        }
        match defs.iter().find(|(n, _)| *n == v.name) {
            Some((_, val)) => fixed.push(ArgValue::Scalar(
                Scalar::parse(val, v.scalar_ty())
                    .map_err(|e| usage(format!("-D {}: {e}", v.name)))?,
            )),
            None => {
                if !v.scalar_ty().is_int() {
                    return Err(usage(format!(
                        "parameter `{} {}` of `{}` is not bound with -D and is not an integer index",
                        v.scalar_ty(),
                        v.name,
                        f.name
                    )));
                }
                fixed.push(ArgValue::Scalar(Scalar::I64(0).convert(v.scalar_ty())));
                index_params.push(k);
            }
        }
    }
    for (n, _) in &defs {
        if !f.params.iter().any(|p| f.var(*p).name == *n)
            && !prog.defines.iter().any(|(d, _)| d == n)
        {
            return Err(usage(format!(
                "-D {n}: `{}` has no parameter named `{n}` and the file has no #define `{n}`",
                f.name
            )));
        }
    }
    if !array_params.is_empty() {
        let seed = match a.init.as_str() {
            "zeros" => None,
            "random" => Some(1),
            x => match x.strip_prefix("random:").map(|y| y.parse::<u64>()) {
                Some(Ok(s)) => Some(s),
                _ => {
                    return Err(usage(format!(
                        "--init expects `random`, `random:SEED` or `zeros`, got `{x}`"
                    )))
                }
            },
        };
        let shapes_at = |index: i64| {
            let vals: Vec<Option<Scalar>> = fixed
                .iter()
                .enumerate()
                .map(|(k, v)| match v {
                    _ if array_params.contains(&k) => None,
                    _ if index_params.contains(&k) => {
                        Some(Scalar::I64(index).convert(f.var(f.params[k]).scalar_ty()))
                    }
                    ArgValue::Scalar(x) => Some(*x),
                    ArgValue::Array(_) => None,
                })
                .collect();
            tessera_interp::declared_shapes(&prog, fid, &vals)
        };
        let shapes = shapes_at(0).map_err(|e| runtime_failure(&src, &e))?;
        if shapes_at(1).ok().as_ref() != Some(&shapes) {
            return Err(usage(format!(
                "the extents of the array parameters of `{}` depend on the element index; skel needs them fixed by -D",
                f.name
            )));
        }
        for &k in &array_params {
            let v = f.var(f.params[k]);
            let shape = shapes[k].clone().unwrap_or_default();
            if shape.iter().any(|&d| d < 0) {
                return Err(usage(format!(
                    "array `{}` would have a negative extent: declared shape {:?} with the given parameters",
                    v.name, shape
                )));
            }
            let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
            let mut d = ArrayData::zeros(v.scalar_ty(), &shape).ok_or_else(|| {
                usage(format!(
                    "array `{}` of shape {:?} is too large to allocate",
                    v.name, shape
                ))
            })?;
            if let Some(seed) = seed {
                d.fill_random(seed, &v.name);
            }
            fixed[k] = ArgValue::Array(d);
        }
    }
    let plan = skel::Plan {
        skeleton: a.skeleton,
        lo,
        hi,
        tau: a.tau,
        window,
        divide: a.divide,
        verbose: a.verbose,
        threads: a.threads,
    };
    let limits = tessera_interp::Limits::default();
    let jit = match a.mode {
        Mode::Jit => {
            let j = tessera_jit::Compiled::compile(&prog, &tessera_jit::Options::default())
                .map_err(|e| internal_or_unsupported(&e))?;
            println!("compile_ms: {:.3}", j.compile_ms());
            Some(j)
        }
        _ => None,
    };
    let call = |fid: FuncId, args: &mut [ArgValue]| match &jit {
        Some(j) => j.call(fid, args),
        None => tessera_interp::call(&prog, fid, args, limits),
    };
    let counter = match a.cost {
        None => None,
        Some(_) if a.mode != Mode::Jit => {
            return Err(usage("--cost counts the JIT's code: it needs --mode jit"))
        }
        Some(c) => Some(
            skel::Counter::new(&prog, c, a.profile.as_deref()).map_err(|e| Failure {
                text: format!("error: {e}\n"),
                code: 1,
            })?,
        ),
    };
    let out = skel::run(
        &prog,
        fid,
        &call,
        &fixed,
        &index_params,
        &plan,
        counter.as_ref(),
    )
    .map_err(|e| match e {
        Ok(rt) => runtime_failure(&src, &rt),
        Err(m) => Failure {
            text: format!("error: {m}\n"),
            code: 1,
        },
    })?;
    print!("{}", out.log);
    if let (Some(path), Some(mut file)) = (&a.trace, trace) {
        use std::io::Write;
        file.write_all(out.log.as_bytes())
            .map_err(|e| usage(format!("cannot write `{}`: {e}", path.display())))?;
    }
    match out.int_sum {
        Some(i) => println!("result: sum {i}"),
        None => println!("result: sum {:?}", out.sum),
    }
    if let Some(c) = out.checksum {
        println!("checksum: {c:016x}");
    }
    println!("time_ms: {:.3}", out.ms);
    Ok(())
}

/// A back-end failure: unsupported constructs are the user's (exit 1); LLVM errors are ours.
fn internal_or_unsupported(e: &tessera_jit::JitError) -> Failure {
    match e {
        tessera_jit::JitError::Unsupported(_) => Failure {
            text: format!("error: {e}\n"),
            code: 1,
        },
        _ => Failure {
            text: format!("error: internal compiler error in the native back end: {e}\n"),
            code: 3,
        },
    }
}

/// An error of the invocation (exit 2) or of the kernel (exit 1), already rendered.
struct Failure {
    text: String,
    code: u8,
}

fn usage(msg: impl Into<String>) -> Failure {
    Failure {
        text: format!("error: {}\n", msg.into()),
        code: 2,
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    // Deep recursion in user kernels and deeply nested input run on a big stack; the
    // interpreter and front end bound their own depth well within it.
    let worker = std::thread::Builder::new()
        .stack_size(2 << 30)
        .spawn(move || std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(cli))));
    let result = match worker.map(|h| h.join()) {
        Ok(Ok(Ok(r))) => r,
        // A reader that closed our stdout (`tessera ... | head`) ends the run quietly, with
        // the status of a process killed by SIGPIPE, as C tools do.
        Ok(Err(p)) | Ok(Ok(Err(p))) if is_closed_stdout(&*p) => return ExitCode::from(141),
        Ok(Ok(Err(_))) | Ok(Err(_)) => Err(Failure {
            text: "error: internal compiler error (a bug in Tessera); please report it with the input\n".into(),
            code: 3,
        }),
        Err(e) => Err(Failure { text: format!("error: cannot start the worker thread: {e}\n"), code: 3 }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprint!("{}", f.text);
            ExitCode::from(f.code)
        }
    }
}

/// Whether a panic is `print!`'s on a closed pipe.
fn is_closed_stdout(p: &(dyn std::any::Any + Send)) -> bool {
    let msg = p
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| p.downcast_ref::<&str>().copied())
        .unwrap_or("");
    msg.contains("failed printing to stdout") && msg.contains("Broken pipe")
}

fn dispatch(cli: Cli) -> Result<(), Failure> {
    // Keep panics (bugs) from printing Rust's panic text; main reports them.
    std::panic::set_hook(Box::new(|_| {}));
    match cli.cmd {
        Cmd::Check {
            file,
            defines,
            print_ir,
        } => {
            let defs = parse_defines(&defines)?;
            let (src, prog) = load(&file, &defs)?;
            println!(
                "{}: ok: {} function{}",
                src.name,
                prog.functions.len(),
                if prog.functions.len() == 1 { "" } else { "s" }
            );
            for f in &prog.functions {
                println!("  {}", tessera_ir::print::signature(&prog, f));
            }
            if print_ir {
                print!("{}", tessera_ir::print::program(&prog));
            }
            Ok(())
        }
        Cmd::Run(args) => run(args),
        Cmd::Skel(args) => skel_cmd(args),
        Cmd::Query(args) => query::run(args).map_err(|e| Failure {
            text: format!("error: {e}\n"),
            code: 1,
        }),
        Cmd::Calibrate(args) => calibrate::run(args).map_err(|e| Failure {
            text: format!("error: {e}\n"),
            code: 1,
        }),
        Cmd::Predict(args) => {
            let defs = parse_defines(&args.defines)?;
            match predict::run(args, defs) {
                Ok(text) => {
                    print!("{text}");
                    Ok(())
                }
                Err(e) => Err(Failure {
                    text: format!("error: {e}\n"),
                    code: 1,
                }),
            }
        }
        Cmd::Explain {
            file,
            entry,
            defines,
            candidates,
            threads,
            fast_math,
            poly,
        } => {
            let defs = parse_defines(&defines)?;
            let (src, prog) = load(&file, &defs)?;
            find_entry(&src, &prog, &entry)?;
            let (popts, gopts) = poly.options()?;
            if candidates {
                check_threads(threads)?;
                let env = std::env::var(tessera_runtime::THREADS_ENV).ok();
                let threads = tessera_runtime::resolve_threads(
                    threads,
                    env.as_deref(),
                    tessera_runtime::available_parallelism(),
                )
                .map_err(|e| usage(e.to_string()))?;
                let text = tune::explain_candidates(
                    &prog, &entry, &defs, &popts, gopts, threads, fast_math,
                )
                .map_err(usage)?;
                print!("{text}");
                return Ok(());
            }
            if threads.is_some() || fast_math {
                return Err(usage("--threads and --fast-math go with --candidates"));
            }
            let opt = tessera::optimize(&prog, &popts, gopts);
            print!("{}", opt.report.explain(&opt.program, &[entry.as_str()]));
            Ok(())
        }
        Cmd::Emit {
            file,
            entry,
            target,
            defines,
            fast_math,
            no_guards,
            optimized,
            poly,
        } => {
            let defs = parse_defines(&defines)?;
            let (src, prog) = load(&file, &defs)?;
            let (_, f) = find_entry(&src, &prog, &entry)?;
            match target {
                EmitTarget::Driver => {
                    let abs = std::fs::canonicalize(&file).unwrap_or(file.clone());
                    print!("{}", driver::driver(&prog, f, &abs.display().to_string()));
                    Ok(())
                }
                EmitTarget::Llvm | EmitTarget::Asm => {
                    let opts = tessera_jit::Options {
                        fast_math,
                        guards: !no_guards,
                        ..Default::default()
                    };
                    let prog = if optimized {
                        let (popts, gopts) = poly.options()?;
                        tessera::optimize(&prog, &popts, gopts).program
                    } else {
                        prog
                    };
                    let jit = tessera_jit::Compiled::compile(&prog, &opts)
                        .map_err(|e| internal_or_unsupported(&e))?;
                    if target == EmitTarget::Llvm {
                        print!("{}", jit.llvm_ir());
                    } else {
                        print!("{}", jit.asm().map_err(|e| internal_or_unsupported(&e))?);
                    }
                    Ok(())
                }
                EmitTarget::C | EmitTarget::Openmp => {
                    let (popts, gopts) = poly.options()?;
                    let p = tessera::optimize(&prog, &popts, gopts).program;
                    let flavor = if target == EmitTarget::Openmp {
                        tessera_ir::print::Flavor::OpenMp
                    } else {
                        tessera_ir::print::Flavor::C
                    };
                    print!("{}", tessera_ir::print::program_hoisted(&p, flavor));
                    Ok(())
                }
            }
        }
    }
}

fn parse_defines(defs: &[String]) -> Result<Vec<(String, String)>, Failure> {
    let mut out: Vec<(String, String)> = Vec::new();
    for d in defs {
        match d.split_once('=') {
            Some((n, v)) if !n.trim().is_empty() => {
                let n = n.trim().to_string();
                if out.iter().any(|(m, _)| *m == n) {
                    return Err(usage(format!("-D {n} is given more than once")));
                }
                out.push((n, v.trim().to_string()));
            }
            _ => return Err(usage(format!("-D expects NAME=VALUE, got `{d}`"))),
        }
    }
    Ok(out)
}

fn load(file: &Path, defs: &[(String, String)]) -> Result<(SourceFile, Program), Failure> {
    let bytes =
        std::fs::read(file).map_err(|e| usage(format!("cannot read `{}`: {e}", file.display())))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let mut src = SourceFile::new(file.display().to_string(), text);
    let overrides: HashMap<String, String> = defs.iter().cloned().collect();
    let dir = file.parent().unwrap_or(Path::new(""));
    match tessera_sema::compile_file(&mut src, Some(dir), &overrides) {
        Ok(p) => Ok((src, p)),
        Err(diags) => Err(Failure {
            text: render_all(&src, &diags),
            code: 1,
        }),
    }
}

fn runtime_failure(src: &SourceFile, e: &RuntimeError) -> Failure {
    let span = span_at(&src.text, e.loc.line, e.loc.col);
    let d = Diagnostic::error(
        span,
        format!("runtime error: {} (in `{}`)", e.kind, e.function),
    );
    // Render "file:line:col: error: runtime error: ..." with the source line.
    let text = src
        .render(&d)
        .replacen(": error: runtime error:", ": runtime error:", 1);
    Failure { text, code: 1 }
}

/// The span of the token starting at (line, col), for rendering run-time errors.
fn span_at(text: &str, line: u32, col: u32) -> Span {
    let mut lo = 0usize;
    for (i, l) in text.split('\n').enumerate() {
        if i + 1 == line as usize {
            let c = (col as usize).saturating_sub(1).min(l.len());
            lo += c;
            let rest = &l[c..];
            let len = rest
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .filter(|&n| n > 0)
                .unwrap_or(1);
            return Span {
                lo: lo as u32,
                hi: (lo + len) as u32,
                line,
                col,
            };
        }
        lo += l.len() + 1;
    }
    Span {
        lo: 0,
        hi: 0,
        line,
        col,
    }
}

fn find_entry<'p>(
    src: &SourceFile,
    prog: &'p Program,
    entry: &str,
) -> Result<(FuncId, &'p tessera_ir::Function), Failure> {
    prog.function(entry).ok_or_else(|| {
        let names: Vec<&str> = prog.functions.iter().map(|f| f.name.as_str()).collect();
        usage(format!(
            "no function `{}` in `{}`; available: {}",
            entry,
            src.name,
            if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(", ")
            }
        ))
    })
}

enum Init {
    Random(u64),
    Zeros,
}

/// Creates an output directory before anything runs, so that a bad `--out` fails at once
/// (exit 2) rather than after the kernel ran.
fn prepare_dir(dir: &Path, flag: &str) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| {
        usage(format!(
            "{flag} {}: cannot create the directory: {e}",
            dir.display()
        ))
    })?;
    let probe = dir.join(".tessera-write-test");
    std::fs::write(&probe, b"")
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| usage(format!("{flag} {}: cannot write there: {e}", dir.display())))
}

fn run(a: RunArgs) -> Result<(), Failure> {
    check_threads(a.threads)?;
    if let Some(dir) = &a.out {
        prepare_dir(dir, "--out")?;
    }
    if let Some(dir) = &a.save_inputs {
        prepare_dir(dir, "--save-inputs")?;
    }
    let init = match a.init.as_str() {
        "zeros" => Init::Zeros,
        "random" => Init::Random(1),
        s => match s.strip_prefix("random:").map(|x| x.parse::<u64>()) {
            Some(Ok(seed)) => Init::Random(seed),
            _ => {
                return Err(usage(format!(
                    "--init expects `random`, `random:SEED` or `zeros`, got `{s}`"
                )))
            }
        },
    };
    if a.mode == Mode::Interp && (a.fast_math || a.no_guards) {
        return Err(usage(
            "--fast-math and --no-guards apply to --mode jit/opt only",
        ));
    }
    if !(a.tune_prune == 0.0 || a.tune_prune >= 1.0) || !a.tune_prune.is_finite() {
        return Err(usage(format!(
            "--tune-prune must be 0 (no pruning) or a factor of at least 1, got {}",
            a.tune_prune
        )));
    }
    if a.model_choice && a.mode != Mode::Opt {
        return Err(usage(
            "--model-choice chooses among optimisations: use it with --mode opt",
        ));
    }
    if a.tune && a.mode != Mode::Opt {
        return Err(usage(
            "--tune chooses among optimisations: use it with --mode opt",
        ));
    }
    if a.mode == Mode::Opt {
        // Parallel loops of the optimised code run on the global pool.
        tessera_runtime::Runtime::init_global(a.threads).map_err(|e| usage(e.to_string()))?;
    }
    let defs = parse_defines(&a.defines)?;
    let (src, prog) = load(&a.file, &defs)?;
    let Some((fid, f)) = prog.function(&a.entry) else {
        let names: Vec<&str> = prog.functions.iter().map(|f| f.name.as_str()).collect();
        return Err(usage(format!(
            "no function `{}` in `{}`; available: {}",
            a.entry,
            src.name,
            if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(", ")
            }
        )));
    };

    // Scalars from -D; every -D must name a scalar parameter or a #define.
    let mut scalars: Vec<Option<Scalar>> = vec![None; f.params.len()];
    for (name, value) in &defs {
        let is_define = prog.defines.iter().any(|(n, _)| n == name);
        match f.params.iter().position(|p| f.var(*p).name == *name) {
            Some(i) => match f.var(f.params[i]).kind {
                VarKind::Scalar(t) => {
                    let v = Scalar::parse(value, t).map_err(|e| usage(format!("-D {name}: {e}")))?;
                    scalars[i] = Some(v);
                }
                VarKind::Array { .. } => {
                    return Err(usage(format!("-D {name}: `{name}` is an array parameter; give it with --input {name}=FILE.npy")))
                }
            },
            None if is_define => {}
            None => {
                return Err(usage(format!(
                    "-D {name}: `{}` has no scalar parameter named `{name}` and the file has no #define `{name}`",
                    f.name
                )))
            }
        }
    }
    let missing: Vec<String> = f
        .params
        .iter()
        .zip(&scalars)
        .filter(|(p, s)| !f.var(**p).is_array() && s.is_none())
        .map(|(p, _)| {
            let v = f.var(*p);
            format!("`{} {}`", v.scalar_ty(), v.name)
        })
        .collect();
    if !missing.is_empty() {
        return Err(usage(format!(
            "missing value for scalar parameter{} {} of `{}`: give each with -D NAME=VALUE",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            f.name
        )));
    }

    let shapes = tessera_interp::declared_shapes(&prog, fid, &scalars)
        .map_err(|e| runtime_failure(&src, &e))?;
    let mut inputs: HashMap<String, PathBuf> = HashMap::new();
    for i in &a.inputs {
        let Some((n, p)) = i.split_once('=') else {
            return Err(usage(format!("--input expects ARRAY=PATH, got `{i}`")));
        };
        let ok = f
            .params
            .iter()
            .any(|q| f.var(*q).name == n && f.var(*q).is_array());
        if !ok {
            return Err(usage(format!(
                "--input {n}: `{}` has no array parameter named `{n}`",
                f.name
            )));
        }
        if inputs.insert(n.to_string(), PathBuf::from(p)).is_some() {
            return Err(usage(format!("--input {n} is given more than once")));
        }
    }
    let mut args = Vec::new();
    for (k, p) in f.params.iter().enumerate() {
        let v = f.var(*p);
        match &shapes[k] {
            None => args.push(ArgValue::Scalar(scalars[k].unwrap())),
            Some(shape) => {
                if shape.iter().any(|&d| d < 0) {
                    return Err(usage(format!("array `{}` would have a negative extent: declared shape {:?} with the given parameters", v.name, shape)));
                }
                let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
                let data = match inputs.get(&v.name) {
                    Some(path) => {
                        let d = tessera_ir::npy::read(path).map_err(usage)?;
                        if d.elems.ty() != v.scalar_ty() || d.shape != shape {
                            return Err(usage(format!(
                                "--input {}: `{}` is declared `{} {}{}` (dtype {}, shape {:?}) but `{}` holds dtype {}, shape {:?}",
                                v.name,
                                v.name,
                                v.scalar_ty(),
                                v.name,
                                shape.iter().map(|d| format!("[{d}]")).collect::<String>(),
                                v.scalar_ty().npy_descr(),
                                shape,
                                path.display(),
                                d.elems.ty().npy_descr(),
                                d.shape
                            )));
                        }
                        d
                    }
                    None => {
                        let mut d = ArrayData::zeros(v.scalar_ty(), &shape).ok_or_else(|| {
                            usage(format!(
                                "array `{}` of shape {:?} is too large to allocate",
                                v.name, shape
                            ))
                        })?;
                        if let Init::Random(seed) = init {
                            d.fill_random(seed, &v.name);
                        }
                        d
                    }
                };
                args.push(ArgValue::Array(data));
            }
        }
    }
    if let Some(dir) = &a.save_inputs {
        write_arrays(dir, f, &args)?;
    }
    let limits = tessera_interp::Limits {
        max_steps: a.max_steps,
        ..Default::default()
    };
    if a.count && a.repeat > 1 {
        return Err(usage(
            "--count runs the entry once: use it without --repeat",
        ));
    }
    if a.count && (a.mode == Mode::Opt || a.fast_math || a.no_guards) {
        return Err(usage(
            "--count counts the program as written: use it with --mode interp or jit, without --fast-math or --no-guards",
        ));
    }
    let (r, dt) = match a.mode {
        _ if a.count => {
            // The counting build is compiled before the clock starts: time_ms is the call.
            let build = if a.mode == Mode::Interp {
                None
            } else {
                let opts = tessera_jit::Options {
                    limits,
                    ..Default::default()
                };
                Some(
                    tessera_cost::jit::CountingBuild::compile(&prog, &opts).map_err(|e| {
                        Failure {
                            text: format!("error: {e}\n"),
                            code: 3,
                        }
                    })?,
                )
            };
            let t0 = Instant::now();
            let p = match &build {
                None => tessera_cost::count_run(&prog, &a.entry, &mut args, limits),
                Some(b) => b.count(&a.entry, &mut args),
            };
            let dt = t0.elapsed();
            match p {
                Ok(p) => {
                    print!("{}", count_report(&prog, &p));
                    (Ok(p.result), dt)
                }
                Err(tessera_cost::CostError::Runtime(e)) => (Err(*e), dt),
                Err(e) => {
                    return Err(Failure {
                        text: format!("error: {e}\n"),
                        code: 1,
                    })
                }
            }
        }
        Mode::Interp => repeated(&mut args, a.repeat, |args| {
            let t0 = Instant::now();
            let r = tessera_interp::call(&prog, fid, args, limits);
            (r, t0.elapsed())
        })?,
        Mode::Jit | Mode::Opt => {
            let opts = tessera_jit::Options {
                fast_math: a.fast_math,
                guards: !a.no_guards,
                limits,
                opt_level: 3,
            };
            let optimised;
            let code = if a.mode == Mode::Opt && a.tune {
                let (popts, gopts) = a.poly.options()?;
                let (cpu, features) = tessera_jit::host_cpu();
                let key = tune::key(
                    &src.text,
                    &a.entry,
                    &defs,
                    tessera_runtime::Runtime::global().threads(),
                    &format!("{cpu} {features}"),
                );
                let how = tune::Tuning {
                    key: &key,
                    prune: a.tune_prune,
                };
                let c = tune::tune(&prog, fid, &args, &opts, &popts, gopts, how).map_err(|e| {
                    Failure {
                        text: format!("error: {e}\n"),
                        code: 1,
                    }
                })?;
                print!("{}", c.log);
                optimised = c.program;
                &optimised
            } else if a.mode == Mode::Opt && a.model_choice {
                let (popts, gopts) = a.poly.options()?;
                let c = tune::choose_by_model(&prog, fid, &args, &popts, gopts, a.fast_math)
                    .map_err(|e| Failure {
                        text: format!("error: {e}\n"),
                        code: 1,
                    })?;
                print!("{}", c.log);
                optimised = c.program;
                &optimised
            } else if a.mode == Mode::Opt {
                let (popts, gopts) = a.poly.options()?;
                let opt = tessera::optimize(&prog, &popts, gopts);
                // isl's phases summed over the SCoPs (the rest: detection, code generation).
                println!(
                    "poly_ms: {:.3} ({})",
                    opt.ms,
                    phases_text(&opt.report.phase_ms())
                );
                println!("{}", opt.report.summary());
                optimised = opt.program;
                &optimised
            } else {
                &prog
            };
            let jit = tessera_jit::Compiled::compile(code, &opts)
                .map_err(|e| internal_or_unsupported(&e))?;
            println!(
                "compile_ms: {:.3} ({})",
                jit.compile_ms(),
                phases_text(jit.phase_ms())
            );
            let r = repeated(&mut args, a.repeat, |args| {
                let t0 = Instant::now();
                // SAFETY: with guards (the default) this is the safe `call`. `--no-guards` is
                // documented as unsafe (an out-of-bounds access, a division by zero or a bad
                // shift is undefined behaviour); whoever passes it vouches for the kernel and
                // its inputs, as for a kernel compiled by gcc without checks.
                let r = unsafe { jit.call_unchecked(fid, args) };
                (r, t0.elapsed())
            })?;
            print!("{}", versions_text(&jit));
            r
        }
    };
    let result = r.map_err(|e| runtime_failure(&src, &e))?;
    report(fid, &prog, &args, result, dt.as_secs_f64() * 1e3);
    if let Some(dir) = &a.out {
        write_arrays(dir, f, &args)?;
    }
    Ok(())
}

/// The versioned regions whose code as written has run (so that there was a choice to
/// make), one line each: which version was kept, or that the choice is pending, with the
/// best time of each version.
fn versions_text(jit: &tessera_jit::Compiled) -> String {
    let mut s = String::new();
    for (k, (sp, r)) in jit.versions().iter().enumerate() {
        if r.runs[1] == 0 {
            continue;
        }
        let best = |v: usize| {
            r.best_ns[v].map_or("-".to_string(), |ns| format!("{:.3} ms", ns as f64 / 1e6))
        };
        let what = match r.chosen {
            Some(tessera_runtime::VERSION_ORIGINAL) => "kept the code as written",
            Some(_) => "kept the optimised code",
            None => "still timing both",
        };
        s.push_str(&format!(
            "versions: region {k} at {}:{}: {what} (best times: optimised {}, as written {})\n",
            sp.line,
            sp.col,
            best(0),
            best(1)
        ));
    }
    s
}

/// Runs `call` `repeat` times, each on a fresh copy of `args` as given, leaves the first
/// call's outputs in `args` and returns its result with the median time. With more than one
/// call, prints every call's time (`times_ms:`) and fails if a call's result or outputs differ
/// from the first's (a kernel whose output depends on the schedule of its threads) or if a
/// later call fails where the first did not.
fn repeated<R: std::fmt::Debug, E>(
    args: &mut Vec<ArgValue>,
    repeat: u32,
    mut call: impl FnMut(&mut Vec<ArgValue>) -> (Result<R, E>, std::time::Duration),
) -> Result<(Result<R, E>, std::time::Duration), Failure> {
    let fresh = (repeat > 1).then(|| args.clone());
    let (first, t) = call(args);
    let Some(fresh) = fresh else {
        return Ok((first, t));
    };
    // Arrays by their checksums (NaNs canonical), results as printed.
    let print = |args: &[ArgValue]| -> Vec<u64> {
        args.iter()
            .filter_map(|x| match x {
                ArgValue::Array(d) => Some(d.checksum()),
                ArgValue::Scalar(_) => None,
            })
            .collect()
    };
    let mut times = vec![t];
    if let Ok(want) = &first {
        let (want, want_args) = (format!("{want:?}"), print(args));
        for k in 1..repeat {
            let mut again = fresh.clone();
            let (r, t) = call(&mut again);
            times.push(t);
            let same = match &r {
                Ok(v) => format!("{v:?}") == want && print(&again) == want_args,
                Err(_) => false,
            };
            if !same {
                return Err(Failure {
                    text: format!(
                        "error: call {} of --repeat {repeat} gave other results than the first call\n",
                        k + 1
                    ),
                    code: 1,
                });
            }
        }
    }
    let ms: Vec<String> = times
        .iter()
        .map(|d| format!("{:.3}", d.as_secs_f64() * 1e3))
        .collect();
    println!("times_ms: {}", ms.join(" "));
    let mut sorted = times.clone();
    sorted.sort_unstable();
    Ok((first, sorted[sorted.len() / 2]))
}

/// The labels of a counted run with their counts, and Γ under the models.
fn count_report(prog: &Program, p: &tessera_cost::Profile) -> String {
    use tessera_cost::calibrate::{default_profile_path, Family, MachineProfile};
    use tessera_cost::{CostModel, LabelKind};
    let mut s = format!(
        "counts: {} labels, {} fragments; {} label executions\n",
        p.map.labels().count(),
        p.map.fragments.len(),
        p.label_executions()
    );
    for (fi, f) in prog.functions.iter().enumerate() {
        for (kind, id) in p
            .map
            .labels_of(FuncId(fi as u32))
            .into_iter()
            .map(|(id, k)| (k, id))
        {
            let n = p.count(id);
            if n == 0 {
                continue;
            }
            let what = match kind {
                LabelKind::Entry => "entry",
                LabelKind::LoopHeader => "loop header",
                LabelKind::LoopLatch => "loop latch",
                LabelKind::LoopExit => "loop exit",
                LabelKind::Join => "join",
            };
            let sp = p.map.node(id).span;
            s.push_str(&format!(
                "  {}:{} {what} of `{}`: {n}\n",
                sp.line, sp.col, f.name
            ));
        }
    }
    s.push_str(&format!(
        "gamma: CM0 {:.6e}, CMC {:.6e}",
        p.gamma(&CostModel::Cm0),
        p.gamma(&CostModel::Cmc)
    ));
    if let Some(prof) = default_profile_path()
        .filter(|x| x.exists())
        .and_then(|x| MachineProfile::load(&x).ok())
    {
        if let Some((m, k)) = prof.model(Family::Cmw) {
            let g = p.gamma(&m);
            s.push_str(&format!(
                ", CMW {g:.6e} (predicted {:.4} ms by this machine's profile)",
                g * k / 1e6
            ));
        }
    }
    s.push('\n');
    s
}

/// Named phase timings as `name 1.2, name 3.4`.
fn phases_text(phases: &[(&str, f64)]) -> String {
    let parts: Vec<String> = phases
        .iter()
        .map(|(k, ms)| format!("{k} {ms:.1}"))
        .collect();
    parts.join(", ")
}

fn write_arrays(dir: &Path, f: &tessera_ir::Function, args: &[ArgValue]) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| usage(format!("cannot create `{}`: {e}", dir.display())))?;
    for (p, a) in f.params.iter().zip(args) {
        if let ArgValue::Array(d) = a {
            let path = dir.join(format!("{}.npy", f.var(*p).name));
            tessera_ir::npy::write(&path, d)
                .map_err(|e| usage(format!("cannot write `{}`: {e}", path.display())))?;
        }
    }
    Ok(())
}

fn report(fid: FuncId, prog: &Program, args: &[ArgValue], result: Option<Scalar>, ms: f64) {
    let f = prog.func(fid);
    if let Some(v) = result {
        println!("result: {v}");
    }
    for (p, a) in f.params.iter().zip(args) {
        if let ArgValue::Array(d) = a {
            println!(
                "checksum {}: {:016x} (sum {:.17e}, shape {:?})",
                f.var(*p).name,
                d.checksum(),
                d.sum(),
                d.shape
            );
        }
    }
    println!("time_ms: {ms:.3}");
}
