//! The reference interpreter: the executable definition of the Tessera kernel language.
//!
//! It walks the typed IR directly, checks every array access, integer division and shift,
//! and reports failures as [`RuntimeError`] values. It is meant to be obviously right, not
//! fast: every compiled or transformed kernel in the project is tested against it.
//!
//! Math builtins call the C library's functions (`exp`, `pow`, `fmin`, ...) so that results
//! match gcc-compiled C bit for bit.

#![warn(missing_docs)]
// RuntimeError carries the full index and shape of a failed access; it is returned once, on
// the cold path, so it is not boxed.
#![allow(clippy::result_large_err)]

use tessera_ir::*;

mod libm {
    //! The C math library, called directly so that results equal those of compiled C.
    extern "C" {
        pub fn exp(x: f64) -> f64;
        pub fn log(x: f64) -> f64;
        pub fn pow(x: f64, y: f64) -> f64;
        pub fn sin(x: f64) -> f64;
        pub fn cos(x: f64) -> f64;
        pub fn tanh(x: f64) -> f64;
        pub fn expf(x: f32) -> f32;
        pub fn logf(x: f32) -> f32;
        pub fn powf(x: f32, y: f32) -> f32;
        pub fn sinf(x: f32) -> f32;
        pub fn cosf(x: f32) -> f32;
        pub fn tanhf(x: f32) -> f32;
    }
}

/// Resource limits of one call.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Maximum depth of nested calls (the entry is depth 1).
    pub max_call_depth: usize,
    /// Maximum bytes of live local arrays.
    pub arena_bytes: u64,
    /// Maximum number of loop iterations plus calls; `None` for no limit.
    pub max_steps: Option<u64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_call_depth: 10_000,
            arena_bytes: 8 << 30,
            max_steps: None,
        }
    }
}

/// A view of (part of) a buffer: offset of its first element and its shape.
#[derive(Clone, Debug)]
struct View {
    buf: usize,
    offset: usize,
    shape: Vec<i64>,
}

struct Frame {
    func: FuncId,
    vals: Vec<Scalar>,
    views: Vec<Option<View>>,
}

enum Flow {
    Normal,
    Break,
    Continue,
    Return(Option<Scalar>),
}

type R<T> = Result<T, RuntimeError>;

struct Machine<'p> {
    prog: &'p Program,
    heap: Vec<ArrayElems>,
    arena_used: u64,
    depth: usize,
    steps: u64,
    limits: Limits,
}

fn zero(t: ScalarTy) -> Scalar {
    Scalar::I32(0).convert(t)
}

/// Evaluates the declared extents of the array parameters of `func`, given its scalar
/// arguments (entries of `args` for array parameters are ignored). Returns one shape per
/// parameter (`None` for scalars).
pub fn declared_shapes(
    prog: &Program,
    func: FuncId,
    args: &[Option<Scalar>],
) -> Result<Vec<Option<Vec<i64>>>, RuntimeError> {
    let f = prog.func(func);
    let mut m = Machine {
        prog,
        heap: vec![],
        arena_used: 0,
        depth: 1,
        steps: 0,
        limits: Limits::default(),
    };
    let mut fr = Frame {
        func,
        vals: f.vars.iter().map(|v| zero(v.scalar_ty())).collect(),
        views: vec![None; f.vars.len()],
    };
    for (p, a) in f.params.iter().zip(args) {
        if let (VarKind::Scalar(t), Some(a)) = (&f.var(*p).kind, a) {
            fr.vals[p.0 as usize] = a.convert(*t);
        }
    }
    let mut out = Vec::new();
    for p in &f.params {
        let v = f.var(*p);
        if v.is_array() {
            let mut shape = Vec::new();
            for d in &v.dims {
                shape.push(m.eval(&mut fr, d)?.as_i64());
            }
            out.push(Some(shape));
        } else {
            out.push(None);
        }
    }
    Ok(out)
}

