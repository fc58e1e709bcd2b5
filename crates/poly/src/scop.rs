//! SCoP detection and model extraction on the typed IR.
//!
//! A static control part (SCoP) is a maximal run of consecutive statements of one statement
//! list that contains at least one loop and whose loops are `for (int i = lb; cond; i += s)`
//! with affine `lb`, a condition monotone in `i`, a constant step, and a body that never
//! assigns `i`, breaks, continues or returns; whose `if` conditions and array subscripts are
//! affine in the enclosing counters and the *parameters* (integer scalars the region does
//! not write); and that calls no function of the program and declares no local array.
//! Everything else stays on the plain JIT path, and [`NotScop`] says why (which construct,
//! which line).
//!
//! The model of a SCoP is text in isl notation (parsed by the scheduler stage): per leaf
//! statement (expression or scalar declaration) `S<k>`, its iteration domain, its position
//! in the original 2d+1 schedule (decrementing loops contribute `-i`), and its accesses.
//! Scalars declared inside the region are expanded (indexed by the loops around their
//! declaration, `s[i, j]`), which removes the false dependences between iterations; the
//! schedule found with them is then checked to keep each instance's live range free of other
//! instances (see `model.rs`). Other scalars the region writes are zero-dimensional arrays
//! (`s[]`), modelled conservatively
//! (no privatisation).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

use tessera_ir::{
    Arg, BinOp, CmpOp, Expr, ExprKind, Function, Place, ScalarTy, Span, Stmt, UnOp, VarId,
};

/// Why a loop nest is not a SCoP.
#[derive(Debug, Clone, PartialEq)]
pub struct NotScop {
    /// The offending construct.
    pub span: Span,
    /// What is wrong, for `explain`.
    pub reason: String,
}

/// An affine expression `c + Σ k·v` over counters and parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Aff {
    /// Coefficients per variable (no zero entries).
    pub terms: BTreeMap<VarId, i64>,
    /// The constant.
    pub c: i64,
}

impl Aff {
    fn constant(c: i64) -> Aff {
        Aff {
            terms: BTreeMap::new(),
            c,
        }
    }
    fn var(v: VarId) -> Aff {
        let mut terms = BTreeMap::new();
        terms.insert(v, 1);
        Aff { terms, c: 0 }
    }
    fn add(mut self, o: &Aff, sign: i64) -> Option<Aff> {
        self.c = self.c.checked_add(o.c.checked_mul(sign)?)?;
        for (v, k) in &o.terms {
            let e = self.terms.entry(*v).or_insert(0);
            *e = e.checked_add(k.checked_mul(sign)?)?;
            if *e == 0 {
                self.terms.remove(v);
            }
        }
        Some(self)
    }
    fn scale(mut self, f: i64) -> Option<Aff> {
        if f == 0 {
            return Some(Aff::constant(0));
        }
        self.c = self.c.checked_mul(f)?;
        for k in self.terms.values_mut() {
            *k = k.checked_mul(f)?;
        }
        Some(self)
    }
    /// `self` with `v` replaced by `by`.
    fn subst(&self, v: VarId, by: &Aff) -> Option<Aff> {
        let k = self.coeff(v);
        if k == 0 {
            return Some(self.clone());
        }
        let mut a = self.clone();
        a.terms.remove(&v);
        a.add(&by.clone().scale(k)?, 1)
    }
    fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.c)
    }
    /// Coefficient of `v`.
    pub fn coeff(&self, v: VarId) -> i64 {
        self.terms.get(&v).copied().unwrap_or(0)
    }
    /// isl text with the given names.
    pub fn to_isl(&self, names: &HashMap<VarId, String>) -> String {
        let mut s = String::new();
        for (v, k) in &self.terms {
            let n = &names[v];
            if s.is_empty() {
                match *k {
                    1 => s.push_str(n),
                    -1 => {
                        let _ = write!(s, "-{n}");
                    }
                    k => {
                        let _ = write!(s, "{k}{n}");
                    }
                }
            } else {
                match *k {
                    1 => {
                        let _ = write!(s, " + {n}");
                    }
                    -1 => {
                        let _ = write!(s, " - {n}");
                    }
                    k if k < 0 => {
                        let _ = write!(s, " - {}{n}", -k);
                    }
                    k => {
                        let _ = write!(s, " + {k}{n}");
                    }
                }
            }
        }
        if s.is_empty() {
            return self.c.to_string();
        }
        match self.c {
            0 => {}
            c if c < 0 => {
                let _ = write!(s, " - {}", -c);
            }
            c => {
                let _ = write!(s, " + {c}");
            }
        }
        s
    }
}

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessKind {
    /// A read.
    Read,
    /// A write.
    Write,
}

/// One array (or zero-dimensional scalar) access of a statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    /// The array or scalar.
    pub var: VarId,
    /// Subscripts (empty for scalars).
    pub idx: Vec<Aff>,
    /// Read or write.
    pub kind: AccessKind,
    /// Where it is.
    pub span: Span,
    /// A scalar declared inside the SCoP, expanded: indexed by the counters of the loops
    /// around its declaration (each iteration of those has its own instance of it). See
    /// [`Scop::without_expansion`].
    pub expanded: bool,
}

/// A loop around a statement.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopInfo {
    /// The counter.
    pub var: VarId,
    /// Its type.
    pub ty: ScalarTy,
    /// Step (non-zero).
    pub step: i64,
}

/// A leaf statement of a SCoP.
#[derive(Debug, Clone, PartialEq)]
pub struct PolyStmt {
    /// `S<k>`.
    pub name: String,
    /// Enclosing loops of the SCoP, outermost first.
    pub loops: Vec<LoopInfo>,
    /// Domain constraints (isl text over the counters and parameters; `true` if none).
    pub constraints: Vec<String>,
    /// Original schedule, isl text of the 2d+1 tuple.
    pub sched: Vec<String>,
    /// Accesses.
    pub accesses: Vec<Access>,
    /// The IR statement (an expression or a scalar declaration).
    pub body: Stmt,
    /// Its span.
    pub span: Span,
}

/// An array of a SCoP with what is known about its extents.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayInfo {
    /// The variable.
    pub var: VarId,
    /// Extents as affine expressions of parameters, where they are (None: unknown).
    pub extents: Vec<Option<Aff>>,
}

