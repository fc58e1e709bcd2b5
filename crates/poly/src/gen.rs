//! Code generation: the isl AST of a SCoP's schedule back to loop IR, which the JIT compiles.
//!
//! Each AST `for` becomes a `long` counter and a lowered `for` (`Block([Decl, While])`); each
//! statement instance `S<k>(e0, ..., en)` assigns the original loop counters of `S<k>` from
//! the AST expressions and runs the original IR statement. Floor divisions (`fdiv_q`) are
//! expanded for C's truncating division. A loop under a `parallel` mark with step 1 and a
//! loop in its body becomes a [`Stmt::ParFor`], which the JIT outlines onto the runtime's parallel-for; with
//! [`GenOptions::reverse_parallel`] it runs sequentially in reverse order instead, with
//! [`GenOptions::shuffle_parallel`] in a shuffled order (test modes that catch a false parallel
//! mark), and with [`GenOptions::sequential`] in order.

use std::collections::HashMap;

use tessera_ir::{
    BinOp, Builtin, CmpOp, Expr, ExprKind, Function, Place, ScalarTy, Span, Stmt, UnOp, Var, VarId,
    VarKind,
};

use crate::isl::{Ast, AstExpr, AstOp};
use crate::model::Analysis;
use crate::scop::{Aff, Scop};

/// Code generation options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenOptions {
    /// Run loops marked parallel from their last iteration to their first (test mode).
    pub reverse_parallel: bool,
    /// Run loops marked parallel sequentially in a shuffled order (test mode): iteration `k`
    /// of `n` runs `lo + (a·k + seed/4 mod n) mod n`, with `a` the first of 7, 11, 13 that does not
    /// divide `n` (else 1), a permutation of the iterations that is neither forward nor
    /// backward.
    pub shuffle_parallel: Option<u64>,
    /// Run loops marked parallel as ordinary sequential loops.
    pub sequential: bool,
    /// Keep each optimised SCoP's code as written next to the optimised code
    /// ([`Stmt::Versioned`]), so that the JIT can time both and keep the faster (default
    /// `true`). Not with the test modes above, which exist to run the optimised code.
    pub versions: bool,
}

impl Default for GenOptions {
    fn default() -> GenOptions {
        GenOptions {
            reverse_parallel: false,
            shuffle_parallel: None,
            sequential: false,
            versions: true,
        }
    }
}

impl GenOptions {
    /// Whether SCoPs keep their code as written as a second version: [`GenOptions::versions`]
    /// and no test mode.
    pub fn keeps_versions(&self) -> bool {
        self.versions && !self.reorders_parallel() && !self.sequential
    }

    /// Whether a test mode runs parallel loops in another order than their own
    /// ([`GenOptions::reverse_parallel`], [`GenOptions::shuffle_parallel`]).
    pub fn reorders_parallel(&self) -> bool {
        self.reverse_parallel || self.shuffle_parallel.is_some()
    }
}

/// Whether `body` contains a loop.
fn contains_loop(body: &[Stmt]) -> bool {
    let mut found = false;
    tessera_ir::walk_stmts(
        body,
        &mut |s| found |= matches!(s, Stmt::While { .. } | Stmt::ParFor { .. }),
        &mut |_| {},
    );
    found
}

/// Whether `body` may become the body of a [`Stmt::ParFor`]: no jumps out of it, no local
/// arrays, no calls of program functions (they would share the caller's arena).
fn outlinable(body: &[Stmt]) -> bool {
    let (mut jumps, mut calls) = (false, false);
    tessera_ir::walk_stmts(
        body,
        &mut |s| {
            jumps |= matches!(
                s,
                Stmt::Break | Stmt::Continue | Stmt::Return(..) | Stmt::DeclArray { .. }
            );
        },
        &mut |e| calls |= matches!(e.kind, ExprKind::Call(..)),
    );
    !jumps && !calls
}

/// Calls `f` on every `(long)(x)` with `x` of type `int` in the subscripts of `body` (looking
/// through `long` sums, differences, products and negations of a subscript).
pub(crate) fn int_subscripts(body: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    fn index(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
        if e.ty != Some(ScalarTy::I64) {
            return;
        }
        match &mut e.kind {
            ExprKind::Cast(x) if x.ty == Some(ScalarTy::I32) => f(e),
            ExprKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
                index(a, f);
                index(b, f);
            }
            ExprKind::Unary(UnOp::Neg, a) => index(a, f),
            _ => {}
        }
    }
    tessera_ir::walk_stmts_mut(std::slice::from_mut(body), &mut |e| {
        match &mut e.kind {
            ExprKind::Load { indices, .. }
            | ExprKind::Assign {
                place: Place::Elem { indices, .. },
                ..
            }
            | ExprKind::IncDec {
                place: Place::Elem { indices, .. },
                ..
            } => indices.iter_mut().for_each(|i| index(i, f)),
            _ => {}
        }
        true
    });
}

/// The `int` subscript trees of a statement that are worth computing in 64 bits: affine
/// ([`crate::scop::int_tree_aff`]) and more than a bare variable. The optimiser asks isl
/// whether each stays within `int` on the statement's domain ([`crate::model::Analysis`]'s
/// `wide_subscripts`); where it does, the `int` arithmetic cannot wrap and the 64-bit value
/// is the same.
pub(crate) fn compound_int_subscripts(st: &crate::scop::PolyStmt) -> Vec<Aff> {
    let mut body = st.body.clone();
    let mut out: Vec<Aff> = Vec::new();
    int_subscripts(&mut body, &mut |e| {
        if let ExprKind::Cast(x) = &e.kind {
            if !matches!(x.kind, ExprKind::Var(_)) {
                if let Some(a) = crate::scop::int_tree_aff(x) {
                    if !out.contains(&a) {
                        out.push(a);
                    }
                }
            }
        }
    });
    out
}

/// Marks every index of every access of `body` proven: the run-time test at the SCoP's
/// entry ([`crate::nowrap`]) checked them all for the parameters it runs with. (Public for
/// tests that need code as the optimiser leaves it.)
pub fn mark_all_proven(body: &mut Stmt) {
    tessera_ir::walk_stmts_mut(std::slice::from_mut(body), &mut |e| {
        match &mut e.kind {
            ExprKind::Load {
                indices, proven, ..
            }
            | ExprKind::Assign {
                place: Place::Elem {
                    indices, proven, ..
                },
                ..
            }
            | ExprKind::IncDec {
                place: Place::Elem {
                    indices, proven, ..
                },
                ..
            } => *proven = (1u64 << indices.len().min(63)) - 1,
            _ => {}
        }
        true
    });
}

