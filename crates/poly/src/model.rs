//! The isl model of a SCoP and everything computed on it: exact dependences, the schedule
//! (isl's Pluto-like scheduler, tiling, wavefronts, parallel marks), bounds proofs and the
//! AST.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use tessera_ir::VarId;

use crate::isl::{self, Ast, Ctx, IslError, IslResult, NodeKind, SNode, Schedule, UMap, USet};
use crate::scop::{AccessKind, PolyStmt, Scop};

/// Fusion choice of the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fusion {
    /// isl's default: fuse strongly connected components where it finds a good schedule.
    #[default]
    Smart,
    /// Schedule whole components at once (maximal fusion).
    Max,
    /// Serialise strongly connected components (no fusion).
    None,
}

/// Options of the polyhedral stage.
#[derive(Debug, Clone, PartialEq)]
pub struct PolyOptions {
    /// Fusion choice.
    pub fusion: Fusion,
    /// Tile sizes per band member (overrides the cache model; the last entry repeats).
    pub tile_sizes: Option<Vec<i64>>,
    /// A factor on the cache model's tile size (where `tile_sizes` is not given): 0.5 for
    /// tiles half as wide, 2 for twice; the result is rounded and at least 2. Default 1.
    pub tile_scale: f64,
    /// Whether to tile permutable bands of two or more members.
    pub tile: bool,
    /// Bound on the elementary isl operations of each SCoP's analysis.
    pub max_operations: u64,
    /// Whether to reorder point bands so that the innermost loop is parallel and stride 1.
    pub permute: bool,
    /// Unroll-and-jam factor of register tiles (1: none); see `register_tile`.
    pub register_tile: i64,
    /// Rows of the register micro-kernel (`micro_kernel`: this many rows by
    /// `micro_kernel_cols` columns of accumulators). Default: 8 where the host has 32 vector
    /// registers of 512 bits (AVX-512), else 4.
    pub micro_kernel_rows: i64,
    /// Columns of the register micro-kernel; 0: none. Default: 8.
    pub micro_kernel_cols: i64,
    /// The most statement instances an AST with register tiles may have; beyond it the nest
    /// is generated without them (compile time grows with the AST).
    pub register_tile_budget: usize,
    /// Whether a scalar whose expanded instances the schedule interleaves may be
    /// materialised as a scratch array ([`ScratchArray`]) instead of giving up the schedule.
    pub scratch: bool,
    /// Whether a register micro-kernel's read-only operands that it reads a row apart per
    /// step (gemm's `B[k][j]` along `k`) are first copied into panels as wide as its
    /// columns ([`Pack`]), within `scratch_limit` like scratch arrays.
    pub pack: bool,
    /// The most bytes of scratch arrays one run of a SCoP may use; above it, at run time,
    /// the SCoP's original code runs instead (`gen.rs`).
    pub scratch_limit: u64,
    /// Wall-clock budget of the whole program's optimisation in milliseconds: once spent,
    /// the remaining SCoPs keep their code (with a note). Each SCoP is also bounded by
    /// `max_operations`.
    pub max_total_ms: u64,
    /// The most nodes the AST of one SCoP may have (see `analyse_once`: register tiles,
    /// separation and tiling are given up in turn, then the SCoP keeps its code).
    pub max_ast_nodes: usize,
    /// The most elementary isl operations that generating the AST of a nest *with*
    /// register tiles may take; past it the nest is built without them, as when the
    /// statement-instance budget is exceeded (their AST, with full and partial strips
    /// separated, can cost isl seconds, and its size is only known once built). The example
    /// kernels whose register tiles are kept need at most 0.8M (2mm, syr2k, gemver); those
    /// whose nests then exceed `register_tile_budget` take more than 4M (covariance,
    /// correlation: 2-3 s of isl).
    pub register_tile_ast_ops: u64,
    /// Whether a first band with no parallel member whose dependences are uniform (constant
    /// distances: stencils) is tiled in time as well as space, its tiles run in wavefronts
    /// (parallelogram tiles, as Pluto's), instead of scheduling again with the outer loop
    /// sequential and the loops inside parallel ([`wavefront_tileable`]). Off by default: it gains
    /// 1.25-1.35x on jacobi-2d on one thread here, but on two threads and on fdtd-2d runs
    /// disagree in sign (docs/performance.md); `--tune` times it as a candidate.
    pub time_tile: bool,
    /// Whether a first band with no parallel member whose dependences are not all uniform
    /// (triangular solvers and factorisations: `lu`, `cholesky`, `gramschmidt`) is tiled
    /// with the cache model's tile sizes and its tiles run in wavefronts, as Pluto does,
    /// where tiles create reuse or each tile point is a loop ([`wavefront_pays`]) and no
    /// statement depends on itself along the band's last member ([`wavefront_tileable`]).
    /// Otherwise (and with this off) the SCoP is scheduled again with the outer loop
    /// sequential and the loops inside parallel. On by default: at PolyBench's LARGE sizes
    /// lu ran 3.1-4.3x, cholesky 1.5x and gramschmidt 1.1-1.4x faster here
    /// (docs/performance.md); the register tiles and micro-kernels of other bands are
    /// unaffected.
    pub wavefront_tiles: bool,
    /// The most elementary isl operations that generating the AST of a time-tiled nest may
    /// take; past it the SCoP is scheduled again without time tiling (skewed tiles of several
    /// statements can cost isl seconds).
    pub time_tile_ast_ops: u64,
}

impl Default for PolyOptions {
    fn default() -> Self {
        PolyOptions {
            fusion: Fusion::Smart,
            tile_sizes: None,
            tile_scale: 1.0,
            tile: true,
            max_operations: 20_000_000,
            permute: true,
            register_tile: 4,
            micro_kernel_rows: default_micro_kernel_rows(),
            micro_kernel_cols: 8,
            register_tile_budget: 256,
            scratch: true,
            pack: true,
            scratch_limit: 256 << 20,
            max_total_ms: 10_000,
            max_ast_nodes: 3_000,
            register_tile_ast_ops: 1_500_000,
            time_tile: false,
            wavefront_tiles: true,
            time_tile_ast_ops: 3_000_000,
        }
    }
}

impl PolyOptions {
    /// Whether the options are in range: every tile size at least 1, register tiles 1 to
    /// 16 (the bounds of `tessera run --tile-sizes/--register-tile`); the message says
    /// which is not.
    pub fn check(&self) -> Result<(), String> {
        if let Some(t) = &self.tile_sizes {
            if t.is_empty() || t.iter().any(|&x| x < 1) {
                return Err(format!("tile sizes must be positive integers, got {t:?}"));
            }
        }
        if !(self.tile_scale.is_finite() && self.tile_scale > 0.0) {
            return Err(format!(
                "the tile scale must be a positive number, got {}",
                self.tile_scale
            ));
        }
        if !(1..=16).contains(&self.register_tile) {
            return Err(format!(
                "the register tile factor must be 1 to 16, got {}",
                self.register_tile
            ));
        }
        if !(2..=16).contains(&self.micro_kernel_rows) {
            return Err(format!(
                "the micro-kernel rows must be 2 to 16, got {}",
                self.micro_kernel_rows
            ));
        }
        if self.micro_kernel_cols != 0 && !(2..=64).contains(&self.micro_kernel_cols) {
            return Err(format!(
                "the micro-kernel columns must be 0 (none) or 2 to 64, got {}",
                self.micro_kernel_cols
            ));
        }
        Ok(())
    }
}

/// Micro-kernel rows for the host: 8 with AVX-512 (32 registers of 8 doubles: 8 x 8
/// accumulators take 8, a row of `B` one, the broadcast of `A` one), else 4 (16 registers
/// of 4 doubles: 4 x 8 take 8, a row of `B` two). On an AVX-512 host (AMD EPYC, znver4),
/// gemm 960 x 1152 x 1024 on one thread took 51-52 ms with 8 x 8, 62-72 ms with 4 x 8,
/// 67-78 ms with 4 x 16 and 80-91 ms with 6 x 8 (docs/performance.md).
fn default_micro_kernel_rows() -> i64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return 8;
        }
    }
    4
}

/// A data or unified cache of CPU 0, from sysfs.
pub(crate) struct SysfsCache {
    /// 1, 2, 3.
    pub level: u32,
    /// Capacity in bytes.
    pub bytes: u64,
    /// Line size in bytes, where given.
    pub line: Option<u64>,
}

/// The data and unified caches of CPU 0 (`/sys/devices/system/cpu/cpu0/cache/index*`).
pub(crate) fn sysfs_caches() -> Vec<SysfsCache> {
    let mut out = Vec::new();
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let rd = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
        let (Some(level), Some(ty), Some(size)) = (rd("level"), rd("type"), rd("size")) else {
            continue;
        };
        if ty.trim() == "Instruction" {
            continue;
        }
        let size = size.trim();
        let bytes = size
            .strip_suffix('K')
            .and_then(|s| s.parse::<u64>().ok())
            .map(|k| k << 10)
            .or_else(|| {
                size.strip_suffix('M')
                    .and_then(|s| s.parse::<u64>().ok())
                    .map(|k| k << 20)
            });
        let (Some(bytes), Ok(level)) = (bytes, level.trim().parse()) else {
            continue;
        };
        out.push(SysfsCache {
            level,
            bytes,
            line: rd("coherency_line_size").and_then(|l| l.trim().parse().ok()),
        });
    }
    out
}

/// The cache model behind the default tile sizes: sizes from sysfs (fallback 32 KiB L1d,
/// 512 KiB L2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheModel {
    /// L1 data cache bytes.
    pub l1: u64,
    /// L2 cache bytes (per core).
    pub l2: u64,
}

impl CacheModel {
    /// Reads `/sys/devices/system/cpu/cpu0/cache`.
    pub fn detect() -> CacheModel {
        let mut m = CacheModel {
            l1: 32 << 10,
            l2: 512 << 10,
        };
        for c in sysfs_caches() {
            match c.level {
                1 => m.l1 = c.bytes,
                2 => m.l2 = c.bytes,
                _ => {}
            }
        }
        m
    }

    /// Tile size for a band of `depth` members touching `arrays` arrays of 8-byte elements:
    /// the largest power of two T with `arrays · T^2 · 8 ≤ L2 / 2` (a 2-D tile of every
    /// array in half the L2), clamped to 16..=256; for 1-member bands, no tiling.
    pub fn tile_size(&self, arrays: usize) -> i64 {
        let budget = (self.l2 / 2) as f64 / (arrays.max(1) as f64 * 8.0);
        let t = budget.sqrt();
        let mut p = 16i64;
        while (p * 2) as f64 <= t && p < 256 {
            p *= 2;
        }
        p
    }

    /// Tile size for a time-tiled band of `members` members (time and `members - 1` space
    /// dimensions): the largest power of two T in 4..=32 with `arrays · (3T)^(members-1) · 8
    /// ≤ L2 / 2` (a parallelogram tile of T time steps skewed by up to 2 per step spans
    /// about 3T points along each space dimension). Powers of two up to 32 only (also from
    /// `--tile-sizes`): isl's AST generation of jacobi-2d's skewed tiles took 0.3 s with
    /// tiles of 16 or 32, 0.8 s with 24, 2.6 s with 128, and with 48 or 64 it exceeded its
    /// operation bound after 4-7 s, most of it in work the bound does not count.
    pub fn time_tile_size(&self, arrays: usize, members: usize) -> i64 {
        let budget = (self.l2 / 2) as f64 / (arrays.max(1) as f64 * 8.0);
        let t = budget.powf(1.0 / members.saturating_sub(1).max(1) as f64) / 3.0;
        let mut p = 4i64;
        while (p * 2) as f64 <= t && p < 32 {
            p *= 2;
        }
        p
    }
}

/// One band of the final schedule, for `explain`.
#[derive(Debug, Clone, PartialEq)]
pub struct BandInfo {
    /// Depth in the tree (number of band ancestors).
    pub depth: usize,
    /// Members.
    pub members: usize,
    /// Permutable.
    pub permutable: bool,
    /// isl's coincident flags.
    pub coincident: Vec<bool>,
    /// What was done: "tiled 32x32", "point band", "wavefront (skewed t0 + t1)", ...
    pub note: String,
    /// The statements of a register micro-kernel built on this band (`micro_kernel`).
    pub micro_kernel: Vec<String>,
    /// The operands of that micro-kernel copied into panels first.
    pub packs: Vec<Pack>,
    /// The statements of a band of affine (not uniform) dependences tiled with its tiles
    /// run in wavefronts ([`PolyOptions::wavefront_tiles`]): its point loops keep the band's
    /// order whatever the strides of their innermost accesses.
    pub wavefront: Vec<String>,
}