/// A value that the model treats as a mathematical integer but the code computes in a C
/// integer type (which wraps): an affine expression of the counters of `counters` and the
/// parameters, evaluated at every point of the set `constraints` describes. The transformed
/// code is equivalent to the original only where every such value stays within
/// `lo..=hi` (see `nowrap.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct RangeObligation {
    /// The value.
    pub aff: Aff,
    /// Least value allowed.
    pub lo: i128,
    /// Greatest value allowed.
    pub hi: i128,
    /// The counters of the evaluation domain, outermost first.
    pub counters: Vec<VarId>,
    /// The evaluation domain (isl constraints over `counters` and the parameters).
    pub constraints: Vec<String>,
    /// What it is, for `explain`.
    pub what: &'static str,
    /// Where.
    pub span: Span,
}

/// The bound on `long` parameters and counters under which transformed code runs: every
/// expression of the generated loop nest (tile bounds, skewed counters) then stays far
/// inside 64 bits. Outside it the original code runs.
pub const LONG_VALUE_BOUND: i128 = 1 << 40;

/// The range of an integer type. (Values of `char` and `bool` type never take part in the
/// affine expressions of a SCoP: `aff` and `strip_int_casts` stop at them, as they stop at
/// anything but `int` and `long` nodes. Their ranges are here so that recording one would
/// still be exact.)
pub fn type_range(t: ScalarTy) -> (i128, i128) {
    match t {
        ScalarTy::I64 => (i64::MIN as i128, i64::MAX as i128),
        ScalarTy::I8 => (i8::MIN as i128, i8::MAX as i128),
        ScalarTy::Bool => (0, 1),
        ScalarTy::I32 | ScalarTy::F32 | ScalarTy::F64 => (i32::MIN as i128, i32::MAX as i128),
    }
}

/// A static control part.
#[derive(Debug, Clone, PartialEq)]
pub struct Scop {
    /// Its statements.
    pub stmts: Vec<PolyStmt>,
    /// Parameters (integer scalars not written in the region).
    pub params: Vec<VarId>,
    /// isl names of counters, parameters and arrays.
    pub names: HashMap<VarId, String>,
    /// Arrays and scalars accessed.
    pub arrays: Vec<ArrayInfo>,
    /// Span of the region (first statement to last).
    pub span: Span,
    /// Values the code computes in C integer types (bounds, conditions, subscripts, counter
    /// updates, conversions) that must not wrap for the model to hold.
    pub obligations: Vec<RangeObligation>,
    /// The type of each parameter.
    pub param_types: HashMap<VarId, ScalarTy>,
    /// Expression statements without effects (no assignment, increment or call), such as
    /// the initialiser a forward-substituted temporary leaves behind: their only possible
    /// effect is a fault, which the entry test of `nowrap.rs` rules out for every access
    /// they make, so the transformed code omits them (the original code, run where the test
    /// fails, keeps them). They are not in the model's statements or dependences.
    pub checks: Vec<PolyStmt>,
}

impl Scop {
    /// The arrays and scalars some statement of the SCoP writes.
    pub fn written_vars(&self) -> std::collections::HashSet<VarId> {
        self.stmts
            .iter()
            .flat_map(|st| &st.accesses)
            .filter(|a| a.kind == AccessKind::Write)
            .map(|a| a.var)
            .collect()
    }

    /// Whether some scalar of the SCoP is expanded (see [`Access::expanded`]).
    pub fn has_expansion(&self) -> bool {
        self.stmts
            .iter()
            .any(|s| s.accesses.iter().any(|a| a.expanded))
    }

    /// The same SCoP with every scalar a single zero-dimensional array again: the
    /// conservative model, used when a schedule found with expansion would let the instances
    /// of a scalar overlap in the single variable the code has.
    pub fn without_expansion(&self) -> Scop {
        let mut s = self.clone();
        for st in &mut s.stmts {
            for a in &mut st.accesses {
                if a.expanded {
                    a.idx.clear();
                    a.expanded = false;
                }
            }
        }
        s
    }