/// Generation failed (an AST shape this generator does not handle).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("code generation: {0}")]
pub struct GenError(pub String);

/// A scalar materialised as a scratch array (see [`crate::model::ScratchArray`]).
struct Scratch {
    /// The array variable.
    array: VarId,
    /// The loop counters around the scalar's declaration, outermost first.
    counters: Vec<VarId>,
    /// Per counter, the variable holding its least value (the array's origin).
    lows: Vec<VarId>,
}

/// A micro-kernel operand copied into panels (see [`crate::model::Pack`]).
struct Packed {
    /// The copy, `[n_panel / width][n_row][width]`.
    copy: VarId,
    /// The array.
    array: VarId,
    /// The array's subscript split into panels.
    panel_dim: usize,
    /// The panel width.
    width: i64,
    /// The statement whose operand reads the copy.
    stmt: String,
    /// The operand, as in the statement.
    value: Expr,
}

struct Gen<'a> {
    f: &'a mut Function,
    scop: &'a Scop,
    scratch: HashMap<VarId, Scratch>,
    packed: Vec<Packed>,
    iters: HashMap<String, VarId>,
    params: HashMap<String, VarId>,
    span: Span,
    opts: GenOptions,
    wide: &'a HashMap<String, Vec<Aff>>,
}

fn e(kind: ExprKind, ty: ScalarTy, span: Span) -> Expr {
    Expr {
        kind,
        ty: Some(ty),
        span,
    }
}

impl<'a> Gen<'a> {
    fn new(
        f: &'a mut Function,
        scop: &'a Scop,
        opts: GenOptions,
        wide: &'a HashMap<String, Vec<Aff>>,
    ) -> Gen<'a> {
        let params = scop
            .params
            .iter()
            .map(|p| (scop.names[p].clone(), *p))
            .collect();
        Gen {
            f,
            scop,
            scratch: HashMap::new(),
            packed: Vec::new(),
            iters: HashMap::new(),
            params,
            span: scop.span,
            opts,
            wide,
        }
    }

    /// `code` under the SCoP's entry test of its assumptions ([`crate::nowrap`]), the
    /// SCoP's `original` statements where it fails; `code` alone where no test is needed.
    fn under_entry_test(
        &self,
        code: Vec<Stmt>,
        original: &[Stmt],
        no_wrap: &crate::nowrap::NoWrap,
    ) -> Result<Vec<Stmt>, GenError> {
        if no_wrap.trivial() {
            return Ok(code);
        }
        if no_wrap.bad.iter().any(|d| d.is_empty()) {
            return Err(GenError(
                "an integer expression of the SCoP wraps for every parameter value".into(),
            ));
        }
        Ok(vec![Stmt::If {
            cond: self.no_wrap_test(no_wrap),
            then: code,
            els: original.to_vec(),
        }])
    }
}