/// An operand of a register micro-kernel (`micro_kernel`) copied before the nest into
/// panels, BLIS's packing done once for the whole array: for an operand that reads array
/// `X` once, at subscripts `(dp, dr)` where `dp` moves with the kernel's rows or columns
/// and `dr` with its innermost member `r`, element `[dp / w][dr][dp % w]` of the copy holds
/// the operand's value at `X[..]` (the subscripts in the array's order), `w` the kernel's
/// rows or columns. Gemm's `B[k][j]` (columns, `w` = 8) is read one row of `B` apart per
/// step of `k`; from the copy the kernel's 8 columns at consecutive `k` are consecutive
/// in memory. Gemm's `alpha * A[i][k]` (rows, `w` = 4) is computed once per element instead
/// of once per column panel, and its 4 rows at one `k` are adjacent. The value is the
/// same expression evaluated on the same element, so the results are identical bit for bit.
/// The operand is pure floating-point arithmetic of one read of an array that no statement
/// of the SCoP writes (and that shares no storage with another of its arrays: SCoPs where
/// two may alias are not optimised), constants and scalars the SCoP does not write.
#[derive(Debug, Clone, PartialEq)]
pub struct Pack {
    /// The array.
    pub array: VarId,
    /// The subscript (0 or 1) split into panels: the one moving with the kernel's rows or
    /// columns.
    pub panel_dim: usize,
    /// The panel width: the kernel's rows or columns.
    pub width: i64,
    /// The array's two extents, affine in the parameters.
    pub extents: Vec<crate::scop::Aff>,
    /// The statement whose operand reads the copy.
    pub stmt: String,
    /// The operand, as it is in the statement (`alpha * A[i][k]`): each element of the copy
    /// holds it evaluated with the array read at that element.
    pub value: tessera_ir::Expr,
}

/// An access and whether isl proved it in bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundsProof {
    /// Statement name.
    pub stmt: String,
    /// The access in isl notation.
    pub access: String,
    /// Proven within the declared extents for every instance.
    pub proven: bool,
    /// Why not, when not.
    pub why: String,
    /// Source location.
    pub loc: tessera_ir::Loc,
    /// The array.
    pub array: VarId,
    /// The subscripts.
    pub idx: Vec<crate::scop::Aff>,
    /// Bit `d` set where index `d` is proven within its extent.
    pub mask: u64,
}

/// A scalar declared in a SCoP that the code keeps as an array, one element per iteration of
/// the loops around its declaration (the expansion the model made, materialised), because
/// the schedule found interleaves its instances: gemm's `s` in `for i, j { s = 0; for k
/// s += A[i][k] * B[k][j]; C[i][j] = s; }` once `k` runs outside `j`. Each instance has its
/// own element, so the dependences computed on the expanded model are exactly those of the
/// code, and every loop order they allow is legal.
#[derive(Debug, Clone, PartialEq)]
pub struct ScratchArray {
    /// The scalar.
    pub var: VarId,
    /// Per loop around its declaration (outermost first), the least and the greatest value
    /// of the counter where the scalar is used, over the parameters (isl's bounding box).
    pub bounds: Vec<(isl::AstExpr, isl::AstExpr)>,
}

/// Everything the polyhedral stage computed for one SCoP.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Set when the schedule found makes more array accesses of innermost loops non-unit
    /// stride than the original loop order has: the SCoP then keeps its original code.
    pub stride_regression: Option<String>,
    /// Scalars declared in the SCoP: `kept ...` when they were modelled expanded (one
    /// instance per iteration of the loops around their declaration) and the schedule keeps
    /// their instances apart, else why not; `None` when there are none.
    pub expansion: Option<String>,
    /// Expanded scalars materialised as arrays (see [`ScratchArray`]).
    pub scratch: Vec<ScratchArray>,
    /// Why register tiles were left out, when they were (the AST budget).
    pub register_tile_note: Option<String>,
    /// Rows and columns of the register micro-kernels, when the nest has one.
    pub micro_kernel_shape: Option<(i64, i64)>,
    /// The micro-kernels' operands copied into panels before the nest ([`Pack`]).
    pub packs: Vec<Pack>,
    /// Parameter context.
    pub context: String,
    /// Iteration domains.
    pub domain: String,
    /// Original schedule.
    pub original_schedule: String,
    /// Read accesses.
    pub reads: String,
    /// Write accesses.
    pub writes: String,
    /// Flow (read-after-write) dependences.
    pub flow: String,
    /// Anti (write-after-read) dependences.
    pub anti: String,
    /// Output (write-after-write) dependences.
    pub output: String,
    /// The schedule tree isl computed.
    pub computed_schedule: String,
    /// The final schedule tree (tiled, skewed, marked).
    pub final_schedule: String,
    /// The final schedule as a flat map from statement instances to time (isl text).
    pub final_map: String,
    /// Bands.
    pub bands: Vec<BandInfo>,
    /// Bounds proofs per access; code generation marks the proven indices
    /// ([`tessera_ir::ExprKind::Load`]'s `proven`), and the JIT emits no guard for them.
    pub bounds: Vec<BoundsProof>,
    /// Per statement, the compound `int` subscripts proven within `int` (computed in 64 bits).
    pub wide_subscripts: HashMap<String, Vec<crate::scop::Aff>>,
    /// The generated loop nest (isl's C rendering).
    pub c_code: String,
    /// The AST.
    pub ast: Ast,
    /// Per statement, the loops around it that an `unroll` mark named before
    /// [`crate::unroll::unroll`] unrolled them in the full tiles (the register tiles' strips).
    pub marked_loops: HashMap<String, usize>,
    /// Number of loops marked parallel.
    pub parallel_loops: usize,
    /// Tests hoisted out of loops after AST generation ([`crate::unswitch`]).
    pub unswitched: usize,
    /// Milliseconds per phase (dependences, scheduling, tiling/marking, bounds, AST).
    pub phase_ms: Vec<(&'static str, f64)>,
}

/// Text of the model.
pub struct ModelText {
    params: String,
    domain: String,
    sched: String,
    reads: String,
    writes: String,
    context: String,
}

/// Builds the isl text of a SCoP's model.
pub fn model_text(s: &Scop) -> ModelText {
    let names = &s.names;
    let params: Vec<&str> = s.params.iter().map(|p| names[p].as_str()).collect();
    let params = format!("[{}]", params.join(", "));
    let tuple = |st: &crate::scop::PolyStmt| {
        let its: Vec<&str> = st.loops.iter().map(|l| names[&l.var].as_str()).collect();
        format!("{}[{}]", st.name, its.join(", "))
    };
    let mut dom = Vec::new();
    let mut sched = Vec::new();
    let maxlen = s.stmts.iter().map(|st| st.sched.len()).max().unwrap_or(0);
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    for st in &s.stmts {
        let t = tuple(st);
        if st.constraints.is_empty() {
            dom.push(t.clone());
        } else {
            dom.push(format!("{t} : {}", st.constraints.join(" and ")));
        }
        let mut dims = st.sched.clone();
        dims.resize(maxlen, "0".into());
        sched.push(format!("{t} -> [{}]", dims.join(", ")));
        for a in &st.accesses {
            let idx: Vec<String> = a.idx.iter().map(|x| x.to_isl(names)).collect();
            let m = format!("{t} -> {}[{}]", names[&a.var], idx.join(", "));
            match a.kind {
                AccessKind::Read => reads.push(m),
                AccessKind::Write => writes.push(m),
            }
        }
    }
    // Context: declared extents are non-negative.
    let mut ctx = Vec::new();
    for a in &s.arrays {
        for e in a.extents.iter().flatten() {
            ctx.push(format!("{} >= 0", e.to_isl(names)));
        }
    }
    let wrap = |v: &[String]| format!("{params} -> {{ {} }}", v.join("; "));
    ModelText {
        domain: wrap(&dom),
        sched: wrap(&sched),
        reads: wrap(&reads),
        writes: wrap(&writes),
        context: if ctx.is_empty() {
            format!("{params} -> {{ : }}")
        } else {
            format!("{params} -> {{ : {} }}", ctx.join(" and "))
        },
        params,
    }
}

/// Runs the whole analysis of a SCoP: dependences, schedule, bounds, AST.
///
/// A SCoP with expanded scalar temporaries (see [`Scop::expanded_scalars`]) is tried with
/// the options given, then — on the same dependences and isl schedule — without tiling and
/// point-loop reordering (which move the loops of a scalar's declaration inwards), and
/// last, when the one variable per scalar still does not suffice, modelled again with the
/// scalars unexpanded.
pub fn analyse(s: &Scop, opts: &PolyOptions) -> IslResult<Analysis> {
    if !s.has_expansion() {
        return analyse_once(s, opts, false)?.map_err(unexpected_check);
    }
    let t0 = std::time::Instant::now();
    match analyse_once(s, opts, true)? {
        Ok(a) => Ok(a),
        Err(why) => {
            let first_ms = t0.elapsed().as_secs_f64() * 1e3;
            let mut c =
                analyse_once(&s.without_expansion(), opts, false)?.map_err(unexpected_check)?;
            c.expansion = Some(format!(
                "{why}; scheduled again with the scalars unexpanded"
            ));
            c.phase_ms
                .insert(0, ("model with expanded scalars (not kept)", first_ms));
            Ok(c)
        }
    }
}

/// A model without expanded scalars has no expansion check to fail; an internal error if
/// one did.
fn unexpected_check(why: String) -> IslError {
    IslError {
        msg: format!("internal: expansion check failed on a model without expansion: {why}"),
        quota: false,
    }
}

/// The isl map text (`S1[i, j] -> s[i, j]`) of every access of the SCoP's statements to the
/// expanded scalar `v`: writes, then reads.
fn scalar_accesses(s: &Scop, v: VarId) -> (Vec<String>, Vec<String>) {
    let names = &s.names;
    let (mut w, mut r) = (Vec::new(), Vec::new());
    for st in &s.stmts {
        let its: Vec<&str> = st.loops.iter().map(|l| names[&l.var].as_str()).collect();
        for a in st.accesses.iter().filter(|a| a.var == v) {
            let idx: Vec<String> = a.idx.iter().map(|x| x.to_isl(names)).collect();
            let m = format!(
                "{}[{}] -> {}[{}]",
                st.name,
                its.join(", "),
                names[&v],
                idx.join(", ")
            );
            match a.kind {
                AccessKind::Write => w.push(m),
                AccessKind::Read => r.push(m),
            }
        }
    }
    (w, r)
}

/// The scratch arrays of the expanded scalars `vars`: the bounding box of the elements the
/// SCoP uses, per scalar.
fn scratch_arrays<'c>(
    ctx: &'c Ctx,
    s: &Scop,
    t: &ModelText,
    domain: &USet<'c>,
    context: &isl::Set<'c>,
    vars: &[VarId],
) -> IslResult<Vec<ScratchArray>> {
    vars.iter()
        .map(|&v| {
            let (w, r) = scalar_accesses(s, v);
            let all: Vec<String> = w.into_iter().chain(r).collect();
            let used = ctx
                .union_map(&format!("{} -> {{ {} }}", t.params, all.join("; ")))?
                .intersect_domain(domain.clone())?
                .range()?
                .to_set()?;
            Ok(ScratchArray {
                var: v,
                bounds: used.bounding_box(context)?,
            })
        })
        .collect()
}

/// Which expanded scalars the final schedule does not keep apart: those for which the
/// live range of some instance contains a write of another instance, so that the one
/// variable the code has for the scalar would not suffice. For every flow dependence
/// `w -> r` on the scalar, no write `w'` of another instance may lie between `w` and `r` in
/// the new schedule (exact, in isl).
fn expansion_holds<'c>(
    ctx: &'c Ctx,
    s: &Scop,
    t: &ModelText,
    domain: &USet<'c>,
    sched: &UMap<'c>,
    final_map: &UMap<'c>,
) -> IslResult<Vec<VarId>> {
    let before = final_map.clone().lex_lt(final_map.clone())?;
    let empty = ctx.union_map(&format!("{} -> {{ }}", t.params))?;
    let mut overlapping = Vec::new();
    for v in s.expanded_scalars() {
        let (w, r) = scalar_accesses(s, v);
        let map = |x: &[String]| -> IslResult<UMap<'c>> {
            ctx.union_map(&format!("{} -> {{ {} }}", t.params, x.join("; ")))?
                .intersect_domain(domain.clone())
        };
        let (wm, rm) = (map(&w)?, map(&r)?);
        let (flow, _) = isl::compute_flow(rm, wm.clone(), empty.clone(), sched.clone())?;
        let same = wm.clone().apply_range(wm.clone().reverse()?)?;
        let writes = wm.clone().reverse()?.range()?;
        // w -> w': another instance's write after w.
        let later_other = before
            .clone()
            .intersect_domain(writes.clone())?
            .reverse()?
            .intersect_domain(writes)?
            .reverse()?
            .subtract(same)?;
        // r -> w' with w' after r's source w, and w' before r.
        let clobber = flow
            .reverse()?
            .apply_range(later_other)?
            .intersect(before.clone().reverse()?)?;
        if !clobber.is_empty()? {
            overlapping.push(v);
        }
    }
    Ok(overlapping)
}