    /// The expanded scalars.
    pub fn expanded_scalars(&self) -> Vec<VarId> {
        let mut v: Vec<VarId> = self
            .stmts
            .iter()
            .flat_map(|s| s.accesses.iter().filter(|a| a.expanded).map(|a| a.var))
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

const ISL_KEYWORDS: &[&str] = &[
    "and", "or", "not", "mod", "floor", "ceil", "min", "max", "exists", "true", "false", "infty",
    "NaN", "implies", "xor", "domain", "range", "params",
];

/// Collects the scalar variables a statement list writes.
fn written_scalars(stmts: &[Stmt], out: &mut HashSet<VarId>) {
    fn expr(e: &Expr, out: &mut HashSet<VarId>) {
        match &e.kind {
            ExprKind::Assign { place, value, .. } => {
                if let Place::Var(v) = place {
                    out.insert(*v);
                }
                if let Place::Elem { indices, .. } = place {
                    indices.iter().for_each(|i| expr(i, out));
                }
                expr(value, out);
            }
            ExprKind::IncDec { place, .. } => {
                if let Place::Var(v) = place {
                    out.insert(*v);
                }
                if let Place::Elem { indices, .. } = place {
                    indices.iter().for_each(|i| expr(i, out));
                }
            }
            ExprKind::Load { indices, .. } => indices.iter().for_each(|i| expr(i, out)),
            ExprKind::Unary(_, a) | ExprKind::Cast(a) => expr(a, out),
            ExprKind::Binary(_, a, b)
            | ExprKind::Cmp(_, a, b)
            | ExprKind::LogAnd(a, b)
            | ExprKind::LogOr(a, b)
            | ExprKind::Comma(a, b) => {
                expr(a, out);
                expr(b, out);
            }
            ExprKind::Cond(a, b, c) => {
                expr(a, out);
                expr(b, out);
                expr(c, out);
            }
            ExprKind::Call(_, args) => {
                for a in args {
                    match a {
                        Arg::Scalar(e) => expr(e, out),
                        Arg::Array { prefix, .. } => prefix.iter().for_each(|i| expr(i, out)),
                    }
                }
            }
            ExprKind::Builtin(_, args) => args.iter().for_each(|a| expr(a, out)),
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Var(_) => {}
        }
    }
    for s in stmts {
        match s {
            Stmt::Decl { var, init } => {
                out.insert(*var);
                if let Some(e) = init {
                    expr(e, out);
                }
            }
            Stmt::DeclArray { dims, .. } => dims.iter().for_each(|d| expr(d, out)),
            Stmt::Expr(e) => expr(e, out),
            Stmt::If { cond, then, els } => {
                expr(cond, out);
                written_scalars(then, out);
                written_scalars(els, out);
            }
            Stmt::While {
                cond, body, step, ..
            } => {
                expr(cond, out);
                written_scalars(body, out);
                if let Some(e) = step {
                    expr(e, out);
                }
            }
            Stmt::ParFor { var, lo, hi, body } => {
                out.insert(*var);
                expr(lo, out);
                expr(hi, out);
                written_scalars(body, out);
            }
            Stmt::Versioned { fast, original, .. } => {
                written_scalars(fast, out);
                written_scalars(original, out);
            }
            Stmt::DoWhile { body, cond } => {
                written_scalars(body, out);
                expr(cond, out);
            }
            Stmt::Block(b) => written_scalars(b, out),
            Stmt::Return(Some(e), _) => expr(e, out),
            Stmt::Break | Stmt::Continue | Stmt::Return(None, _) => {}
        }
    }
}

/// The affine form of a pure `int` expression tree: constants, `int` variables, `+`, `-`,
/// negation and products with a constant, every node of type `int`; `None` otherwise.
pub fn int_tree_aff(e: &Expr) -> Option<Aff> {
    fn pure(e: &Expr) -> bool {
        e.ty == Some(ScalarTy::I32)
            && match &e.kind {
                ExprKind::Int(_) | ExprKind::Var(_) => true,
                ExprKind::Unary(UnOp::Neg, a) => pure(a),
                ExprKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => pure(a) && pure(b),
                _ => false,
            }
    }
    if pure(e) {
        index_aff(e)
    } else {
        None
    }
}

/// The affine form of a subscript as the SCoP model reads it (integer casts stripped, as in
/// the access relations): constants, variables, `+`, `-`, negation, products with a
/// constant; `None` otherwise.
pub fn index_aff(e: &Expr) -> Option<Aff> {
    let e = strip_int_casts(e);
    match &e.kind {
        ExprKind::Int(c) => Some(Aff::constant(*c)),
        ExprKind::Var(v) => Some(Aff::var(*v)),
        ExprKind::Unary(UnOp::Neg, a) => index_aff(a)?.scale(-1),
        ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
            index_aff(a)?.add(&index_aff(b)?, if *op == BinOp::Add { 1 } else { -1 })
        }
        ExprKind::Binary(BinOp::Mul, a, b) => {
            let (a, b) = (index_aff(a)?, index_aff(b)?);
            match (a.as_const(), b.as_const()) {
                (Some(k), _) => b.scale(k),
                (_, Some(k)) => a.scale(k),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Strips integer-to-integer casts (counters and parameters are converted to `long` for
/// subscripts; within a SCoP the values fit).
fn strip_int_casts(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Cast(a)
            if e.ty.is_some_and(|t| t.is_int()) && a.ty.is_some_and(|t| t.is_int()) =>
        {
            strip_int_casts(a)
        }
        _ => e,
    }
}

/// A lowered `for` loop (see [`as_for_any`]).
pub(crate) struct ForLoop<'s> {
    pub var: VarId,
    pub lb: &'s Expr,
    pub cond: &'s Expr,
    pub body: &'s Vec<Stmt>,
    pub step: &'s Expr,
    /// The counter is declared before the loop (`for (i = lb; ...)`).
    pub assigned: bool,
}

/// The loop pattern of a lowered `for`: `Block([Decl i = lb, While { cond, body, step }])`
/// (`for (int i = lb; ...)`) or `Block([i = lb;, While { ... }])` (`for (i = lb; ...)`, the
/// counter declared before the loop).
pub(crate) fn as_for_any(s: &Stmt) -> Option<ForLoop<'_>> {
    let Stmt::Block(b) = s else { return None };
    let [first, Stmt::While {
        cond,
        body,
        step: Some(step),
        is_for: true,
        ..
    }] = b.as_slice()
    else {
        return None;
    };
    match first {
        Stmt::Decl {
            var,
            init: Some(lb),
        } => Some(ForLoop {
            var: *var,
            lb,
            cond,
            body,
            step,
            assigned: false,
        }),
        Stmt::Expr(Expr {
            kind:
                ExprKind::Assign {
                    place: Place::Var(var),
                    op: None,
                    value,
                },
            ..
        }) => Some(ForLoop {
            var: *var,
            lb: value,
            cond,
            body,
            step,
            assigned: true,
        }),
        _ => None,
    }
}

/// [`as_for_any`] for the loops the model accepts: a counter declared by the loop, or one of
/// `counters` (see [`loop_only_counters`]).
pub(crate) fn as_for<'s>(s: &'s Stmt, counters: &HashSet<VarId>) -> Option<ForLoop<'s>> {
    as_for_any(s).filter(|l| !l.assigned || counters.contains(&l.var))
}

/// The integer scalars of `f` that serve as `for` counters declared outside their loops
/// (`int i, j; for (i = 0; ...)`, C89 and PolyBench style) and whose value after a loop
/// never matters, so that a SCoP may treat them like counters declared by their loops and
/// leave any value in them. For each such `v`:
/// * every read of `v` is inside a loop `for (v = lb; cond; step)` (its condition, body or
///   step), not in its `lb`;
/// * inside such a loop, `v` is written only by its step (no nested loop over `v`, no other
///   assignment).
///
/// Then every read sees the counter of the loop around it, assigned by that loop's `lb` or
/// step, and the value a loop leaves behind (like any write outside these loops) is dead:
/// the next read is in a later loop over `v`, which assigns it first.
pub fn loop_only_counters(f: &Function) -> HashSet<VarId> {
    struct W {
        bad: HashSet<VarId>,
        active: Vec<VarId>,
    }
    impl W {
        fn expr(&mut self, e: &Expr) {
            e.walk(&mut |x| match &x.kind {
                ExprKind::Var(v) if !self.active.contains(v) => {
                    self.bad.insert(*v);
                }
                ExprKind::Assign {
                    place: Place::Var(v),
                    ..
                }
                | ExprKind::IncDec {
                    place: Place::Var(v),
                    ..
                } if self.active.contains(v) => {
                    self.bad.insert(*v);
                }
                // Compound assignments and increments read the variable too.
                ExprKind::Assign {
                    place: Place::Var(v),
                    op: Some(_),
                    ..
                }
                | ExprKind::IncDec {
                    place: Place::Var(v),
                    ..
                } => {
                    self.bad.insert(*v);
                }
                _ => {}
            });
        }
        fn list(&mut self, stmts: &[Stmt]) {
            for s in stmts {
                self.stmt(s);
            }
        }
        fn stmt(&mut self, s: &Stmt) {
            if let Some(ForLoop {
                var: v,
                lb,
                cond,
                body,
                step,
                assigned: true,
            }) = as_for_any(s)
            {
                self.expr(lb);
                if self.active.contains(&v) {
                    self.bad.insert(v);
                }
                self.active.push(v);
                self.expr(cond);
                self.list(body);
                // The step writes the counter: only its value is checked.
                match &step.kind {
                    ExprKind::Assign {
                        place: Place::Var(x),
                        value,
                        ..
                    } if *x == v => self.expr(value),
                    ExprKind::IncDec {
                        place: Place::Var(x),
                        ..
                    } if *x == v => {}
                    _ => {
                        self.bad.insert(v);
                        self.expr(step);
                    }
                }
                self.active.pop();
                return;
            }
            match s {
                Stmt::Decl { init, .. } => {
                    if let Some(e) = init {
                        self.expr(e);
                    }
                }
                Stmt::DeclArray { dims, .. } => dims.iter().for_each(|d| self.expr(d)),
                Stmt::Expr(e) => self.expr(e),
                Stmt::If { cond, then, els } => {
                    self.expr(cond);
                    self.list(then);
                    self.list(els);
                }
                Stmt::While {
                    cond, body, step, ..
                } => {
                    self.expr(cond);
                    self.list(body);
                    if let Some(e) = step {
                        self.expr(e);
                    }
                }
                Stmt::DoWhile { body, cond } => {
                    self.list(body);
                    self.expr(cond);
                }
                Stmt::ParFor { var, lo, hi, body } => {
                    self.bad.insert(*var);
                    self.expr(lo);
                    self.expr(hi);
                    self.list(body);
                }
                Stmt::Versioned { fast, original, .. } => {
                    self.list(fast);
                    self.list(original);
                }
                Stmt::Block(b) => self.list(b),
                Stmt::Return(Some(e), _) => self.expr(e),
                Stmt::Break | Stmt::Continue | Stmt::Return(None, _) => {}
            }
        }
    }
    let mut w = W {
        bad: HashSet::new(),
        active: Vec::new(),
    };
    w.list(&f.body);
    let mut out = HashSet::new();
    fn collect(stmts: &[Stmt], out: &mut HashSet<VarId>) {
        for s in stmts {
            if let Some(l) = as_for_any(s).filter(|l| l.assigned) {
                out.insert(l.var);
                collect(l.body, out);
                continue;
            }
            match s {
                Stmt::If { then, els, .. }
                | Stmt::Versioned {
                    fast: then,
                    original: els,
                    ..
                } => {
                    collect(then, out);
                    collect(els, out);
                }
                Stmt::While { body, .. }
                | Stmt::DoWhile { body, .. }
                | Stmt::ParFor { body, .. }
                | Stmt::Block(body) => collect(body, out),
                _ => {}
            }
        }
    }
    collect(&f.body, &mut out);
    out.retain(|v| !w.bad.contains(v) && f.var(*v).scalar_ty().is_int() && !f.var(*v).is_array());
    out
}

fn contains_loop(s: &Stmt) -> bool {
    match s {
        Stmt::While { .. } | Stmt::DoWhile { .. } => true,
        Stmt::Block(b) => b.iter().any(contains_loop),
        Stmt::If { then, els, .. } => then.iter().chain(els).any(contains_loop),
        _ => false,
    }
}

struct Builder<'f> {
    f: &'f Function,
    /// Counters declared outside their loops that the model may treat as loop counters.
    outer_counters: &'f HashSet<VarId>,
    written: HashSet<VarId>,
    params: Vec<VarId>,
    counters: Vec<LoopInfo>,
    constraints: Vec<String>,
    sched: Vec<String>,
    stmts: Vec<PolyStmt>,
    checks: Vec<PolyStmt>,
    names: HashMap<VarId, String>,
    used_names: HashSet<String>,
    /// Scalars declared in the region, with the loops around their declaration.
    declared: HashMap<VarId, Vec<LoopInfo>>,
    obligations: Vec<RangeObligation>,
    seen_obligations: HashSet<String>,
}

