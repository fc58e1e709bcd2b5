//! Lowering of the typed IR to LLVM IR.
//!
//! ABI of the generated functions (`N` = a TIR function's index):
//!
//! * `tessera_fN(ptr ctx, i64 depth, params...) -> ret` is the body. A scalar parameter is
//!   passed by value (`i1`, `i8`, `i32`, `i64`, `float`, `double`); an array parameter as its data
//!   pointer followed by one `i64` per extent. The extents are the callee's declared ones,
//!   already checked by the caller. `depth` is the call depth of this frame (entry = 1).
//! * `tessera_shapesN(ptr ctx, i64 depth, i1 exact, params..., ptr out) -> i32` evaluates the
//!   declared extents of the array parameters in the callee's frame, in order, checks each
//!   against the given shape (`exact`: equality, the entry rule; otherwise the call rule
//!   `declared[1..] == given[1..] && 0 <= declared[0] <= given[0]`), and writes the declared
//!   extents to `out`. It returns -1, or the index of the first failing parameter after
//!   writing the given and declared shapes into the context (the caller reports the error).
//! * `tessera_entryN(ptr ctx, ptr slots, ptr ret)` unpacks 8-byte argument slots, performs
//!   the entry shape check, calls the body at depth 1 and stores the result in `ret`.
//!
//! Errors: a failing check stores an error code, a site id (an index into the site table
//! that records function, location and names) and the dynamic details (indices, shapes,
//! shift count) into the context and branches to the function's error exit, which returns
//! at once. Every call is followed by a check of the context's error word.

use crate::rt::{self, code, field, MAX_RANK};
use crate::{JitError, Options};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::BasicValue;
use inkwell::values::{
    BasicMetadataValueEnum, BasicValueEnum, FastMathFlags, FloatValue, FunctionValue,
    InstructionValue, IntValue, MetadataValue, PointerValue,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};
use std::collections::HashMap;
use tessera_ir::*;

type R<T> = Result<T, JitError>;

impl From<inkwell::builder::BuilderError> for JitError {
    fn from(e: inkwell::builder::BuilderError) -> JitError {
        JitError::Llvm(format!("IR builder: {e}"))
    }
}

/// What failed at a site.
#[derive(Clone, Debug)]
pub(crate) enum SiteKind {
    Oob { array: String },
    DivZero,
    Shift { width: u32 },
    Alloc { array: String },
    Shape { param: String, callee: String },
    MissingReturn,
    StackOverflow,
    NativeStack,
    Cancelled,
}

/// A place in the program where an error can be raised.
#[derive(Clone, Debug)]
pub(crate) struct Site {
    pub kind: SiteKind,
    pub func: String,
    pub loc: Loc,
}

/// The result of lowering.
pub(crate) struct Lowered<'ctx> {
    pub module: Module<'ctx>,
    pub sites: Vec<Site>,
    /// Per function: the site id of its first parameter's entry shape check.
    pub entry_sites: Vec<u64>,
    /// Names of the runtime symbols to map, with the C library symbol they stand for.
    pub libm: Vec<(String, &'static str)>,
}

#[derive(Clone)]
enum Slot<'ctx> {
    Scalar(PointerValue<'ctx>, ScalarTy),
    Array {
        data: PointerValue<'ctx>,
        ext: Vec<PointerValue<'ctx>>,
        elem: ScalarTy,
    },
}

struct Fs<'ctx> {
    fid: FuncId,
    f: FunctionValue<'ctx>,
    ctx: PointerValue<'ctx>,
    depth: IntValue<'ctx>,
    slots: Vec<Slot<'ctx>>,
    err_bb: BasicBlock<'ctx>,
    entry_br: InstructionValue<'ctx>,
    loops: Vec<(BasicBlock<'ctx>, BasicBlock<'ctx>, usize)>,
    marks: Vec<Option<IntValue<'ctx>>>,
    /// The call whose error check is left to the caller: the last call of a `return`
    /// expression after which only pure arithmetic runs (see `tail_call`).
    tail_call: Option<*const Expr>,
}

enum PlaceAddr<'ctx> {
    Reg(PointerValue<'ctx>, ScalarTy),
    Mem(PointerValue<'ctx>, ScalarTy, Option<AliasTag<'ctx>>),
}

/// Scoped no-alias metadata of one array variable's accesses: `!alias.scope` (the variable's
/// own scope) and `!noalias` (the scopes of every array variable of the function that cannot
/// share its storage). See [`Gen::alias_tag`].
#[derive(Clone, Copy)]
struct AliasTag<'ctx> {
    scope: MetadataValue<'ctx>,
    noalias: MetadataValue<'ctx>,
}

struct Gen<'ctx, 'p> {
    cx: &'ctx Context,
    m: Module<'ctx>,
    b: Builder<'ctx>,
    prog: &'p Program,
    opts: &'p Options,
    sites: Vec<Site>,
    bodies: Vec<FunctionValue<'ctx>>,
    shapes: Vec<Option<FunctionValue<'ctx>>>,
    entries: Vec<FunctionValue<'ctx>>,
    alloc_fn: FunctionValue<'ctx>,
    /// `tessera_parallel_for` of the runtime (for [`Stmt::ParFor`]).
    par_fn: FunctionValue<'ctx>,
    /// `tessera_version_begin` / `tessera_version_end` of the runtime (for
    /// [`Stmt::Versioned`]).
    version_fns: (FunctionValue<'ctx>, FunctionValue<'ctx>),
    /// The address of each versioned region's `VersionSite`, by site number (owned by the
    /// `Compiled` the code belongs to).
    version_sites: &'p [usize],
    /// `tessera_jit_stack_limit` of the runtime (a parallel chunk's own stack limit).
    stack_limit_fn: FunctionValue<'ctx>,
    /// Number of outlined parallel-loop bodies so far (for their names).
    n_outlined: usize,
    mark_fn: FunctionValue<'ctx>,
    release_fn: FunctionValue<'ctx>,
    libm: HashMap<&'static str, FunctionValue<'ctx>>,
    fn_attrs: Vec<Attribute>,
    cold_md: MetadataValue<'ctx>,
    prof_kind: u32,
    /// Per function, the pairs of array parameters a call may bind to the same storage
    /// ([`tessera_ir::alias::may_alias`]).
    may_alias: Vec<std::collections::HashSet<(VarId, VarId)>>,
    /// Alias tags by (function, array variable), made on first use.
    alias_tags: HashMap<(u32, u32), Option<AliasTag<'ctx>>>,
    alias_scope_kind: u32,
    noalias_kind: u32,
}

fn promote(t: ScalarTy) -> ScalarTy {
    match t {
        ScalarTy::Bool | ScalarTy::I8 => ScalarTy::I32,
        t => t,
    }
}

fn unsupported(what: impl Into<String>) -> JitError {
    JitError::Unsupported(what.into())
}

/// Lowers the whole program into a fresh module of `cx`.
pub(crate) fn lower<'ctx>(
    cx: &'ctx Context,
    prog: &Program,
    opts: &Options,
    cpu: &str,
    features: &str,
    version_sites: &[usize],
) -> R<Lowered<'ctx>> {
    for f in &prog.functions {
        for v in &f.vars {
            if let VarKind::Array { rank, .. } = v.kind {
                if rank > MAX_RANK {
                    return Err(unsupported(format!(
                        "array `{}` of `{}` has rank {rank}; at most {MAX_RANK} is supported",
                        v.name, f.name
                    )));
                }
            }
        }
    }
    let m = cx.create_module("tessera");
    let b = cx.create_builder();
    let ptr = cx.ptr_type(AddressSpace::default());
    let i64t = cx.i64_type();
    let nounwind = cx.create_enum_attribute(Attribute::get_named_enum_kind_id("nounwind"), 0);
    let fn_attrs = vec![
        cx.create_string_attribute("target-cpu", cpu),
        cx.create_string_attribute("target-features", features),
        nounwind,
    ];
    let alloc_fn = m.add_function(
        "tessera_jit_alloc",
        ptr.fn_type(
            &[
                ptr.into(),
                i64t.into(),
                i64t.into(),
                i64t.into(),
                ptr.into(),
                i64t.into(),
            ],
            false,
        ),
        Some(Linkage::External),
    );
    let mark_fn = m.add_function(
        "tessera_jit_mark",
        i64t.fn_type(&[ptr.into()], false),
        Some(Linkage::External),
    );
    let release_fn = m.add_function(
        "tessera_jit_release",
        cx.void_type().fn_type(&[ptr.into(), i64t.into()], false),
        Some(Linkage::External),
    );
    let par_fn = m.add_function(
        "tessera_parallel_for",
        cx.i32_type().fn_type(
            &[
                ptr.into(),
                i64t.into(),
                i64t.into(),
                i64t.into(),
                ptr.into(),
                ptr.into(),
            ],
            false,
        ),
        Some(Linkage::External),
    );
    let stack_limit_fn = m.add_function(
        "tessera_jit_stack_limit",
        i64t.fn_type(&[], false),
        Some(Linkage::External),
    );
    let version_fns = (
        m.add_function(
            "tessera_version_begin",
            i64t.fn_type(&[ptr.into()], false),
            Some(Linkage::External),
        ),
        m.add_function(
            "tessera_version_end",
            cx.void_type().fn_type(&[ptr.into(), i64t.into()], false),
            Some(Linkage::External),
        ),
    );
    for f in [
        alloc_fn,
        mark_fn,
        release_fn,
        stack_limit_fn,
        version_fns.0,
        version_fns.1,
    ] {
        f.add_attribute(AttributeLoc::Function, nounwind);
    }
    let cold_md = cx.metadata_node(&[
        cx.metadata_string("branch_weights").into(),
        cx.i32_type().const_int(1, false).into(),
        cx.i32_type().const_int(1 << 20, false).into(),
    ]);
    let prof_kind = cx.get_kind_id("prof");
    let mut g = Gen {
        cx,
        m,
        b,
        prog,
        opts,
        sites: Vec::new(),
        bodies: Vec::new(),
        shapes: Vec::new(),
        entries: Vec::new(),
        alloc_fn,
        par_fn,
        version_fns,
        version_sites,
        stack_limit_fn,
        n_outlined: 0,
        mark_fn,
        release_fn,
        libm: HashMap::new(),
        fn_attrs,
        cold_md,
        prof_kind,
        may_alias: tessera_ir::alias::may_alias(prog),
        alias_tags: HashMap::new(),
        alias_scope_kind: cx.get_kind_id("alias.scope"),
        noalias_kind: cx.get_kind_id("noalias"),
    };
    g.declare_all();
    let mut entry_sites = Vec::new();
    for i in 0..prog.functions.len() {
        let fid = FuncId(i as u32);
        g.gen_body(fid)?;
        if g.shapes[i].is_some() {
            g.gen_shapes(fid)?;
        }
        entry_sites.push(g.gen_entry(fid)?);
    }
    let libm = g
        .libm
        .keys()
        .map(|k| (format!("tessera_libm_{k}"), *k))
        .collect();
    Ok(Lowered {
        module: g.m,
        sites: g.sites,
        entry_sites,
        libm,
    })
}