/// One model of the SCoP: dependences, isl's schedule, then per transformation variant
/// (the options given; with `retry_plain` also without tiling and point-loop reordering)
/// tiling, marks and the check of the scalar expansion, until a variant keeps the
/// expansion; then bounds proofs and the AST. `Ok(Err(why))`: no variant kept it.
fn analyse_once(
    s: &Scop,
    opts: &PolyOptions,
    retry_plain: bool,
) -> IslResult<Result<Analysis, String>> {
    let mut phase_ms = Vec::new();
    let mut clock = std::time::Instant::now();
    let mut lap = |name: &'static str| {
        let now = std::time::Instant::now();
        phase_ms.push((name, (now - clock).as_secs_f64() * 1e3));
        clock = now;
    };
    let ctx = Ctx::new(opts.max_operations)?;
    ctx.set_fusion(opts.fusion == Fusion::None, opts.fusion == Fusion::Max);
    let t = model_text(s);
    let context = ctx.set(&t.context)?;
    let domain = ctx
        .union_set(&t.domain)?
        .intersect_params(context.clone())?;
    let sched = ctx.union_map(&t.sched)?.intersect_domain(domain.clone())?;
    let reads = ctx.union_map(&t.reads)?.intersect_domain(domain.clone())?;
    let writes = ctx.union_map(&t.writes)?.intersect_domain(domain.clone())?;
    let empty = ctx.union_map(&format!("{} -> {{ }}", t.params))?;

    let (flow, _) = isl::compute_flow(reads.clone(), writes.clone(), empty.clone(), sched.clone())?;
    let (output, _) =
        isl::compute_flow(writes.clone(), writes.clone(), empty.clone(), sched.clone())?;
    let (_, anti_may) =
        isl::compute_flow(writes.clone(), writes.clone(), reads.clone(), sched.clone())?;
    // The may dependences include the write sources (output); keep read sources only.
    let anti = anti_may.subtract(output.clone())?;
    // Shown as isl computed them (one piece per source access); coalesced for scheduling.
    let deps = flow
        .clone()
        .union(anti.clone())?
        .union(output.clone())?
        .coalesce()?;
    lap("model + dependences");

    // Validity = proximity = coincidence = all dependences. (Read-after-read pairs as
    // extra proximity, Pluto's `--rar`, changed none of atax, bicg, gesummv, gemver, doitgen,
    // lu by more than the noise here.)
    let compute = || {
        isl::compute_schedule(
            domain.clone(),
            context.clone(),
            deps.clone(),
            deps.clone(),
            deps.clone(),
        )
    };
    let mut computed = compute()?;
    // A first band with no parallel member leaves the whole nest sequential unless its tiles
    // run in wavefronts. Two-member bands of one statement get them (`visit`); so do, with
    // `time_tile`, bands of uniform dependences that `wavefront_tileable` accepts and whose
    // time tiles are at least 16 wide (narrower tiles start their innermost loop every few
    // points: heat-3d's 8 x 8 x 8 x 8 ran 2-4x slower), and, with `wavefront_tiles`, bands
    // of other affine dependences that it accepts where `wavefront_pays` (lu's `(k, i, j)`),
    // with the cache model's tile sizes. Otherwise schedule again with outer
    // coincidence, which keeps the time loop outside and the space loops parallel.
    let arrays = s.arrays.iter().filter(|a| !a.extents.is_empty()).count();
    let mut time_tile = vec![];
    // `time_tiled`: the first band's tiles run in wavefronts; `affine`: its dependences are
    // not all uniform (tiles of the cache model's size, not time tiles).
    let mut time_tiled = false;
    let mut affine = false;
    let mut rescheduled = None;
    if let Some(band) = first_band(&computed)? {
        let n = band.band_n_member()?;
        let any_par = (0..n)
            .map(|i| band.band_coincident(i))
            .collect::<IslResult<Vec<_>>>()?
            .contains(&true);
        if !(any_par || (n == 2 && s.stmts.len() == 1)) {
            let mut why = "the first band had no parallel member".to_string();
            if (opts.time_tile || opts.wavefront_tiles) && opts.tile && n >= 2 {
                match wavefront_tileable(&band, &deps, s)? {
                    Err(no) => why = format!("{why}; not tiled in wavefronts: {no}"),
                    Ok(false) if opts.wavefront_tiles => {
                        let partial = band.band_partial()?.to_map()?.to_string();
                        if wavefront_pays(&partial, s, n) {
                            time_tiled = true;
                            affine = true;
                        } else {
                            why = format!(
                                "{why}; not tiled in wavefronts: no access is invariant in a member and moves with two others (no reuse to gain), and no statement has a loop inside the band (tiles of single instances)"
                            );
                        }
                    }
                    Ok(false) => {
                        why = format!(
                            "{why}; not tiled in time: its dependence distances are not constant"
                        )
                    }
                    Ok(true) if !opts.time_tile => {}
                    Ok(true) => {
                        time_tile = time_tile_sizes(opts, arrays, n);
                        if opts.tile_sizes.is_some() || time_tile[0] >= 16 {
                            time_tiled = true;
                        } else {
                            why = format!(
                                "{why}; not tiled in time: its time tiles would be {} wide (the cache model's size for {} space dimensions), too narrow to pay",
                                time_tile[0],
                                n - 1
                            );
                        }
                    }
                }
            }
            if !time_tiled {
                rescheduled = Some(why);
            }
        }
    }
    let reschedule = |why: &mut Option<String>, reason: String| {
        *why = Some(reason);
        ctx.set_outer_coincidence(true);
        let r = compute();
        ctx.set_outer_coincidence(false);
        r
    };
    if let Some(r) = rescheduled.take() {
        computed = reschedule(&mut rescheduled, r)?;
    }
    let computed_text = |computed: &Schedule<'_>, why: &Option<String>, time_tiled| match why {
        Some(w) => format!("{computed} (rescheduled with outer coincidence: {w})"),
        None if time_tiled => {
            let how = if affine {
                "affine dependences: tiled, the tiles run in wavefronts"
            } else {
                "uniform dependences: tiled in time"
            };
            format!("{computed} (first band: no parallel member, {how})")
        }
        None => computed.to_string(),
    };
    let mut computed_schedule = computed_text(&computed, &rescheduled, time_tiled);
    lap("scheduling");

    let tile = opts.tile_sizes.clone().unwrap_or_else(|| {
        let t = CacheModel::detect().tile_size(arrays) as f64 * opts.tile_scale;
        vec![(t.round() as i64).max(2)]
    });
    let bounds = prove_bounds(&ctx, s, &t, &domain, &context)?;
    let wide_subscripts = wide_subscripts(&ctx, s, &t, &context)?;
    lap("bounds proofs");
    // Register tiles multiply the statement instances of the AST (strips unrolled, full and
    // partial strips separated) and LLVM's time with them: past the budget the nest is built
    // again without them (covariance: 2.3 s of compile time for 80 ms of run time saved).
    let mut rt = opts.register_tile;
    let mut mk_cols = opts.micro_kernel_cols;
    let mut register_tile_note = None;
    // Code size: past `max_ast_nodes` the nest is built again with less (no register
    // tiles, then no separation, then no tiling); past it without them the SCoP keeps its
    // code. LLVM's time grows with the code.
    let mut separate = true;
    let mut tile_allowed = opts.tile;
    let mut size_notes: Vec<String> = Vec::new();
    let nest = loop {
        let mut variants = vec![(tile_allowed, opts.permute)];
        if retry_plain && (tile_allowed || opts.permute) {
            variants.push((false, false));
        }
        let mut failed: Option<String> = None;
        let mut chosen = None;
        for (tile_on, permute) in variants {
            let mut bands = Vec::new();
            let (schedule, parallel_loops) = transform(
                s,
                s.stmts.len() == 1,
                &computed,
                &deps,
                &tile,
                Wavefronts {
                    time: (time_tiled && !affine).then_some(&time_tile[..]),
                    affine: (time_tiled && affine).then_some(&tile[..]),
                },
                tile_on,
                permute,
                RegisterTiles {
                    rows: rt,
                    micro_rows: opts.micro_kernel_rows,
                    cols: mk_cols,
                    pack: opts.pack,
                },
                separate,
                &mut bands,
            )?;
            let final_map = schedule.map()?;
            let mut scratch = Vec::new();
            let expansion = if s.has_expansion() {
                let name = |v: &VarId| format!("`{}`", s.names[v]);
                let expanded = s.expanded_scalars();
                let overlapping = expansion_holds(&ctx, s, &t, &domain, &sched, &final_map)?;
                let kept: Vec<String> = expanded
                    .iter()
                    .filter(|v| !overlapping.contains(v))
                    .map(name)
                    .collect();
                let kept = (!kept.is_empty()).then(|| format!(
                    "kept the expansion of {} (one instance per iteration of the loops around the declaration; no instance overlaps another under the schedule)",
                    kept.join(", ")
                ));
                let list: Vec<String> = overlapping.iter().map(name).collect();
                let why = format!(
                    "expanding {} would let its instances overlap under the schedule found",
                    list.join(", ")
                );
                // Materialised: the scalar becomes an array with one element per instance.
                let arrays = if overlapping.is_empty() || !opts.scratch {
                    None
                } else {
                    scratch_arrays(&ctx, s, &t, &domain, &context, &overlapping).ok()
                };
                match (overlapping.is_empty(), arrays) {
                    (true, _) => kept,
                    (false, Some(arrays)) => {
                        scratch = arrays;
                        let m = format!(
                            "{why}: materialised {} as scratch arrays (one element per iteration of the loops around the declaration; the original code runs where they would exceed {} MiB)",
                            list.join(", "),
                            opts.scratch_limit >> 20
                        );
                        Some(match kept {
                            Some(k) => format!("{m}; {k}"),
                            None => m,
                        })
                    }
                    (false, None) => {
                        // The next variant, or the caller, tries again.
                        failed = Some(match failed {
                            None => why,
                            Some(first) if first == why => {
                                format!(
                                    "{first} (with and without tiling and point-loop reordering)"
                                )
                            }
                            Some(first) => {
                                format!("{first}; without tiling and point-loop reordering: {why}")
                            }
                        });
                        continue;
                    }
                }
            } else {
                None
            };
            let expansion = match (&failed, expansion) {
                (Some(first), Some(kept)) => Some(format!(
                    "{first}; without tiling and point-loop reordering: {kept}"
                )),
                (_, e) => e,
            };
            chosen = Some((
                schedule,
                final_map,
                parallel_loops,
                bands,
                expansion,
                scratch,
            ));
            break;
        }
        let Some((schedule, final_map, parallel_loops, bands, expansion, scratch)) = chosen else {
            return Ok(Err(failed.unwrap_or_default()));
        };
        let final_schedule = schedule.to_string();
        let final_map_text = final_map.to_string();
        let stride_regression = {
            let new = innermost_vars(&final_map_text, s);
            let old: HashMap<String, VarId> = s
                .stmts
                .iter()
                .filter_map(|st| st.loops.last().map(|l| (st.name.clone(), l.var)))
                .collect();
            let (mut n_old, mut n_new) = (0, 0);
            // A micro-kernel's innermost loop walks rows of `B` on purpose (each row segment
            // spans the unrolled columns).
            // Nor do the point loops of tiles run in wavefronts for lack of a parallel loop:
            // the tiles keep their footprint in cache, and the alternative is a schedule
            // whose outer loop sweeps the whole arrays sequentially (lu, cholesky).
            let micro: Vec<&String> = bands
                .iter()
                .flat_map(|b| b.micro_kernel.iter().chain(&b.wavefront))
                .collect();
            for st in s.stmts.iter().filter(|st| !micro.contains(&&st.name)) {
                if let (Some(o), Some(n)) = (old.get(&st.name), new.get(&st.name)) {
                    n_old += strided_accesses(st, *o);
                    n_new += strided_accesses(st, *n);
                }
            }
            (n_new > n_old).then(|| {
                format!(
                    "the schedule found makes {n_new} array accesses of innermost loops non-unit stride, the original loop order {n_old}"
                )
            })
        };
        // A micro-kernel's initialisations moved into a nest of their own sweep their
        // array once more: O(n^2) against the kernel's O(n^3).
        let micro = bands.iter().any(|b| !b.micro_kernel.is_empty());
        let stride_regression = match stride_regression {
            Some(r) => Some(r),
            None if micro => None,
            None => split_sweeps(s, &schedule)?,
        };
        lap("tiling, wavefront, parallel marks");

        let micro_on = bands.iter().any(|b| !b.micro_kernel.is_empty());
        let rt_on = rt > 1 || micro_on;
        let generated = if rt_on || time_tiled {
            let ops = match (rt_on, time_tiled) {
                (true, true) => opts.register_tile_ast_ops.min(opts.time_tile_ast_ops),
                (true, false) => opts.register_tile_ast_ops,
                _ => opts.time_tile_ast_ops,
            };
            ctx.bounded(ops, opts.max_operations, || {
                isl::ast_from_schedule(context.clone(), schedule, &deps)
            })
        } else {
            isl::ast_from_schedule(context.clone(), schedule, &deps)
        };
        let (ast, c_code) = match generated {
            Err(e) if e.quota && time_tiled => {
                // Time tiling first: the register tiles may fit without it.
                let why = format!(
                    "generating the {} loop nest took more than {} isl operations",
                    if affine {
                        "wavefront-tiled"
                    } else {
                        "time-tiled"
                    },
                    opts.time_tile_ast_ops
                );
                time_tiled = false;
                computed = reschedule(&mut rescheduled, why)?;
                computed_schedule = computed_text(&computed, &rescheduled, time_tiled);
                lap("AST generation (time tiles given up)");
                continue;
            }
            Err(e) if e.quota && rt_on => {
                give_up_register_tiles(
                    bands.iter().any(|b| !b.micro_kernel.is_empty()),
                    (&mut rt, &mut mk_cols),
                    &mut register_tile_note,
                    &format!(
                        "generating the loop nest with them took more than {} isl operations",
                        opts.register_tile_ast_ops
                    ),
                );
                lap("AST generation (given up)");
                continue;
            }
            g => g?,
        };
        let marked_loops = crate::unroll::marked_loops(&ast);
        let (ast, unrolled) = crate::unroll::unroll(ast);
        let (ast, unswitched) = crate::unswitch::unswitch(ast);
        lap("AST generation");
        // A partial strip kept as a loop weighs as its `rt` copies (what isl's `unroll`
        // made of it, and about what LLVM makes of it).
        let calls = ast_calls(&ast) + unrolled.kept * (rt.max(1) as usize - 1);
        // A micro-kernel's full tile is `rows x cols` instances of its statement by design:
        // they are budgeted on top.
        let micro_stmts: usize = bands.iter().map(|b| b.micro_kernel.len()).sum();
        let budget = opts.register_tile_budget
            + micro_stmts * (opts.micro_kernel_rows * mk_cols.max(0)) as usize;
        if (rt > 1 || micro_stmts > 0) && calls > budget {
            give_up_register_tiles(
                micro_stmts > 0,
                (&mut rt, &mut mk_cols),
                &mut register_tile_note,
                &format!("the loop nest would have {calls} statement instances (budget {budget})"),
            );
            continue;
        }
        let nodes = ast_nodes(&ast);
        if nodes > opts.max_ast_nodes {
            let step = if micro_stmts > 0 {
                mk_cols = 0;
                "without micro-kernels"
            } else if rt > 1 {
                rt = 1;
                "without register tiles"
            } else if separate {
                separate = false;
                "without separation"
            } else if tile_allowed {
                tile_allowed = false;
                "without tiling"
            } else {
                return Err(IslError {
                    msg: format!(
                        "the generated loop nest would have {nodes} AST nodes even untiled (budget {}; code size and LLVM's time grow with it)",
                        opts.max_ast_nodes
                    ),
                    quota: false,
                });
            };
            size_notes.push(format!(
                "{nodes} AST nodes > {}: built again {step}",
                opts.max_ast_nodes
            ));
            continue;
        }
        if !size_notes.is_empty() {
            let n = size_notes.join("; ");
            register_tile_note = Some(match register_tile_note {
                Some(r) => format!("{r}; code size: {n}"),
                None => format!("code size: {n}"),
            });
        }
        break Nest {
            final_schedule,
            final_map: final_map_text,
            stride_regression,
            parallel_loops,
            bands,
            expansion,
            scratch,
            ast,
            marked_loops,
            c_code,
            unswitched,
        };
    };
    Ok(Ok(Analysis {
        context: context.to_string(),
        domain: domain.to_string(),
        original_schedule: sched.to_string(),
        reads: reads.to_string(),
        writes: writes.to_string(),
        flow: flow.to_string(),
        anti: anti.to_string(),
        output: output.to_string(),
        stride_regression: nest.stride_regression,
        expansion: nest.expansion,
        scratch: nest.scratch,
        register_tile_note,
        micro_kernel_shape: nest
            .bands
            .iter()
            .any(|b| !b.micro_kernel.is_empty())
            .then_some((opts.micro_kernel_rows, mk_cols)),
        packs: nest.bands.iter().flat_map(|b| b.packs.clone()).collect(),
        computed_schedule,
        final_schedule: nest.final_schedule,
        final_map: nest.final_map,
        bands: nest.bands,
        bounds,
        wide_subscripts,
        c_code: nest.c_code,
        ast: nest.ast,
        marked_loops: nest.marked_loops,
        parallel_loops: nest.parallel_loops,
        unswitched: nest.unswitched,
        phase_ms,
    }))
}