/// Where a value is evaluated, for its range obligation.
#[derive(Clone, Copy)]
enum At<'a> {
    /// At every point of the current domain.
    Here,
    /// In the condition of the innermost loop (counter `i`, step, lower bound `lb`): at the
    /// first counter value (over the loops outside) and after every step.
    LoopTest {
        i: VarId,
        step: i64,
        lb: &'a Aff,
        /// Loops outside it.
        outer: usize,
        /// Constraints of the loops outside it.
        outer_constraints: usize,
    },
}

type R<T> = Result<T, NotScop>;

fn err<T>(span: Span, reason: impl Into<String>) -> R<T> {
    Err(NotScop {
        span,
        reason: reason.into(),
    })
}

impl<'f> Builder<'f> {
    fn name(&mut self, v: VarId) -> String {
        if let Some(n) = self.names.get(&v) {
            return n.clone();
        }
        let base = self.f.var(v).name.clone();
        let mut n = base.clone();
        let mut k = 1;
        while self.used_names.contains(&n)
            || ISL_KEYWORDS.contains(&n.as_str())
            || n.starts_with('S') && n[1..].chars().all(|c| c.is_ascii_digit())
            || n.starts_with('c') && n[1..].chars().all(|c| c.is_ascii_digit())
        {
            n = format!("{base}_{k}");
            k += 1;
        }
        self.used_names.insert(n.clone());
        self.names.insert(v, n.clone());
        n
    }

    fn is_counter(&self, v: VarId) -> bool {
        self.counters.iter().any(|l| l.var == v)
    }

    /// A parameter: an integer scalar the region does not write.
    fn is_param(&self, v: VarId) -> bool {
        let var = self.f.var(v);
        !var.is_array() && var.scalar_ty().is_int() && !self.written.contains(&v)
    }