impl Gen<'_> {
    fn int(&self, c: i64) -> Expr {
        e(ExprKind::Int(c), ScalarTy::I64, self.span)
    }
    fn long_var(&self, v: VarId) -> Expr {
        let t = self.f.var(v).scalar_ty();
        let x = e(ExprKind::Var(v), t, self.span);
        if t == ScalarTy::I64 {
            x
        } else {
            e(ExprKind::Cast(Box::new(x)), ScalarTy::I64, self.span)
        }
    }
    fn bin(&self, op: BinOp, a: Expr, b: Expr) -> Expr {
        e(
            ExprKind::Binary(op, Box::new(a), Box::new(b)),
            ScalarTy::I64,
            self.span,
        )
    }
    fn cmp(&self, op: CmpOp, a: Expr, b: Expr) -> Expr {
        let c = e(
            ExprKind::Cmp(op, Box::new(a), Box::new(b)),
            ScalarTy::I32,
            self.span,
        );
        self.to_bool(c)
    }
    fn to_bool(&self, x: Expr) -> Expr {
        e(ExprKind::Cast(Box::new(x)), ScalarTy::Bool, self.span)
    }
    fn cond_of(&self, c: Expr, a: Expr, b: Expr) -> Expr {
        e(
            ExprKind::Cond(Box::new(c), Box::new(a), Box::new(b)),
            ScalarTy::I64,
            self.span,
        )
    }

    /// An integer expression (type long).
    fn expr(&self, x: &AstExpr) -> Result<Expr, GenError> {
        Ok(match x {
            AstExpr::Int(c) => self.int(*c),
            AstExpr::Id(n) => {
                if let Some(v) = self.iters.get(n) {
                    self.long_var(*v)
                } else if let Some(v) = self.params.get(n) {
                    self.long_var(*v)
                } else {
                    return Err(GenError(format!("unknown identifier `{n}` in the AST")));
                }
            }
            AstExpr::Op(op, args) => {
                let a = |i: usize| -> Result<Expr, GenError> {
                    args.get(i)
                        .ok_or_else(|| GenError(format!("{op:?} without argument {i}")))
                        .and_then(|x| self.expr(x))
                };
                match op {
                    AstOp::Add => self.bin(BinOp::Add, a(0)?, a(1)?),
                    AstOp::Sub => self.bin(BinOp::Sub, a(0)?, a(1)?),
                    AstOp::Mul => self.bin(BinOp::Mul, a(0)?, a(1)?),
                    AstOp::Minus => e(
                        ExprKind::Unary(UnOp::Neg, Box::new(a(0)?)),
                        ScalarTy::I64,
                        self.span,
                    ),
                    AstOp::Div | AstOp::PdivQ => self.bin(BinOp::Div, a(0)?, a(1)?),
                    AstOp::PdivR | AstOp::ZdivR => self.bin(BinOp::Rem, a(0)?, a(1)?),
                    AstOp::FdivQ => {
                        // floor(x / d), d > 0: x >= 0 ? x / d : -((-x + d - 1) / d)
                        let (x, d) = (a(0)?, a(1)?);
                        let pos = self.bin(BinOp::Div, x.clone(), d.clone());
                        let negx = e(
                            ExprKind::Unary(UnOp::Neg, Box::new(x.clone())),
                            ScalarTy::I64,
                            self.span,
                        );
                        let num = self.bin(
                            BinOp::Sub,
                            self.bin(BinOp::Add, negx, d.clone()),
                            self.int(1),
                        );
                        let q = self.bin(BinOp::Div, num, d);
                        let neg = e(
                            ExprKind::Unary(UnOp::Neg, Box::new(q)),
                            ScalarTy::I64,
                            self.span,
                        );
                        let c = self.cmp(CmpOp::Ge, x, self.int(0));
                        self.cond_of(c, pos, neg)
                    }
                    AstOp::Min | AstOp::Max => {
                        let b = if *op == AstOp::Min {
                            Builtin::Min
                        } else {
                            Builtin::Max
                        };
                        let mut acc = a(0)?;
                        for i in 1..args.len() {
                            acc = e(
                                ExprKind::Builtin(b, vec![acc, a(i)?]),
                                ScalarTy::I64,
                                self.span,
                            );
                        }
                        acc
                    }
                    AstOp::Cond => {
                        let c = self.cond(&args[0])?;
                        self.cond_of(c, a(1)?, a(2)?)
                    }
                    _ => {
                        // A boolean used as a value.
                        let c = self.cond(x)?;
                        self.cond_of(c, self.int(1), self.int(0))
                    }
                }
            }
        })
    }

    /// A condition (type bool).
    fn cond(&self, x: &AstExpr) -> Result<Expr, GenError> {
        let AstExpr::Op(op, args) = x else {
            let v = self.expr(x)?;
            return Ok(self.cmp(CmpOp::Ne, v, self.int(0)));
        };
        let two = || -> Result<(Expr, Expr), GenError> {
            if args.len() != 2 {
                return Err(GenError(format!("{op:?} with {} arguments", args.len())));
            }
            Ok((self.expr(&args[0])?, self.expr(&args[1])?))
        };
        Ok(match op {
            AstOp::And | AstOp::Or => {
                let (a, b) = (self.cond(&args[0])?, self.cond(&args[1])?);
                let k = if *op == AstOp::And {
                    ExprKind::LogAnd(Box::new(a), Box::new(b))
                } else {
                    ExprKind::LogOr(Box::new(a), Box::new(b))
                };
                self.to_bool(e(k, ScalarTy::I32, self.span))
            }
            AstOp::Eq | AstOp::Le | AstOp::Lt | AstOp::Ge | AstOp::Gt => {
                let c = match op {
                    AstOp::Eq => CmpOp::Eq,
                    AstOp::Le => CmpOp::Le,
                    AstOp::Lt => CmpOp::Lt,
                    AstOp::Ge => CmpOp::Ge,
                    _ => CmpOp::Gt,
                };
                let (a, b) = two()?;
                self.cmp(c, a, b)
            }
            _ => {
                let v = self.expr(x)?;
                self.cmp(CmpOp::Ne, v, self.int(0))
            }
        })
    }

    /// Computes the `int` subscripts of a statement instance in 64 bits from the AST's `long`
    /// expressions of its counters (`long[v]`), so that LLVM sees the counters' induction
    /// variables without an `int` truncation in between: `(long)j` becomes the AST
    /// expression of `j` (exact: it is `j`'s value), and `(long)(j - 1)` its 64-bit
    /// evaluation where isl proved it within `int` (`wide`).
    fn widen_subscripts(
        &self,
        body: &mut Stmt,
        long: &HashMap<VarId, Expr>,
        wide: Option<&Vec<Aff>>,
    ) {
        fn widen(x: &Expr, long: &HashMap<VarId, Expr>) -> Expr {
            let k = match &x.kind {
                ExprKind::Var(v) => {
                    if let Some(l) = long.get(v) {
                        return l.clone();
                    }
                    ExprKind::Cast(Box::new(x.clone()))
                }
                ExprKind::Int(c) => ExprKind::Int(*c),
                ExprKind::Binary(op, a, b) => {
                    ExprKind::Binary(*op, Box::new(widen(a, long)), Box::new(widen(b, long)))
                }
                ExprKind::Unary(op, a) => ExprKind::Unary(*op, Box::new(widen(a, long))),
                _ => ExprKind::Cast(Box::new(x.clone())),
            };
            e(k, ScalarTy::I64, x.span)
        }
        int_subscripts(body, &mut |c| {
            let ExprKind::Cast(x) = &c.kind else { return };
            let new = match &x.kind {
                ExprKind::Var(v) => long.get(v).cloned(),
                _ => crate::scop::int_tree_aff(x)
                    .filter(|a| wide.is_some_and(|w| w.contains(a)))
                    .map(|_| widen(x, long)),
            };
            if let Some(n) = new {
                *c = n;
            }
        });
    }

    fn new_iter(&mut self, name: &str) -> VarId {
        let id = self.new_var(format!("{name}_t"), VarKind::Scalar(ScalarTy::I64), false);
        self.iters.insert(name.to_string(), id);
        id
    }

    /// A parallel loop run in shuffled order ([`GenOptions::shuffle_parallel`]):
    /// `for (k = 0; k < n; k++) { v = lo + (a * k + seed/4 % n) % n; body }` with `n = ub - lo`
    /// (`ub + 1 - lo` for `<=`).
    #[allow(clippy::too_many_arguments)]
    fn shuffled(
        &mut self,
        it: &str,
        v: VarId,
        lo: Expr,
        op: AstOp,
        ub: &AstExpr,
        seed: u64,
        body: Vec<Stmt>,
    ) -> Result<Vec<Stmt>, GenError> {
        let long = || VarKind::Scalar(ScalarTy::I64);
        let lo_v = self.new_var(format!("{it}_lo"), long(), false);
        let n_v = self.new_var(format!("{it}_n"), long(), false);
        let k_v = self.new_var(format!("{it}_k"), long(), false);
        let ub = self.expr(ub)?;
        let hi = if op == AstOp::Le {
            self.bin(BinOp::Add, ub, self.int(1))
        } else {
            ub
        };
        let n = self.long_var(n_v);
        let not_divides = |p: i64| {
            self.cmp(
                CmpOp::Ne,
                self.bin(BinOp::Rem, n.clone(), self.int(p)),
                self.int(0),
            )
        };
        let a = self.cond_of(
            not_divides(7),
            self.int(7),
            self.cond_of(
                not_divides(11),
                self.int(11),
                self.cond_of(not_divides(13), self.int(13), self.int(1)),
            ),
        );
        let b = self.bin(BinOp::Rem, self.int((seed >> 2) as i64), n.clone());
        let at = self.bin(
            BinOp::Rem,
            self.bin(BinOp::Add, self.bin(BinOp::Mul, a, self.long_var(k_v)), b),
            n.clone(),
        );
        let mut inner = vec![self.assign(v, self.bin(BinOp::Add, self.long_var(lo_v), at))];
        inner.extend(body);
        let step = e(
            ExprKind::Assign {
                place: Place::Var(k_v),
                op: None,
                value: Box::new(self.bin(BinOp::Add, self.long_var(k_v), self.int(1))),
            },
            ScalarTy::I64,
            self.span,
        );
        Ok(vec![Stmt::Block(vec![
            Stmt::Decl {
                var: lo_v,
                init: Some(lo),
            },
            Stmt::Decl {
                var: n_v,
                init: Some(self.bin(BinOp::Sub, hi, self.long_var(lo_v))),
            },
            Stmt::Decl {
                var: k_v,
                init: Some(self.int(0)),
            },
            Stmt::While {
                cond: self.cmp(CmpOp::Lt, self.long_var(k_v), n),
                body: inner,
                step: Some(step),
                is_for: true,
                vectorize: true,
            },
        ])])
    }

    fn new_var(&mut self, name: String, kind: VarKind, scratch: bool) -> VarId {
        let id = VarId(self.f.vars.len() as u32);
        self.f.vars.push(Var {
            name,
            kind,
            dims: vec![],
            is_param: false,
            scratch,
            span: self.span,
        });
        id
    }

    /// Declares the scratch arrays of `a` (see [`crate::model::ScratchArray`]): per array
    /// dimension a `long` origin and extent computed from isl's bounding box before the
    /// nest. Returns those declarations, the arrays' declarations, and the run-time test that
    /// every array stays within `limit` bytes.
    fn declare_scratch(
        &mut self,
        a: &Analysis,
        limit: u64,
    ) -> Result<(Vec<Stmt>, Vec<Stmt>, Expr), GenError> {
        let (mut pre, mut decls) = (Vec::new(), Vec::new());
        let mut fits: Option<Expr> = None;
        let per_array = limit / (a.scratch.len() + a.packs.len()).max(1) as u64;
        for sc in &a.scratch {
            let v = self.f.var(sc.var).clone();
            let counters: Vec<VarId> = self
                .scop
                .stmts
                .iter()
                .flat_map(|st| &st.accesses)
                .find(|x| x.var == sc.var && x.expanded)
                .map(|x| {
                    x.idx
                        .iter()
                        .filter_map(|i| i.terms.keys().next().copied())
                        .collect()
                })
                .unwrap_or_default();
            if counters.len() != sc.bounds.len() {
                return Err(GenError(format!(
                    "scratch array for `{}`: {} bounds for {} loops",
                    v.name,
                    sc.bounds.len(),
                    counters.len()
                )));
            }
            let elems = (per_array / v.scalar_ty().size_bytes() as u64).max(1) as i64;
            let (mut lows, mut dims) = (Vec::new(), Vec::new());
            let mut size: Option<Expr> = None;
            for (d, (lo, hi)) in sc.bounds.iter().enumerate() {
                let lo_v = self.new_var(
                    format!("{}_lo{d}", v.name),
                    VarKind::Scalar(ScalarTy::I64),
                    false,
                );
                let ext_v = self.new_var(
                    format!("{}_n{d}", v.name),
                    VarKind::Scalar(ScalarTy::I64),
                    false,
                );
                let hi_v = self.new_var(
                    format!("{}_hi{d}", v.name),
                    VarKind::Scalar(ScalarTy::I64),
                    false,
                );
                pre.push(Stmt::Decl {
                    var: lo_v,
                    init: Some(self.expr(lo)?),
                });
                pre.push(Stmt::Decl {
                    var: hi_v,
                    init: Some(self.expr(hi)?),
                });
                // max(0, hi - lo + 1): isl's bounds are arbitrary where the set is empty.
                // Only trusted for |lo|, |hi| <= 2^40 (below, in the test), where it cannot
                // wrap around (a `long` counter over more than 2^63 values would).
                let n = self.bin(
                    BinOp::Add,
                    self.bin(BinOp::Sub, self.long_var(hi_v), self.long_var(lo_v)),
                    self.int(1),
                );
                let n = e(
                    ExprKind::Builtin(Builtin::Max, vec![n, self.int(0)]),
                    ScalarTy::I64,
                    self.span,
                );
                pre.push(Stmt::Decl {
                    var: ext_v,
                    init: Some(n),
                });
                // Each extent and each partial product at most `elems` (no overflow: the
                // product of two such values fits in 64 bits), evaluated left to right.
                let ext = self.long_var(ext_v);
                const RANGE: i64 = 1 << 40;
                let in_range = self.and(
                    self.cmp(CmpOp::Ge, self.long_var(lo_v), self.int(-RANGE)),
                    self.cmp(CmpOp::Le, self.long_var(hi_v), self.int(RANGE)),
                );
                let mut test =
                    self.and(in_range, self.cmp(CmpOp::Le, ext.clone(), self.int(elems)));
                let prod = match size.take() {
                    None => ext.clone(),
                    Some(p) => {
                        let p = self.bin(BinOp::Mul, p, ext.clone());
                        test = self.and(test, self.cmp(CmpOp::Le, p.clone(), self.int(elems)));
                        p
                    }
                };
                size = Some(prod);
                fits = Some(match fits.take() {
                    None => test,
                    Some(f) => self.and(f, test),
                });
                lows.push(lo_v);
                dims.push(ext);
            }
            let array = self.new_var(
                format!("{}_x", v.name),
                VarKind::Array {
                    elem: v.scalar_ty(),
                    rank: dims.len(),
                },
                true,
            );
            decls.push(Stmt::DeclArray {
                var: array,
                dims,
                span: self.span,
            });
            self.scratch.insert(
                sc.var,
                Scratch {
                    array,
                    counters,
                    lows,
                },
            );
        }
        let fits = fits.unwrap_or_else(|| self.to_bool(self.int(1)));
        Ok((pre, decls, fits))
    }

    /// `c + Σ k·v` over `long` values of the variables.
    fn linear<'t>(&self, c: i64, terms: impl IntoIterator<Item = (&'t VarId, &'t i64)>) -> Expr {
        let mut x = self.int(c);
        for (v, k) in terms {
            let t = self.bin(BinOp::Mul, self.int(*k), self.long_var(*v));
            x = self.bin(BinOp::Add, x, t);
        }
        x
    }

    /// `for (v = start; test; v = step) body`, lowered as `{ v = start; while ... }`
    /// (`vectorize`: whether LLVM's loop vectoriser may run on it).
    fn for_loop(
        &self,
        v: VarId,
        start: Expr,
        test: Expr,
        step: Expr,
        body: Vec<Stmt>,
        vectorize: bool,
    ) -> Stmt {
        let step = e(
            ExprKind::Assign {
                place: Place::Var(v),
                op: None,
                value: Box::new(step),
            },
            ScalarTy::I64,
            self.span,
        );
        Stmt::Block(vec![
            Stmt::Decl {
                var: v,
                init: Some(start),
            },
            Stmt::While {
                cond: test,
                body,
                step: Some(step),
                is_for: true,
                vectorize,
            },
        ])
    }

    /// `for (long v = 0; v < n; v++) body`.
    fn counted_loop(&self, v: VarId, n: Expr, body: Vec<Stmt>, vectorize: bool) -> Stmt {
        let test = self.cmp(CmpOp::Lt, self.long_var(v), n);
        let step = self.bin(BinOp::Add, self.long_var(v), self.int(1));
        self.for_loop(v, self.int(0), test, step, body, vectorize)
    }

    /// Declares the panel copies of `a.packs` ([`crate::model::Pack`]): the array's extents
    /// (at least 0) before the nest; the copy's declaration and the loops filling it; and the
    /// run-time test that each copy stays within its share of `limit` bytes (shared with the
    /// scratch arrays). The copy of `X[n0][n1]` with panels along subscript `c` is
    /// `X_p[(nc + w - 1) / w][nr][w]`, element `[t][row][l]` the operand at `c = w·t + l`;
    /// the lanes of the last panel past `nc` are neither written nor read. Every access is
    /// within its extent: the loops run over the declared extents.
    fn declare_packs(
        &mut self,
        a: &Analysis,
        limit: u64,
    ) -> Result<(Vec<Stmt>, Vec<Stmt>, Expr), GenError> {
        let (mut pre, mut code) = (Vec::new(), Vec::new());
        let mut fits = self.to_bool(self.int(1));
        for pk in &a.packs {
            let v = self.f.var(pk.array).clone();
            if pk.extents.len() != 2 || pk.panel_dim > 1 || pk.width < 1 {
                return Err(GenError(format!("packing `{}`: not a 2-D operand", v.name)));
            }
            let Some(elem) = pk.value.ty else {
                return Err(GenError(format!(
                    "packing `{}`: an untyped operand",
                    v.name
                )));
            };
            let per_array = limit / (a.scratch.len() + a.packs.len()) as u64;
            let elems = (per_array / elem.size_bytes() as u64).max(1) as i64;
            let mut n = Vec::new();
            for (d, ext) in pk.extents.iter().enumerate() {
                let nv = self.new_var(
                    format!("{}_pn{d}", v.name),
                    VarKind::Scalar(ScalarTy::I64),
                    false,
                );
                let x = e(
                    ExprKind::Builtin(
                        Builtin::Max,
                        vec![self.linear(ext.c, &ext.terms), self.int(0)],
                    ),
                    ScalarTy::I64,
                    self.span,
                );
                pre.push(Stmt::Decl {
                    var: nv,
                    init: Some(x),
                });
                n.push(nv);
            }
            let (c, r) = (pk.panel_dim, 1 - pk.panel_dim);
            let w = pk.width;
            let panels = self.bin(
                BinOp::Div,
                self.bin(BinOp::Add, self.long_var(n[c]), self.int(w - 1)),
                self.int(w),
            );
            // Each extent at most `elems` before the product is formed: no overflow.
            let small = self.and(
                self.cmp(CmpOp::Le, self.long_var(n[0]), self.int(elems)),
                self.cmp(CmpOp::Le, self.long_var(n[1]), self.int(elems)),
            );
            let size = self.bin(
                BinOp::Mul,
                self.bin(BinOp::Mul, panels.clone(), self.int(w)),
                self.long_var(n[r]),
            );
            let test = self.and(small, self.cmp(CmpOp::Le, size, self.int(elems)));
            fits = self.and(fits, test);
            let copy = self.new_var(
                format!("{}_p", v.name),
                VarKind::Array { elem, rank: 3 },
                true,
            );
            code.push(Stmt::DeclArray {
                var: copy,
                dims: vec![panels.clone(), self.long_var(n[r]), self.int(w)],
                span: self.span,
            });
            // for (t = 0; t < panels; t++) for (row = 0; row < n_r; row++)
            //     for (s = 0; s < min(w, n_c - t·w); s++) X_p[t][row][s] = operand at X[..]
            // (every subscript affine; each panel is written in order, on the pool).
            let [t, row, lane] = ["t", "row", "s"].map(|x| {
                self.new_var(
                    format!("{}_p{x}", v.name),
                    VarKind::Scalar(ScalarTy::I64),
                    false,
                )
            });
            let col = self.bin(
                BinOp::Add,
                self.bin(BinOp::Mul, self.long_var(t), self.int(w)),
                self.long_var(lane),
            );
            let mut at = [self.long_var(row), self.long_var(row)];
            at[c] = col;
            // The operand with its read of the array at that element.
            let mut value = pk.value.clone();
            let mut reads = 0;
            value.walk_mut(&mut |x| {
                if let ExprKind::Load {
                    array,
                    indices,
                    proven,
                } = &mut x.kind
                {
                    if *array == pk.array {
                        *indices = at.to_vec();
                        *proven = 0b11;
                        reads += 1;
                    }
                    return false;
                }
                true
            });
            if reads != 1 {
                return Err(GenError(format!(
                    "packing `{}`: the operand reads it {reads} times",
                    v.name
                )));
            }
            let store = Stmt::Expr(e(
                ExprKind::Assign {
                    place: Place::Elem {
                        array: copy,
                        indices: vec![self.long_var(t), self.long_var(row), self.long_var(lane)],
                        proven: 0b111,
                    },
                    op: None,
                    value: Box::new(value),
                },
                elem,
                self.span,
            ));
            let lanes = e(
                ExprKind::Builtin(
                    Builtin::Min,
                    vec![
                        self.int(w),
                        self.bin(
                            BinOp::Sub,
                            self.long_var(n[c]),
                            self.bin(BinOp::Mul, self.long_var(t), self.int(w)),
                        ),
                    ],
                ),
                ScalarTy::I64,
                self.span,
            );
            // At most `w` lanes: not worth the vectoriser's time.
            let inner = self.counted_loop(lane, lanes, vec![store], false);
            let rows = self.counted_loop(row, self.long_var(n[r]), vec![inner], true);
            // Panels are disjoint: the outer loop runs on the pool, except in the test modes
            // that run parallel loops in another order (nothing to catch here) or
            // sequentially.
            let test_mode = self.opts.reorders_parallel();
            code.push(if test_mode || self.opts.sequential {
                self.counted_loop(t, panels, vec![rows], true)
            } else {
                Stmt::ParFor {
                    var: t,
                    lo: self.int(0),
                    hi: panels,
                    body: vec![rows],
                }
            });
            self.packed.push(Packed {
                copy,
                array: pk.array,
                panel_dim: c,
                width: w,
                stmt: pk.stmt.clone(),
                value: pk.value.clone(),
            });
        }
        Ok((pre, code, fits))
    }

    /// `col / w` and `col % w` for a column (at least 0) of the form `a·x + b` with `w | a`
    /// and `0 <= b < w`: `(a / w)·x` and `b` (exact: floor and truncation agree on the
    /// non-negative `col`, and `w` divides `a·x`). A micro-kernel's full tiles address their
    /// rows and columns so (`8·c4 + 3`); `None` otherwise.
    fn split_panel(&self, col: &Expr, w: i64) -> Option<(Expr, i64)> {
        let (prod, b) = match &col.kind {
            ExprKind::Binary(BinOp::Add, p, b) => match b.kind {
                ExprKind::Int(b) => (p.as_ref(), b),
                _ => return None,
            },
            _ => (col, 0),
        };
        let ExprKind::Binary(BinOp::Mul, x, y) = &prod.kind else {
            return None;
        };
        let (k, v) = match (&x.kind, &y.kind) {
            (ExprKind::Int(k), _) => (*k, y),
            (_, ExprKind::Int(k)) => (*k, x),
            _ => return None,
        };
        (k % w == 0 && (0..w).contains(&b))
            .then(|| (self.bin(BinOp::Mul, self.int(k / w), v.as_ref().clone()), b))
    }

    /// Statement `name` with the operands that [`Gen::declare_packs`] copied read from
    /// their panel copies, where it has some. `body` is the statement before anything is
    /// marked or widened, where an operand is exactly as the model found it.
    fn read_packed(&self, name: &str, body: &Stmt) -> Option<Stmt> {
        if self.packed.iter().all(|p| p.stmt != name) {
            return None;
        }
        let mut body = body.clone();
        tessera_ir::walk_stmts_mut(std::slice::from_mut(&mut body), &mut |x| {
            let Some(pk) = self.packed.iter().find(|p| p.stmt == name && p.value == *x) else {
                return true;
            };
            let mut at = None;
            x.walk(&mut |y| {
                if let ExprKind::Load { array, indices, .. } = &y.kind {
                    if *array == pk.array && indices.len() == 2 {
                        at = Some((
                            indices[pk.panel_dim].clone(),
                            indices[1 - pk.panel_dim].clone(),
                        ));
                    }
                }
            });
            let Some((c, r)) = at else { return true };
            // Marked for `widen_packed`: the panel subscript, then the row.
            let ty = x.ty;
            *x = Expr {
                kind: ExprKind::Load {
                    array: pk.copy,
                    indices: vec![c, r],
                    proven: 0b11,
                },
                ty,
                span: x.span,
            };
            false
        });
        Some(body)
    }

    /// After widening, turns the marked reads of [`Gen::read_packed`] into panel subscripts;
    /// false where a column does not split ([`Gen::split_panel`]): the instance (a partial
    /// tile's) then reads its operands as written, which costs it no division.
    fn widen_packed(&self, body: &mut Stmt) -> bool {
        let mut split = true;
        tessera_ir::walk_stmts_mut(std::slice::from_mut(body), &mut |x| {
            let ExprKind::Load {
                array,
                indices,
                proven,
            } = &mut x.kind
            else {
                return true;
            };
            let Some(pk) = self.packed.iter().find(|p| p.copy == *array) else {
                return true;
            };
            match (indices.as_slice(), indices.first()) {
                ([_, row], Some(col)) => match self.split_panel(col, pk.width) {
                    Some((q, b)) => {
                        *indices = vec![q, row.clone(), self.int(b)];
                        *proven = 0b111;
                    }
                    None => split = false,
                },
                _ => split = false,
            }
            true
        });
        split
    }

    fn or(&self, a: Expr, b: Expr) -> Expr {
        self.to_bool(e(
            ExprKind::LogOr(Box::new(a), Box::new(b)),
            ScalarTy::I32,
            self.span,
        ))
    }

    /// The run-time test of the no-wrap assumption (see [`crate::nowrap`]): the `long`
    /// parameters within the bound, then outside every disjunct of the bad set. Each
    /// constraint is evaluated in 64 bits, which `nowrap::compute` checked cannot overflow
    /// once the bound holds (`&&` evaluates left to right).
    fn no_wrap_test(&self, nw: &crate::nowrap::NoWrap) -> Expr {
        let b = crate::scop::LONG_VALUE_BOUND as i64;
        let mut test: Option<Expr> = None;
        let push = |x: Expr, test: &mut Option<Expr>| {
            *test = Some(match test.take() {
                None => x,
                Some(t) => self.and(t, x),
            })
        };
        for p in &nw.long_params {
            let lo = self.cmp(CmpOp::Ge, self.long_var(*p), self.int(-b));
            let hi = self.cmp(CmpOp::Le, self.long_var(*p), self.int(b));
            push(self.and(lo, hi), &mut test);
        }
        for d in &nw.bad {
            // Outside the disjunct: some constraint of it fails.
            let mut outside: Option<Expr> = None;
            for c in d {
                let sum = self.linear(c.c, c.terms.iter().map(|(v, k)| (v, k)));
                let fails = if c.eq {
                    self.cmp(CmpOp::Ne, sum, self.int(0))
                } else {
                    self.cmp(CmpOp::Lt, sum, self.int(0))
                };
                outside = Some(match outside {
                    None => fails,
                    Some(o) => self.or(o, fails),
                });
            }
            if let Some(o) = outside {
                push(o, &mut test);
            }
        }
        test.unwrap_or_else(|| self.to_bool(self.int(1)))
    }

    fn and(&self, a: Expr, b: Expr) -> Expr {
        self.to_bool(e(
            ExprKind::LogAnd(Box::new(a), Box::new(b)),
            ScalarTy::I32,
            self.span,
        ))
    }

    /// Rewrites the statement `body` so that each materialised scalar is its array's element
    /// of this instance: `s` (read), `s = ...`, `s += ...`, `s++` and the declaration
    /// `double s = init;` (an assignment of `init`, or zero). `long` maps the statement's
    /// counters to their 64-bit AST expressions. Proven in bounds: the extents are the
    /// bounding box of exactly these indices.
    fn materialise(&self, body: &mut Stmt, long: &HashMap<VarId, Expr>) {
        if self.scratch.is_empty() {
            return;
        }
        let span = self.span;
        let elem = |sc: &Scratch| -> (VarId, Vec<Expr>, u64) {
            let idx = sc
                .counters
                .iter()
                .zip(&sc.lows)
                .map(|(c, lo)| {
                    let at = long.get(c).cloned().unwrap_or_else(|| self.long_var(*c));
                    self.bin(BinOp::Sub, at, self.long_var(*lo))
                })
                .collect::<Vec<_>>();
            let all = if idx.len() >= 64 {
                u64::MAX
            } else {
                (1u64 << idx.len()) - 1
            };
            (sc.array, idx, all)
        };
        if let Stmt::Decl { var, init } = body {
            if let Some(sc) = self.scratch.get(var) {
                let t = self.f.var(*var).scalar_ty();
                let value = init.take().unwrap_or_else(|| Expr {
                    kind: if t.is_integral() {
                        ExprKind::Int(0)
                    } else {
                        ExprKind::Float(0.0)
                    },
                    ty: Some(t),
                    span,
                });
                let (array, indices, proven) = elem(sc);
                *body = Stmt::Expr(e(
                    ExprKind::Assign {
                        place: Place::Elem {
                            array,
                            indices,
                            proven,
                        },
                        op: None,
                        value: Box::new(value),
                    },
                    t,
                    span,
                ));
            }
        }
        tessera_ir::walk_stmts_mut(std::slice::from_mut(body), &mut |x| {
            match &mut x.kind {
                ExprKind::Var(v) => {
                    if let Some(sc) = self.scratch.get(v) {
                        let (array, indices, proven) = elem(sc);
                        x.kind = ExprKind::Load {
                            array,
                            indices,
                            proven,
                        };
                        return false;
                    }
                }
                ExprKind::Assign { place, .. } | ExprKind::IncDec { place, .. } => {
                    if let Place::Var(v) = place {
                        if let Some(sc) = self.scratch.get(v) {
                            let (array, indices, proven) = elem(sc);
                            *place = Place::Elem {
                                array,
                                indices,
                                proven,
                            };
                        }
                    }
                }
                _ => {}
            }
            true
        });
    }

    fn assign(&self, v: VarId, value: Expr) -> Stmt {
        let t = self.f.var(v).scalar_ty();
        let value = if value.ty == Some(t) {
            value
        } else {
            e(ExprKind::Cast(Box::new(value)), t, self.span)
        };
        Stmt::Expr(e(
            ExprKind::Assign {
                place: Place::Var(v),
                op: None,
                value: Box::new(value),
            },
            t,
            self.span,
        ))
    }

    fn node(&mut self, a: &Ast, parallel: bool) -> Result<Vec<Stmt>, GenError> {
        Ok(match a {
            // A `parallel` mark reaches the loops at its depth through blocks and tests: isl
            // separated cholesky's diagonal tile (`if (c0 % 2 == 0) ...`) from the loop over
            // the other tiles of a wavefront, both under the mark. Each loop there was checked
            // on its own (`isl::ast_from_schedule`), so only those found parallel run so.
            Ast::Block(v) => {
                let mut out = Vec::new();
                for x in v {
                    out.extend(self.node(x, parallel)?);
                }
                out
            }
            Ast::Mark(name, body) => self.node(body, name == "parallel")?,
            Ast::If(c, t, els) => {
                let cond = self.cond(c)?;
                let then = self.node(t, parallel)?;
                let els = match els {
                    Some(x) => self.node(x, parallel)?,
                    None => vec![],
                };
                vec![Stmt::If { cond, then, els }]
            }
            Ast::For {
                it,
                init,
                cond,
                inc,
                body,
                parallel: verified,
            } => {
                // A mark is an intent; the loop runs in parallel only where isl's check on
                // the final schedule found no carried dependence.
                let parallel = parallel && *verified;
                let v = self.new_iter(it);
                let init_e = self.expr(init)?;
                let inc_e = self.expr(inc)?;
                let reverse = parallel
                    && self.opts.reverse_parallel
                    && *inc == AstExpr::Int(1)
                    && matches!(cond, AstExpr::Op(AstOp::Le | AstOp::Lt, a) if a.len() == 2 && a[0] == AstExpr::Id(it.clone()));
                let body = self.node(body, false)?;
                let simple_upper = match cond {
                    AstExpr::Op(op @ (AstOp::Le | AstOp::Lt), a)
                        if a.len() == 2 && a[0] == AstExpr::Id(it.clone()) =>
                    {
                        Some((*op, &a[1]))
                    }
                    _ => None,
                };
                let test_mode = self.opts.reorders_parallel();
                if let (true, Some(seed), true, Some((op, ub))) = (
                    parallel,
                    self.opts.shuffle_parallel,
                    *inc == AstExpr::Int(1),
                    simple_upper,
                ) {
                    return self.shuffled(it, v, init_e, op, ub, seed, body);
                }
                if let (true, false, false, true, Some((op, ub))) = (
                    parallel,
                    test_mode,
                    self.opts.sequential,
                    *inc == AstExpr::Int(1),
                    simple_upper,
                ) {
                    // Only loops with a loop inside run on the pool: an innermost parallel
                    // loop is left to the vectoriser (a pool call per inner loop costs more
                    // than it gains).
                    if outlinable(&body) && contains_loop(&body) {
                        let ub = self.expr(ub)?;
                        let hi = if op == AstOp::Le {
                            self.bin(BinOp::Add, ub, self.int(1))
                        } else {
                            ub
                        };
                        return Ok(vec![Stmt::ParFor {
                            var: v,
                            lo: init_e,
                            hi,
                            body,
                        }]);
                    }
                }
                let (start, test, step) = if reverse {
                    let AstExpr::Op(op, args) = cond else {
                        unreachable!()
                    };
                    let ub = self.expr(&args[1])?;
                    let start = if *op == AstOp::Lt {
                        self.bin(BinOp::Sub, ub, self.int(1))
                    } else {
                        ub
                    };
                    let test = self.cmp(CmpOp::Ge, self.long_var(v), init_e);
                    let step = self.bin(BinOp::Sub, self.long_var(v), self.int(1));
                    (start, test, step)
                } else {
                    let test = self.cond(cond)?;
                    let step = self.bin(BinOp::Add, self.long_var(v), inc_e);
                    (init_e, test, step)
                };
                vec![self.for_loop(v, start, test, step, body, true)]
            }
            Ast::User(call) => {
                let AstExpr::Op(AstOp::Call, args) = call else {
                    return Err(GenError(format!("statement node is not a call: {call:?}")));
                };
                let Some(AstExpr::Id(name)) = args.first() else {
                    return Err(GenError("statement call without a name".into()));
                };
                let st = self
                    .scop
                    .stmts
                    .iter()
                    .find(|s| &s.name == name)
                    .ok_or_else(|| GenError(format!("unknown statement {name}")))?;
                if args.len() != st.loops.len() + 1 {
                    return Err(GenError(format!(
                        "{name} called with {} indices, has {} loops",
                        args.len() - 1,
                        st.loops.len()
                    )));
                }
                let mut out = Vec::new();
                let mut long = HashMap::new();
                for (l, a) in st.loops.iter().zip(&args[1..]) {
                    let x = self.expr(a)?;
                    long.insert(l.var, x.clone());
                    out.push(self.assign(l.var, x));
                }
                let mut body = st.body.clone();
                // Operands as the model found them, before anything is marked.
                let packed = self.read_packed(name, &body);
                // Every access was checked in bounds at the SCoP's entry (`nowrap.rs`).
                mark_all_proven(&mut body);
                self.widen_subscripts(&mut body, &long, self.wide.get(name));
                if let Some(mut p) = packed {
                    mark_all_proven(&mut p);
                    self.widen_subscripts(&mut p, &long, self.wide.get(name));
                    if self.widen_packed(&mut p) {
                        body = p;
                    }
                }
                self.materialise(&mut body, &long);
                out.push(body);
                vec![Stmt::Block(out)]
            }
        })
    }
}