impl<'ctx> Gen<'ctx, '_> {
    // ---------------------------------------------------------------- types and constants

    fn llty(&self, t: ScalarTy) -> BasicTypeEnum<'ctx> {
        match t {
            ScalarTy::Bool => self.cx.bool_type().into(),
            ScalarTy::I8 => self.cx.i8_type().into(),
            ScalarTy::I32 => self.cx.i32_type().into(),
            ScalarTy::I64 => self.cx.i64_type().into(),
            ScalarTy::F32 => self.cx.f32_type().into(),
            ScalarTy::F64 => self.cx.f64_type().into(),
        }
    }

    fn memty(&self, t: ScalarTy) -> BasicTypeEnum<'ctx> {
        match t {
            ScalarTy::Bool => self.cx.i8_type().into(),
            t => self.llty(t),
        }
    }

    fn i64c(&self, v: i64) -> IntValue<'ctx> {
        self.cx.i64_type().const_int(v as u64, true)
    }

    fn constant(&self, s: Scalar) -> BasicValueEnum<'ctx> {
        match s {
            Scalar::Bool(b) => self.cx.bool_type().const_int(b as u64, false).into(),
            Scalar::I8(v) => self.cx.i8_type().const_int(v as i64 as u64, true).into(),
            Scalar::I32(v) => self.cx.i32_type().const_int(v as i64 as u64, true).into(),
            Scalar::I64(v) => self.cx.i64_type().const_int(v as u64, true).into(),
            Scalar::F32(v) => self.cx.f32_type().const_float(v as f64).into(),
            Scalar::F64(v) => self.cx.f64_type().const_float(v).into(),
        }
    }

    fn zero(&self, t: ScalarTy) -> BasicValueEnum<'ctx> {
        self.constant(Scalar::I32(0).convert(t))
    }

    fn ptr_ty(&self) -> inkwell::types::PointerType<'ctx> {
        self.cx.ptr_type(AddressSpace::default())
    }

    /// The LLVM parameter types of a TIR function's parameters.
    fn param_types(&self, f: &Function) -> Vec<BasicMetadataTypeEnum<'ctx>> {
        let mut out = Vec::new();
        for p in &f.params {
            let v = f.var(*p);
            match v.kind {
                VarKind::Scalar(t) => out.push(self.llty(t).into()),
                VarKind::Array { rank, .. } => {
                    out.push(self.ptr_ty().into());
                    for _ in 0..rank {
                        out.push(self.cx.i64_type().into());
                    }
                }
            }
        }
        out
    }

    fn add_attrs(&self, f: FunctionValue<'ctx>) {
        for a in &self.fn_attrs {
            f.add_attribute(AttributeLoc::Function, *a);
        }
        let noalias = self
            .cx
            .create_enum_attribute(Attribute::get_named_enum_kind_id("noalias"), 0);
        f.add_attribute(AttributeLoc::Param(0), noalias);
    }

    fn declare_all(&mut self) {
        let ptr = self.ptr_ty();
        let i64t = self.cx.i64_type();
        for (i, f) in self.prog.functions.iter().enumerate() {
            let mut ps: Vec<BasicMetadataTypeEnum> = vec![ptr.into(), i64t.into()];
            ps.extend(self.param_types(f));
            let ft = match f.ret {
                Some(t) => self.llty(t).fn_type(&ps, false),
                None => self.cx.void_type().fn_type(&ps, false),
            };
            let body = self
                .m
                .add_function(&format!("tessera_f{i}"), ft, Some(Linkage::Internal));
            self.add_attrs(body);
            self.bodies.push(body);
            let has_arrays = f.params.iter().any(|p| f.var(*p).is_array());
            self.shapes.push(if has_arrays {
                let mut ps: Vec<BasicMetadataTypeEnum> =
                    vec![ptr.into(), i64t.into(), self.cx.bool_type().into()];
                ps.extend(self.param_types(f));
                ps.push(ptr.into());
                let sf = self.m.add_function(
                    &format!("tessera_shapes{i}"),
                    self.cx.i32_type().fn_type(&ps, false),
                    Some(Linkage::Internal),
                );
                self.add_attrs(sf);
                Some(sf)
            } else {
                None
            });
            let ef = self.m.add_function(
                &format!("tessera_entry{i}"),
                self.cx
                    .void_type()
                    .fn_type(&[ptr.into(), ptr.into(), ptr.into()], false),
                Some(Linkage::External),
            );
            self.add_attrs(ef);
            self.entries.push(ef);
        }
    }

    fn libm_fn(&mut self, name: &'static str, f32: bool, arity: usize) -> FunctionValue<'ctx> {
        if let Some(f) = self.libm.get(name) {
            return *f;
        }
        let t: BasicTypeEnum = if f32 {
            self.cx.f32_type().into()
        } else {
            self.cx.f64_type().into()
        };
        let ps: Vec<BasicMetadataTypeEnum> = vec![t.into(); arity];
        let f = self.m.add_function(
            &format!("tessera_libm_{name}"),
            t.fn_type(&ps, false),
            Some(Linkage::External),
        );
        for a in ["nounwind", "willreturn", "nosync"] {
            f.add_attribute(
                AttributeLoc::Function,
                self.cx
                    .create_enum_attribute(Attribute::get_named_enum_kind_id(a), 0),
            );
        }
        // memory(none): the result depends on the arguments only (errno is never read).
        f.add_attribute(
            AttributeLoc::Function,
            self.cx
                .create_enum_attribute(Attribute::get_named_enum_kind_id("memory"), 0),
        );
        self.libm.insert(name, f);
        f
    }

    fn intrinsic(&self, name: &str, tys: &[BasicTypeEnum<'ctx>]) -> R<FunctionValue<'ctx>> {
        Intrinsic::find(name)
            .and_then(|i| i.get_declaration(&self.m, tys))
            .ok_or_else(|| JitError::Llvm(format!("intrinsic {name} not found")))
    }

    fn site(&mut self, fid: FuncId, span: Span, kind: SiteKind) -> u64 {
        self.sites.push(Site {
            kind,
            func: self.prog.func(fid).name.clone(),
            loc: span.loc(),
        });
        (self.sites.len() - 1) as u64
    }

    // ---------------------------------------------------------------- frame helpers

    /// Starts a function: entry block with zeroed slots for all variables, parameters
    /// (starting at LLVM parameter `first`) stored into their slots, and the error exit.
    fn begin(&mut self, fid: FuncId, fv: FunctionValue<'ctx>, first: u32) -> R<Fs<'ctx>> {
        let f = self.prog.func(fid);
        let entry = self.cx.append_basic_block(fv, "entry");
        let start = self.cx.append_basic_block(fv, "start");
        let err_bb = self.cx.append_basic_block(fv, "error");
        self.b.position_at_end(entry);
        let mut slots = Vec::new();
        for v in &f.vars {
            match v.kind {
                VarKind::Scalar(t) => {
                    let p = self.b.build_alloca(self.llty(t), &v.name)?;
                    self.b.build_store(p, self.zero(t))?;
                    slots.push(Slot::Scalar(p, t));
                }
                VarKind::Array { elem, rank } => {
                    let data = self.b.build_alloca(self.ptr_ty(), &v.name)?;
                    self.b.build_store(data, self.ptr_ty().const_null())?;
                    let mut ext = Vec::new();
                    for _ in 0..rank {
                        let e = self.b.build_alloca(self.cx.i64_type(), "ext")?;
                        self.b.build_store(e, self.i64c(0))?;
                        ext.push(e);
                    }
                    slots.push(Slot::Array { data, ext, elem });
                }
            }
        }
        let mut k = first;
        for p in &f.params {
            match &slots[p.0 as usize] {
                Slot::Scalar(ptr, _) => {
                    let a = fv.get_nth_param(k).unwrap();
                    self.b.build_store(*ptr, a)?;
                    k += 1;
                }
                Slot::Array { data, ext, .. } => {
                    self.b.build_store(*data, fv.get_nth_param(k).unwrap())?;
                    k += 1;
                    for e in ext {
                        self.b.build_store(*e, fv.get_nth_param(k).unwrap())?;
                        k += 1;
                    }
                }
            }
        }
        let entry_br = self.b.build_unconditional_branch(start)?;
        self.b.position_at_end(err_bb);
        match fv.get_type().get_return_type() {
            None => self.b.build_return(None)?,
            Some(t) if t.is_int_type() && fv.get_name().to_bytes().starts_with(b"tessera_sh") => {
                self.b
                    .build_return(Some(&self.cx.i32_type().const_all_ones()))?
            }
            Some(t) => self.b.build_return(Some(&t.const_zero()))?,
        };
        self.b.position_at_end(start);
        Ok(Fs {
            fid,
            f: fv,
            ctx: fv.get_nth_param(0).unwrap().into_pointer_value(),
            depth: fv.get_nth_param(1).unwrap().into_int_value(),
            slots,
            err_bb,
            entry_br,
            loops: Vec::new(),
            marks: Vec::new(),
            tail_call: None,
        })
    }

    fn entry_alloca(&self, fs: &Fs<'ctx>, ty: BasicTypeEnum<'ctx>) -> R<PointerValue<'ctx>> {
        let ab = self.cx.create_builder();
        ab.position_before(&fs.entry_br);
        Ok(ab.build_alloca(ty, "buf")?)
    }

    fn dead(&self, fs: &Fs<'ctx>) {
        let bb = self.cx.append_basic_block(fs.f, "dead");
        self.b.position_at_end(bb);
    }

    /// The address of 8-byte word `idx` of a context (or of a parallel loop's environment).
    fn ctx_field(&self, ctx: PointerValue<'ctx>, idx: u64) -> R<PointerValue<'ctx>> {
        Ok(rt::gep(
            &self.b,
            self.cx.i64_type().into(),
            ctx,
            self.i64c(idx as i64),
        )?)
    }

    fn set(&self, ctx: PointerValue<'ctx>, idx: u64, v: IntValue<'ctx>) -> R<()> {
        let p = self.ctx_field(ctx, idx)?;
        let v = if v.get_type().get_bit_width() < 64 {
            self.b.build_int_s_extend(v, self.cx.i64_type(), "x")?
        } else {
            v
        };
        self.b.build_store(p, v)?;
        Ok(())
    }

    /// Branches to a cold block that records `stores` and leaves through the error exit
    /// when `fail` holds.
    fn guard(
        &self,
        fs: &Fs<'ctx>,
        fail: IntValue<'ctx>,
        stores: &[(u64, IntValue<'ctx>)],
    ) -> R<()> {
        let bad = self.cx.append_basic_block(fs.f, "fail");
        let ok = self.cx.append_basic_block(fs.f, "ok");
        let br = self.b.build_conditional_branch(fail, bad, ok)?;
        br.set_metadata(self.cold_md, self.prof_kind)
            .map_err(|e| JitError::Llvm(format!("{e}")))?;
        self.b.position_at_end(bad);
        for (idx, v) in stores {
            self.set(fs.ctx, *idx, *v)?;
        }
        self.b.build_unconditional_branch(fs.err_bb)?;
        self.b.position_at_end(ok);
        Ok(())
    }

    fn check_err(&self, fs: &Fs<'ctx>) -> R<()> {
        let p = self.ctx_field(fs.ctx, field::ERR)?;
        let e = self
            .b
            .build_load(self.cx.i64_type(), p, "err")?
            .into_int_value();
        let c = self
            .b
            .build_int_compare(IntPredicate::NE, e, self.i64c(0), "failed")?;
        self.guard(fs, c, &[])
    }

    fn step(&mut self, fs: &Fs<'ctx>, span: Span) -> R<()> {
        let Some(max) = self.opts.limits.max_steps else {
            return Ok(());
        };
        let site = self.site(fs.fid, span, SiteKind::Cancelled);
        let p = self.ctx_field(fs.ctx, field::STEPS)?;
        let s = self
            .b
            .build_load(self.cx.i64_type(), p, "steps")?
            .into_int_value();
        let s = self.b.build_int_add(s, self.i64c(1), "steps")?;
        self.b.build_store(p, s)?;
        let c = self.b.build_int_compare(
            IntPredicate::UGT,
            s,
            self.cx.i64_type().const_int(max, false),
            "over",
        )?;
        self.guard(
            fs,
            c,
            &[
                (field::ERR, self.i64c(code::CANCELLED)),
                (field::SITE, self.i64c(site as i64)),
            ],
        )
    }

    fn array(
        &self,
        fs: &Fs<'ctx>,
        v: VarId,
    ) -> R<(PointerValue<'ctx>, Vec<IntValue<'ctx>>, ScalarTy)> {
        match &fs.slots[v.0 as usize] {
            Slot::Array { data, ext, elem } => {
                let d = self
                    .b
                    .build_load(self.ptr_ty(), *data, "data")?
                    .into_pointer_value();
                let mut es = Vec::new();
                for e in ext {
                    es.push(
                        self.b
                            .build_load(self.cx.i64_type(), *e, "n")?
                            .into_int_value(),
                    );
                }
                Ok((d, es, *elem))
            }
            Slot::Scalar(..) => Err(unsupported("scalar used as an array")),
        }
    }

    fn linearize(&self, idx: &[IntValue<'ctx>], ext: &[IntValue<'ctx>]) -> R<IntValue<'ctx>> {
        let nsw = self.opts.guards;
        let mut off = match idx.first() {
            Some(i) => *i,
            None => return Ok(self.i64c(0)),
        };
        for d in 1..idx.len() {
            off = if nsw {
                let m = self.b.build_int_nsw_mul(off, ext[d], "off")?;
                self.b.build_int_nsw_add(m, idx[d], "off")?
            } else {
                let m = self.b.build_int_mul(off, ext[d], "off")?;
                self.b.build_int_add(m, idx[d], "off")?
            };
        }
        Ok(off)
    }

    /// Emits the bounds guard for `idx` (the first `idx.len()` dimensions of `ext`), except
    /// for the indices whose bit is set in `proven`; the recorded index vector is padded with
    /// zeros to the full rank.
    fn bounds(
        &mut self,
        fs: &Fs<'ctx>,
        array: VarId,
        idx: &[IntValue<'ctx>],
        ext: &[IntValue<'ctx>],
        proven: u64,
        span: Span,
    ) -> R<()> {
        let all = if idx.len() >= 64 {
            u64::MAX
        } else {
            (1u64 << idx.len()) - 1
        };
        if !self.opts.guards || idx.is_empty() || proven & all == all {
            return Ok(());
        }
        let name = self.prog.func(fs.fid).var(array).name.clone();
        let site = self.site(fs.fid, span, SiteKind::Oob { array: name });
        let mut fail = None;
        for (d, (i, n)) in idx.iter().zip(ext).enumerate() {
            if d < 64 && proven & (1 << d) != 0 {
                continue;
            }
            let c = self.b.build_int_compare(IntPredicate::UGE, *i, *n, "oob")?;
            fail = Some(match fail {
                None => c,
                Some(f) => self.b.build_or(f, c, "oob")?,
            });
        }
        let mut stores = vec![
            (field::ERR, self.i64c(code::OOB)),
            (field::SITE, self.i64c(site as i64)),
            (field::RANK, self.i64c(ext.len() as i64)),
        ];
        for (d, n) in ext.iter().enumerate() {
            stores.push((
                field::V1 + d as u64,
                idx.get(d).copied().unwrap_or(self.i64c(0)),
            ));
            stores.push((field::V2 + d as u64, *n));
        }
        self.guard(fs, fail.unwrap(), &stores)
    }

    /// The alias tag of array variable `v` of function `fid`.
    ///
    /// Distinct array variables of a function are distinct storage, except pairs of
    /// parameters that some call binds to the same (or overlapping) storage, which
    /// [`tessera_ir::alias::may_alias`] finds over the call graph; the entry's arrays are
    /// separate buffers (the CLI allocates each, the embedding API takes one `&mut` borrow per
    /// array). Every access to `v` is tagged with `v`'s scope, and declared not to alias the
    /// scopes of the other array variables except `v`'s possible partners, so LLVM needs no
    /// run-time overlap checks to vectorise and can keep array elements in registers across
    /// stores to other arrays. The scopes are per function (domain `tessera.fN`); LLVM's
    /// inliner clones them per inlined call, so they stay exact after inlining.
    fn alias_tag(&mut self, fid: FuncId, v: VarId) -> Option<AliasTag<'ctx>> {
        if let Some(t) = self.alias_tags.get(&(fid.0, v.0)) {
            return *t;
        }
        let f = self.prog.func(fid);
        let arrays: Vec<VarId> = (0..f.vars.len() as u32)
            .map(VarId)
            .filter(|w| f.var(*w).is_array())
            .collect();
        let domain = self.cx.metadata_node(&[self
            .cx
            .metadata_string(&format!("tessera.f{}", fid.0))
            .into()]);
        let scope_of = |w: VarId| {
            self.cx.metadata_node(&[
                self.cx
                    .metadata_string(&format!("tessera.f{}.v{}", fid.0, w.0))
                    .into(),
                domain.into(),
            ])
        };
        let pairs = &self.may_alias[fid.0 as usize];
        let others: Vec<BasicMetadataValueEnum> = arrays
            .iter()
            .filter(|&&w| w != v && !pairs.contains(&(v.min(w), v.max(w))))
            .map(|&w| scope_of(w).into())
            .collect();
        let tag = (!others.is_empty()).then(|| AliasTag {
            scope: self.cx.metadata_node(&[scope_of(v).into()]),
            noalias: self.cx.metadata_node(&others),
        });
        self.alias_tags.insert((fid.0, v.0), tag);
        tag
    }

    fn address(
        &mut self,
        fs: &mut Fs<'ctx>,
        array: VarId,
        indices: &[Expr],
        proven: u64,
        span: Span,
    ) -> R<(PointerValue<'ctx>, ScalarTy, Option<AliasTag<'ctx>>)> {
        let mut idx = Vec::new();
        for i in indices {
            let v = self.eval(fs, i)?;
            idx.push(self.to_i64(v, i.sty())?);
        }
        let (data, ext, elem) = self.array(fs, array)?;
        self.bounds(fs, array, &idx, &ext, proven, span)?;
        let off = self.linearize(&idx, &ext)?;
        let p = rt::gep(&self.b, self.memty(elem), data, off)?;
        Ok((p, elem, self.alias_tag(fs.fid, array)))
    }

    fn tag(&self, i: Option<InstructionValue<'ctx>>, tag: Option<AliasTag<'ctx>>) -> R<()> {
        if let (Some(i), Some(t)) = (i, tag) {
            i.set_metadata(t.scope, self.alias_scope_kind)
                .and_then(|_| i.set_metadata(t.noalias, self.noalias_kind))
                .map_err(|e| JitError::Llvm(format!("alias metadata: {e}")))?;
        }
        Ok(())
    }

    fn load_mem(
        &self,
        p: PointerValue<'ctx>,
        t: ScalarTy,
        tag: Option<AliasTag<'ctx>>,
    ) -> R<BasicValueEnum<'ctx>> {
        let v = self.b.build_load(self.memty(t), p, "ld")?;
        self.tag(v.as_instruction_value(), tag)?;
        if t == ScalarTy::Bool {
            Ok(self
                .b
                .build_int_truncate(v.into_int_value(), self.cx.bool_type(), "b")?
                .into())
        } else {
            Ok(v)
        }
    }

    fn store_mem(
        &self,
        p: PointerValue<'ctx>,
        t: ScalarTy,
        v: BasicValueEnum<'ctx>,
        tag: Option<AliasTag<'ctx>>,
    ) -> R<()> {
        let st = if t == ScalarTy::Bool {
            let x = self
                .b
                .build_int_z_extend(v.into_int_value(), self.cx.i8_type(), "b")?;
            self.b.build_store(p, x)?
        } else {
            self.b.build_store(p, v)?
        };
        self.tag(Some(st), tag)
    }

    fn place_addr(&mut self, fs: &mut Fs<'ctx>, place: &Place, span: Span) -> R<PlaceAddr<'ctx>> {
        match place {
            Place::Var(v) => match &fs.slots[v.0 as usize] {
                Slot::Scalar(p, t) => Ok(PlaceAddr::Reg(*p, *t)),
                _ => Err(unsupported("array assigned as a scalar")),
            },
            Place::Elem {
                array,
                indices,
                proven,
            } => {
                let (p, t, tag) = self.address(fs, *array, indices, *proven, span)?;
                Ok(PlaceAddr::Mem(p, t, tag))
            }
        }
    }

    fn load_place(&self, pa: &PlaceAddr<'ctx>) -> R<BasicValueEnum<'ctx>> {
        match pa {
            PlaceAddr::Reg(p, t) => Ok(self.b.build_load(self.llty(*t), *p, "v")?),
            PlaceAddr::Mem(p, t, tag) => self.load_mem(*p, *t, *tag),
        }
    }

    fn store_place(&self, pa: &PlaceAddr<'ctx>, v: BasicValueEnum<'ctx>) -> R<()> {
        match pa {
            PlaceAddr::Reg(p, _) => {
                self.b.build_store(*p, v)?;
                Ok(())
            }
            PlaceAddr::Mem(p, t, tag) => self.store_mem(*p, *t, v, *tag),
        }
    }

    // ---------------------------------------------------------------- conversions, operators

    fn to_i64(&self, v: BasicValueEnum<'ctx>, t: ScalarTy) -> R<IntValue<'ctx>> {
        Ok(self.convert(v, t, ScalarTy::I64)?.into_int_value())
    }

    fn convert(
        &self,
        v: BasicValueEnum<'ctx>,
        from: ScalarTy,
        to: ScalarTy,
    ) -> R<BasicValueEnum<'ctx>> {
        use ScalarTy::*;
        if from == to {
            return Ok(v);
        }
        let b = &self.b;
        Ok(match (from, to) {
            (I8 | I32 | I64, Bool) => {
                let x = v.into_int_value();
                b.build_int_compare(IntPredicate::NE, x, x.get_type().const_zero(), "tb")?
                    .into()
            }
            (F32 | F64, Bool) => {
                let x = v.into_float_value();
                b.build_float_compare(FloatPredicate::UNE, x, x.get_type().const_zero(), "tb")?
                    .into()
            }
            (Bool, I8 | I32 | I64) => b
                .build_int_z_extend(v.into_int_value(), self.llty(to).into_int_type(), "z")?
                .into(),
            // Widening sign-extends (`char` promotion included); narrowing keeps the low
            // bits (`long` → `int`, anything → `char`).
            (I8 | I32 | I64, I8 | I32 | I64) => {
                let t = self.llty(to).into_int_type();
                if from.size_bytes() < to.size_bytes() {
                    b.build_int_s_extend(v.into_int_value(), t, "s")?.into()
                } else {
                    b.build_int_truncate(v.into_int_value(), t, "t")?.into()
                }
            }
            (F32 | F64, I8 | I32 | I64) => {
                let f = self.intrinsic("llvm.fptosi.sat", &[self.llty(to), self.llty(from)])?;
                b.build_call(f, &[v.into()], "fi")?
                    .try_as_basic_value()
                    .basic()
                    .ok_or_else(|| JitError::Llvm("fptosi.sat returned void".into()))?
            }
            (Bool, F32 | F64) => b
                .build_unsigned_int_to_float(
                    v.into_int_value(),
                    self.llty(to).into_float_type(),
                    "f",
                )?
                .into(),
            (I8 | I32 | I64, F32 | F64) => b
                .build_signed_int_to_float(
                    v.into_int_value(),
                    self.llty(to).into_float_type(),
                    "f",
                )?
                .into(),
            (F64, F32) => b
                .build_float_trunc(v.into_float_value(), self.cx.f32_type(), "ft")?
                .into(),
            (F32, F64) => b
                .build_float_ext(v.into_float_value(), self.cx.f64_type(), "fe")?
                .into(),
            _ => unreachable!("identity handled above"),
        })
    }

    fn fm(&self, v: FloatValue<'ctx>) -> FloatValue<'ctx> {
        if self.opts.fast_math {
            if let Some(i) = v.as_instruction_value() {
                let _ = i.set_fast_math_flags(
                    FastMathFlags::AllowReassoc | FastMathFlags::AllowContract,
                );
            }
        }
        v
    }

    #[allow(clippy::too_many_arguments)]
    fn binop(
        &mut self,
        fs: &Fs<'ctx>,
        op: BinOp,
        a: BasicValueEnum<'ctx>,
        at: ScalarTy,
        bv: BasicValueEnum<'ctx>,
        bt: ScalarTy,
        span: Span,
    ) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        if matches!(op, BinOp::Shl | BinOp::Shr) {
            if !at.is_int() {
                return Err(unsupported(format!("shift of {at}")));
            }
            let count = self.to_i64(bv, bt)?;
            let width: u32 = if at == ScalarTy::I64 { 64 } else { 32 };
            if self.opts.guards {
                let site = self.site(fs.fid, span, SiteKind::Shift { width });
                let c = self.b.build_int_compare(
                    IntPredicate::UGE,
                    count,
                    self.i64c(width as i64),
                    "badshift",
                )?;
                self.guard(
                    fs,
                    c,
                    &[
                        (field::ERR, self.i64c(code::SHIFT)),
                        (field::SITE, self.i64c(site as i64)),
                        (field::A, count),
                    ],
                )?;
            }
            let b = &self.b;
            let x = a.into_int_value();
            let c = if width == 64 {
                count
            } else {
                b.build_int_truncate(count, self.cx.i32_type(), "c")?
            };
            return Ok(match op {
                BinOp::Shl => b.build_left_shift(x, c, "shl")?.into(),
                _ => b.build_right_shift(x, c, true, "shr")?.into(),
            });
        }
        if at.is_int() {
            let (x, y) = (a.into_int_value(), bv.into_int_value());
            return Ok(match op {
                BinOp::Add => b.build_int_add(x, y, "add")?.into(),
                BinOp::Sub => b.build_int_sub(x, y, "sub")?.into(),
                BinOp::Mul => b.build_int_mul(x, y, "mul")?.into(),
                BinOp::And => b.build_and(x, y, "and")?.into(),
                BinOp::Or => b.build_or(x, y, "or")?.into(),
                BinOp::Xor => b.build_xor(x, y, "xor")?.into(),
                BinOp::Div | BinOp::Rem => {
                    let t = x.get_type();
                    if self.opts.guards {
                        let site = self.site(fs.fid, span, SiteKind::DivZero);
                        let c =
                            self.b
                                .build_int_compare(IntPredicate::EQ, y, t.const_zero(), "dz")?;
                        self.guard(
                            fs,
                            c,
                            &[
                                (field::ERR, self.i64c(code::DIV_ZERO)),
                                (field::SITE, self.i64c(site as i64)),
                            ],
                        )?;
                    }
                    let b = &self.b;
                    let m1 = b.build_int_compare(IntPredicate::EQ, y, t.const_all_ones(), "m1")?;
                    let ys = b
                        .build_select(m1, t.const_int(1, false), y, "ys")?
                        .into_int_value();
                    if op == BinOp::Div {
                        let q = b.build_int_signed_div(x, ys, "q")?;
                        let n = b.build_int_neg(x, "neg")?;
                        b.build_select(m1, n, q, "div")?
                    } else {
                        let r = b.build_int_signed_rem(x, ys, "r")?;
                        b.build_select(m1, t.const_zero(), r, "rem")?
                    }
                }
                BinOp::Shl | BinOp::Shr => unreachable!(),
            });
        }
        if at.is_float() {
            let (x, y) = (a.into_float_value(), bv.into_float_value());
            let r = match op {
                BinOp::Add => b.build_float_add(x, y, "fadd")?,
                BinOp::Sub => b.build_float_sub(x, y, "fsub")?,
                BinOp::Mul => b.build_float_mul(x, y, "fmul")?,
                BinOp::Div => b.build_float_div(x, y, "fdiv")?,
                _ => return Err(unsupported(format!("{op:?} on {at}"))),
            };
            return Ok(self.fm(r).into());
        }
        Err(unsupported(format!("{op:?} on {at}")))
    }

    // ---------------------------------------------------------------- statements

    /// `if`, and `else if` chains as one construct. A chain of n arms joins through a tree
    /// of join blocks of fan-in [`JOIN_FAN_IN`] laid out after the arms, not through n nested
    /// joins (nor one join of n predecessors): SimplifyCFG folds every empty arm into its
    /// join at a cost linear in the join's predecessors, quadratic on a long chain (10,000
    /// arms took 19 s, all in `TryToSimplifyUncondBranchFromEmptyBlock`); with the tree, and
    /// the leaves visited first, each fold sees at most a few fan-ins of predecessors.
    fn if_chain(&mut self, fs: &mut Fs<'ctx>, cond: &Expr, then: &[Stmt], els: &[Stmt]) -> R<()> {
        let mut arms = vec![(cond, then)];
        let mut last = els;
        while let [Stmt::If { cond, then, els }] = last {
            arms.push((cond, then));
            last = els;
        }
        // The joins: level 0 takes the arms (the final `else` counts as one), each level
        // above takes the level below, until one block is left.
        let mut levels: Vec<Vec<BasicBlock<'ctx>>> = Vec::new();
        let mut width = arms.len() + 1;
        loop {
            width = width.div_ceil(JOIN_FAN_IN);
            levels.push(
                (0..width)
                    .map(|_| self.cx.append_basic_block(fs.f, "endif"))
                    .collect(),
            );
            if width == 1 {
                break;
            }
        }
        let n = arms.len();
        for (i, (cond, then)) in arms.into_iter().enumerate() {
            let tb = self.cx.append_basic_block(fs.f, "then");
            let eb = self.cx.append_basic_block(fs.f, "else");
            self.cond_br(fs, cond, tb, eb)?;
            self.b.position_at_end(tb);
            self.exec_list(fs, then)?;
            self.b
                .build_unconditional_branch(levels[0][i / JOIN_FAN_IN])?;
            self.b.position_at_end(eb);
        }
        self.exec_list(fs, last)?;
        self.b
            .build_unconditional_branch(levels[0][n / JOIN_FAN_IN])?;
        for l in 0..levels.len() - 1 {
            for (j, b) in levels[l].iter().enumerate() {
                self.b.position_at_end(*b);
                self.b
                    .build_unconditional_branch(levels[l + 1][j / JOIN_FAN_IN])?;
            }
        }
        // Lay the joins out after the arms, lowest level first.
        let mut at =
            fs.f.get_last_basic_block()
                .expect("the function has blocks");
        for b in levels.iter().flatten() {
            if *b != at {
                b.move_after(at)
                    .map_err(|()| JitError::Llvm("cannot move a block".into()))?;
            }
            at = *b;
        }
        self.b.position_at_end(at);
        Ok(())
    }

    fn exec_list(&mut self, fs: &mut Fs<'ctx>, stmts: &[Stmt]) -> R<()> {
        let mark = if stmts.iter().any(|s| matches!(s, Stmt::DeclArray { .. })) {
            let c = self.b.build_call(self.mark_fn, &[fs.ctx.into()], "mark")?;
            Some(c.try_as_basic_value().basic().unwrap().into_int_value())
        } else {
            None
        };
        fs.marks.push(mark);
        for s in stmts {
            self.exec(fs, s)?;
        }
        if let Some(m) = mark {
            self.b
                .build_call(self.release_fn, &[fs.ctx.into(), m.into()], "")?;
        }
        fs.marks.pop();
        Ok(())
    }

    /// Frees the local arrays of the lists from `from` on (for break, continue, return).
    fn release_from(&self, fs: &Fs<'ctx>, from: usize) -> R<()> {
        if let Some(m) = fs.marks[from..].iter().flatten().next() {
            self.b
                .build_call(self.release_fn, &[fs.ctx.into(), (*m).into()], "")?;
        }
        Ok(())
    }

    fn cond_br(
        &mut self,
        fs: &mut Fs<'ctx>,
        cond: &Expr,
        t: BasicBlock<'ctx>,
        e: BasicBlock<'ctx>,
    ) -> R<()> {
        let c = self.eval(fs, cond)?;
        let c = self.convert(c, cond.sty(), ScalarTy::Bool)?;
        self.b.build_conditional_branch(c.into_int_value(), t, e)?;
        Ok(())
    }

    fn exec(&mut self, fs: &mut Fs<'ctx>, s: &Stmt) -> R<()> {
        match s {
            Stmt::Decl { var, init } => {
                let Slot::Scalar(p, t) = fs.slots[var.0 as usize].clone() else {
                    return Err(unsupported("array declared as a scalar"));
                };
                let v = match init {
                    Some(e) => {
                        let v = self.eval(fs, e)?;
                        self.convert(v, e.sty(), t)?
                    }
                    None => self.zero(t),
                };
                self.b.build_store(p, v)?;
            }
            Stmt::DeclArray { var, dims, span } => {
                let mut ds = Vec::new();
                for d in dims {
                    let v = self.eval(fs, d)?;
                    ds.push(self.to_i64(v, d.sty())?);
                }
                let Slot::Array { data, ext, elem } = fs.slots[var.0 as usize].clone() else {
                    return Err(unsupported("scalar declared as an array"));
                };
                let name = self.prog.func(fs.fid).var(*var).name.clone();
                let site = self.site(fs.fid, *span, SiteKind::Alloc { array: name });
                let buf =
                    self.entry_alloca(fs, self.cx.i64_type().array_type(MAX_RANK as u32).into())?;
                for (k, d) in ds.iter().enumerate() {
                    let p = rt::gep(&self.b, self.cx.i64_type().into(), buf, self.i64c(k as i64))?;
                    self.b.build_store(p, *d)?;
                }
                let r = self.b.build_call(
                    self.alloc_fn,
                    &[
                        fs.ctx.into(),
                        self.i64c(site as i64).into(),
                        self.i64c(elem.size_bytes() as i64).into(),
                        self.i64c(ds.len() as i64).into(),
                        buf.into(),
                        self.i64c(self.prog.func(fs.fid).var(*var).scratch as i64)
                            .into(),
                    ],
                    "arr",
                )?;
                let p = r.try_as_basic_value().basic().unwrap().into_pointer_value();
                let isnull = self.b.build_is_null(p, "oom")?;
                self.guard(fs, isnull, &[])?;
                self.b.build_store(data, p)?;
                for (e, d) in ext.iter().zip(&ds) {
                    self.b.build_store(*e, *d)?;
                }
            }
            Stmt::Expr(e) => {
                self.eval_any(fs, e)?;
            }
            Stmt::If { cond, then, els } => self.if_chain(fs, cond, then, els)?,
            Stmt::While {
                cond,
                body,
                step,
                vectorize,
                ..
            } => {
                let cb = self.cx.append_basic_block(fs.f, "cond");
                let bb = self.cx.append_basic_block(fs.f, "body");
                let sb = self.cx.append_basic_block(fs.f, "step");
                let xb = self.cx.append_basic_block(fs.f, "endloop");
                self.b.build_unconditional_branch(cb)?;
                self.b.position_at_end(cb);
                self.cond_br(fs, cond, bb, xb)?;
                self.b.position_at_end(bb);
                self.step(fs, cond.span)?;
                fs.loops.push((xb, sb, fs.marks.len()));
                self.exec_list(fs, body)?;
                fs.loops.pop();
                self.b.build_unconditional_branch(sb)?;
                self.b.position_at_end(sb);
                if let Some(st) = step {
                    self.eval_any(fs, st)?;
                }
                let latch = self.b.build_unconditional_branch(cb)?;
                if !vectorize {
                    crate::loop_md::disable_vectorize(self.cx, latch);
                }
                self.b.position_at_end(xb);
            }
            Stmt::ParFor { var, lo, hi, body } => self.par_for(fs, *var, lo, hi, body)?,
            Stmt::Versioned {
                site,
                fast,
                original,
                ..
            } => match self.version_sites.get(*site as usize) {
                // With fast-math the two versions may differ in the last bits: one version.
                Some(&addr) if !self.opts.fast_math => self.versioned(fs, addr, fast, original)?,
                _ => self.exec_list(fs, fast)?,
            },
            Stmt::DoWhile { body, cond } => {
                let bb = self.cx.append_basic_block(fs.f, "dobody");
                let cb = self.cx.append_basic_block(fs.f, "docond");
                let xb = self.cx.append_basic_block(fs.f, "enddo");
                self.b.build_unconditional_branch(bb)?;
                self.b.position_at_end(bb);
                self.step(fs, cond.span)?;
                fs.loops.push((xb, cb, fs.marks.len()));
                self.exec_list(fs, body)?;
                fs.loops.pop();
                self.b.build_unconditional_branch(cb)?;
                self.b.position_at_end(cb);
                self.cond_br(fs, cond, bb, xb)?;
                self.b.position_at_end(xb);
            }
            Stmt::Block(b) => self.exec_list(fs, b)?,
            Stmt::Break | Stmt::Continue => {
                let Some(&(xb, cb, depth)) = fs.loops.last() else {
                    return Err(unsupported("break or continue outside a loop"));
                };
                self.release_from(fs, depth)?;
                let target = if matches!(s, Stmt::Break) { xb } else { cb };
                self.b.build_unconditional_branch(target)?;
                self.dead(fs);
            }
            Stmt::Return(e, _) => {
                let ret = self.prog.func(fs.fid).ret;
                let v = match e {
                    Some(e) => {
                        fs.tail_call = tail_call(e).map(|c| c as *const Expr);
                        let v = self.eval(fs, e);
                        fs.tail_call = None;
                        let v = v?;
                        Some(match ret {
                            Some(t) => self.convert(v, e.sty(), t)?,
                            None => return Err(unsupported("value returned from a void function")),
                        })
                    }
                    None => ret.map(|t| self.zero(t)),
                };
                self.release_from(fs, 0)?;
                match v {
                    Some(v) => self.b.build_return(Some(&v))?,
                    None => self.b.build_return(None)?,
                };
                self.dead(fs);
            }
        }
        Ok(())
    }

    // ---------------------------------------------------------------- parallel loops

    /// A versioned region ([`Stmt::Versioned`]): asks the runtime's `VersionSite` at `site`
    /// which version to run (`tessera_version_begin`, whose token carries the version in
    /// its low bit and the start time), runs it, and reports the time
    /// (`tessera_version_end`). A run-time error inside leaves without the report.
    fn versioned(
        &mut self,
        fs: &mut Fs<'ctx>,
        site: usize,
        fast: &[Stmt],
        original: &[Stmt],
    ) -> R<()> {
        let ptr_t = self.cx.ptr_type(AddressSpace::default());
        let site = self
            .b
            .build_int_to_ptr(self.i64c(site as i64), ptr_t, "vsite")?;
        let tok = self
            .b
            .build_call(self.version_fns.0, &[site.into()], "vtok")?
            .try_as_basic_value()
            .basic()
            .unwrap()
            .into_int_value();
        let bit = self.b.build_and(tok, self.i64c(1), "vbit")?;
        let is_fast = self
            .b
            .build_int_compare(IntPredicate::EQ, bit, self.i64c(0), "vfast")?;
        let fb = self.cx.append_basic_block(fs.f, "version_fast");
        let ob = self.cx.append_basic_block(fs.f, "version_original");
        let jb = self.cx.append_basic_block(fs.f, "version_end");
        self.b.build_conditional_branch(is_fast, fb, ob)?;
        self.b.position_at_end(fb);
        self.exec_list(fs, fast)?;
        self.b.build_unconditional_branch(jb)?;
        self.b.position_at_end(ob);
        self.exec_list(fs, original)?;
        self.b.build_unconditional_branch(jb)?;
        self.b.position_at_end(jb);
        self.b
            .build_call(self.version_fns.1, &[site.into(), tok.into()], "")?;
        Ok(())
    }

    /// A parallel loop: the body is outlined into `i32 tessera_parN(env, lo, hi)` and run by
    /// the runtime's `tessera_parallel_for` on the global pool.
    ///
    /// The environment is an array of 8-byte words: the caller's context, its call depth, a
    /// lock, the first iteration of the failed chunk reported so far, then every variable of
    /// the function (a scalar's value; an array's data pointer and extents) as it is when the
    /// loop starts. Each chunk copies the variables into its own slots (the scalars are
    /// private, as [`Stmt::ParFor`] requires) and runs with a private context. A chunk that
    /// fails takes the lock and, if it starts before every chunk reported so far, copies its
    /// error record into the caller's context, which is checked after the loop. With the
    /// runtime running every chunk before a failed one, the error reported is the one of the
    /// first failing iteration in loop order, whatever the schedule.
    fn par_for(
        &mut self,
        fs: &mut Fs<'ctx>,
        var: VarId,
        lo: &Expr,
        hi: &Expr,
        body: &[Stmt],
    ) -> R<()> {
        let lo_v = self.eval(fs, lo)?;
        let lo_v = self.to_i64(lo_v, lo.sty())?;
        let hi_v = self.eval(fs, hi)?;
        let hi_v = self.to_i64(hi_v, hi.sty())?;
        let i64t = self.cx.i64_type();
        let mut offsets = Vec::new();
        let mut words = ENV_VARS;
        for slot in &fs.slots {
            offsets.push(words);
            words += match slot {
                Slot::Scalar(..) => 1,
                Slot::Array { ext, .. } => 1 + ext.len() as u64,
            };
        }
        let env = self.entry_alloca(fs, i64t.array_type(words as u32).into())?;
        self.b.build_store(self.ctx_field(env, 0)?, fs.ctx)?;
        self.b.build_store(self.ctx_field(env, 1)?, fs.depth)?;
        self.b.build_store(self.ctx_field(env, 2)?, self.i64c(0))?;
        self.b
            .build_store(self.ctx_field(env, 3)?, self.i64c(i64::MAX))?;
        for (slot, &k) in fs.slots.iter().zip(&offsets) {
            match slot {
                Slot::Scalar(p, t) => {
                    let v = self.b.build_load(self.llty(*t), *p, "v")?;
                    self.b.build_store(self.ctx_field(env, k)?, v)?;
                }
                Slot::Array { data, ext, .. } => {
                    let d = self.b.build_load(self.ptr_ty(), *data, "data")?;
                    self.b.build_store(self.ctx_field(env, k)?, d)?;
                    for (j, e) in ext.iter().enumerate() {
                        let x = self.b.build_load(i64t, *e, "n")?;
                        self.b
                            .build_store(self.ctx_field(env, k + 1 + j as u64)?, x)?;
                    }
                }
            }
        }
        let here = self.b.get_insert_block();
        let outlined = self.outline(fs.fid, var, body, &offsets, lo.span);
        if let Some(bb) = here {
            self.b.position_at_end(bb);
        }
        let outlined = outlined?;
        self.b.build_call(
            self.par_fn,
            &[
                self.ptr_ty().const_null().into(),
                lo_v.into(),
                hi_v.into(),
                self.i64c(0).into(),
                outlined.as_global_value().as_pointer_value().into(),
                env.into(),
            ],
            "par",
        )?;
        self.check_err(fs)
    }

    /// Builds the outlined body of a parallel loop (see [`Gen::par_for`]).
    fn outline(
        &mut self,
        fid: FuncId,
        var: VarId,
        body: &[Stmt],
        offsets: &[u64],
        span: Span,
    ) -> R<FunctionValue<'ctx>> {
        let i64t = self.cx.i64_type();
        let ptr = self.ptr_ty();
        let ft = self
            .cx
            .i32_type()
            .fn_type(&[ptr.into(), i64t.into(), i64t.into()], false);
        let fv = self.m.add_function(
            &format!("tessera_par{}", self.n_outlined),
            ft,
            Some(Linkage::Internal),
        );
        self.n_outlined += 1;
        for a in &self.fn_attrs {
            fv.add_attribute(AttributeLoc::Function, *a);
        }
        let entry = self.cx.append_basic_block(fv, "entry");
        let start = self.cx.append_basic_block(fv, "start");
        let err_bb = self.cx.append_basic_block(fv, "error");
        self.b.position_at_end(entry);
        let env = fv.get_nth_param(0).unwrap().into_pointer_value();
        let lo = fv.get_nth_param(1).unwrap().into_int_value();
        let hi = fv.get_nth_param(2).unwrap().into_int_value();
        let parent = self
            .b
            .build_load(ptr, self.ctx_field(env, 0)?, "parent")?
            .into_pointer_value();
        let depth = self
            .b
            .build_load(i64t, self.ctx_field(env, 1)?, "depth")?
            .into_int_value();
        // The private context: no error, the caller's step count and arena.
        let ctx = self
            .b
            .build_alloca(i64t.array_type(CTX_WORDS as u32), "ctx")?;
        self.set(ctx, field::ERR, self.i64c(0))?;
        for k in [field::STEPS, field::ARENA] {
            let x = self.b.build_load(i64t, self.ctx_field(parent, k)?, "x")?;
            self.b.build_store(self.ctx_field(ctx, k)?, x)?;
        }
        // The chunk may run on another thread: its own stack's limit.
        let lim = self
            .b
            .build_call(self.stack_limit_fn, &[], "stack_limit")?
            .try_as_basic_value()
            .basic()
            .unwrap()
            .into_int_value();
        self.set(ctx, field::STACK_LIMIT, lim)?;
        let steps0 = self
            .b
            .build_load(i64t, self.ctx_field(ctx, field::STEPS)?, "steps0")?
            .into_int_value();
        let f = self.prog.func(fid);
        let mut slots = Vec::new();
        for (v, &k) in f.vars.iter().zip(offsets) {
            match v.kind {
                VarKind::Scalar(t) => {
                    let p = self.b.build_alloca(self.llty(t), &v.name)?;
                    let x = self
                        .b
                        .build_load(self.llty(t), self.ctx_field(env, k)?, "v")?;
                    self.b.build_store(p, x)?;
                    slots.push(Slot::Scalar(p, t));
                }
                VarKind::Array { elem, rank } => {
                    let data = self.b.build_alloca(ptr, &v.name)?;
                    let x = self.b.build_load(ptr, self.ctx_field(env, k)?, "data")?;
                    self.b.build_store(data, x)?;
                    let mut ext = Vec::new();
                    for j in 0..rank {
                        let e = self.b.build_alloca(i64t, "ext")?;
                        let x =
                            self.b
                                .build_load(i64t, self.ctx_field(env, k + 1 + j as u64)?, "n")?;
                        self.b.build_store(e, x)?;
                        ext.push(e);
                    }
                    slots.push(Slot::Array { data, ext, elem });
                }
            }
        }
        let counter = self.b.build_alloca(i64t, "it")?;
        let entry_br = self.b.build_unconditional_branch(start)?;
        // Failure: under the environment's spin lock, the chunk with the lowest first
        // iteration so far hands its error record to the caller.
        self.b.position_at_end(err_bb);
        let lock = self.ctx_field(env, 2)?;
        let spin = self.cx.append_basic_block(fv, "lock");
        let locked = self.cx.append_basic_block(fv, "locked");
        self.b.build_unconditional_branch(spin)?;
        self.b.position_at_end(spin);
        let got = self.b.build_cmpxchg(
            lock,
            self.i64c(0),
            self.i64c(1),
            inkwell::AtomicOrdering::Acquire,
            inkwell::AtomicOrdering::Monotonic,
        )?;
        let got = self.b.build_extract_value(got, 1, "got")?.into_int_value();
        self.b.build_conditional_branch(got, locked, spin)?;
        self.b.position_at_end(locked);
        let best_p = self.ctx_field(env, 3)?;
        let best = self.b.build_load(i64t, best_p, "best")?.into_int_value();
        let earlier = self
            .b
            .build_int_compare(IntPredicate::SLT, lo, best, "earlier")?;
        let copy = self.cx.append_basic_block(fv, "report");
        let out = self.cx.append_basic_block(fv, "failed");
        self.b.build_conditional_branch(earlier, copy, out)?;
        self.b.position_at_end(copy);
        for k in 0..field::ARENA {
            if k != field::STEPS {
                let x = self.b.build_load(i64t, self.ctx_field(ctx, k)?, "e")?;
                self.b.build_store(self.ctx_field(parent, k)?, x)?;
            }
        }
        self.b.build_store(best_p, lo)?;
        self.b.build_unconditional_branch(out)?;
        self.b.position_at_end(out);
        self.b.build_atomicrmw(
            inkwell::AtomicRMWBinOp::Xchg,
            lock,
            self.i64c(0),
            inkwell::AtomicOrdering::Release,
        )?;
        self.b
            .build_return(Some(&self.cx.i32_type().const_int(1, false)))?;
        // The loop over the chunk.
        self.b.position_at_end(start);
        let mut fs = Fs {
            fid,
            f: fv,
            ctx,
            depth,
            slots,
            err_bb,
            entry_br,
            loops: Vec::new(),
            marks: Vec::new(),
            tail_call: None,
        };
        // Recompute pure extents of array parameters (as `gen_body` does) when the scalars
        // they are computed from are never assigned in the function, so that LLVM can relate
        // the guards to the loop bounds.
        let assigned = scalars_assigned(f);
        for p in &f.params {
            let v = f.var(*p);
            let Slot::Array { ext, .. } = fs.slots[p.0 as usize].clone() else {
                continue;
            };
            for (e, d) in ext.iter().zip(&v.dims) {
                if pure_extent(d) && !reads_any(d, &assigned) {
                    let x = self.eval(&mut fs, d)?;
                    let x = self.to_i64(x, d.sty())?;
                    self.b.build_store(*e, x)?;
                }
            }
        }
        self.b.build_store(counter, lo)?;
        let cb = self.cx.append_basic_block(fv, "cond");
        let bb = self.cx.append_basic_block(fv, "body");
        let xb = self.cx.append_basic_block(fv, "endloop");
        self.b.build_unconditional_branch(cb)?;
        self.b.position_at_end(cb);
        let i = self.b.build_load(i64t, counter, "i")?.into_int_value();
        let c = self.b.build_int_compare(IntPredicate::SLT, i, hi, "more")?;
        self.b.build_conditional_branch(c, bb, xb)?;
        self.b.position_at_end(bb);
        let Slot::Scalar(vp, _) = fs.slots[var.0 as usize].clone() else {
            return Err(unsupported("parallel loop counter is an array"));
        };
        self.b.build_store(vp, i)?;
        self.step(&fs, span)?;
        self.exec_list(&mut fs, body)?;
        let next = self.b.build_int_add(i, self.i64c(1), "next")?;
        self.b.build_store(counter, next)?;
        self.b.build_unconditional_branch(cb)?;
        self.b.position_at_end(xb);
        if self.opts.limits.max_steps.is_some() {
            // The chunk's steps count towards the caller's total.
            let s1 = self
                .b
                .build_load(i64t, self.ctx_field(ctx, field::STEPS)?, "steps")?
                .into_int_value();
            let d = self.b.build_int_sub(s1, steps0, "dsteps")?;
            self.b.build_atomicrmw(
                inkwell::AtomicRMWBinOp::Add,
                self.ctx_field(parent, field::STEPS)?,
                d,
                inkwell::AtomicOrdering::Monotonic,
            )?;
        }
        self.b
            .build_return(Some(&self.cx.i32_type().const_int(0, false)))?;
        Ok(fv)
    }

    // ---------------------------------------------------------------- expressions

    fn eval_any(&mut self, fs: &mut Fs<'ctx>, e: &Expr) -> R<Option<BasicValueEnum<'ctx>>> {
        match &e.kind {
            ExprKind::Call(f, args) => self.call(fs, *f, args, e.span),
            ExprKind::Comma(a, b) => {
                self.eval_any(fs, a)?;
                self.eval_any(fs, b)
            }
            _ => self.eval(fs, e).map(Some),
        }
    }

    fn eval(&mut self, fs: &mut Fs<'ctx>, e: &Expr) -> R<BasicValueEnum<'ctx>> {
        let ty =
            e.ty.ok_or_else(|| unsupported("void expression used as a value"))?;
        Ok(match &e.kind {
            ExprKind::Int(v) => self.constant(Scalar::I64(*v).convert(ty)),
            ExprKind::Float(v) => match ty {
                ScalarTy::F32 => self.constant(Scalar::F32(*v as f32)),
                ScalarTy::F64 => self.constant(Scalar::F64(*v)),
                t => self.constant(Scalar::F64(*v).convert(t)),
            },
            ExprKind::Var(v) => match &fs.slots[v.0 as usize] {
                Slot::Scalar(p, t) => self.b.build_load(self.llty(*t), *p, "v")?,
                _ => return Err(unsupported("array read as a scalar")),
            },
            ExprKind::Load {
                array,
                indices,
                proven,
            } => {
                let (p, t, tag) = self.address(fs, *array, indices, *proven, e.span)?;
                self.load_mem(p, t, tag)?
            }
            ExprKind::Assign { place, op, value } => {
                let pa = self.place_addr(fs, place, e.span)?;
                match op {
                    None => {
                        let v = self.eval(fs, value)?;
                        let v = self.convert(v, value.sty(), ty)?;
                        self.store_place(&pa, v)?;
                        v
                    }
                    Some((bop, opt)) => {
                        let old = self.load_place(&pa)?;
                        let v = self.eval(fs, value)?;
                        let a = self.convert(old, ty, *opt)?;
                        let r = self.binop(fs, *bop, a, *opt, v, value.sty(), e.span)?;
                        let r = self.convert(r, *opt, ty)?;
                        self.store_place(&pa, r)?;
                        r
                    }
                }
            }
            ExprKind::IncDec { place, inc, prefix } => {
                let pa = self.place_addr(fs, place, e.span)?;
                let old = self.load_place(&pa)?;
                let wt = promote(ty);
                let one = self.constant(Scalar::I32(1).convert(wt));
                let op = if *inc { BinOp::Add } else { BinOp::Sub };
                let a = self.convert(old, ty, wt)?;
                let n = self.binop(fs, op, a, wt, one, wt, e.span)?;
                let n = self.convert(n, wt, ty)?;
                self.store_place(&pa, n)?;
                if *prefix {
                    n
                } else {
                    old
                }
            }
            ExprKind::Unary(op, a) => {
                let at = a.sty();
                let v = self.eval(fs, a)?;
                match (op, at) {
                    (UnOp::Not, ScalarTy::Bool) => {
                        self.b.build_not(v.into_int_value(), "not")?.into()
                    }
                    (UnOp::Neg, ScalarTy::I32 | ScalarTy::I64) => {
                        self.b.build_int_neg(v.into_int_value(), "neg")?.into()
                    }
                    (UnOp::Neg, ScalarTy::F32 | ScalarTy::F64) => {
                        let r = self.b.build_float_neg(v.into_float_value(), "fneg")?;
                        self.fm(r).into()
                    }
                    (UnOp::BitNot, ScalarTy::I32 | ScalarTy::I64) => {
                        self.b.build_not(v.into_int_value(), "bnot")?.into()
                    }
                    (op, t) => return Err(unsupported(format!("{op:?} on {t}"))),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let x = self.eval(fs, a)?;
                let y = self.eval(fs, b)?;
                self.binop(fs, *op, x, a.sty(), y, b.sty(), e.span)?
            }
            ExprKind::Cmp(op, a, b) => {
                let at = a.sty();
                let x = self.eval(fs, a)?;
                let y = self.eval(fs, b)?;
                let c = if at.is_float() {
                    let p = match op {
                        CmpOp::Eq => FloatPredicate::OEQ,
                        CmpOp::Ne => FloatPredicate::UNE,
                        CmpOp::Lt => FloatPredicate::OLT,
                        CmpOp::Le => FloatPredicate::OLE,
                        CmpOp::Gt => FloatPredicate::OGT,
                        CmpOp::Ge => FloatPredicate::OGE,
                    };
                    self.b.build_float_compare(
                        p,
                        x.into_float_value(),
                        y.into_float_value(),
                        "fc",
                    )?
                } else {
                    let p = match (op, at) {
                        (CmpOp::Eq, _) => IntPredicate::EQ,
                        (CmpOp::Ne, _) => IntPredicate::NE,
                        // bool compares as unsigned 0/1.
                        (CmpOp::Lt, ScalarTy::Bool) => IntPredicate::ULT,
                        (CmpOp::Le, ScalarTy::Bool) => IntPredicate::ULE,
                        (CmpOp::Gt, ScalarTy::Bool) => IntPredicate::UGT,
                        (CmpOp::Ge, ScalarTy::Bool) => IntPredicate::UGE,
                        (CmpOp::Lt, _) => IntPredicate::SLT,
                        (CmpOp::Le, _) => IntPredicate::SLE,
                        (CmpOp::Gt, _) => IntPredicate::SGT,
                        (CmpOp::Ge, _) => IntPredicate::SGE,
                    };
                    self.b
                        .build_int_compare(p, x.into_int_value(), y.into_int_value(), "c")?
                };
                self.convert(c.into(), ScalarTy::Bool, ty)?
            }
            ExprKind::LogAnd(a, b) | ExprKind::LogOr(a, b) => {
                let and = matches!(e.kind, ExprKind::LogAnd(..));
                let x = self.eval(fs, a)?;
                let x = self.convert(x, a.sty(), ScalarTy::Bool)?.into_int_value();
                let from = self.b.get_insert_block().unwrap();
                let rb = self.cx.append_basic_block(fs.f, "rhs");
                let mb = self.cx.append_basic_block(fs.f, "logic");
                if and {
                    self.b.build_conditional_branch(x, rb, mb)?;
                } else {
                    self.b.build_conditional_branch(x, mb, rb)?;
                }
                self.b.position_at_end(rb);
                let y = self.eval(fs, b)?;
                let y = self.convert(y, b.sty(), ScalarTy::Bool)?.into_int_value();
                let rend = self.b.get_insert_block().unwrap();
                self.b.build_unconditional_branch(mb)?;
                self.b.position_at_end(mb);
                let phi = self.b.build_phi(self.cx.bool_type(), "l")?;
                let short = self.cx.bool_type().const_int(!and as u64, false);
                phi.add_incoming(&[(&short, from), (&y, rend)]);
                self.convert(phi.as_basic_value(), ScalarTy::Bool, ty)?
            }
            ExprKind::Cond(c, a, b) => {
                let tb = self.cx.append_basic_block(fs.f, "ct");
                let eb = self.cx.append_basic_block(fs.f, "ce");
                let mb = self.cx.append_basic_block(fs.f, "cm");
                self.cond_br(fs, c, tb, eb)?;
                self.b.position_at_end(tb);
                let x = self.eval(fs, a)?;
                let x = self.convert(x, a.sty(), ty)?;
                let tend = self.b.get_insert_block().unwrap();
                self.b.build_unconditional_branch(mb)?;
                self.b.position_at_end(eb);
                let y = self.eval(fs, b)?;
                let y = self.convert(y, b.sty(), ty)?;
                let eend = self.b.get_insert_block().unwrap();
                self.b.build_unconditional_branch(mb)?;
                self.b.position_at_end(mb);
                let phi = self.b.build_phi(self.llty(ty), "c")?;
                phi.add_incoming(&[(&x, tend), (&y, eend)]);
                phi.as_basic_value()
            }
            ExprKind::Cast(a) => {
                let v = self.eval(fs, a)?;
                self.convert(v, a.sty(), ty)?
            }
            ExprKind::Call(f, args) => {
                let check = fs.tail_call != Some(e as *const Expr);
                self.call_checked(fs, *f, args, e.span, check)?
                    .ok_or_else(|| unsupported("void call used as a value"))?
            }
            ExprKind::Builtin(bi, args) => {
                let mut xs = Vec::new();
                for a in args {
                    let v = self.eval(fs, a)?;
                    xs.push(self.convert(v, a.sty(), ty)?);
                }
                self.builtin(*bi, ty, &xs)?
            }
            ExprKind::Comma(a, b) => {
                self.eval_any(fs, a)?;
                self.eval(fs, b)?
            }
        })
    }

    fn builtin(
        &mut self,
        bi: Builtin,
        ty: ScalarTy,
        xs: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        if xs.len() != bi.arity() {
            return Err(unsupported(format!(
                "{} with {} arguments",
                bi.c_name(),
                xs.len()
            )));
        }
        let args: Vec<BasicMetadataValueEnum> = xs.iter().map(|x| (*x).into()).collect();
        let f = match bi {
            Builtin::Min | Builtin::Max => {
                if !ty.is_int() {
                    return Err(unsupported(format!("{} on {ty}", bi.c_name())));
                }
                let n = if bi == Builtin::Min {
                    "llvm.smin"
                } else {
                    "llvm.smax"
                };
                self.intrinsic(n, &[self.llty(ty)])?
            }
            _ if !ty.is_float() => return Err(unsupported(format!("{} on {ty}", bi.c_name()))),
            Builtin::Sqrt => self.intrinsic("llvm.sqrt", &[self.llty(ty)])?,
            Builtin::Fabs => self.intrinsic("llvm.fabs", &[self.llty(ty)])?,
            Builtin::Floor => self.intrinsic("llvm.floor", &[self.llty(ty)])?,
            Builtin::Ceil => self.intrinsic("llvm.ceil", &[self.llty(ty)])?,
            Builtin::Fmin | Builtin::Fmax => {
                return self.fmin_fmax(bi == Builtin::Fmin, ty, xs[0], xs[1]);
            }
            _ => {
                let f32 = ty == ScalarTy::F32;
                let name: &'static str = match (bi, f32) {
                    (Builtin::Exp, false) => "exp",
                    (Builtin::Log, false) => "log",
                    (Builtin::Pow, false) => "pow",
                    (Builtin::Sin, false) => "sin",
                    (Builtin::Cos, false) => "cos",
                    (Builtin::Tanh, false) => "tanh",
                    (Builtin::Exp, true) => "expf",
                    (Builtin::Log, true) => "logf",
                    (Builtin::Pow, true) => "powf",
                    (Builtin::Sin, true) => "sinf",
                    (Builtin::Cos, true) => "cosf",
                    (Builtin::Tanh, true) => "tanhf",
                    _ => unreachable!(),
                };
                self.libm_fn(name, f32, bi.arity())
            }
        };
        self.b
            .build_call(f, &args, "bi")?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| JitError::Llvm("builtin returned void".into()))
    }

    /// `fmin`/`fmax` with Tessera's semantics (IEEE 754-2019 minimumNumber/maximumNumber,
    /// `tessera_ir::fmin_f64`): a NaN operand is ignored unless both are; of two equal
    /// operands (zeros of either sign) the OR of the bits for fmin (-0 wins), the AND for
    /// fmax (+0 wins). Written out as selects, so that neither LLVM's folding of the libm
    /// call nor the C library decides signed zeros.
    fn fmin_fmax(
        &mut self,
        is_min: bool,
        ty: ScalarTy,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (a, b) = (a.into_float_value(), b.into_float_value());
        let ity = if ty == ScalarTy::F32 {
            self.cx.i32_type()
        } else {
            self.cx.i64_type()
        };
        let b_ = &self.b;
        let a_nan = b_.build_float_compare(FloatPredicate::UNO, a, a, "a_nan")?;
        let b_nan = b_.build_float_compare(FloatPredicate::UNO, b, b, "b_nan")?;
        let (first, second) = if is_min {
            (FloatPredicate::OLT, FloatPredicate::OGT)
        } else {
            (FloatPredicate::OGT, FloatPredicate::OLT)
        };
        let a_wins = b_.build_float_compare(first, a, b, "a_wins")?;
        let b_wins = b_.build_float_compare(second, a, b, "b_wins")?;
        let ai = b_.build_bit_cast(a, ity, "a_bits")?.into_int_value();
        let bi = b_.build_bit_cast(b, ity, "b_bits")?.into_int_value();
        let eq_bits = if is_min {
            b_.build_or(ai, bi, "eq_bits")?
        } else {
            b_.build_and(ai, bi, "eq_bits")?
        };
        let eq = b_
            .build_bit_cast(eq_bits, a.get_type(), "eq")?
            .into_float_value();
        let r = b_.build_select(b_wins, b, eq, "r_eq")?.into_float_value();
        let r = b_.build_select(a_wins, a, r, "r_lt")?.into_float_value();
        let r = b_.build_select(b_nan, a, r, "r_bnan")?.into_float_value();
        let r = b_.build_select(a_nan, b, r, "r_anan")?;
        Ok(r)
    }

    fn call(
        &mut self,
        fs: &mut Fs<'ctx>,
        gid: FuncId,
        args: &[Arg],
        span: Span,
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        self.call_checked(fs, gid, args, span, true)
    }

    /// A call; `check_after: false` omits the check of the error word after it (only for
    /// the tail call of a `return`, whose caller checks the same word right after we return,
    /// so the value computed from a failed call is never used). Without the check, LLVM's
    /// tail-recursion elimination can turn `return f(n-1) + f(n-2)` into a loop.
    fn call_checked(
        &mut self,
        fs: &mut Fs<'ctx>,
        gid: FuncId,
        args: &[Arg],
        span: Span,
        check_after: bool,
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        self.step(fs, span)?;
        let limit = self.opts.limits.max_call_depth as u64;
        let so = self.site(fs.fid, span, SiteKind::StackOverflow);
        let c = self.b.build_int_compare(
            IntPredicate::UGE,
            fs.depth,
            self.cx.i64_type().const_int(limit, false),
            "deep",
        )?;
        self.guard(
            fs,
            c,
            &[
                (field::ERR, self.i64c(code::STACK_OVERFLOW)),
                (field::SITE, self.i64c(so as i64)),
            ],
        )?;
        // The native stack: this frame's address against the thread's limit (its real
        // stack bound plus a red zone for the callee's frame; see `rt::stack_limit`).
        let ns = self.site(fs.fid, span, SiteKind::NativeStack);
        let fa = self.intrinsic("llvm.frameaddress", &[self.ptr_ty().into()])?;
        let frame = self
            .b
            .build_call(fa, &[self.cx.i32_type().const_zero().into()], "frame")?
            .try_as_basic_value()
            .basic()
            .unwrap()
            .into_pointer_value();
        let frame = self.b.build_ptr_to_int(frame, self.cx.i64_type(), "sp")?;
        let lim = self
            .b
            .build_load(
                self.cx.i64_type(),
                self.ctx_field(fs.ctx, field::STACK_LIMIT)?,
                "stack_limit",
            )?
            .into_int_value();
        let low = self
            .b
            .build_int_compare(IntPredicate::ULT, frame, lim, "low")?;
        self.guard(
            fs,
            low,
            &[
                (field::ERR, self.i64c(code::NATIVE_STACK)),
                (field::SITE, self.i64c(ns as i64)),
            ],
        )?;
        let g = self.prog.func(gid);
        if args.len() != g.params.len() {
            return Err(unsupported(format!(
                "call of `{}` with a wrong argument count",
                g.name
            )));
        }
        let mut vals: Vec<BasicMetadataValueEnum<'ctx>> = vec![fs.ctx.into(), fs.depth.into()];
        // Positions in `vals` of each array parameter's extents.
        let mut ext_pos = Vec::new();
        let mut arg_spans = Vec::new();
        for (p, a) in g.params.iter().zip(args) {
            let pv = g.var(*p);
            match (a, &pv.kind) {
                (Arg::Scalar(e), VarKind::Scalar(t)) => {
                    let v = self.eval(fs, e)?;
                    vals.push(self.convert(v, e.sty(), *t)?.into());
                    arg_spans.push(e.span);
                }
                (
                    Arg::Array {
                        array,
                        prefix,
                        span: aspan,
                    },
                    VarKind::Array { rank, .. },
                ) => {
                    arg_spans.push(*aspan);
                    let mut idx = Vec::new();
                    for i in prefix {
                        let v = self.eval(fs, i)?;
                        idx.push(self.to_i64(v, i.sty())?);
                    }
                    let (data, ext, elem) = self.array(fs, *array)?;
                    let k = idx.len();
                    if k + rank != ext.len() {
                        return Err(unsupported("sub-array rank mismatch"));
                    }
                    self.bounds(fs, *array, &idx, &ext, 0, *aspan)?;
                    let ptr = if k == 0 {
                        data
                    } else {
                        let off = self.linearize(&idx, &ext[..k])?;
                        let mut flat = off;
                        for n in &ext[k..] {
                            flat = self.b.build_int_mul(flat, *n, "flat")?;
                        }
                        rt::gep(&self.b, self.memty(elem), data, flat)?
                    };
                    vals.push(ptr.into());
                    ext_pos.push((vals.len(), *rank));
                    for n in &ext[k..] {
                        vals.push((*n).into());
                    }
                }
                _ => {
                    return Err(unsupported(format!(
                        "argument kind mismatch calling `{}`",
                        g.name
                    )))
                }
            }
        }
        if let Some(sh) = self.shapes[gid.0 as usize] {
            let base = self.sites.len() as i64;
            for (p, sp) in g.params.iter().zip(&arg_spans) {
                let param = g.var(*p).name.clone();
                self.site(
                    fs.fid,
                    *sp,
                    SiteKind::Shape {
                        param,
                        callee: g.name.clone(),
                    },
                );
            }
            let total: usize = ext_pos.iter().map(|&(_, r)| r).sum();
            let out = self.entry_alloca(
                fs,
                self.cx.i64_type().array_type(total.max(1) as u32).into(),
            )?;
            let mut sargs = vals.clone();
            sargs.insert(2, self.cx.bool_type().const_zero().into());
            sargs.push(out.into());
            let r = self
                .b
                .build_call(sh, &sargs, "shapes")?
                .try_as_basic_value()
                .basic()
                .unwrap()
                .into_int_value();
            self.check_err(fs)?;
            let bad = self.b.build_int_compare(
                IntPredicate::SGE,
                r,
                self.cx.i32_type().const_zero(),
                "mismatch",
            )?;
            let r64 = self.b.build_int_s_extend(r, self.cx.i64_type(), "k")?;
            let site = self.b.build_int_add(r64, self.i64c(base), "site")?;
            self.guard(
                fs,
                bad,
                &[(field::ERR, self.i64c(code::SHAPE)), (field::SITE, site)],
            )?;
            // The callee sees its declared extents.
            let mut o = 0;
            for &(s, r) in &ext_pos {
                for slot in vals.iter_mut().skip(s).take(r) {
                    let p = rt::gep(&self.b, self.cx.i64_type().into(), out, self.i64c(o))?;
                    *slot = self.b.build_load(self.cx.i64_type(), p, "decl")?.into();
                    o += 1;
                }
            }
        }
        vals[1] = self
            .b
            .build_int_add(fs.depth, self.i64c(1), "depth")?
            .into();
        let r = self
            .b
            .build_call(self.bodies[gid.0 as usize], &vals, "call")?
            .try_as_basic_value()
            .basic();
        if check_after {
            self.check_err(fs)?;
        }
        Ok(r)
    }

    // ---------------------------------------------------------------- functions

    fn gen_body(&mut self, fid: FuncId) -> R<()> {
        let fv = self.bodies[fid.0 as usize];
        let mut fs = self.begin(fid, fv, 2)?;
        let f = self.prog.func(fid);
        // The extents passed in are the declared ones, evaluated by the caller's shape check
        // from the same parameter values. Where a declared extent is a pure expression of the
        // scalar parameters (no calls, assignments, divisions or shifts), recompute it here:
        // then LLVM sees `ext == (long)n` and can prove guards like `j < ext` from the loop
        // bound `j < n` and drop them (the passed value is opaque to it).
        for p in &f.params {
            let v = f.var(*p);
            let Slot::Array { ext, .. } = fs.slots[p.0 as usize].clone() else {
                continue;
            };
            for (e, d) in ext.iter().zip(&v.dims) {
                if pure_extent(d) {
                    let x = self.eval(&mut fs, d)?;
                    let x = self.to_i64(x, d.sty())?;
                    self.b.build_store(*e, x)?;
                }
            }
        }
        self.exec_list(&mut fs, &f.body)?;
        match f.ret {
            None => {
                self.b.build_return(None)?;
            }
            Some(_) => {
                let site = self.site(fid, f.span, SiteKind::MissingReturn);
                self.set(fs.ctx, field::ERR, self.i64c(code::MISSING_RETURN))?;
                self.set(fs.ctx, field::SITE, self.i64c(site as i64))?;
                self.b.build_unconditional_branch(fs.err_bb)?;
            }
        }
        Ok(())
    }

    fn gen_shapes(&mut self, fid: FuncId) -> R<()> {
        let fv = self.shapes[fid.0 as usize].unwrap();
        let mut fs = self.begin(fid, fv, 3)?;
        let exact = fv.get_nth_param(2).unwrap().into_int_value();
        let out = fv.get_last_param().unwrap().into_pointer_value();
        let f = self.prog.func(fid);
        let i64t = self.cx.i64_type();
        let mut o = 0i64;
        for (pi, p) in f.params.iter().enumerate() {
            let v = f.var(*p);
            if !v.is_array() {
                continue;
            }
            let mut declared = Vec::new();
            for d in &v.dims {
                let x = self.eval(&mut fs, d)?;
                declared.push(self.to_i64(x, d.sty())?);
            }
            let Slot::Array { ext, .. } = fs.slots[p.0 as usize].clone() else {
                unreachable!()
            };
            let mut given = Vec::new();
            for e in &ext {
                given.push(self.b.build_load(i64t, *e, "given")?.into_int_value());
            }
            if given.len() != declared.len() {
                return Err(unsupported(
                    "declared rank differs from the parameter's rank",
                ));
            }
            let t = self.cx.bool_type().const_all_ones();
            let mut all_eq = t;
            let mut tail_eq = t;
            for (d, (x, y)) in declared.iter().zip(&given).enumerate() {
                let c = self.b.build_int_compare(IntPredicate::EQ, *x, *y, "eq")?;
                all_eq = self.b.build_and(all_eq, c, "eq")?;
                if d > 0 {
                    tail_eq = self.b.build_and(tail_eq, c, "eq")?;
                }
            }
            let call_ok = if let (Some(d0), Some(g0)) = (declared.first(), given.first()) {
                let a = self
                    .b
                    .build_int_compare(IntPredicate::SGE, *d0, self.i64c(0), "ge0")?;
                let b = self
                    .b
                    .build_int_compare(IntPredicate::SLE, *d0, *g0, "le")?;
                let ab = self.b.build_and(a, b, "ok0")?;
                self.b.build_and(ab, tail_eq, "ok")?
            } else {
                t
            };
            let ok = self
                .b
                .build_select(exact, all_eq, call_ok, "ok")?
                .into_int_value();
            let bad_bb = self.cx.append_basic_block(fv, "mismatch");
            let ok_bb = self.cx.append_basic_block(fv, "shape_ok");
            let br = self.b.build_conditional_branch(ok, ok_bb, bad_bb)?;
            let hot = self.cx.metadata_node(&[
                self.cx.metadata_string("branch_weights").into(),
                self.cx.i32_type().const_int(1 << 20, false).into(),
                self.cx.i32_type().const_int(1, false).into(),
            ]);
            br.set_metadata(hot, self.prof_kind)
                .map_err(|e| JitError::Llvm(format!("{e}")))?;
            self.b.position_at_end(bad_bb);
            self.set(fs.ctx, field::RANK, self.i64c(given.len() as i64))?;
            for d in 0..given.len() {
                self.set(fs.ctx, field::V1 + d as u64, given[d])?;
                self.set(fs.ctx, field::V2 + d as u64, declared[d])?;
            }
            self.b
                .build_return(Some(&self.cx.i32_type().const_int(pi as u64, false)))?;
            self.b.position_at_end(ok_bb);
            for (e, d) in ext.iter().zip(&declared) {
                self.b.build_store(*e, *d)?;
                let p = rt::gep(&self.b, i64t.into(), out, self.i64c(o))?;
                self.b.build_store(p, *d)?;
                o += 1;
            }
        }
        self.b
            .build_return(Some(&self.cx.i32_type().const_all_ones()))?;
        Ok(())
    }

    /// Generates the entry wrapper; returns the site id of its first parameter's shape check.
    fn gen_entry(&mut self, fid: FuncId) -> R<u64> {
        let fv = self.entries[fid.0 as usize];
        let f = self.prog.func(fid);
        let entry = self.cx.append_basic_block(fv, "entry");
        self.b.position_at_end(entry);
        let ctx = fv.get_nth_param(0).unwrap().into_pointer_value();
        let slots = fv.get_nth_param(1).unwrap().into_pointer_value();
        let retp = fv.get_nth_param(2).unwrap().into_pointer_value();
        let i64t = self.cx.i64_type();
        let mut vals: Vec<BasicMetadataValueEnum<'ctx>> = vec![ctx.into(), self.i64c(1).into()];
        let mut j = 0i64;
        let mut total = 0usize;
        for p in &f.params {
            let v = f.var(*p);
            let sp = rt::gep(&self.b, i64t.into(), slots, self.i64c(j))?;
            j += 1;
            match v.kind {
                VarKind::Scalar(t) => vals.push(self.load_mem(sp, t, None)?.into()),
                VarKind::Array { rank, .. } => {
                    vals.push(self.b.build_load(self.ptr_ty(), sp, "data")?.into());
                    for _ in 0..rank {
                        let ep = rt::gep(&self.b, i64t.into(), slots, self.i64c(j))?;
                        j += 1;
                        vals.push(self.b.build_load(i64t, ep, "n")?.into());
                    }
                    total += rank;
                }
            }
        }
        let base = self.sites.len() as u64;
        for p in &f.params {
            let v = f.var(*p);
            self.site(
                fid,
                v.span,
                SiteKind::Shape {
                    param: v.name.clone(),
                    callee: f.name.clone(),
                },
            );
        }
        if let Some(sh) = self.shapes[fid.0 as usize] {
            let out = self
                .b
                .build_alloca(i64t.array_type(total.max(1) as u32), "out")?;
            let mut sargs = vals.clone();
            sargs.insert(2, self.cx.bool_type().const_all_ones().into());
            sargs.push(out.into());
            let r = self
                .b
                .build_call(sh, &sargs, "shapes")?
                .try_as_basic_value()
                .basic()
                .unwrap()
                .into_int_value();
            let ep = self.ctx_field(ctx, field::ERR)?;
            let e = self.b.build_load(i64t, ep, "err")?.into_int_value();
            let failed = self
                .b
                .build_int_compare(IntPredicate::NE, e, self.i64c(0), "failed")?;
            let bad = self.b.build_int_compare(
                IntPredicate::SGE,
                r,
                self.cx.i32_type().const_zero(),
                "mismatch",
            )?;
            let any = self.b.build_or(failed, bad, "any")?;
            let xb = self.cx.append_basic_block(fv, "exit");
            let mb = self.cx.append_basic_block(fv, "mismatch");
            let cb = self.cx.append_basic_block(fv, "run");
            let db = self.cx.append_basic_block(fv, "decide");
            self.b.build_conditional_branch(any, db, cb)?;
            self.b.position_at_end(db);
            self.b.build_conditional_branch(failed, xb, mb)?;
            self.b.position_at_end(mb);
            let r64 = self.b.build_int_s_extend(r, i64t, "k")?;
            let site = self.b.build_int_add(r64, self.i64c(base as i64), "site")?;
            self.set(ctx, field::ERR, self.i64c(code::SHAPE))?;
            self.set(ctx, field::SITE, site)?;
            self.b.build_unconditional_branch(xb)?;
            self.b.position_at_end(xb);
            self.b.build_return(None)?;
            self.b.position_at_end(cb);
        }
        let r = self
            .b
            .build_call(self.bodies[fid.0 as usize], &vals, "r")?
            .try_as_basic_value()
            .basic();
        if let (Some(r), Some(t)) = (r, f.ret) {
            self.store_mem(retp, t, r, None)?;
        }
        self.b.build_return(None)?;
        Ok(base)
    }
}

/// Whether `e` (an array extent) is a side-effect-free, guard-free expression of constants
/// and scalar variables: `+ - * & | ^`, unary operators, comparisons and casts.
/// Words of the environment of an outlined parallel loop before the variables: the caller's
/// context, its call depth, a lock, the first iteration of the failed chunk reported so far.
const ENV_VARS: u64 = 4;
/// Fan-in of the join tree of an `else if` chain (see `Gen::if_chain`).
const JOIN_FAN_IN: usize = 16;
/// Size of the JIT context in 8-byte words.
const CTX_WORDS: u64 = field::STACK_LIMIT + 1;

/// The scalar variables a function assigns anywhere.
fn scalars_assigned(f: &Function) -> Vec<VarId> {
    let mut out = Vec::new();
    walk_stmts(&f.body, &mut |_| {}, &mut |e| {
        if let Some(v) = e.assigned_scalar() {
            out.push(v);
        }
    });
    out
}

/// Whether `e` reads one of `vars`.
fn reads_any(e: &Expr, vars: &[VarId]) -> bool {
    let mut hit = false;
    e.walk(&mut |x| {
        if let ExprKind::Var(v) = x.kind {
            hit |= vars.contains(&v);
        }
    });
    hit
}

fn pure_extent(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Var(_) => true,
        ExprKind::Cast(x) | ExprKind::Unary(_, x) => pure_extent(x),
        ExprKind::Binary(op, a, b) => {
            matches!(
                op,
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::And | BinOp::Or | BinOp::Xor
            ) && pure_extent(a)
                && pure_extent(b)
        }
        ExprKind::Cmp(_, a, b) => pure_extent(a) && pure_extent(b),
        _ => false,
    }
}

/// The call in `e` (a `return` value) after which only trap-free arithmetic on values already
/// computed runs: `f(..)`, `(T) f(..)`, `x op f(..)` and `f(..) op k` for `op` in
/// `+ - * & | ^` and `k` a constant or variable. Calls evaluated before it are checked as
/// usual, so an earlier failure never runs it.
fn tail_call(e: &Expr) -> Option<&Expr> {
    match &e.kind {
        ExprKind::Call(..) => Some(e),
        ExprKind::Cast(x) => tail_call(x),
        ExprKind::Binary(
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::And | BinOp::Or | BinOp::Xor,
            a,
            b,
        ) => {
            if matches!(b.kind, ExprKind::Call(..)) {
                Some(b)
            } else if matches!(
                b.kind,
                ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Var(_)
            ) {
                tail_call(a)
            } else {
                None
            }
        }
        _ => None,
    }
}