    fn aff(&mut self, e: &Expr) -> R<Aff> {
        let e = strip_int_casts(e);
        let bad = |what: &str| {
            err(
                e.span,
                format!("{what} is not affine in the loop counters and parameters"),
            )
        };
        match &e.kind {
            ExprKind::Int(c) => Ok(Aff::constant(*c)),
            ExprKind::Var(v) => {
                if self.is_counter(*v) {
                    self.name(*v);
                    Ok(Aff::var(*v))
                } else if self.is_param(*v) {
                    if !self.params.contains(v) {
                        self.params.push(*v);
                    }
                    self.name(*v);
                    Ok(Aff::var(*v))
                } else if self.written.contains(v) {
                    err(
                        e.span,
                        format!(
                            "`{}` is written in the region, so it is not a parameter",
                            self.f.var(*v).name
                        ),
                    )
                } else {
                    err(
                        e.span,
                        format!("`{}` is not an integer scalar", self.f.var(*v).name),
                    )
                }
            }
            ExprKind::Unary(UnOp::Neg, a) => self.aff(a)?.scale(-1).ok_or_else(|| overflow(e.span)),
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
                let (a, b) = (self.aff(a)?, self.aff(b)?);
                a.add(&b, if *op == BinOp::Add { 1 } else { -1 })
                    .ok_or_else(|| overflow(e.span))
            }
            ExprKind::Binary(BinOp::Mul, a, b) => {
                let (a, b) = (self.aff(a)?, self.aff(b)?);
                match (a.as_const(), b.as_const()) {
                    (Some(k), _) => b.scale(k).ok_or_else(|| overflow(e.span)),
                    (_, Some(k)) => a.scale(k).ok_or_else(|| overflow(e.span)),
                    _ => bad("a product of two variables"),
                }
            }
            ExprKind::Load { .. } => bad("an array element"),
            ExprKind::Call(..) => bad("a function call"),
            ExprKind::Binary(BinOp::Div | BinOp::Rem, ..) => {
                bad("a division (C truncates; not modelled)")
            }
            _ => bad("this expression"),
        }
    }

    /// Records that every integer node of the affine expression `e` (a bound, a condition
    /// operand, a subscript, an extent) keeps its value within its C type wherever `at`
    /// says it is evaluated: the model computes with mathematical integers, the code in
    /// wrapping 32- or 64-bit ones. Intermediate nodes are included (a conversion from
    /// `long` to `int` is a node of type `int`).
    fn record(&mut self, e: &Expr, at: At<'_>, what: &'static str) -> R<()> {
        let Some(ty) = e.ty.filter(|t| t.is_int()) else {
            return Ok(());
        };
        if let Ok(a) = self.aff(e) {
            let (lo, hi) = type_range(ty);
            self.oblige(a, lo, hi, at, what, e.span)?;
        }
        match &e.kind {
            ExprKind::Unary(_, a) | ExprKind::Cast(a) => self.record(a, at, what),
            ExprKind::Binary(_, a, b) => {
                self.record(a, at, what)?;
                self.record(b, at, what)
            }
            _ => Ok(()),
        }
    }

    /// [`Builder::record`] for the operands of every comparison of a condition.
    fn record_cond(&mut self, e: &Expr, at: At<'_>, what: &'static str) -> R<()> {
        match &e.kind {
            ExprKind::Cast(a) if e.ty == Some(ScalarTy::Bool) => self.record_cond(a, at, what),
            ExprKind::Unary(UnOp::Not, a) => self.record_cond(a, at, what),
            ExprKind::LogAnd(a, b) | ExprKind::LogOr(a, b) => {
                self.record_cond(a, at, what)?;
                self.record_cond(b, at, what)
            }
            ExprKind::Cmp(_, a, b) => {
                self.record(a, at, what)?;
                self.record(b, at, what)
            }
            _ => Ok(()),
        }
    }

    /// Adds the obligation `lo <= a <= hi` at `at`.
    fn oblige(
        &mut self,
        a: Aff,
        lo: i128,
        hi: i128,
        at: At<'_>,
        what: &'static str,
        span: Span,
    ) -> R<()> {
        match at {
            At::Here => {
                let counters = self.counters.iter().map(|l| l.var).collect();
                let cons = self.constraints.clone();
                self.push_obligation(a, lo, hi, counters, cons, what, span)
            }
            At::LoopTest {
                i,
                step,
                lb,
                outer,
                outer_constraints,
            } => {
                // After a step from any point of the loop's domain ...
                let k = a.coeff(i).checked_mul(step).ok_or_else(|| overflow(span))?;
                let shifted = a
                    .clone()
                    .add(&Aff::constant(k), 1)
                    .ok_or_else(|| overflow(span))?;
                let counters: Vec<VarId> = self.counters.iter().map(|l| l.var).collect();
                let cons = self.constraints.clone();
                self.push_obligation(shifted, lo, hi, counters.clone(), cons, what, span)?;
                // ... and at the first value, wherever the loop is reached.
                let first = a.subst(i, lb).ok_or_else(|| overflow(span))?;
                let cons = self.constraints[..outer_constraints].to_vec();
                self.push_obligation(first, lo, hi, counters[..outer].to_vec(), cons, what, span)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push_obligation(
        &mut self,
        aff: Aff,
        lo: i128,
        hi: i128,
        counters: Vec<VarId>,
        constraints: Vec<String>,
        what: &'static str,
        span: Span,
    ) -> R<()> {
        if let Some(c) = aff.as_const() {
            if (lo..=hi).contains(&(c as i128)) {
                return Ok(());
            }
            return err(
                span,
                format!("a constant {what} ({c}) outside its integer type (it wraps)"),
            );
        }
        let key = format!("{aff:?} {lo} {hi} {counters:?} {constraints:?}");
        if self.seen_obligations.insert(key) {
            self.obligations.push(RangeObligation {
                aff,
                lo,
                hi,
                counters,
                constraints,
                what,
                span,
            });
        }
        Ok(())
    }

    /// An affine condition as isl text.
    fn cond(&mut self, e: &Expr, negate: bool) -> R<String> {
        let e0 = e;
        let e = match &e.kind {
            ExprKind::Cast(a) if e.ty == Some(ScalarTy::Bool) => a.as_ref(),
            _ => e,
        };
        match &e.kind {
            ExprKind::Cmp(op, a, b) => {
                let (a, b) = (self.aff(a)?, self.aff(b)?);
                let (sa, sb) = (a.to_isl(&self.names), b.to_isl(&self.names));
                let op = if negate {
                    match op {
                        CmpOp::Eq => CmpOp::Ne,
                        CmpOp::Ne => CmpOp::Eq,
                        CmpOp::Lt => CmpOp::Ge,
                        CmpOp::Le => CmpOp::Gt,
                        CmpOp::Gt => CmpOp::Le,
                        CmpOp::Ge => CmpOp::Lt,
                    }
                } else {
                    *op
                };
                Ok(match op {
                    CmpOp::Eq => format!("{sa} = {sb}"),
                    CmpOp::Ne => format!("({sa} < {sb} or {sa} > {sb})"),
                    CmpOp::Lt => format!("{sa} < {sb}"),
                    CmpOp::Le => format!("{sa} <= {sb}"),
                    CmpOp::Gt => format!("{sa} > {sb}"),
                    CmpOp::Ge => format!("{sa} >= {sb}"),
                })
            }
            ExprKind::LogAnd(a, b) | ExprKind::LogOr(a, b) => {
                let and = matches!(e.kind, ExprKind::LogAnd(..)) != negate;
                let (a, b) = (self.cond(a, negate)?, self.cond(b, negate)?);
                Ok(format!("({a} {} {b})", if and { "and" } else { "or" }))
            }
            ExprKind::Unary(UnOp::Not, a) => self.cond(a, !negate),
            _ => err(e0.span, "the condition is not an affine comparison"),
        }
    }

    fn list(&mut self, stmts: &[Stmt]) -> R<()> {
        for (pos, s) in stmts.iter().enumerate() {
            self.sched.push(pos.to_string());
            self.stmt(s)?;
            self.sched.pop();
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        if let Some(l) = as_for(s, self.outer_counters) {
            return self.for_loop(l.var, l.lb, l.cond, l.body, l.step);
        }
        if let Some(l) = as_for_any(s) {
            let name = &self.f.var(l.var).name;
            return err(
                stmt_span(s).unwrap_or_default(),
                format!("a loop over `{name}`, declared before it, whose value is read outside its loops or assigned in them (the value after the loop would matter)"),
            );
        }
        match s {
            Stmt::Block(b) => {
                if b.iter().any(|s| matches!(s, Stmt::While { .. })) {
                    let sp = first_span(b).unwrap_or_default();
                    return err(sp, "a loop that is not `for (int i = lb; cond; i += step)`");
                }
                self.list(b)
            }
            Stmt::If { cond, then, els } => {
                self.record_cond(cond, At::Here, "condition operand")?;
                let c = self.cond(cond, false)?;
                self.constraints.push(c);
                self.sched.push("0".into());
                self.list(then)?;
                self.sched.pop();
                self.constraints.pop();
                if !els.is_empty() {
                    let c = self.cond(cond, true)?;
                    self.constraints.push(c);
                    self.sched.push("1".into());
                    self.list(els)?;
                    self.sched.pop();
                    self.constraints.pop();
                }
                Ok(())
            }
            Stmt::Expr(e) => self.leaf(s, e.span),
            Stmt::Decl { var, init } => {
                let sp = init
                    .as_ref()
                    .map(|e| e.span)
                    .unwrap_or(self.f.var(*var).span);
                self.leaf(s, sp)
            }
            Stmt::DeclArray { span, .. } => err(*span, "a local array declaration"),
            Stmt::While { cond, .. } | Stmt::DoWhile { cond, .. } => {
                err(cond.span, "a `while` loop (not an affine `for`)")
            }
            Stmt::ParFor { lo, .. } => err(lo.span, "an already optimised parallel loop"),
            Stmt::Versioned { span, .. } => err(*span, "an already optimised region"),
            Stmt::Break => err(Span::default(), "`break`"),
            Stmt::Continue => err(Span::default(), "`continue`"),
            Stmt::Return(_, sp) => err(*sp, "`return` inside the loop nest"),
        }
    }

    fn for_loop(&mut self, i: VarId, lb: &Expr, cond: &Expr, body: &[Stmt], step: &Expr) -> R<()> {
        let ty = self.f.var(i).scalar_ty();
        if !ty.is_int() {
            return err(lb.span, "a loop counter that is not an `int` or a `long`");
        }
        let st = match &strip_int_casts(step).kind {
            ExprKind::IncDec {
                place: Place::Var(v),
                inc,
                ..
            } if *v == i => {
                if *inc {
                    1
                } else {
                    -1
                }
            }
            ExprKind::Assign {
                place: Place::Var(v),
                op: Some((op @ (BinOp::Add | BinOp::Sub), _)),
                value,
            } if *v == i => match &strip_int_casts(value).kind {
                ExprKind::Int(c) if *c != 0 => {
                    if *op == BinOp::Add {
                        *c
                    } else {
                        -*c
                    }
                }
                _ => return err(step.span, "a loop step that is not a constant"),
            },
            _ => {
                return err(
                    step.span,
                    "a loop step that is not `i++`, `i--` or `i += c`",
                )
            }
        };
        let mut body_writes = HashSet::new();
        written_scalars(body, &mut body_writes);
        if body_writes.contains(&i) {
            return err(step.span, "the loop body assigns the loop counter");
        }
        let lbv = self.aff(lb)?;
        self.record(lb, At::Here, "loop lower bound")?;
        let outer = self.counters.len();
        let outer_constraints = self.constraints.len();
        self.counters.push(LoopInfo {
            var: i,
            ty,
            step: st,
        });
        let n = self.name(i);
        let lbs = lbv.to_isl(&self.names);
        // Monotone condition: conjunctions of comparisons, each of the form e < 0 / e <= 0
        // with the counter's coefficient of the step's sign.
        self.monotone(cond, i, st)?;
        let c = self.cond(cond, false)?;
        let mut cons = vec![if st > 0 {
            format!("{n} >= {lbs}")
        } else {
            format!("{n} <= {lbs}")
        }];
        cons.push(c);
        if st.abs() > 1 {
            cons.push(format!(
                "exists (e{k}: {n} = {lbs} + {st}e{k} )",
                k = self.counters.len()
            ));
        }
        let k = cons.len();
        self.constraints.extend(cons);
        // The test runs at the first value and after every step; the counter itself must
        // not wrap when stepped (a `long` one must stay within the transformed code's bound).
        let at = At::LoopTest {
            i,
            step: st,
            lb: &lbv,
            outer,
            outer_constraints,
        };
        self.record_cond(cond, at, "loop condition operand")?;
        let (lo, hi) = type_range(ty);
        self.oblige(Aff::var(i), lo, hi, at, "loop counter", step.span)?;
        if ty == ScalarTy::I64 {
            self.oblige(
                Aff::var(i),
                -LONG_VALUE_BOUND,
                LONG_VALUE_BOUND,
                at,
                "`long` loop counter (bound of the transformed code)",
                step.span,
            )?;
        }
        self.sched
            .push(if st > 0 { n.clone() } else { format!("-{n}") });
        self.list(body)?;
        self.sched.pop();
        for _ in 0..k {
            self.constraints.pop();
        }
        self.counters.pop();
        Ok(())
    }

    fn monotone(&mut self, cond: &Expr, i: VarId, step: i64) -> R<()> {
        let c = match &cond.kind {
            ExprKind::Cast(a) if cond.ty == Some(ScalarTy::Bool) => a.as_ref(),
            _ => cond,
        };
        match &c.kind {
            ExprKind::LogAnd(a, b) => {
                self.monotone(a, i, step)?;
                self.monotone(b, i, step)
            }
            ExprKind::Cmp(op, a, b) => {
                let (a, b) = (self.aff(a)?, self.aff(b)?);
                let d = a.coeff(i) - b.coeff(i);
                let ok = match op {
                    CmpOp::Lt | CmpOp::Le => d * step > 0,
                    CmpOp::Gt | CmpOp::Ge => d * step < 0,
                    _ => false,
                };
                if ok {
                    Ok(())
                } else {
                    err(
                        c.span,
                        "a loop condition that does not bound the counter in the step's direction",
                    )
                }
            }
            _ => err(c.span, "a loop condition that is not a comparison"),
        }
    }

    fn leaf(&mut self, s: &Stmt, span: Span) -> R<()> {
        let mut acc = Vec::new();
        // A value given to a counter declared outside its loops is dead (see
        // `loop_only_counters`): only its reads' faults remain.
        let dead_counter_write = match s {
            Stmt::Decl { var, init } => {
                self.outer_counters.contains(var) && !init.as_ref().is_some_and(has_effect)
            }
            Stmt::Expr(Expr {
                kind:
                    ExprKind::Assign {
                        place: Place::Var(v),
                        op: None,
                        value,
                    },
                ..
            }) => self.outer_counters.contains(v) && !has_effect(value),
            _ => false,
        };
        let check_only = dead_counter_write || matches!(s, Stmt::Expr(e) if !has_effect(e));
        match s {
            Stmt::Expr(Expr {
                kind: ExprKind::Assign { value, .. },
                ..
            }) if dead_counter_write => self.accesses(value, &mut acc, false)?,
            Stmt::Decl { init, .. } if dead_counter_write => {
                if let Some(e) = init {
                    self.accesses(e, &mut acc, false)?;
                }
            }
            Stmt::Expr(e) => self.accesses(e, &mut acc, false)?,
            Stmt::Decl { var, init } => {
                if let Some(e) = init {
                    self.accesses(e, &mut acc, false)?;
                }
                // Declared here: one instance per iteration of the loops around.
                self.declared.insert(*var, self.counters.clone());
                self.scalar_access(*var, AccessKind::Write, span, &mut acc);
            }
            _ => unreachable!("leaf statements are expressions and declarations"),
        }
        if check_only
            && acc
                .iter()
                .all(|a| a.kind != AccessKind::Read || a.idx.is_empty())
        {
            // Nothing that can fault.
            return Ok(());
        }
        let (name, into) = if check_only {
            (format!("C{}", self.checks.len()), &mut self.checks)
        } else {
            (format!("S{}", self.stmts.len()), &mut self.stmts)
        };
        into.push(PolyStmt {
            name,
            loops: self.counters.clone(),
            constraints: self.constraints.clone(),
            sched: self.sched.clone(),
            accesses: acc,
            body: s.clone(),
            span,
        });
        Ok(())
    }

    fn scalar_access(&mut self, v: VarId, kind: AccessKind, span: Span, acc: &mut Vec<Access>) {
        self.name(v);
        let (idx, expanded) = match self.declared.get(&v) {
            Some(loops) => (loops.iter().map(|l| Aff::var(l.var)).collect(), true),
            None => (vec![], false),
        };
        acc.push(Access {
            var: v,
            idx,
            kind,
            span,
            expanded,
        });
    }

    fn index_list(&mut self, idx: &[Expr]) -> R<Vec<Aff>> {
        let out = idx.iter().map(|i| self.aff(i)).collect::<R<Vec<Aff>>>()?;
        for i in idx {
            self.record(i, At::Here, "subscript")?;
        }
        Ok(out)
    }

    fn accesses(&mut self, e: &Expr, acc: &mut Vec<Access>, cond: bool) -> R<()> {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) => Ok(()),
            ExprKind::Var(v) => {
                if self.is_counter(*v) {
                    return Ok(());
                }
                let var = self.f.var(*v);
                if var.is_array() {
                    return err(e.span, "an array used as a value");
                }
                if self.written.contains(v) {
                    self.scalar_access(*v, AccessKind::Read, e.span, acc);
                }
                Ok(())
            }
            ExprKind::Load { array, indices, .. } => {
                let idx = self.index_list(indices)?;
                self.name(*array);
                acc.push(Access {
                    var: *array,
                    idx,
                    kind: AccessKind::Read,
                    span: e.span,
                    expanded: false,
                });
                Ok(())
            }
            ExprKind::Assign { place, op, value } => {
                if cond {
                    return err(e.span, "an assignment inside a conditional expression");
                }
                self.accesses(value, acc, cond)?;
                self.place(place, op.is_some(), e.span, acc)
            }
            ExprKind::IncDec { place, .. } => {
                if cond {
                    return err(e.span, "an increment inside a conditional expression");
                }
                self.place(place, true, e.span, acc)
            }
            ExprKind::Unary(_, a) | ExprKind::Cast(a) => self.accesses(a, acc, cond),
            ExprKind::Binary(op @ (BinOp::Div | BinOp::Rem | BinOp::Shl | BinOp::Shr), _, b)
                if e.ty.is_some_and(|t| t.is_int()) && !never_faults(*op, b) =>
            {
                err(
                    e.span,
                    "an integer division or shift that may fault (a transformed nest would report faults in another order than the program's)",
                )
            }
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
                self.accesses(a, acc, cond)?;
                self.accesses(b, acc, cond)
            }
            ExprKind::Comma(a, b) => {
                self.accesses(a, acc, cond)?;
                self.accesses(b, acc, cond)
            }
            ExprKind::LogAnd(a, b) | ExprKind::LogOr(a, b) => {
                self.accesses(a, acc, cond)?;
                self.accesses(b, acc, true)
            }
            ExprKind::Cond(c, a, b) => {
                self.accesses(c, acc, cond)?;
                self.accesses(a, acc, true)?;
                self.accesses(b, acc, true)
            }
            ExprKind::Builtin(_, args) => {
                for a in args {
                    self.accesses(a, acc, cond)?;
                }
                Ok(())
            }
            ExprKind::Call(..) => err(e.span, "a call of a function of the program"),
        }
    }

    fn place(&mut self, p: &Place, also_read: bool, span: Span, acc: &mut Vec<Access>) -> R<()> {
        match p {
            Place::Var(v) => {
                if self.is_counter(*v) {
                    return err(span, "an assignment to a loop counter");
                }
                if also_read {
                    self.scalar_access(*v, AccessKind::Read, span, acc);
                }
                self.scalar_access(*v, AccessKind::Write, span, acc);
            }
            Place::Elem { array, indices, .. } => {
                let idx = self.index_list(indices)?;
                self.name(*array);
                if also_read {
                    acc.push(Access {
                        var: *array,
                        idx: idx.clone(),
                        kind: AccessKind::Read,
                        span,
                        expanded: false,
                    });
                }
                acc.push(Access {
                    var: *array,
                    idx,
                    kind: AccessKind::Write,
                    span,
                    expanded: false,
                });
            }
        }
        Ok(())
    }
}