/// Checks that `args` can be bound to the parameters of `func` at all, before anything
/// runs: one argument per parameter; a scalar for each scalar parameter and an array of the
/// parameter's element type for each array parameter; each array's shape describes exactly
/// its elements (the product of the extents, computed without overflow, equals the number
/// of elements) and every extent fits in `long` (the language's index type). Every back end
/// runs this check first, so malformed [`ArrayData`] (its fields are public) is an
/// [`ErrorKind::BadCall`] naming the argument, never an out-of-bounds access. The declared
/// shapes are checked afterwards ([`ErrorKind::ShapeMismatch`]).
pub fn check_args(prog: &Program, func: FuncId, args: &[ArgValue]) -> Result<(), RuntimeError> {
    let f = prog.func(func);
    let bad = |loc: Span, message: String| RuntimeError {
        kind: ErrorKind::BadCall { message },
        function: f.name.clone(),
        loc: loc.loc(),
    };
    if args.len() != f.params.len() {
        return Err(bad(
            f.span,
            format!(
                "`{}` takes {} arguments, {} given",
                f.name,
                f.params.len(),
                args.len()
            ),
        ));
    }
    for (p, a) in f.params.iter().zip(args) {
        let v = f.var(*p);
        let fail = |what: String| Err(bad(v.span, format!("argument `{}`: {what}", v.name)));
        match (&v.kind, a) {
            (VarKind::Scalar(_), ArgValue::Scalar(_)) => {}
            (VarKind::Scalar(t), ArgValue::Array(d)) => {
                return fail(format!(
                    "expected a `{t}` scalar, given an array of `{}`",
                    d.elems.ty()
                ))
            }
            (VarKind::Array { elem, .. }, ArgValue::Scalar(s)) => {
                return fail(format!(
                    "expected an array of `{elem}`, given the scalar `{s}`"
                ))
            }
            (VarKind::Array { elem, .. }, ArgValue::Array(d)) => {
                if d.elems.ty() != *elem {
                    return fail(format!(
                        "expected an array of `{elem}`, given an array of `{}`",
                        d.elems.ty()
                    ));
                }
                let shape: String = d.shape.iter().map(|x| format!("[{x}]")).collect();
                if let Some(x) = d.shape.iter().find(|&&x| i64::try_from(x).is_err()) {
                    return fail(format!(
                        "shape {shape}: extent {x} does not fit in a `long`"
                    ));
                }
                let len = d.shape.iter().try_fold(1usize, |a, &x| a.checked_mul(x));
                if len != Some(d.elems.len()) {
                    return fail(format!(
                        "shape {shape} does not describe the {} elements given",
                        d.elems.len()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Calls `func` with `args` (one per parameter, in order). Arrays are modified in place.
/// Returns the function's value (`None` for `void`).
///
/// The arguments are checked first ([`check_args`]: count, kinds, element types, shapes
/// that describe their elements; [`ErrorKind::BadCall`]). Each array argument's shape must
/// then equal the parameter's declared shape evaluated from the scalar arguments; otherwise
/// the call fails with [`ErrorKind::ShapeMismatch`].
pub fn call(
    prog: &Program,
    func: FuncId,
    args: &mut [ArgValue],
    limits: Limits,
) -> Result<Option<Scalar>, RuntimeError> {
    check_args(prog, func, args)?;
    let f = prog.func(func);
    let mut m = Machine {
        prog,
        heap: vec![],
        arena_used: 0,
        depth: 1,
        steps: 0,
        limits,
    };
    let mut fr = Frame {
        func,
        vals: f.vars.iter().map(|v| zero(v.scalar_ty())).collect(),
        views: vec![None; f.vars.len()],
    };
    let mut buf_of = Vec::new();
    for (p, a) in f.params.iter().zip(args.iter_mut()) {
        match a {
            ArgValue::Scalar(s) => fr.vals[p.0 as usize] = s.convert(f.var(*p).scalar_ty()),
            ArgValue::Array(d) => {
                let elems = std::mem::replace(&mut d.elems, ArrayElems::Bool(vec![]));
                buf_of.push((m.heap.len(), p));
                fr.views[p.0 as usize] = Some(View {
                    buf: m.heap.len(),
                    offset: 0,
                    shape: d.shape.iter().map(|&x| x as i64).collect(),
                });
                m.heap.push(elems);
            }
        }
    }
    let result = (|| {
        for p in &f.params {
            let v = f.var(*p);
            if v.is_array() {
                let mut shape = Vec::new();
                for d in &v.dims {
                    shape.push(m.eval(&mut fr, d)?.as_i64());
                }
                let given = fr.views[p.0 as usize]
                    .as_ref()
                    .map(|x| x.shape.clone())
                    .unwrap_or_default();
                if shape != given {
                    return Err(RuntimeError {
                        kind: ErrorKind::ShapeMismatch {
                            param: v.name.clone(),
                            function: f.name.clone(),
                            given,
                            declared: shape,
                        },
                        function: f.name.clone(),
                        loc: v.span.loc(),
                    });
                }
            }
        }
        m.run_body(&mut fr)
    })();
    // Give the arrays back, whatever happened.
    let mut heap = std::mem::take(&mut m.heap);
    for (a, (b, _)) in args
        .iter_mut()
        .filter(|a| matches!(a, ArgValue::Array(_)))
        .zip(buf_of)
    {
        if let ArgValue::Array(d) = a {
            d.elems = std::mem::replace(&mut heap[b], ArrayElems::Bool(vec![]));
        }
    }
    result
}

impl<'p> Machine<'p> {
    fn func(&self, fr: &Frame) -> &'p Function {
        self.prog.func(fr.func)
    }

    fn fail(&self, fr: &Frame, kind: ErrorKind, span: Span) -> RuntimeError {
        RuntimeError {
            kind,
            function: self.func(fr).name.clone(),
            loc: span.loc(),
        }
    }

    fn step(&mut self, fr: &Frame, span: Span) -> R<()> {
        self.steps += 1;
        if let Some(max) = self.limits.max_steps {
            if self.steps > max {
                return Err(self.fail(fr, ErrorKind::StepLimit { limit: max }, span));
            }
        }
        Ok(())
    }

    fn run_body(&mut self, fr: &mut Frame) -> R<Option<Scalar>> {
        let f = self.func(fr);
        match self.exec_list(fr, &f.body)? {
            Flow::Return(v) => Ok(v),
            _ => match f.ret {
                None => Ok(None),
                Some(_) => Err(self.fail(
                    fr,
                    ErrorKind::MissingReturn {
                        function: f.name.clone(),
                    },
                    f.span,
                )),
            },
        }
    }

    /// Runs a statement list; local arrays declared in it are freed at its end.
    fn exec_list(&mut self, fr: &mut Frame, stmts: &[Stmt]) -> R<Flow> {
        let mark = self.heap.len();
        let mut flow = Flow::Normal;
        for s in stmts {
            flow = self.exec(fr, s)?;
            if !matches!(flow, Flow::Normal) {
                break;
            }
        }
        while self.heap.len() > mark {
            let b = self.heap.pop().unwrap();
            self.arena_used -= (b.len() * b.ty().size_bytes()) as u64;
        }
        Ok(flow)
    }

    fn exec(&mut self, fr: &mut Frame, s: &Stmt) -> R<Flow> {
        // `else if` chains nest statements as deep as they are long.
        stacker::maybe_grow(128 * 1024, 8 * 1024 * 1024, || self.exec_inner(fr, s))
    }

    fn exec_inner(&mut self, fr: &mut Frame, s: &Stmt) -> R<Flow> {
        match s {
            Stmt::Decl { var, init } => {
                let t = self.func(fr).var(*var).scalar_ty();
                let v = match init {
                    Some(e) => self.eval(fr, e)?,
                    None => zero(t),
                };
                fr.vals[var.0 as usize] = v;
            }
            Stmt::DeclArray { var, dims, span } => {
                let mut shape = Vec::new();
                for d in dims {
                    shape.push(self.eval(fr, d)?.as_i64());
                }
                let v = self.func(fr).var(*var);
                let elem = v.scalar_ty();
                let len =
                    shape.iter().try_fold(
                        1u64,
                        |a, &d| if d < 0 { None } else { a.checked_mul(d as u64) },
                    );
                let Some(len) = len else {
                    return Err(self.fail(
                        fr,
                        ErrorKind::BadExtent {
                            array: v.name.clone(),
                            shape,
                        },
                        *span,
                    ));
                };
                let bytes = len.saturating_mul(elem.size_bytes() as u64);
                let total = self.arena_used.saturating_add(bytes);
                let oom = ErrorKind::OutOfMemory {
                    requested: total,
                    limit: self.limits.arena_bytes,
                };
                if total > self.limits.arena_bytes {
                    return Err(self.fail(fr, oom, *span));
                }
                let Some(elems) = ArrayElems::zeros(elem, len as usize) else {
                    return Err(self.fail(fr, oom, *span));
                };
                self.arena_used = total;
                fr.views[var.0 as usize] = Some(View {
                    buf: self.heap.len(),
                    offset: 0,
                    shape,
                });
                self.heap.push(elems);
            }
            Stmt::Expr(e) => {
                self.eval_any(fr, e)?;
            }
            Stmt::If { cond, then, els } => {
                let c = self.eval_bool(fr, cond)?;
                return self.exec_list(fr, if c { then } else { els });
            }
            Stmt::While {
                cond, body, step, ..
            } => loop {
                if !self.eval_bool(fr, cond)? {
                    break;
                }
                self.step(fr, cond.span)?;
                match self.exec_list(fr, body)? {
                    Flow::Break => break,
                    r @ Flow::Return(_) => return Ok(r),
                    Flow::Normal | Flow::Continue => {}
                }
                if let Some(st) = step {
                    self.eval_any(fr, st)?;
                }
            },
            Stmt::ParFor { var, lo, hi, body } => {
                // Sequential and in order; the scalars are the loop's own (firstprivate): the
                // function's values are restored afterwards.
                let span = lo.span;
                let (lo, hi) = (self.eval(fr, lo)?.as_i64(), self.eval(fr, hi)?.as_i64());
                let saved = fr.vals.clone();
                for v in lo..hi {
                    fr.vals[var.0 as usize] = Scalar::I64(v);
                    self.step(fr, span)?;
                    if let r @ Flow::Return(_) = self.exec_list(fr, body)? {
                        return Ok(r);
                    }
                }
                fr.vals = saved;
            }
            Stmt::DoWhile { body, cond } => loop {
                self.step(fr, cond.span)?;
                match self.exec_list(fr, body)? {
                    Flow::Break => break,
                    r @ Flow::Return(_) => return Ok(r),
                    Flow::Normal | Flow::Continue => {}
                }
                if !self.eval_bool(fr, cond)? {
                    break;
                }
            },
            // The optimised version (the JIT may run either; they agree bit for bit).
            Stmt::Versioned { fast, .. } => return self.exec_list(fr, fast),
            Stmt::Block(b) => return self.exec_list(fr, b),
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Continue => return Ok(Flow::Continue),
            Stmt::Return(e, _) => {
                let v = match e {
                    Some(e) => Some(self.eval(fr, e)?),
                    None => None,
                };
                return Ok(Flow::Return(v));
            }
        }
        Ok(Flow::Normal)
    }

    fn eval_bool(&mut self, fr: &mut Frame, e: &Expr) -> R<bool> {
        match self.eval(fr, e)? {
            Scalar::Bool(b) => Ok(b),
            other => unreachable!("condition of type {}", other.ty()),
        }
    }

    /// Evaluates an expression that may be a void call.
    fn eval_any(&mut self, fr: &mut Frame, e: &Expr) -> R<Option<Scalar>> {
        match &e.kind {
            ExprKind::Call(f, args) => self.call(fr, *f, args, e.span),
            ExprKind::Comma(a, b) => {
                self.eval_any(fr, a)?;
                self.eval_any(fr, b)
            }
            _ => self.eval(fr, e).map(Some),
        }
    }

    /// Computes the flat element offset of `array[indices]`, checking every index.
    fn address(
        &mut self,
        fr: &mut Frame,
        array: VarId,
        indices: &[Expr],
        span: Span,
    ) -> R<(usize, usize)> {
        let mut idx = Vec::with_capacity(indices.len());
        for i in indices {
            idx.push(self.eval(fr, i)?.as_i64());
        }
        let view = fr.views[array.0 as usize]
            .as_ref()
            .expect("array declared before use");
        let mut off = 0usize;
        for (d, (&i, &n)) in idx.iter().zip(&view.shape).enumerate() {
            if i < 0 || i >= n {
                let name = self.func(fr).var(array).name.clone();
                let shape = view.shape.clone();
                return Err(self.fail(
                    fr,
                    ErrorKind::IndexOutOfBounds {
                        array: name,
                        index: idx,
                        shape,
                        dim: d,
                    },
                    span,
                ));
            }
            off = off * n as usize + i as usize;
        }
        Ok((view.buf, view.offset + off))
    }

    fn read(
        &mut self,
        fr: &mut Frame,
        p: &Place,
        span: Span,
    ) -> R<(Option<(usize, usize)>, Scalar)> {
        match p {
            Place::Var(v) => Ok((None, fr.vals[v.0 as usize])),
            Place::Elem { array, indices, .. } => {
                let (b, o) = self.address(fr, *array, indices, span)?;
                Ok((Some((b, o)), self.heap[b].get(o)))
            }
        }
    }

    fn write(&mut self, fr: &mut Frame, p: &Place, addr: Option<(usize, usize)>, v: Scalar) {
        match (p, addr) {
            (Place::Var(var), _) => fr.vals[var.0 as usize] = v,
            (Place::Elem { .. }, Some((b, o))) => self.heap[b].set(o, v),
            _ => unreachable!(),
        }
    }

    fn place_addr(&mut self, fr: &mut Frame, p: &Place, span: Span) -> R<Option<(usize, usize)>> {
        match p {
            Place::Var(_) => Ok(None),
            Place::Elem { array, indices, .. } => self.address(fr, *array, indices, span).map(Some),
        }
    }

    fn eval(&mut self, fr: &mut Frame, e: &Expr) -> R<Scalar> {
        // Deep recursion (in the kernel, or in nested expressions) grows the stack on demand
        // instead of overflowing the caller's thread.
        stacker::maybe_grow(128 * 1024, 8 * 1024 * 1024, || self.eval_inner(fr, e))
    }

    fn eval_inner(&mut self, fr: &mut Frame, e: &Expr) -> R<Scalar> {
        let ty = e.ty;
        Ok(match &e.kind {
            ExprKind::Int(v) => Scalar::I64(*v).convert(e.sty()),
            ExprKind::Float(v) => match e.sty() {
                ScalarTy::F32 => Scalar::F32(*v as f32),
                _ => Scalar::F64(*v),
            },
            ExprKind::Var(v) => fr.vals[v.0 as usize],
            ExprKind::Load { array, indices, .. } => {
                let (b, o) = self.address(fr, *array, indices, e.span)?;
                self.heap[b].get(o)
            }
            ExprKind::Assign { place, op, value } => {
                let pt = e.sty();
                match op {
                    None => {
                        let addr = self.place_addr(fr, place, e.span)?;
                        let v = self.eval(fr, value)?;
                        self.write(fr, place, addr, v);
                        v
                    }
                    Some((bop, opt)) => {
                        let (addr, old) = self.read(fr, place, e.span)?;
                        let v = self.eval(fr, value)?;
                        let r = self
                            .binop(fr, *bop, old.convert(*opt), v, e.span)?
                            .convert(pt);
                        self.write(fr, place, addr, r);
                        r
                    }
                }
            }
            ExprKind::IncDec { place, inc, prefix } => {
                let pt = e.sty();
                let (addr, old) = self.read(fr, place, e.span)?;
                let wt = sema_promote(pt);
                let one = Scalar::I32(1).convert(wt);
                let op = if *inc { BinOp::Add } else { BinOp::Sub };
                let new = self
                    .binop(fr, op, old.convert(wt), one, e.span)?
                    .convert(pt);
                self.write(fr, place, addr, new);
                if *prefix {
                    new
                } else {
                    old
                }
            }
            ExprKind::Unary(op, a) => {
                let a = self.eval(fr, a)?;
                match (op, a) {
                    (UnOp::Not, Scalar::Bool(b)) => Scalar::Bool(!b),
                    (UnOp::Neg, Scalar::I32(x)) => Scalar::I32(x.wrapping_neg()),
                    (UnOp::Neg, Scalar::I64(x)) => Scalar::I64(x.wrapping_neg()),
                    (UnOp::Neg, Scalar::F32(x)) => Scalar::F32(-x),
                    (UnOp::Neg, Scalar::F64(x)) => Scalar::F64(-x),
                    (UnOp::BitNot, Scalar::I32(x)) => Scalar::I32(!x),
                    (UnOp::BitNot, Scalar::I64(x)) => Scalar::I64(!x),
                    (op, a) => unreachable!("{op:?} on {}", a.ty()),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let a = self.eval(fr, a)?;
                let b = self.eval(fr, b)?;
                self.binop(fr, *op, a, b, e.span)?
            }
            ExprKind::Cmp(op, a, b) => {
                let a = self.eval(fr, a)?;
                let b = self.eval(fr, b)?;
                let r = match (a, b) {
                    (Scalar::I32(x), Scalar::I32(y)) => cmp(*op, x, y),
                    (Scalar::I64(x), Scalar::I64(y)) => cmp(*op, x, y),
                    (Scalar::F32(x), Scalar::F32(y)) => cmp(*op, x, y),
                    (Scalar::F64(x), Scalar::F64(y)) => cmp(*op, x, y),
                    (a, b) => unreachable!("compare {} with {}", a.ty(), b.ty()),
                };
                Scalar::I32(r as i32)
            }
            ExprKind::LogAnd(a, b) => {
                Scalar::I32((self.eval_bool(fr, a)? && self.eval_bool(fr, b)?) as i32)
            }
            ExprKind::LogOr(a, b) => {
                Scalar::I32((self.eval_bool(fr, a)? || self.eval_bool(fr, b)?) as i32)
            }
            ExprKind::Cond(c, a, b) => {
                if self.eval_bool(fr, c)? {
                    self.eval(fr, a)?
                } else {
                    self.eval(fr, b)?
                }
            }
            ExprKind::Cast(a) => self.eval(fr, a)?.convert(e.sty()),
            ExprKind::Call(f, args) => match self.call(fr, *f, args, e.span)? {
                Some(v) => v,
                None => unreachable!("void call used as a value"),
            },
            ExprKind::Builtin(b, args) => {
                let mut xs = [Scalar::I32(0); 2];
                for (k, a) in args.iter().enumerate() {
                    xs[k] = self.eval(fr, a)?;
                }
                builtin(*b, xs[0], xs[1])
            }
            ExprKind::Comma(a, b) => {
                self.eval_any(fr, a)?;
                self.eval(fr, b)?
            }
        })
        .inspect(|v: &Scalar| {
            debug_assert_eq!(
                Some(v.ty()),
                ty,
                "interpreter produced a value of the wrong type"
            );
        })
    }

    fn binop(&self, fr: &Frame, op: BinOp, a: Scalar, b: Scalar, span: Span) -> R<Scalar> {
        use Scalar::*;
        macro_rules! int {
            ($x:expr, $y:expr, $w:expr, $ctor:ident) => {{
                let (x, y) = ($x, $y);
                $ctor(match op {
                    BinOp::Add => x.wrapping_add(y),
                    BinOp::Sub => x.wrapping_sub(y),
                    BinOp::Mul => x.wrapping_mul(y),
                    BinOp::Div | BinOp::Rem if y == 0 => {
                        return Err(self.fail(fr, ErrorKind::DivisionByZero, span))
                    }
                    BinOp::Div => x.wrapping_div(y),
                    BinOp::Rem => x.wrapping_rem(y),
                    BinOp::And => x & y,
                    BinOp::Or => x | y,
                    BinOp::Xor => x ^ y,
                    BinOp::Shl | BinOp::Shr => unreachable!(),
                })
            }};
        }
        macro_rules! flt {
            ($x:expr, $y:expr, $ctor:ident) => {{
                let (x, y) = ($x, $y);
                $ctor(match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div => x / y,
                    _ => unreachable!("{op:?} on floats"),
                })
            }};
        }
        if matches!(op, BinOp::Shl | BinOp::Shr) {
            let count = b.as_i64();
            let width = if a.ty() == ScalarTy::I64 { 64 } else { 32 };
            if !(0..width as i64).contains(&count) {
                return Err(self.fail(fr, ErrorKind::InvalidShift { count, width }, span));
            }
            let c = count as u32;
            return Ok(match (op, a) {
                (BinOp::Shl, I32(x)) => I32(x.wrapping_shl(c)),
                (BinOp::Shl, I64(x)) => I64(x.wrapping_shl(c)),
                (BinOp::Shr, I32(x)) => I32(x >> c),
                (BinOp::Shr, I64(x)) => I64(x >> c),
                (_, a) => unreachable!("shift of {}", a.ty()),
            });
        }
        Ok(match (a, b) {
            (I32(x), I32(y)) => int!(x, y, 32, I32),
            (I64(x), I64(y)) => int!(x, y, 64, I64),
            (F32(x), F32(y)) => flt!(x, y, F32),
            (F64(x), F64(y)) => flt!(x, y, F64),
            (a, b) => unreachable!("{op:?} on {} and {}", a.ty(), b.ty()),
        })
    }

    fn call(&mut self, fr: &mut Frame, fid: FuncId, args: &[Arg], span: Span) -> R<Option<Scalar>> {
        self.step(fr, span)?;
        if self.depth >= self.limits.max_call_depth {
            return Err(self.fail(
                fr,
                ErrorKind::StackOverflow {
                    limit: self.limits.max_call_depth,
                },
                span,
            ));
        }
        let callee = self.prog.func(fid);
        let mut nf = Frame {
            func: fid,
            vals: callee.vars.iter().map(|v| zero(v.scalar_ty())).collect(),
            views: vec![None; callee.vars.len()],
        };
        let mut arg_spans = Vec::new();
        for (p, a) in callee.params.iter().zip(args) {
            match a {
                Arg::Scalar(e) => {
                    nf.vals[p.0 as usize] = self.eval(fr, e)?;
                    arg_spans.push(e.span);
                }
                Arg::Array {
                    array,
                    prefix,
                    span: aspan,
                } => {
                    arg_spans.push(*aspan);
                    let view = fr.views[array.0 as usize]
                        .clone()
                        .expect("array declared before use");
                    let k = prefix.len();
                    let mut idx = Vec::with_capacity(k);
                    for i in prefix {
                        idx.push(self.eval(fr, i)?.as_i64());
                    }
                    let mut off = 0usize;
                    for (d, &i) in idx.iter().enumerate() {
                        let n = view.shape[d];
                        if i < 0 || i >= n {
                            let name = self.func(fr).var(*array).name.clone();
                            // Report the full shape, with the unindexed dimensions as 0.
                            let mut full = idx.clone();
                            full.resize(view.shape.len(), 0);
                            return Err(self.fail(
                                fr,
                                ErrorKind::IndexOutOfBounds {
                                    array: name,
                                    index: full,
                                    shape: view.shape.clone(),
                                    dim: d,
                                },
                                *aspan,
                            ));
                        }
                        off = off * n as usize + i as usize;
                    }
                    let inner: usize = view.shape[k..].iter().map(|&x| x as usize).product();
                    nf.views[p.0 as usize] = Some(View {
                        buf: view.buf,
                        offset: view.offset + off * inner,
                        shape: view.shape[k..].to_vec(),
                    });
                }
            }
        }
        // Declared extents of array parameters, evaluated in the callee over its scalars.
        for (p, aspan) in callee.params.iter().zip(&arg_spans) {
            let v = callee.var(*p);
            if !v.is_array() {
                continue;
            }
            let mut declared = Vec::new();
            for d in &v.dims {
                declared.push(self.eval(&mut nf, d)?.as_i64());
            }
            let given = nf.views[p.0 as usize].as_ref().unwrap().shape.clone();
            let ok = declared.len() == given.len()
                && declared[1..] == given[1..]
                && declared[0] >= 0
                && declared[0] <= given[0];
            if !ok {
                return Err(self.fail(
                    fr,
                    ErrorKind::ShapeMismatch {
                        param: v.name.clone(),
                        function: callee.name.clone(),
                        given,
                        declared,
                    },
                    *aspan,
                ));
            }
            nf.views[p.0 as usize].as_mut().unwrap().shape = declared;
        }
        self.depth += 1;
        let r = self.run_body(&mut nf);
        self.depth -= 1;
        r
    }
}

fn sema_promote(t: ScalarTy) -> ScalarTy {
    match t {
        ScalarTy::Bool | ScalarTy::I8 => ScalarTy::I32,
        t => t,
    }
}

fn cmp<T: PartialOrd>(op: CmpOp, x: T, y: T) -> bool {
    match op {
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
    }
}

/// Evaluates a math builtin on already-converted arguments (the second is ignored for
/// unary builtins).
pub fn builtin(b: Builtin, x: Scalar, y: Scalar) -> Scalar {
    use Scalar::*;
    // SAFETY: these are pure C math functions taking and returning plain numbers.
    unsafe {
        match (b, x, y) {
            (Builtin::Min, I32(a), I32(b)) => I32(a.min(b)),
            (Builtin::Min, I64(a), I64(b)) => I64(a.min(b)),
            (Builtin::Max, I32(a), I32(b)) => I32(a.max(b)),
            (Builtin::Max, I64(a), I64(b)) => I64(a.max(b)),
            (Builtin::Sqrt, F64(a), _) => F64(a.sqrt()),
            (Builtin::Exp, F64(a), _) => F64(libm::exp(a)),
            (Builtin::Log, F64(a), _) => F64(libm::log(a)),
            (Builtin::Pow, F64(a), F64(b)) => F64(libm::pow(a, b)),
            (Builtin::Fabs, F64(a), _) => F64(a.abs()),
            (Builtin::Floor, F64(a), _) => F64(a.floor()),
            (Builtin::Ceil, F64(a), _) => F64(a.ceil()),
            (Builtin::Sin, F64(a), _) => F64(libm::sin(a)),
            (Builtin::Cos, F64(a), _) => F64(libm::cos(a)),
            (Builtin::Tanh, F64(a), _) => F64(libm::tanh(a)),
            (Builtin::Fmin, F64(a), F64(b)) => F64(tessera_ir::fmin_f64(a, b)),
            (Builtin::Fmax, F64(a), F64(b)) => F64(tessera_ir::fmax_f64(a, b)),
            (Builtin::Sqrt, F32(a), _) => F32(a.sqrt()),
            (Builtin::Exp, F32(a), _) => F32(libm::expf(a)),
            (Builtin::Log, F32(a), _) => F32(libm::logf(a)),
            (Builtin::Pow, F32(a), F32(b)) => F32(libm::powf(a, b)),
            (Builtin::Fabs, F32(a), _) => F32(a.abs()),
            (Builtin::Floor, F32(a), _) => F32(a.floor()),
            (Builtin::Ceil, F32(a), _) => F32(a.ceil()),
            (Builtin::Sin, F32(a), _) => F32(libm::sinf(a)),
            (Builtin::Cos, F32(a), _) => F32(libm::cosf(a)),
            (Builtin::Tanh, F32(a), _) => F32(libm::tanhf(a)),
            (Builtin::Fmin, F32(a), F32(b)) => F32(tessera_ir::fmin_f32(a, b)),
            (Builtin::Fmax, F32(a), F32(b)) => F32(tessera_ir::fmax_f32(a, b)),
            (b, x, _) => unreachable!("builtin {b:?} on {}", x.ty()),
        }
    }
}