/// The statement names (`S3`) in isl text.
fn stmt_names(text: &str) -> std::collections::HashSet<String> {
    let b = text.as_bytes();
    let mut out = std::collections::HashSet::new();
    for (i, _) in text.match_indices('S') {
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            continue;
        }
        let digits = text[i + 1..]
            .bytes()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 && b.get(i + 1 + digits) == Some(&b'[') {
            out.insert(text[i..i + 1 + digits].to_string());
        }
    }
    out
}

/// Whether the schedule sweeps a multi-dimensional array in more separate top-level loop
/// nests than the original code: isl's scheduler distributes statements that share a loop
/// but no dependence (atax's `tmp = A x` and `y = A^T tmp` in one `i` loop) to give each
/// its own parallel loop, which reads the array from memory once per nest instead of once.
/// Only statements that sweep a plane of the array count (subscripts moving with two of
/// their loops).
/// On one core that costs more than the parallelism gains (atax 67 -> 120 ms at 8000 x 9000
/// on this machine); the SCoP then keeps its code, as for a stride regression.
fn split_sweeps(s: &Scop, schedule: &Schedule<'_>) -> IslResult<Option<String>> {
    let root = schedule.root()?;
    if root.n_children()? == 0 {
        return Ok(None);
    }
    let top = root.child(0)?;
    if !matches!(top.kind()?, NodeKind::Sequence | NodeKind::SetNode) {
        return Ok(None);
    }
    let mut nests = Vec::new();
    for i in 0..top.n_children()? {
        let filter = top.clone().child(i)?;
        let inside = if filter.n_children()? > 0 {
            filter.child(0)?.domain()?
        } else {
            filter.domain()?
        };
        nests.push(stmt_names(&inside.to_string()));
    }
    for a in s.arrays.iter().filter(|a| a.extents.len() >= 2) {
        let users: Vec<&PolyStmt> = s
            .stmts
            .iter()
            .filter(|st| {
                // Accesses that sweep a plane (subscripts move with two loops), not a row
                // or a diagonal.
                st.accesses.iter().any(|x| {
                    x.var == a.var
                        && st
                            .loops
                            .iter()
                            .filter(|l| x.idx.iter().any(|i| i.terms.contains_key(&l.var)))
                            .count()
                            >= 2
                })
            })
            .collect();
        let old: std::collections::HashSet<&String> =
            users.iter().filter_map(|st| st.sched.first()).collect();
        let new = nests
            .iter()
            .filter(|n| users.iter().any(|st| n.contains(&st.name)))
            .count();
        if new > old.len() {
            return Ok(Some(format!(
                "the schedule found sweeps `{}` in {new} separate loop nests, the original code in {}",
                s.names[&a.var],
                old.len()
            )));
        }
    }
    Ok(None)
}

/// The schedule, AST and notes of one transformation of a SCoP (see `analyse_once`).
struct Nest {
    final_schedule: String,
    final_map: String,
    stride_regression: Option<String>,
    parallel_loops: usize,
    bands: Vec<BandInfo>,
    expansion: Option<String>,
    scratch: Vec<ScratchArray>,
    ast: Ast,
    marked_loops: HashMap<String, usize>,
    c_code: String,
    unswitched: usize,
}

/// The number of nodes of an AST (loops, tests, blocks, statement instances).
fn ast_nodes(a: &Ast) -> usize {
    1 + match a {
        Ast::User(_) => 0,
        Ast::For { body, .. } | Ast::Mark(_, body) => ast_nodes(body),
        Ast::If(_, t, e) => ast_nodes(t) + e.as_deref().map_or(0, ast_nodes),
        Ast::Block(v) => v.iter().map(ast_nodes).sum(),
    }
}

/// The number of statement instances (calls) in an AST.
fn ast_calls(a: &Ast) -> usize {
    match a {
        Ast::User(_) => 1,
        Ast::For { body, .. } | Ast::Mark(_, body) => ast_calls(body),
        Ast::If(_, t, e) => ast_calls(t) + e.as_deref().map_or(0, ast_calls),
        Ast::Block(v) => v.iter().map(ast_calls).sum(),
    }
}

/// A statement of a schedule map, the counter each output is (if it is one), and whether
/// each output is a constant.
type StmtOutputs<'s> = (&'s PolyStmt, Vec<Option<VarId>>, Vec<bool>);

/// Per statement of a flat schedule map (isl text `{ S0[i, j] -> [0, j, i]; ... }`), the
/// loop counter of its innermost loop: the last output that is one of its counters.
fn innermost_vars(map: &str, scop: &Scop) -> HashMap<String, VarId> {
    stmt_outputs(map, scop)
        .into_iter()
        .filter_map(|(st, vars, _)| {
            vars.into_iter()
                .rev()
                .flatten()
                .next()
                .map(|v| (st.name.clone(), v))
        })
        .collect()
}

/// Per statement of a flat schedule map, the counter of its innermost loop (as
/// [`innermost_vars`]) and the output dimension it is.
pub(crate) fn innermost_dims(map: &str, scop: &Scop) -> HashMap<String, (VarId, usize)> {
    stmt_outputs(map, scop)
        .into_iter()
        .filter_map(|(st, vars, _)| {
            let q = vars.iter().rposition(Option::is_some)?;
            Some((st.name.clone(), (vars[q]?, q)))
        })
        .collect()
}

/// Array accesses of `st` that stride through memory when `v` is the innermost counter: `v`
/// appears in a subscript, but not only in the last one with coefficient ±1.
pub(crate) fn strided_accesses(st: &PolyStmt, v: VarId) -> usize {
    st.accesses
        .iter()
        .filter(|a| !a.expanded && !a.idx.is_empty())
        .filter(|a| {
            let (last, rest) = a.idx.split_last().expect("non-empty");
            let uses = a.idx.iter().any(|x| x.terms.contains_key(&v));
            let unit = last.terms.get(&v).is_some_and(|c| c.abs() == 1)
                && rest.iter().all(|x| !x.terms.contains_key(&v));
            uses && !unit
        })
        .count()
}

/// The first band on the leftmost path of a schedule tree.
fn first_band<'c>(schedule: &Schedule<'c>) -> IslResult<Option<SNode<'c>>> {
    let mut node = schedule.root()?;
    loop {
        if node.kind()? == NodeKind::Band {
            return Ok(Some(node));
        }
        if node.n_children()? == 0 {
            return Ok(None);
        }
        node = node.child(0)?;
    }
}

/// The dependences of `deps` between instances with the same schedule outside the band at
/// `node` (those the band may carry), and the band's partial schedule as a map.
fn band_deps<'c>(node: &SNode<'c>, deps: &UMap<'c>) -> IslResult<(UMap<'c>, UMap<'c>)> {
    let prefix = node.prefix_map()?;
    let same_prefix = prefix.clone().apply_range(prefix.reverse()?)?;
    Ok((
        deps.clone().intersect(same_prefix)?,
        node.band_partial_map()?,
    ))
}