/// Whether evaluating `e` can change anything but by faulting: an assignment, an increment
/// or a call (builtins are pure).
fn has_effect(e: &Expr) -> bool {
    let mut effect = false;
    e.walk(&mut |x| {
        effect |= matches!(
            x.kind,
            ExprKind::Assign { .. } | ExprKind::IncDec { .. } | ExprKind::Call(..)
        )
    });
    effect
}

/// Whether `a op b` can never fault: a constant divisor other than 0 and -1 (`INT_MIN / -1`),
/// a constant shift count within 0..32 (every integer type is at least 32 bits wide).
fn never_faults(op: BinOp, b: &Expr) -> bool {
    match (&strip_int_casts(b).kind, op) {
        (ExprKind::Int(c), BinOp::Div | BinOp::Rem) => *c != 0 && *c != -1,
        (ExprKind::Int(c), _) => (0..32).contains(c),
        _ => false,
    }
}

fn overflow(span: Span) -> NotScop {
    NotScop {
        span,
        reason: "an affine coefficient overflows".into(),
    }
}

fn first_span(stmts: &[Stmt]) -> Option<Span> {
    stmts.iter().find_map(stmt_span)
}

/// A representative span of a statement (for messages).
pub(crate) fn stmt_span(s: &Stmt) -> Option<Span> {
    match s {
        Stmt::Decl { var: _, init } => init.as_ref().map(|e| e.span),
        Stmt::DeclArray { span, .. } => Some(*span),
        Stmt::Expr(e) => Some(e.span),
        Stmt::If { cond, .. } => Some(cond.span),
        Stmt::While { cond, .. } | Stmt::DoWhile { cond, .. } => Some(cond.span),
        Stmt::ParFor { lo, .. } => Some(lo.span),
        Stmt::Versioned { span, .. } => Some(*span),
        Stmt::Block(b) => first_span(b),
        Stmt::Return(_, sp) => Some(*sp),
        Stmt::Break | Stmt::Continue => None,
    }
}