/// The code of a SCoP that keeps its original schedule (`Analysis::stride_regression`):
/// its statements as written, every array access marked proven (no guard), under the
/// SCoP's entry test of its assumptions (which checks every access within its extent for
/// the parameters it runs with, [`crate::nowrap`]), the statements as written, guarded,
/// where the test fails. Where no test is needed, the unguarded statements alone.
pub fn unguarded_original(
    f: &mut Function,
    scop: &Scop,
    original: &[Stmt],
    no_wrap: &crate::nowrap::NoWrap,
) -> Result<Vec<Stmt>, GenError> {
    let mut code = original.to_vec();
    for s in &mut code {
        mark_all_proven(s);
    }
    let wide = HashMap::new();
    Gen::new(f, scop, GenOptions::default(), &wide).under_entry_test(code, original, no_wrap)
}

/// Generates the IR for a SCoP from its AST, adding the new loop counters to `f`.
/// The indices proven in `a.bounds` are marked proven (no guard), and the `int`
/// subscript trees of `a.wide_subscripts` are computed in 64 bits.
///
/// With scratch arrays (`a.scratch`), the code first computes their extents, then runs the
/// new nest with the arrays allocated if each stays within `poly.scratch_limit` bytes, and
/// the SCoP's `original` statements otherwise. Innermost loops of the new nest get register
/// promotion ([`crate::promote`]); its notes come back with the code.
pub fn generate(
    f: &mut Function,
    scop: &Scop,
    a: &Analysis,
    opts: GenOptions,
    poly: &crate::model::PolyOptions,
    original: &[Stmt],
    no_wrap: &crate::nowrap::NoWrap,
) -> Result<(Vec<Stmt>, Vec<String>), GenError> {
    let mut g = Gen::new(f, scop, opts, &a.wide_subscripts);
    // Scratch arrays are declared first: `node` reads their scalars through them.
    let mut scratch = if a.scratch.is_empty() {
        None
    } else {
        Some(g.declare_scratch(a, poly.scratch_limit)?)
    };
    // Panel copies of the micro-kernels' operands: filled before the nest, under the same
    // test of their size as the scratch arrays.
    if !a.packs.is_empty() {
        let (pre, code, fits) = g.declare_packs(a, poly.scratch_limit)?;
        scratch = Some(match scratch {
            None => (pre, code, fits),
            Some((mut p, mut c, f)) => {
                p.extend(pre);
                c.extend(code);
                (p, c, g.and(f, fits))
            }
        });
    }
    let mut nest = g.node(&a.ast, false)?;
    let promoted = crate::promote::promote(g.f, &mut nest);
    let code = match scratch {
        None => nest,
        Some((mut pre, mut then, fits)) => {
            then.extend(nest);
            pre.push(Stmt::If {
                cond: fits,
                then,
                els: original.to_vec(),
            });
            pre
        }
    };
    // The no-wrap test first: the scratch extents and the new nest compute with the
    // parameters in 64 bits, valid only under it.
    Ok((g.under_entry_test(code, original, no_wrap)?, promoted))
}