/// Whether the tiles of the band at `node` can run in wavefronts, else why not: permutable
/// (every dependence non-negative along every member, so rectangular tiles are legal and,
/// with the first tile member replaced by `t0 + t1`, tile member 1 is parallel), with a
/// dependence, and no statement depending on an earlier instance of itself through the last
/// member alone (equal outer schedule and equal other members: seidel-2d's `A[i][j-1]`; the
/// tiles' point loops keep the band's order, so their innermost loop would be a chain that
/// does not vectorise, which the schedule with outer coincidence avoids). `Ok(true)` where
/// the dependence distances are also bounded by constants along every member for every value
/// of the parameters (uniform: stencils, `A[t+1][i] <- A[t][i-1..i+1]`, have them; tiles of
/// such a band are as wide as the tile sizes plus a constant halo, which is what makes tiling
/// the time dimension pay); `Ok(false)` for other affine dependences (triangular solvers and
/// reductions into a moving target, `lu`, `cholesky`). Only the dependences the band sees
/// (same outer schedule) count.
fn wavefront_tileable(
    node: &SNode<'_>,
    deps: &UMap<'_>,
    scop: &Scop,
) -> IslResult<Result<bool, &'static str>> {
    if !node.band_permutable()? {
        return Ok(Err("it is not permutable"));
    }
    let n = node.band_n_member()?;
    let (live, part) = band_deps(node, deps)?;
    let d = live
        .clone()
        .apply_domain(part.clone())?
        .apply_range(part.clone())?;
    if d.is_empty()? {
        return Ok(Err("no dependence"));
    }
    let delta = d.deltas()?.to_set()?.reset_tuple_id()?;
    let mut uniform = true;
    for k in 0..n {
        if delta.dim_range(k)?.is_none() {
            uniform = false;
            break;
        }
    }
    let vars: Vec<String> = (0..n).map(|i| format!("d{i}")).collect();
    let mut cons: Vec<String> = (0..n - 1).map(|i| format!("d{i} = 0")).collect();
    cons.push(format!("(d{0} < 0 or d{0} > 0)", n - 1));
    let carried = deps.ctx().set(&format!(
        "{{ [{}] : {} }}",
        vars.join(", "),
        cons.join(" and ")
    ))?;
    for st in &scop.stmts {
        let its = |c: char| -> String {
            (0..st.loops.len())
                .map(|k| format!("{c}{k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let own = deps.ctx().union_map(&format!(
            "{{ {0}[{1}] -> {0}[{2}] }}",
            st.name,
            its('a'),
            its('b')
        ))?;
        let mine = live.clone().intersect(own)?;
        if mine.is_empty()? {
            continue;
        }
        let d = mine.apply_domain(part.clone())?.apply_range(part.clone())?;
        let delta = d.deltas()?.to_set()?.reset_tuple_id()?;
        if !delta.intersect(carried.clone())?.is_empty()? {
            return Ok(Err(
                "a statement depends on itself along its last member (the tiles' innermost loop would be a chain)",
            ));
        }
    }
    Ok(Ok(uniform))
}

/// The tile sizes of bands whose tiles run in wavefronts ([`wavefront_tileable`]): `time`
/// for bands of uniform dependences (time tiling), `affine` for the others; `None` where
/// such bands are not tiled in wavefronts.
#[derive(Clone, Copy)]
struct Wavefronts<'a> {
    time: Option<&'a [i64]>,
    affine: Option<&'a [i64]>,
}

/// The sizes of time tiles: `--tile-sizes` rounded down to powers of two up to 32 (see
/// [`CacheModel::time_tile_size`]), else the cache model's for a band of `members` members
/// over `arrays` arrays.
fn time_tile_sizes(opts: &PolyOptions, arrays: usize, members: usize) -> Vec<i64> {
    match &opts.tile_sizes {
        Some(sizes) => sizes
            .iter()
            .map(|&x| 1i64 << (63 - x.clamp(1, 32).leading_zeros()))
            .collect(),
        None => vec![CacheModel::detect().time_tile_size(arrays, members)],
    }
}

/// For each member `k` of the band at `node`: whether it carries no dependence of `deps`,
/// given the outer schedule (exact, by the deltas of the dependences in the band's space,
/// computed once per band).
fn parallel_members<'c>(node: &SNode<'c>, deps: &UMap<'c>) -> IslResult<Vec<bool>> {
    let n = node.band_n_member()?;
    let (live, part) = band_deps(node, deps)?;
    let d = live.apply_domain(part.clone())?.apply_range(part)?;
    if d.is_empty()? {
        return Ok(vec![true; n]);
    }
    let delta = d.deltas()?;
    if delta.is_empty()? {
        return Ok(vec![true; n]);
    }
    let delta = delta.to_set()?.reset_tuple_id()?;
    let vars: Vec<String> = (0..n).map(|i| format!("d{i}")).collect();
    (0..n)
        .map(|k| {
            let mut cons: Vec<String> = (0..k).map(|i| format!("d{i} = 0")).collect();
            cons.push(format!("(d{k} < 0 or d{k} > 0)"));
            let carried = delta.ctx().set(&format!(
                "{{ [{}] : {} }}",
                vars.join(", "),
                cons.join(" and ")
            ))?;
            delta.clone().intersect(carried)?.is_empty()
        })
        .collect()
}

/// For each statement of a map to time in isl text (`{ S1[i, k, j] -> [(i), (j), (k)]; ... }`,
/// constraints after `:` ignored): the statement and, per output, the loop counter the output
/// is (`None` when it is not a plain counter: a constant, a skewed or tiled expression).
fn stmt_outputs<'s>(text: &str, scop: &'s Scop) -> Vec<StmtOutputs<'s>> {
    let mut out = Vec::new();
    let Some(body) = text.split_once('{').map(|x| x.1) else {
        return out;
    };
    for part in body.split(';') {
        let Some((lhs, rhs)) = part.split_once("->") else {
            continue;
        };
        let Some((name, ins)) = lhs.trim().split_once('[') else {
            continue;
        };
        let Some(st) = scop.stmts.iter().find(|s| s.name == name.trim()) else {
            continue;
        };
        let ins: Vec<&str> = ins
            .trim_end_matches(']')
            .split(',')
            .map(str::trim)
            .collect();
        let Some(outs) = rhs
            .trim()
            .strip_prefix('[')
            .and_then(|r| r.split(']').next())
        else {
            continue;
        };
        let outs: Vec<&str> = outs
            .split(',')
            .map(|o| {
                o.trim()
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .trim()
            })
            .collect();
        // A counter, possibly shifted by a constant (`1 + i`, `i - 2`).
        let counter = |o: &str| -> Option<VarId> {
            let terms: Vec<&str> = o
                .split(['+', '-'])
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .collect();
            let mut found = None;
            for t in terms {
                if t.parse::<i64>().is_ok() {
                    continue;
                }
                let p = ins.iter().position(|x| *x == t)?;
                if found.replace(p).is_some() {
                    return None;
                }
            }
            found.and_then(|p| st.loops.get(p)).map(|l| l.var)
        };
        let vars = outs.iter().map(|o| counter(o)).collect();
        // Constant in the statement's loops: no term names one of its counters (a number,
        // or a parameter: isl places a statement after a loop at `c1 = m`).
        let consts = outs
            .iter()
            .map(|o| {
                !o.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|t| ins.contains(&t))
            })
            .collect();
        out.push((st, vars, consts));
    }
    out
}

/// For each statement of a band's partial schedule: per member, the loop counter the member
/// is (see [`stmt_outputs`]); statements whose tuple does not have `n` members are skipped.
fn member_counters<'s>(band: &str, scop: &'s Scop, n: usize) -> Vec<StmtOutputs<'s>> {
    stmt_outputs(band, scop)
        .into_iter()
        .filter(|(_, vars, _)| vars.len() == n)
        .collect()
}

/// Locality score of each member of a band for being the innermost loop: per access of the
/// statements whose member is a plain loop counter, +2 if the counter indexes only the last
/// subscript with coefficient ±1 (stride 1), +1 if no subscript uses it (invariant), -4 if
/// it strides through memory. Members that are not plain counters score 0 for a statement.
/// Also returns, per member, the number of accesses it strides through.
fn member_scores(band: &str, scop: &Scop, n: usize) -> (Vec<i64>, Vec<usize>) {
    let mut score = vec![0i64; n];
    let mut strided = vec![0usize; n];
    for (st, vars, _) in member_counters(band, scop, n) {
        for (m, v) in vars.iter().enumerate() {
            let Some(v) = v else { continue };
            for a in &st.accesses {
                let Some((last, rest)) = a.idx.split_last() else {
                    continue;
                };
                let in_rest = rest.iter().any(|x| x.terms.contains_key(v));
                score[m] += match (last.terms.get(v), in_rest) {
                    (None, false) => 1,
                    (Some(c), false) if c.abs() == 1 => 2,
                    _ => {
                        strided[m] += 1;
                        -4
                    }
                };
            }
        }
    }
    (score, strided)
}

/// Whether tiling the band can create reuse: some array access of one of its statements is
/// invariant in one of its members and moves with two others (temporal reuse across a 2-D
/// footprint, as `B[k][j]` along `i` in gemm). Bands of plain counters where every access
/// moves with every member (a stencil sweep without its time loop), and two-member bands
/// (matmul's per-row kernel: `C[i][j]` reused along `k` across one row), gain nothing from
/// tiles. `true` when a member is not a plain counter.
fn tiling_pays(band: &str, scop: &Scop, n: usize) -> bool {
    let per = member_counters(band, scop, n);
    if per.is_empty() {
        return true;
    }
    per.iter().any(|(st, vars, consts)| {
        vars.iter().zip(consts).any(|(v, &constant)| match v {
            // A constant member: the statement is not in that loop.
            None => !constant,
            Some(v) => st.accesses.iter().any(|a| {
                let uses = |w: &VarId| a.idx.iter().any(|x| x.terms.contains_key(w));
                // Invariant in `v`, and moving with two other members: between two uses
                // of an element lies a 2-D footprint, which tiles bring into cache. (With
                // one other member the footprint is one row, which a cache holds anyway.)
                !a.idx.is_empty()
                    && !uses(v)
                    && vars.iter().flatten().filter(|w| *w != v && uses(w)).count() >= 2
            }),
        })
    })
}

/// Whether tiling a band with no parallel member and running its tiles in wavefronts can
/// pay: tiles create reuse ([`tiling_pays`]: lu's `A[k][j]` along `i`), or a statement has
/// loops inside the band, so that each point of a tile is a loop of its own (gramschmidt's
/// band `(k, j)` around its loops over `i`): the wavefront's parallelism then comes in
/// coarse grains. A 2-D band of single instances without reuse (trisolv's `(i, j)`) ran
/// 1.4x slower tiled in wavefronts than scheduled again with outer coincidence.
fn wavefront_pays(band: &str, scop: &Scop, n: usize) -> bool {
    tiling_pays(band, scop, n)
        || member_counters(band, scop, n)
            .iter()
            .any(|(st, _, _)| st.loops.len() > n)
}

/// Reorders a permutable band so that its innermost member is the parallel one with the best
/// [`member_scores`] (stride 1, no reduction: what LLVM vectorises), if that improves on the
/// current innermost member and strides through no more accesses than it: a reduction along
/// rows (`x[i] += A[i][j] * y[j]`, `j` innermost) runs at the speed of memory, while moving
/// the parallel `i` inwards would fetch a cache line of `A` per element and still not
/// vectorise (a gather). Any order of a permutable band is legal.
fn stride_one_innermost<'c>(
    node: &SNode<'c>,
    scop: &Scop,
    deps: &UMap<'c>,
    current: Option<Vec<bool>>,
) -> IslResult<Option<(SNode<'c>, Vec<bool>, String)>> {
    let n = node.band_n_member()?;
    let partial = node.band_partial()?;
    let (scores, strided) = member_scores(&partial.to_map()?.to_string(), scop, n);
    let current = match current {
        Some(c) => c,
        None => parallel_members(node, deps)?,
    };
    let cur_score = if current[n - 1] {
        scores[n - 1]
    } else {
        i64::MIN
    };
    let mut cands: Vec<usize> = (0..n - 1)
        .filter(|&m| scores[m] > cur_score && strided[m] <= strided[n - 1])
        .collect();
    cands.sort_by_key(|&m| std::cmp::Reverse(scores[m]));
    for m in cands {
        let order: Vec<usize> = (0..n).filter(|&k| k != m).chain([m]).collect();
        let coincident: Vec<bool> = (0..n)
            .map(|k| node.band_coincident(k))
            .collect::<IslResult<_>>()?;
        let mut nn = node.clone().replace_band(partial.permute(&order)?)?;
        nn = nn.band_set_permutable(true)?;
        for (k, &o) in order.iter().enumerate() {
            nn = nn.band_set_coincident(k, coincident[o])?;
        }
        let par = parallel_members(&nn, deps)?;
        if *par.last().unwrap_or(&false) {
            return Ok(Some((
                nn,
                par,
                format!("innermost loop: member {m} moved in (stride 1, parallel)"),
            )));
        }
    }
    // No parallel member fits: still prefer the member that strides through the fewest
    // accesses when the innermost one strides (gemver's fused `A[j][i]` update and
    // transposed product: neither loop is parallel, one is stride 1).
    if !current[n - 1] && strided[n - 1] > 0 {
        if let Some(m) = (0..n - 1)
            .filter(|&m| strided[m] < strided[n - 1])
            .min_by_key(|&m| (strided[m], std::cmp::Reverse(scores[m])))
        {
            let order: Vec<usize> = (0..n).filter(|&k| k != m).chain([m]).collect();
            let mut nn = node.clone().replace_band(partial.permute(&order)?)?;
            nn = nn.band_set_permutable(true)?;
            let par = parallel_members(&nn, deps)?;
            for (k, &p) in par.iter().enumerate() {
                nn = nn.band_set_coincident(k, p)?;
            }
            return Ok(Some((
                nn,
                par,
                format!(
                    "innermost loop: member {m} moved in (strides through {} accesses instead of {}; no member is parallel)",
                    strided[m],
                    strided[n - 1]
                ),
            )));
        }
    }
    Ok(None)
}