/// Tries to model `stmts` (a run of one statement list) as one SCoP; `counters` are
/// [`loop_only_counters`] of `f`.
pub fn build(f: &Function, stmts: &[Stmt], counters: &HashSet<VarId>) -> Result<Scop, NotScop> {
    let mut written = HashSet::new();
    written_scalars(stmts, &mut written);
    let mut b = Builder {
        f,
        outer_counters: counters,
        written,
        params: vec![],
        counters: vec![],
        constraints: vec![],
        sched: vec![],
        stmts: vec![],
        checks: vec![],
        names: HashMap::new(),
        used_names: HashSet::new(),
        declared: HashMap::new(),
        obligations: Vec::new(),
        seen_obligations: HashSet::new(),
    };
    b.list(stmts)?;
    // Arrays and what their declarations say about the extents.
    let mut seen = Vec::new();
    for s in b.stmts.iter().chain(&b.checks) {
        for a in &s.accesses {
            if !seen.contains(&a.var) {
                seen.push(a.var);
            }
        }
    }
    // An extent is the value of its expression at the function's entry, where the array was
    // bound: it is known in the SCoP only if the function never writes its variables.
    let mut written_anywhere = HashSet::new();
    written_scalars(&f.body, &mut written_anywhere);
    let mut arrays = Vec::new();
    for v in seen {
        let var = f.var(v);
        let extents = if var.is_param {
            // Counters are out of scope here, so an affine extent is one of parameters.
            var.dims
                .iter()
                .map(|d| {
                    let a = b
                        .aff(d)
                        .ok()
                        .filter(|a| a.terms.keys().all(|x| !written_anywhere.contains(x)));
                    if a.is_some() {
                        // Evaluated at the function's entry; none of its variables changed.
                        let _ = b.record(d, At::Here, "array extent");
                    }
                    a
                })
                .collect()
        } else {
            vec![None; if var.is_array() { rank_of(f, v) } else { 0 }]
        };
        arrays.push(ArrayInfo { var: v, extents });
    }
    let span = match (first_span(stmts), stmts.iter().rev().find_map(stmt_span)) {
        (Some(a), Some(z)) => a.to(z),
        (Some(a), None) => a,
        _ => Span::default(),
    };
    Ok(Scop {
        stmts: b.stmts,
        checks: b.checks,
        names: b.names,
        arrays,
        span,
        obligations: b.obligations,
        param_types: b
            .params
            .iter()
            .map(|p| (*p, f.var(*p).scalar_ty()))
            .collect(),
        params: b.params,
    })
}

fn rank_of(f: &Function, v: VarId) -> usize {
    match f.var(v).kind {
        tessera_ir::VarKind::Array { rank, .. } => rank,
        _ => 0,
    }
}

/// A region found in a statement list: statements `[start, end)` of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// First statement.
    pub start: usize,
    /// One past the last.
    pub end: usize,
    /// The model.
    pub scop: Scop,
}

/// Finds the SCoPs of one statement list (not recursing): maximal runs of statements that
/// model together and contain a loop. Rejected loop nests are reported in `rejected`.
pub fn find_in_list(
    f: &Function,
    list: &[Stmt],
    counters: &HashSet<VarId>,
    rejected: &mut Vec<NotScop>,
) -> Vec<Found> {
    let ok: Vec<Option<NotScop>> = list
        .iter()
        .map(|s| build(f, std::slice::from_ref(s), counters).err())
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < list.len() {
        if let Some(e) = &ok[i] {
            if contains_loop(&list[i]) {
                rejected.push(e.clone());
            }
            i += 1;
            continue;
        }
        let mut j = i;
        while j < list.len() && ok[j].is_none() {
            j += 1;
        }
        // Shrink from the end until the run models as a whole (a scalar written later in
        // the run may stop being a parameter).
        let mut end = j;
        let mut found = None;
        while end > i {
            if list[i..end].iter().any(contains_loop) {
                if let Ok(s) = build(f, &list[i..end], counters) {
                    found = Some(s);
                    break;
                }
            }
            end -= 1;
        }
        match found {
            Some(scop) => {
                out.push(Found {
                    start: i,
                    end,
                    scop,
                });
                i = end;
            }
            None => i += 1,
        }
    }
    out
}