/// Tiles permutable bands, skews tile bands into wavefronts where no outer member is
/// parallel, and marks the outermost parallel member of each band nest "parallel".
#[allow(clippy::too_many_arguments)]
fn transform<'c>(
    scop: &Scop,
    single: bool,
    schedule: &Schedule<'c>,
    deps: &UMap<'c>,
    tile: &[i64],
    wave: Wavefronts<'_>,
    do_tile: bool,
    permute: bool,
    register_tile_size: RegisterTiles,
    separate: bool,
    bands: &mut Vec<BandInfo>,
) -> IslResult<(Schedule<'c>, usize)> {
    let (schedule, splits) =
        if register_tile_size.micro_rows > 1 && register_tile_size.cols > 1 && permute {
            split_micro_kernel_inits(schedule.clone(), scop, deps)?
        } else {
            (schedule.clone(), Vec::new())
        };
    let mut node = schedule.root()?;
    let mut marked = 0;
    let first_band = bands.len();
    // Depth-first walk with an explicit path of child positions.
    visit(
        scop,
        single,
        &mut node,
        deps,
        tile,
        wave,
        do_tile,
        permute,
        register_tile_size,
        bands,
        0,
        false,
        &mut marked,
    )?;
    while node.has_parent()? {
        node = node.parent()?;
    }
    // Each split's note goes to the band of the micro-kernel it was made for.
    for (note, kernel) in splits {
        if let Some(b) = bands[first_band..]
            .iter_mut()
            .find(|b| b.micro_kernel.iter().any(|st| kernel.contains(st)))
        {
            b.note = format!("{note}; {}", b.note);
        }
    }
    if separate {
        separate_innermost(&mut node)?;
    }
    Ok((node.schedule()?, marked))
}

/// What a subtree of the schedule holds, for [`separate_innermost`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Below {
    /// No band.
    Nothing,
    /// Only bands that emit no loop: every member unrolled, or taking one value per
    /// iteration of the loops around it (a register tile's point band below the loop it
    /// is jammed into).
    NoLoop,
    /// A band that emits a loop.
    Loop,
}

/// Asks isl to separate the loops of every innermost band over several statements (each
/// loop split into pieces with one set of statements and one bound each), so that the
/// innermost loops carry no test of an outer counter (`if (k == 0) S0(j)` inside the `j`
/// loop of a fused matrix product would keep LLVM from vectorising it). Where the only band
/// below is a register tile's point band (no loop of its own), the innermost member of the
/// band above it is the innermost loop, and only it is separated (gesummv's `if (j == 0)`
/// in the jammed `j` loop; separating the outer members too multiplies the copies of the
/// unrolled body).
fn separate_innermost(node: &mut SNode<'_>) -> IslResult<Below> {
    let mut below = Below::Nothing;
    for i in 0..node.n_children()? {
        let mut c = node.clone().child(i)?;
        below = below.max(separate_innermost(&mut c)?);
        *node = c.parent()?;
    }
    if node.kind()? != NodeKind::Band {
        return Ok(below);
    }
    let n = node.band_n_member()?;
    if below != Below::Loop && node.domain()?.n_set()? > 1 {
        let members = if below == Below::NoLoop {
            n.saturating_sub(1)..n
        } else {
            0..n
        };
        for i in members {
            // Register tiles' strips stay unrolled; a micro-kernel's are unrolled later.
            if node.band_default_loop_type(i)? && !node.band_isolate_typed(i)? {
                *node = node.clone().band_set_separate(i)?;
            }
        }
    }
    // A micro-kernel's point band (members unrolled in full tiles) counts as no loop: its
    // full tiles, the code that matters, have none.
    let micro = (0..n)
        .map(|i| node.band_isolate_typed(i))
        .collect::<IslResult<Vec<bool>>>()?
        .into_iter()
        .any(|u| u);
    for i in 0..n {
        if !micro && node.band_default_loop_type(i)? && !degenerate(node, i)? {
            return Ok(Below::Loop);
        }
    }
    Ok(below.max(Below::NoLoop))
}

#[allow(clippy::too_many_arguments)]
fn visit<'c>(
    scop: &Scop,
    single: bool,
    node: &mut SNode<'c>,
    deps: &UMap<'c>,
    tile: &[i64],
    wave: Wavefronts<'_>,
    do_tile: bool,
    permute: bool,
    register_tile_size: RegisterTiles,
    bands: &mut Vec<BandInfo>,
    depth: usize,
    inside_parallel: bool,
    marked: &mut usize,
) -> IslResult<()> {
    let mut inside_parallel = inside_parallel;
    let mut depth = depth;
    let mut do_tile = do_tile;
    let mut permute = permute;
    // Levels `node` moved down (below inserted marks / split bands); undone at the end so
    // that the caller finds `node` where it was.
    let mut extra = 0;
    if node.kind()? == NodeKind::Band {
        let n = node.band_n_member()?;
        let permutable = node.band_permutable()?;
        let coincident: Vec<bool> = (0..n)
            .map(|i| node.band_coincident(i))
            .collect::<IslResult<_>>()?;
        let mut note = String::new();
        let mut micro_stmts = Vec::new();
        let mut micro_packs = Vec::new();
        // Tiles pay for reuse, or for parallelism: a band with no parallel member gets its
        // wavefront from the tiles.
        // The parallel members of the band as `node` is now; reset whenever `node` changes
        // (each computation applies all dependences to the band's prefix).
        let mut par_now: Option<Vec<bool>> = None;
        let pays = n >= 2
            && (tiling_pays(&node.band_partial()?.to_map()?.to_string(), scop, n) || {
                let p = parallel_members(node, deps)?;
                let none = !p.iter().any(|&x| x);
                par_now = Some(p);
                none
            });
        // Tiles in wavefronts: a band with no parallel member, outside any parallel loop,
        // that `wavefront_tileable` accepts: uniform dependences get time tiles, others (where
        // `wavefront_pays`) the cache model's; its point loops keep their order (time or the
        // outermost loop outside, the last member innermost).
        let mut wavefront_stmts = Vec::new();
        let time_sizes = if do_tile
            && permutable
            && n >= 2
            && !inside_parallel
            && !coincident.iter().any(|&c| c)
            && (wave.time.is_some() || wave.affine.is_some())
        {
            match wavefront_tileable(node, deps, scop)? {
                Ok(true) => wave.time,
                Ok(false) if wave.affine.is_some() => {
                    let partial = node.band_partial()?.to_map()?.to_string();
                    if wavefront_pays(&partial, scop, n) {
                        // Its statements keep the band's point-loop order (`BandInfo::wavefront`).
                        wavefront_stmts = member_counters(&partial, scop, n)
                            .iter()
                            .map(|(st, _, _)| st.name.clone())
                            .collect();
                        wave.affine
                    } else {
                        None
                    }
                }
                _ => None,
            }
        } else {
            None
        };
        if do_tile && permutable && n >= 2 && !pays {
            note = "not tiled: no access is invariant in a member and moves with two others (no reuse to gain) and a member is parallel".into();
        }
        // A point band, or a band left untiled: put a stride-1 parallel member inside,
        // then unroll and jam an outer member around it (register tiles).
        if permute && (!do_tile || !pays) && permutable && n >= 2 && time_sizes.is_none() {
            if let Some((nn, par, why)) = stride_one_innermost(node, scop, deps, par_now.clone())? {
                *node = nn;
                par_now = Some(par);
                note = if note.is_empty() {
                    why
                } else {
                    format!("{note}; {why}")
                };
            }
            let mut micro = None;
            if register_tile_size.micro_rows > 1 && register_tile_size.cols > 1 {
                micro = micro_kernel(node, scop, deps, register_tile_size)?;
            }
            if let Some((nn, why, stmts, packs)) = micro {
                *node = nn;
                micro_packs = packs;
                par_now = None;
                note = if note.is_empty() {
                    why
                } else {
                    format!("{note}; {why}")
                };
                micro_stmts = stmts;
                permute = false;
                do_tile = false;
            } else if register_tile_size.rows > 1 {
                if let Some((nn, why)) = register_tile(node, scop, deps, register_tile_size.rows)? {
                    *node = nn;
                    par_now = None;
                    note = if note.is_empty() {
                        why
                    } else {
                        format!("{note}; {why}")
                    };
                    // The unrolled band below is final.
                    permute = false;
                    do_tile = false;
                }
            }
        }
        if do_tile && permutable && n >= 2 && (pays || time_sizes.is_some()) {
            let tile = time_sizes.unwrap_or(tile);
            let sizes: Vec<i64> = (0..n)
                .map(|i| *tile.get(i).unwrap_or_else(|| tile.last().unwrap_or(&32)))
                .collect();
            let t = node.clone().band_tile(&sizes)?;
            *node = t;
            // The point band and what splitting leaves below are not tiled again.
            do_tile = false;
            note = format!(
                "tiled {}",
                sizes
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            );
            // Wavefront: no member of the tile band is parallel, but it is permutable.
            let any_par = parallel_members(node, deps)?;
            par_now = Some(any_par.clone());
            // The tiles of a band whose dependences are all non-negative along every
            // member: with the first member replaced by t0 + t1, any dependence that it
            // does not carry is 0 along t0 and t1, so member 1 is parallel.
            if (time_sizes.is_some() || (n == 2 && single))
                && !inside_parallel
                && !any_par.iter().any(|&p| p)
            {
                let skewed = node.band_partial()?.add_member(0, 1)?;
                let mut nn = node.clone().replace_band(skewed)?;
                nn = nn.band_set_permutable(true)?;
                *node = nn;
                par_now = None;
                note.push_str("; wavefront: tile member 0 skewed to t0 + t1");
                if time_sizes.is_some() {
                    // The point band keeps its order: time outside, the last space
                    // dimension (stride 1) innermost.
                    note.push_str("; point loops in the band's order");
                    permute = false;
                }
            }
        }
        // Parallel mark on the outermost parallel member, unless an outer loop is parallel.
        let n2 = node.band_n_member()?;
        let par = match par_now {
            Some(p) => p,
            None => parallel_members(node, deps)?,
        };
        bands.push(BandInfo {
            depth,
            members: n2,
            permutable: node.band_permutable()?,
            coincident: if note.is_empty() {
                coincident
            } else {
                par.clone()
            },
            note: if note.is_empty() {
                "not tiled".into()
            } else {
                note
            },
            micro_kernel: micro_stmts,
            packs: micro_packs,
            wavefront: wavefront_stmts,
        });
        if !inside_parallel {
            let mut real = None;
            for k in (0..n2).filter(|&k| par[k]) {
                if !degenerate(node, k)? {
                    real = Some(k);
                    break;
                }
            }
            if let Some(k) = real {
                let mut nn = node.clone();
                if k > 0 {
                    nn = nn.band_split(k)?.child(0)?;
                    extra += 1;
                }
                if nn.band_n_member()? > 1 {
                    nn = nn.band_split(1)?;
                }
                nn = nn.band_set_coincident(0, true)?;
                nn = nn.insert_mark("parallel")?.child(0)?;
                extra += 1;
                *node = nn;
                *marked += 1;
                inside_parallel = true;
            }
        }
        depth += 1;
    }
    let k = node.n_children()?;
    for i in 0..k {
        let c = node.clone().child(i)?;
        let mut c = c;
        visit(
            scop,
            single,
            &mut c,
            deps,
            tile,
            wave,
            do_tile,
            permute,
            register_tile_size,
            bands,
            depth,
            inside_parallel,
            marked,
        )?;
        *node = c.parent()?;
    }
    for _ in 0..extra {
        *node = node.clone().parent()?;
    }
    Ok(())
}

/// Whether member `k` of the band at `node` takes one value for each value of the loops
/// around it (its outer nodes and members `0..k`): isl's AST generator then emits no loop for
/// it, and a `parallel` mark on it would land on the next loop inside, which need not be
/// parallel (a register tile's strip counter inside a cache tile of the same size).
fn degenerate(node: &SNode<'_>, k: usize) -> IslResult<bool> {
    let mut probe = node.clone();
    if k > 0 {
        probe = probe.band_split(k)?.child(0)?;
    }
    if probe.band_n_member()? > 1 {
        probe = probe.band_split(1)?;
    }
    probe
        .prefix_map()?
        .reverse()?
        .apply_range(probe.band_partial_map()?)?
        .is_single_valued()
}

/// The register tiles of point bands: `rows` for the unroll-and-jam of `register_tile`,
/// `micro_rows` x `cols` for `micro_kernel` (`cols` 0: none).
#[derive(Debug, Clone, Copy)]
struct RegisterTiles {
    rows: i64,
    micro_rows: i64,
    cols: i64,
    /// Whether micro-kernels pack their operands ([`Pack`]).
    pack: bool,
}

/// The shape of a micro-kernel on the band at `node` (see `micro_kernel`): the members
/// `(r, p, q)` chosen by the most written accesses, the statements with such an access, and
/// the other statements of the band whose `r` member is not a counter (an initialisation
/// fused into the band at one value of `r`, as `C[i][j] *= beta` at `k = 0` in gemm).
#[allow(clippy::type_complexity)]
fn micro_shape(
    node: &SNode<'_>,
    scop: &Scop,
) -> IslResult<Option<((usize, usize, usize), Vec<String>, Vec<String>)>> {
    let n = node.band_n_member()?;
    if n < 3 {
        return Ok(None);
    }
    let per = member_counters(&node.band_partial()?.to_map()?.to_string(), scop, n);
    // (r, p, q) -> written accesses of that shape, and their statements.
    let mut shapes: Vec<((usize, usize, usize), usize, Vec<String>)> = Vec::new();
    for (st, vars, _) in &per {
        let uses =
            |x: &crate::scop::Aff, m: usize| vars[m].is_some_and(|v| x.terms.contains_key(&v));
        for a in &st.accesses {
            if a.kind != AccessKind::Write || a.expanded || a.idx.is_empty() {
                continue;
            }
            let (last, rest) = a.idx.split_last().expect("non-empty");
            for r in 0..n {
                if vars[r].is_none() || a.idx.iter().any(|x| uses(x, r)) {
                    continue;
                }
                let q = (0..n).find(|&m| {
                    m != r
                        && vars[m].is_some_and(|v| last.terms.get(&v).is_some_and(|c| c.abs() == 1))
                        && !rest.iter().any(|x| uses(x, m))
                });
                let Some(q) = q else { continue };
                let p = (0..n).find(|&m| {
                    m != r && m != q && rest.iter().any(|x| uses(x, m)) && !uses(last, m)
                });
                let Some(p) = p else { continue };
                match shapes.iter_mut().find(|(k, _, _)| *k == (r, p, q)) {
                    Some((_, count, names)) => {
                        *count += 1;
                        if !names.contains(&st.name) {
                            names.push(st.name.clone());
                        }
                    }
                    None => shapes.push(((r, p, q), 1, vec![st.name.clone()])),
                }
            }
        }
    }
    let Some((shape, _, names)) = shapes.into_iter().max_by_key(|(_, c, _)| *c) else {
        return Ok(None);
    };
    let inits = per
        .iter()
        .filter(|(st, vars, _)| vars[shape.0].is_none() && !names.contains(&st.name))
        .map(|(st, _, _)| st.name.clone())
        .collect();
    Ok(Some((shape, names, inits)))
}

/// A micro-kernel built by `micro_kernel`: the band's new node, its note, its statements
/// and the operands copied into panels.
type MicroKernel<'c> = (SNode<'c>, String, Vec<String>, Vec<Pack>);

/// A split of `split_micro_kernel_inits`: its note, and the micro-kernel's statements.
type Split = (String, Vec<String>);

/// Moves the initialisations fused into a micro-kernel's band (`micro_shape`) into a band
/// of their own that runs first, where that is legal: no dependence goes from the band's
/// other statements to them within one iteration of the loops around the band. In the
/// kernel's band they would otherwise take their own unrolled copy of the strip at their
/// value of `r` (gemm's `C[i][j] *= beta` at `k = 0`). Returns the schedule and, per
/// split, a note and the statements of the micro-kernel it was made for.
fn split_micro_kernel_inits<'c>(
    schedule: Schedule<'c>,
    scop: &Scop,
    deps: &UMap<'c>,
) -> IslResult<(Schedule<'c>, Vec<Split>)> {
    fn find<'c>(
        node: SNode<'c>,
        scop: &Scop,
        deps: &UMap<'c>,
        tried: &mut Vec<String>,
    ) -> IslResult<Option<(SNode<'c>, Split)>> {
        if node.kind()? == NodeKind::Band && node.band_permutable()? {
            if let Some((_, kernel, inits)) = micro_shape(&node, scop)? {
                let key = format!("{}", node.domain()?);
                if !inits.is_empty() && !tried.contains(&key) {
                    tried.push(key);
                    let ctx = node.ctx();
                    let text: Vec<String> = inits
                        .iter()
                        .filter_map(|name| scop.stmts.iter().find(|s| &s.name == name))
                        .map(|st| {
                            let xs: Vec<String> =
                                (0..st.loops.len()).map(|i| format!("x{i}")).collect();
                            format!("{}[{}]", st.name, xs.join(", "))
                        })
                        .collect();
                    let dom = node.domain()?;
                    let first = ctx
                        .union_set(&format!("{{ {} }}", text.join("; ")))?
                        .intersect(dom.clone())?;
                    let rest = dom.clone().subtract(first.clone())?;
                    let prefix = node.prefix_map()?.intersect_domain(dom)?;
                    let depth = node.schedule_depth()?;
                    let zero =
                        ctx.union_set(&format!("{{ [{}] }}", vec!["0"; depth].join(", ")))?;
                    let same_iteration = deps
                        .clone()
                        .intersect_domain(rest)?
                        .intersect_range(first.clone())?
                        .apply_domain(prefix.clone())?
                        .apply_range(prefix)?
                        .deltas()?
                        .intersect(zero)?;
                    if same_iteration.is_empty()? {
                        let after = node.order_before(first)?;
                        let note = format!(
                            "{} moved out of the micro-kernel's band into a band run before it",
                            inits.join(", ")
                        );
                        return Ok(Some((after, (note, kernel))));
                    }
                }
            }
        }
        for i in 0..node.n_children()? {
            if let Some(x) = find(node.clone().child(i)?, scop, deps, tried)? {
                return Ok(Some(x));
            }
        }
        Ok(None)
    }
    let mut schedule = schedule;
    let mut notes = Vec::new();
    let mut tried = Vec::new();
    // Each split removes the statements it moves from a band: a few at most.
    for _ in 0..8 {
        match find(schedule.root()?, scop, deps, &mut tried)? {
            Some((node, note)) => {
                schedule = node.schedule()?;
                notes.push(note);
            }
            None => break,
        }
    }
    Ok((schedule, notes))
}

/// Isolates the full strips of the point band `point` of a band tiled by `sizes` (isl's
/// `isolate` option): the prefixes (outer schedule values) for which every point of the
/// strip is an instance, and gives the members `atomic` (one plain loop each) there, to be
/// unrolled on the AST (`crate::unroll`). The tile band is the last `sizes.len()`
/// dimensions of the prefix; tile loops are not scaled and point loops not shifted
/// (`Ctx::new`): a member of size `s` has tile value `t = floor(x / s)` and point value `x`.
/// `None` when no strip is full.
fn isolate_full_strips<'c>(
    point: SNode<'c>,
    sizes: &[i64],
    atomic: &[usize],
) -> IslResult<Option<SNode<'c>>> {
    let n = sizes.len();
    let ctx = point.ctx();
    let depth = point.schedule_depth()?;
    if depth < n {
        return Ok(None);
    }
    let ps: Vec<String> = (0..depth).map(|i| format!("p{i}")).collect();
    let bs: Vec<String> = (0..n).map(|i| format!("b{i}")).collect();
    let cons: Vec<String> = (0..n)
        .map(|k| {
            let t = &ps[depth - n + k];
            match sizes[k] {
                1 => format!("b{k} = {t}"),
                s => format!("{s}{t} <= b{k} < {s}{t} + {s}"),
            }
        })
        .collect();
    let (pl, bl) = (ps.join(", "), bs.join(", "));
    // (isl's prefix schedule is defined beyond the instances that reach the node.)
    let points = point
        .prefix_map()?
        .intersect_domain(point.domain()?)?
        .reverse()?
        .apply_range(point.band_partial_map()?)?;
    let prefixes = points.clone().domain()?;
    let strip = ctx.union_map(&format!("{{ [{pl}] -> [{bl}] : {} }}", cons.join(" and ")))?;
    let partial = strip
        .intersect_domain(prefixes.clone())?
        .subtract(points)?
        .domain()?;
    let full = prefixes.subtract(partial)?;
    if full.is_empty()? {
        return Ok(None);
    }
    let iso = full.apply(ctx.union_map(&format!("{{ [{pl}] -> isolate[[{pl}] -> [{bl}]] }}"))?)?;
    let mut point = point.band_set_isolate(iso)?;
    for &m in atomic {
        point = point.band_set_isolate_atomic(m)?;
    }
    Ok(Some(point))
}

/// The register micro-kernel of BLIS and of Polly's matrix-multiply optimisation, derived
/// from the access relations rather than from a pattern: in a permutable band where a
/// statement's written access is invariant in a member `r` (`C[i][j]` along `k`) and moves
/// with two others, `p` in an outer subscript and `q` in the last one with stride 1, `r`
/// becomes the innermost member and `p` and `q` are strip-mined by `rows` and `cols`. Their
/// strips are unrolled inside the `r` loop in full tiles (isl's `isolate` option: the
/// points of the prefix whose `rows x cols` strip is complete); partial tiles keep loops.
/// Each `r` iteration of a full tile then updates `rows x cols` elements that stay invariant
/// along `r`, which code generation keeps in registers across the loop
/// (`crate::promote`), from `rows + cols` loads (gemm: 64 accumulators of `C`, 4 loads of
/// `A`, 16 of `B` per `k`). Legal because the band is permutable: every element still sees
/// its updates in the original order of `r`. Returns the band (the tile band, above the
/// point band), the note, and the statements whose access chose the shape.
fn micro_kernel<'c>(
    node: &SNode<'c>,
    scop: &Scop,
    deps: &UMap<'c>,
    rt: RegisterTiles,
) -> IslResult<Option<MicroKernel<'c>>> {
    let n = node.band_n_member()?;
    // With an initialisation still in the band (`split_micro_kernel_inits` found it
    // illegal to move), each of its values of `r` would take an unrolled copy: no kernel.
    let Some(((r, p, q), names, inits)) = micro_shape(node, scop)? else {
        return Ok(None);
    };
    if !inits.is_empty() {
        return Ok(None);
    }
    let packs = if rt.pack {
        let band = node.band_partial()?.to_map()?.to_string();
        let per = member_counters(&band, scop, n);
        packings(&per, scop, (r, p, q), &names, (rt.micro_rows, rt.cols))
    } else {
        Vec::new()
    };
    let order: Vec<usize> = (0..n).filter(|&m| m != r).chain([r]).collect();
    let mut nn = node
        .clone()
        .replace_band(node.band_partial()?.permute(&order)?)?;
    nn = nn.band_set_permutable(true)?;
    let par = parallel_members(&nn, deps)?;
    for (k, &c) in par.iter().enumerate() {
        nn = nn.band_set_coincident(k, c)?;
    }
    let pos = |m: usize| order.iter().position(|&o| o == m).expect("a member");
    let (pp, pq) = (pos(p), pos(q));
    let size = |k: usize| {
        if k == pp {
            rt.micro_rows
        } else if k == pq {
            rt.cols
        } else {
            1
        }
    };
    let sizes: Vec<i64> = (0..n).map(size).collect();
    let point = nn.band_tile(&sizes)?.child(0)?;
    let Some(point) = isolate_full_strips(point, &sizes, &[pp, pq])? else {
        return Ok(None);
    };
    let depth = point.schedule_depth()?;
    // The strips are plain loops in the full tiles, unrolled on the AST (`crate::unroll`,
    // at a fraction of what isl's `unroll` loop type costs), under a mark naming their
    // iterators (isl names the iterator of schedule dimension `d` `c{d}`).
    let mark = format!("{} c{} c{}", crate::unroll::MARK, depth + pp, depth + pq);
    let tile = point.insert_mark(&mark)?.parent()?;
    let mut note = format!(
        "micro-kernel: member {r} innermost, members {p} and {q} unrolled by {} x {} in full tiles",
        rt.micro_rows, rt.cols
    );
    for pk in &packs {
        let _ = write!(
            note,
            "; {}'s operand of `{}` copied first into panels of {} along its subscript {}",
            pk.stmt,
            scop.names.get(&pk.array).map_or("?", |x| x.as_str()),
            pk.width,
            pk.panel_dim
        );
    }
    Ok(Some((tile, note, names, packs)))
}

/// The operands of a micro-kernel with members `(r, p, q)` (see `micro_shape`) worth
/// copying into panels ([`Pack`]): in the kernel's statements `names`, the largest
/// subexpressions that are pure floating-point arithmetic of constants, scalars the SCoP
/// does not write and one read of a two-dimensional array that no statement writes and
/// whose extents are known, at subscripts of which one is exactly the counter of `q`
/// (panels of `cols`) or of `p` (panels of `rows`) and the other moves with `r`
/// (coefficient 1) but not with `p` or `q`.
fn packings(
    per: &[StmtOutputs<'_>],
    scop: &Scop,
    (r, p, q): (usize, usize, usize),
    names: &[String],
    (rows, cols): (i64, i64),
) -> Vec<Pack> {
    use tessera_ir::{BinOp, Expr, ExprKind, ScalarTy, UnOp};
    let written = scop.written_vars();
    let counters: HashSet<VarId> = scop
        .stmts
        .iter()
        .flat_map(|st| st.loops.iter().map(|l| l.var))
        .collect();
    /// The read of an operand (array and subscripts), `Some(None)` for none, `None` where
    /// the expression is not an operand.
    type Read<'e> = Option<Option<(VarId, &'e [Expr])>>;
    fn operand<'e>(x: &'e Expr, written: &HashSet<VarId>, counters: &HashSet<VarId>) -> Read<'e> {
        if !matches!(x.ty, Some(ScalarTy::F32 | ScalarTy::F64)) {
            return None;
        }
        let both = |a: Read<'e>, b: Read<'e>| -> Read<'e> {
            match (a?, b?) {
                (Some(_), Some(_)) => None,
                (a, b) => Some(a.or(b)),
            }
        };
        match &x.kind {
            ExprKind::Float(_) => Some(None),
            ExprKind::Var(v) => (!written.contains(v) && !counters.contains(v)).then_some(None),
            ExprKind::Load { array, indices, .. } => {
                (!written.contains(array)).then_some(Some((*array, indices.as_slice())))
            }
            ExprKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div, a, b) => {
                both(operand(a, written, counters), operand(b, written, counters))
            }
            ExprKind::Unary(UnOp::Neg, a) => operand(a, written, counters),
            ExprKind::Cast(a) if matches!(a.ty, Some(ScalarTy::F32 | ScalarTy::F64)) => {
                operand(a, written, counters)
            }
            _ => None,
        }
    }
    let mut packs: Vec<Pack> = Vec::new();
    for (st, vars, _) in per.iter().filter(|(st, _, _)| names.contains(&st.name)) {
        let (Some(vr), Some(vp), Some(vq)) = (vars[r], vars[p], vars[q]) else {
            continue;
        };
        let mut body = st.body.clone();
        tessera_ir::walk_stmts_mut(std::slice::from_mut(&mut body), &mut |x| {
            let Some(Some((array, indices))) = operand(x, &written, &counters) else {
                return true;
            };
            let idx: Option<Vec<crate::scop::Aff>> =
                indices.iter().map(crate::scop::index_aff).collect();
            let extents = scop
                .arrays
                .iter()
                .find(|a| a.var == array)
                .and_then(|a| a.extents.iter().cloned().collect::<Option<Vec<_>>>());
            let (Some(idx), Some(extents)) = (idx, extents) else {
                return false;
            };
            if idx.len() != 2 || extents.len() != 2 {
                return false;
            }
            let exactly = |a: &crate::scop::Aff, v: VarId| {
                a.c == 0 && a.terms.len() == 1 && a.terms.get(&v) == Some(&1)
            };
            for (v, width) in [(vq, cols), (vp, rows)] {
                let Some(d) = (0..2).find(|&d| exactly(&idx[d], v)) else {
                    continue;
                };
                let other = &idx[1 - d];
                if other.terms.get(&vr) == Some(&1)
                    && !other.terms.contains_key(&vp)
                    && !other.terms.contains_key(&vq)
                {
                    packs.push(Pack {
                        array,
                        panel_dim: d,
                        width,
                        extents,
                        stmt: st.name.clone(),
                        value: x.clone(),
                    });
                    break;
                }
            }
            false
        });
    }
    packs
}

/// Register tiling (unroll and jam) of a band: an outer member `u` in which accesses are
/// invariant (`B[k][j]` along `i` in gemm; `C[i][j]` along `k`), parallel if one is, the
/// innermost such on ties, is strip-mined by `size`, its strip moved innermost and unrolled
/// by isl's AST generator, so the innermost loop's body holds `size` instances that share
/// those accesses (one load of `B[k][j]` for `size` rows of `C`). Where the innermost loop is
/// the vector loop this saves loads; where it is a reduction (syrk's `C[i][j] += A[i][k] *
/// A[j][k]` over `k`, stride 1 but not parallel), the `size` independent chains hide the
/// latency of the floating-point adds that one chain waits for (syrk 473 -> 270 ms, covariance
/// 181 -> 101 ms on one thread here). Legal because the band is permutable; every element
/// still sees its updates in the original order (the strip only interleaves instances of
/// different `u`). The strip loop is separated into full and partial strips, so full strips
/// carry no tests where their extent does not depend on inner loops.
fn register_tile<'c>(
    node: &SNode<'c>,
    scop: &Scop,
    deps: &UMap<'c>,
    size: i64,
) -> IslResult<Option<(SNode<'c>, String)>> {
    let n = node.band_n_member()?;
    let par = parallel_members(node, deps)?;
    if n < 2 {
        return Ok(None);
    }
    let per = member_counters(&node.band_partial()?.to_map()?.to_string(), scop, n);
    if per.is_empty() {
        return Ok(None);
    }
    let mut invariant = vec![0usize; n];
    for (st, vars, _) in &per {
        for (m, v) in vars.iter().enumerate() {
            let Some(v) = v else { continue };
            invariant[m] += st
                .accesses
                .iter()
                .filter(|a| !a.idx.is_empty() && a.idx.iter().all(|x| !x.terms.contains_key(v)))
                .count();
        }
    }
    let Some(u) = (0..n - 1)
        .filter(|&m| invariant[m] > 0)
        .max_by_key(|&m| (par[m], invariant[m], m))
    else {
        return Ok(None);
    };
    let sizes: Vec<i64> = (0..n).map(|m| if m == u { size } else { 1 }).collect();
    let tiled = node.clone().band_tile(&sizes)?.band_set_separate(u)?;
    // Full strips are unrolled on the AST (`crate::unroll`: isl's `unroll` loop type cost
    // most of the AST generation time), partial ones keep a loop of fewer iterations.
    let strip = tiled.child(0)?;
    let node = match isolate_full_strips(strip.clone(), &sizes, &[u])? {
        Some(strip) => {
            let mark = format!("{} c{}", crate::unroll::MARK, strip.schedule_depth()? + u);
            strip.insert_mark(&mark)?.parent()?
        }
        None => strip.parent()?,
    };
    Ok(Some((
        node,
        format!("register tile: member {u} unrolled by {size} and jammed into the innermost loop"),
    )))
}

/// Per statement, its compound `int` subscripts ([`crate::gen::compound_int_subscripts`])
/// that isl proves within `int` on the statement's domain (every `int` counter and parameter
/// in its range): their `int` arithmetic cannot wrap, so code generation may compute them in
/// 64 bits.
fn wide_subscripts<'c>(
    ctx: &'c Ctx,
    s: &Scop,
    t: &ModelText,
    context: &isl::Set<'c>,
) -> IslResult<HashMap<String, Vec<crate::scop::Aff>>> {
    const MIN: i64 = i32::MIN as i64;
    const MAX: i64 = i32::MAX as i64;
    let names = &s.names;
    let mut out = HashMap::new();
    for st in &s.stmts {
        let its: Vec<&str> = st.loops.iter().map(|l| names[&l.var].as_str()).collect();
        let tuple = format!("{}[{}]", st.name, its.join(", "));
        // Every parameter and counter holds a value of its type (isl's are unbounded):
        // `j + 1` with `0 <= j <= ny - 2` is within `int` because `ny` is an `int`.
        let mut typed = st.constraints.clone();
        let vars = s
            .params
            .iter()
            .filter_map(|p| Some((*p, *s.param_types.get(p)?)))
            .chain(st.loops.iter().map(|l| (l.var, l.ty)));
        for (v, ty) in vars {
            if let Some(n) = names.get(&v) {
                let (lo, hi) = crate::scop::type_range(ty);
                typed.push(format!("{lo} <= {n} <= {hi}"));
            }
        }
        let mut proven = Vec::new();
        for a in crate::gen::compound_int_subscripts(st) {
            let known = a.terms.keys().all(|v| {
                names.contains_key(v)
                    && (st.loops.iter().any(|l| l.var == *v) || s.params.contains(v))
            });
            if !known {
                continue;
            }
            let x = a.to_isl(names);
            let mut cons = typed.clone();
            cons.push(format!("({x} < {MIN} or {x} > {MAX})"));
            let outside = ctx
                .union_set(&format!(
                    "{} -> {{ {tuple} : {} }}",
                    t.params,
                    cons.join(" and ")
                ))?
                .intersect_params(context.clone())?;
            if outside.is_empty()? {
                proven.push(a);
            }
        }
        if !proven.is_empty() {
            out.insert(st.name.clone(), proven);
        }
    }
    Ok(out)
}

/// For each access: is its image of the domain within the array's declared extents?
fn prove_bounds<'c>(
    ctx: &'c Ctx,
    s: &Scop,
    t: &ModelText,
    domain: &USet<'c>,
    context: &isl::Set<'c>,
) -> IslResult<Vec<BoundsProof>> {
    let names = &s.names;
    let extents: HashMap<VarId, &Vec<Option<crate::scop::Aff>>> =
        s.arrays.iter().map(|a| (a.var, &a.extents)).collect();
    let mut out = Vec::new();
    for st in &s.stmts {
        let its: Vec<&str> = st.loops.iter().map(|l| names[&l.var].as_str()).collect();
        let tuple = format!("{}[{}]", st.name, its.join(", "));
        for a in &st.accesses {
            if a.idx.is_empty() || a.expanded {
                continue;
            }
            let idx: Vec<String> = a.idx.iter().map(|x| x.to_isl(names)).collect();
            let access = format!("{tuple} -> {}[{}]", names[&a.var], idx.join(", "));
            let rank = a.idx.len();
            let ext: Vec<Option<&crate::scop::Aff>> = match extents.get(&a.var) {
                Some(e) if e.len() == rank => e.iter().map(Option::as_ref).collect(),
                _ => vec![None; rank],
            };
            let vars: Vec<String> = (0..rank).map(|i| format!("x{i}")).collect();
            let m = ctx
                .union_map(&format!("{} -> {{ {access} }}", t.params))?
                .intersect_params(context.clone())?;
            let image = domain.clone().apply(m)?;
            // Is the image within `0 <= x_d < extent_d` for every `d` in `dims`?
            let within = |dims: &[usize]| -> IslResult<bool> {
                let cons: Vec<String> = dims
                    .iter()
                    .filter_map(|&d| ext[d].map(|x| format!("0 <= x{d} < {}", x.to_isl(names))))
                    .collect();
                let set = ctx.union_set(&format!(
                    "{} -> {{ {}[{}] : {} }}",
                    t.params,
                    names[&a.var],
                    vars.join(", "),
                    cons.join(" and ")
                ))?;
                image.is_subset(&set)
            };
            let known: Vec<usize> = (0..rank).filter(|&d| ext[d].is_some()).collect();
            // All known dimensions at once, then one by one where that fails.
            let mut dims = vec![false; rank];
            if !known.is_empty() && within(&known)? {
                known.iter().for_each(|&d| dims[d] = true);
            } else if known.len() > 1 {
                for &d in &known {
                    dims[d] = within(&[d])?;
                }
            }
            let proven = dims.iter().all(|&d| d);
            let why = (0..rank)
                .filter(|&d| !dims[d])
                .map(|d| match ext[d] {
                    Some(_) => format!("index {d} may fall outside its extent"),
                    None => {
                        format!("extent {d} is not affine in parameters the function never writes")
                    }
                })
                .collect::<Vec<_>>()
                .join("; ");
            let mask = dims
                .iter()
                .enumerate()
                .filter(|&(d, &p)| p && d < 64)
                .fold(0u64, |m, (d, _)| m | 1 << d);
            out.push(BoundsProof {
                stmt: st.name.clone(),
                access,
                proven,
                why,
                loc: a.span.loc(),
                array: a.var,
                idx: a.idx.clone(),
                mask,
            });
        }
    }
    Ok(out)
}

/// Gives up the micro-kernels (where the nest has one) or else the plain register tiles,
/// and adds `why` to the notes.
fn give_up_register_tiles(
    micro: bool,
    (rows, cols): (&mut i64, &mut i64),
    notes: &mut Option<String>,
    why: &str,
) {
    let what = if micro {
        *cols = 0;
        "micro-kernels dropped"
    } else {
        *rows = 1;
        "register tiles dropped"
    };
    let note = format!("{what}: {why}");
    *notes = Some(match notes.take() {
        Some(r) => format!("{r}; {note}"),
        None => note,
    });
}

/// An isl failure as the note of a fallback.
pub fn fallback_note(e: &IslError) -> String {
    if e.quota {
        format!(
            "isl operation bound exceeded ({}); falling back to the plain JIT",
            e.msg
        )
    } else {
        format!("{}; falling back to the plain JIT", e.msg)
    }
}
