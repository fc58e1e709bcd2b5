//! Tessera's typed intermediate representation (TIR).
//!
//! The TIR is what the type checker (`tessera-sema`) produces and what every back end consumes:
//! the reference interpreter (`tessera-interp`), the LLVM JIT, and the polyhedral optimiser.
//! It is fully explicit: every implicit C conversion is a [`ExprKind::Cast`], every operator
//! works on operands of one type, every condition has type [`ScalarTy::Bool`], and every
//! variable is resolved to a [`VarId`] in its function's variable table.
//!
//! The module also holds the values exchanged with a kernel call ([`ArrayData`], [`Scalar`])
//! and the run-time errors every back end reports identically ([`RuntimeError`]).

#![warn(missing_docs)]

use std::fmt;

pub mod alias;
pub mod npy;
pub mod print;
mod value;
pub use value::*;

/// A source range with the line and column of its start (1-based), resolved at lex time so
/// that every back end can report locations without the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// Byte offset of the first byte.
    pub lo: u32,
    /// Byte offset one past the last byte.
    pub hi: u32,
    /// 1-based line of `lo`.
    pub line: u32,
    /// 1-based column (in bytes) of `lo`.
    pub col: u32,
}

impl Span {
    /// The smallest span covering `self` and `other` (line/col of the earlier one).
    pub fn to(self, other: Span) -> Span {
        let (first, _) = if self.lo <= other.lo {
            (self, other)
        } else {
            (other, self)
        };
        Span {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
            line: first.line,
            col: first.col,
        }
    }
    /// The source location (line and column) of the start of the span.
    pub fn loc(self) -> Loc {
        Loc {
            line: self.line,
            col: self.col,
        }
    }
}

/// A line/column source location, as carried by run-time errors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Loc {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// The scalar types of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarTy {
    /// `bool` / `_Bool`: 0 or 1.
    Bool,
    /// `char` / `signed char` / `int8_t`: 8-bit two's complement. A storage type only, like
    /// `bool`: the type checker promotes every value read to `int` (C's integer promotions)
    /// and converts every value stored (integers keep their low 8 bits), so back ends see
    /// `char` only in variables, array elements, loads, stores, returns, `?:`/`,` results
    /// and casts, never as the operand of an operator.
    I8,
    /// `int` / `int32_t`: 32-bit two's complement, wrapping.
    I32,
    /// `long` / `int64_t` / `long long`: 64-bit two's complement, wrapping.
    I64,
    /// `float`: IEEE binary32.
    F32,
    /// `double`: IEEE binary64.
    F64,
}

impl ScalarTy {
    /// True for `int` and `long`, the integer types that operators compute in (not `bool`
    /// or `char`, whose values are promoted to `int` before any operator sees them).
    pub fn is_int(self) -> bool {
        matches!(self, ScalarTy::I32 | ScalarTy::I64)
    }
    /// True for every integer type: `bool`, `char`, `int` and `long`.
    pub fn is_integral(self) -> bool {
        !self.is_float()
    }
    /// True for `float` and `double`.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarTy::F32 | ScalarTy::F64)
    }
    /// Size of one element in bytes (bool arrays use one byte per element).
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarTy::Bool | ScalarTy::I8 => 1,
            ScalarTy::I32 | ScalarTy::F32 => 4,
            ScalarTy::I64 | ScalarTy::F64 => 8,
        }
    }
    /// The C spelling of the type.
    pub fn c_name(self) -> &'static str {
        match self {
            ScalarTy::Bool => "bool",
            ScalarTy::I8 => "char",
            ScalarTy::I32 => "int",
            ScalarTy::I64 => "long",
            ScalarTy::F32 => "float",
            ScalarTy::F64 => "double",
        }
    }
    /// The NumPy dtype string of an array of this element type.
    pub fn npy_descr(self) -> &'static str {
        match self {
            ScalarTy::Bool => "|b1",
            ScalarTy::I8 => "|i1",
            ScalarTy::I32 => "<i4",
            ScalarTy::I64 => "<i8",
            ScalarTy::F32 => "<f4",
            ScalarTy::F64 => "<f8",
        }
    }
}

impl fmt::Display for ScalarTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.c_name())
    }
}

/// Index of a variable in its function's [`Function::vars`] table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// Index of a function in [`Program::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

/// What a variable is.
#[derive(Clone, Debug, PartialEq)]
pub enum VarKind {
    /// A scalar parameter or local.
    Scalar(ScalarTy),
    /// An array (parameter or local) of the given element type and rank. Its extents are the
    /// expressions in [`Var::dims`], evaluated once when the function is entered (parameters)
    /// or when the declaration executes (locals).
    Array {
        /// Element type.
        elem: ScalarTy,
        /// Number of dimensions.
        rank: usize,
    },
}

/// A variable of a function: parameter or local.
#[derive(Clone, Debug, PartialEq)]
pub struct Var {
    /// Source name (not unique within a function: inner blocks may shadow).
    pub name: String,
    /// Scalar or array.
    pub kind: VarKind,
    /// Extents of an array parameter (expressions over earlier scalar parameters). Empty for
    /// scalars and for local arrays (whose extents are in [`Stmt::DeclArray`]).
    pub dims: Vec<Expr>,
    /// True for parameters.
    pub is_param: bool,
    /// A local array the polyhedral optimiser introduced (a scalar of the source expanded
    /// into one element per loop iteration, see `tessera_poly::gen`): its storage does not
    /// count toward the arena limit of the program's own local arrays, so that optimising
    /// never turns a run into an `out of memory` failure. Always written before it is read.
    pub scratch: bool,
    /// Where it is declared.
    pub span: Span,
}

impl Var {
    /// The scalar type of a scalar variable, or the element type of an array.
    pub fn scalar_ty(&self) -> ScalarTy {
        match self.kind {
            VarKind::Scalar(t) => t,
            VarKind::Array { elem, .. } => elem,
        }
    }
    /// True if the variable is an array.
    pub fn is_array(&self) -> bool {
        matches!(self.kind, VarKind::Array { .. })
    }
}

/// A whole checked translation unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Functions in source order (only those with bodies).
    pub functions: Vec<Function>,
    /// The object-like `#define`s after command-line overrides, name → replacement text.
    pub defines: Vec<(String, String)>,
}

impl Program {
    /// Finds a function by name.
    pub fn function(&self, name: &str) -> Option<(FuncId, &Function)> {
        self.functions
            .iter()
            .enumerate()
            .find(|(_, f)| f.name == name)
            .map(|(i, f)| (FuncId(i as u32), f))
    }
    /// The function with the given id.
    pub fn func(&self, id: FuncId) -> &Function {
        &self.functions[id.0 as usize]
    }
}

/// A function definition.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Its name.
    pub name: String,
    /// Return type; `None` for `void`.
    pub ret: Option<ScalarTy>,
    /// Parameters, in order, as indices into `vars`.
    pub params: Vec<VarId>,
    /// All variables: parameters first, then locals in declaration order.
    pub vars: Vec<Var>,
    /// The body.
    pub body: Vec<Stmt>,
    /// The span of the function's name.
    pub span: Span,
}

impl Function {
    /// The variable with the given id.
    pub fn var(&self, v: VarId) -> &Var {
        &self.vars[v.0 as usize]
    }
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// A scalar declaration; without an initialiser the variable is zero.
    Decl {
        /// The variable.
        var: VarId,
        /// Initial value, already converted to the variable's type.
        init: Option<Expr>,
    },
    /// A local array declaration; extents are `long` expressions evaluated here; the elements
    /// are zero. Storage comes from the call's arena and lives until the function returns.
    DeclArray {
        /// The array variable.
        var: VarId,
        /// Extents (type `long`).
        dims: Vec<Expr>,
        /// Location of the declaration.
        span: Span,
    },
    /// An expression evaluated for its effects.
    Expr(Expr),
    /// `if`.
    If {
        /// Condition (type bool).
        cond: Expr,
        /// Then branch.
        then: Vec<Stmt>,
        /// Else branch (possibly empty).
        els: Vec<Stmt>,
    },
    /// `while (cond) body`, and `for` loops: `for (init; cond; step) body` is lowered to a
    /// block `{ init; While { cond, body, step } }` so that `continue` runs `step`.
    While {
        /// Condition (type bool).
        cond: Expr,
        /// Body.
        body: Vec<Stmt>,
        /// Step expression of a `for` loop, run after the body and on `continue`.
        step: Option<Expr>,
        /// True if this was written as a `for` loop (for printing and loop analysis).
        is_for: bool,
        /// False where LLVM's loop vectorizer must leave the loop alone (`llvm.loop`
        /// metadata): register promotion (`tessera_poly::promote`) clears it on loops that
        /// keep many accumulators in registers, whose body the SLP vectorizer packs; under
        /// `--fast-math` the loop vectorizer would turn each accumulator into a reduction of
        /// its own.
        vectorize: bool,
    },
    /// A parallel loop, produced by the polyhedral optimiser for a loop whose iterations it
    /// proved independent: `body` runs once for every `var` in `lo..hi` (step 1, `long`
    /// bounds evaluated once), in any order and possibly concurrently. Every iteration sees
    /// its own copy of the function's scalars as they were when the loop started (C's
    /// `firstprivate`); arrays are shared. The body contains no `break`, `continue`,
    /// `return`, local array or call of a program function. Back ends may run it
    /// sequentially, in order.
    ParFor {
        /// The loop counter (type `long`).
        var: VarId,
        /// First value (type `long`).
        lo: Expr,
        /// One past the last value (type `long`).
        hi: Expr,
        /// Body.
        body: Vec<Stmt>,
    },
    /// Two versions of one region that compute the same results, bit for bit, and fail
    /// alike: the polyhedral optimiser's code (`fast`) and the code as written
    /// (`original`). A back end may run either on each execution. The JIT times the first
    /// executions of each on the machine and then keeps the faster (see
    /// `tessera_runtime::VersionSite`); the interpreter and the C emitter run `fast`.
    /// `site` numbers the region within the program (for reports).
    Versioned {
        /// The region's number within the program, from 0.
        site: u32,
        /// Where the region starts in the source.
        span: Span,
        /// The optimised code.
        fast: Vec<Stmt>,
        /// The code as written.
        original: Vec<Stmt>,
    },
    /// `do body while (cond);`
    DoWhile {
        /// Body.
        body: Vec<Stmt>,
        /// Condition (type bool).
        cond: Expr,
    },
    /// A nested block (its own scope in the source; only ordering matters here).
    Block(Vec<Stmt>),
    /// `break`.
    Break,
    /// `continue`.
    Continue,
    /// `return` with an optional value, already converted to the function's return type.
    Return(Option<Expr>, Span),
}

/// An expression with its type and source span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it computes.
    pub kind: ExprKind,
    /// Its type (`None` only for calls of void functions).
    pub ty: Option<ScalarTy>,
    /// Where it is in the source.
    pub span: Span,
}

impl Expr {
    /// The type of a non-void expression.
    ///
    /// # Panics
    /// If called on a void call; the type checker never puts those where a value is needed.
    pub fn sty(&self) -> ScalarTy {
        self.ty.expect("void expression used as a value")
    }
}

/// Binary arithmetic and bitwise operators. Both operands have the expression's type, except
/// shifts, whose right operand has its own (promoted) integer type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`, wrapping on integers.
    Add,
    /// `-`, wrapping on integers.
    Sub,
    /// `*`, wrapping on integers.
    Mul,
    /// `/`: truncating on integers; division by zero is a run-time error, `MIN / -1` wraps.
    Div,
    /// `%`: sign of the dividend; by zero is a run-time error; `MIN % -1` is 0.
    Rem,
    /// `&`.
    And,
    /// `|`.
    Or,
    /// `^`.
    Xor,
    /// `<<`: count outside `0..width` is a run-time error; bits shifted out are lost.
    Shl,
    /// `>>`: arithmetic; count outside `0..width` is a run-time error.
    Shr,
}

impl BinOp {
    /// The C spelling.
    pub fn c_op(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        }
    }
}

/// Comparison operators; the operands share a type, the result is `int` 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The C spelling.
    pub fn c_op(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// Unary operators on a value of the expression's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-x` (wrapping on integers).
    Neg,
    /// `~x` (integers only).
    BitNot,
    /// `!x`: operand is bool, result is bool.
    Not,
}

/// Math builtins. Unless noted they take and return `double`; the `F32` variants (`sqrtf` …)
/// take and return `float`. `Min`/`Max` take two integers of the expression's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Builtin {
    Sqrt,
    Exp,
    Log,
    Pow,
    Fabs,
    Floor,
    Ceil,
    Sin,
    Cos,
    Tanh,
    Fmin,
    Fmax,
    /// Integer minimum (`min(a, b)`), operands converted to their common type.
    Min,
    /// Integer maximum (`max(a, b)`).
    Max,
}

impl Builtin {
    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            Builtin::Pow | Builtin::Fmin | Builtin::Fmax | Builtin::Min | Builtin::Max => 2,
            _ => 1,
        }
    }
    /// The double-precision C name (`sqrt`, …).
    pub fn c_name(self) -> &'static str {
        match self {
            Builtin::Sqrt => "sqrt",
            Builtin::Exp => "exp",
            Builtin::Log => "log",
            Builtin::Pow => "pow",
            Builtin::Fabs => "fabs",
            Builtin::Floor => "floor",
            Builtin::Ceil => "ceil",
            Builtin::Sin => "sin",
            Builtin::Cos => "cos",
            Builtin::Tanh => "tanh",
            Builtin::Fmin => "fmin",
            Builtin::Fmax => "fmax",
            Builtin::Min => "min",
            Builtin::Max => "max",
        }
    }
    /// Looks a builtin up by its C name; returns it and whether it is the `float` variant.
    pub fn from_name(name: &str) -> Option<(Builtin, bool)> {
        const ALL: [Builtin; 14] = [
            Builtin::Sqrt,
            Builtin::Exp,
            Builtin::Log,
            Builtin::Pow,
            Builtin::Fabs,
            Builtin::Floor,
            Builtin::Ceil,
            Builtin::Sin,
            Builtin::Cos,
            Builtin::Tanh,
            Builtin::Fmin,
            Builtin::Fmax,
            Builtin::Min,
            Builtin::Max,
        ];
        for b in ALL {
            if b.c_name() == name {
                return Some((b, false));
            }
            if !matches!(b, Builtin::Min | Builtin::Max) {
                if let Some(stem) = name.strip_suffix('f') {
                    if b.c_name() == stem {
                        return Some((b, true));
                    }
                }
            }
        }
        None
    }
}

/// A place that can be assigned.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    /// A scalar variable.
    Var(VarId),
    /// An element of an array: one `long` index per dimension.
    Elem {
        /// The array.
        array: VarId,
        /// Indices (type `long`), as many as the array's rank.
        indices: Vec<Expr>,
        /// Bit `d` set by the polyhedral optimiser where isl proved index `d` of this access
        /// within its extent on the whole iteration domain: the JIT emits no guard for it.
        proven: u64,
    },
}

/// An argument of a call.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A scalar, converted to the parameter's type.
    Scalar(Expr),
    /// An array, or a sub-array selected by a prefix of indices (`X[i]` of a 2-D `X`).
    Array {
        /// The array variable of the caller.
        array: VarId,
        /// The index prefix (type `long`); its length is the caller's rank minus the
        /// callee's.
        prefix: Vec<Expr>,
        /// Where the argument is written.
        span: Span,
    },
}

/// What an expression computes.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer constant of the expression's type (`int`, `long`, `char`, or `bool` 0/1).
    Int(i64),
    /// A floating constant of the expression's type.
    Float(f64),
    /// Read a scalar variable.
    Var(VarId),
    /// Read an array element: one `long` index per dimension.
    Load {
        /// The array.
        array: VarId,
        /// Indices.
        indices: Vec<Expr>,
        /// Bit `d` set by the polyhedral optimiser where isl proved index `d` of this access
        /// within its extent on the whole iteration domain: the JIT emits no guard for it.
        proven: u64,
    },
    /// Assignment `place = value` or compound `place op= value`. The value of the expression
    /// is the new value of the place (of the place's type).
    Assign {
        /// The target.
        place: Place,
        /// For compound assignment: the operator and the type it is computed in (the usual
        /// arithmetic conversion of the place's type and the value's type; for shifts, the
        /// promoted type of the place). The old value is converted to that type, combined with
        /// `value`, and the result converted back to the place's type.
        op: Option<(BinOp, ScalarTy)>,
        /// Right-hand side: for plain assignment converted to the place's type; for compound
        /// assignment converted to the operation type (shifts: promoted on its own).
        value: Box<Expr>,
    },
    /// `++x`, `x++`, `--x`, `x--`: the place is updated by `x = x ± 1` computed in the
    /// promoted type of the place; the value is the new (prefix) or old (postfix) one.
    IncDec {
        /// The target.
        place: Place,
        /// +1 or -1.
        inc: bool,
        /// True for prefix.
        prefix: bool,
    },
    /// Unary operator.
    Unary(UnOp, Box<Expr>),
    /// Binary operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// Comparison; result type `int`.
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    /// Short-circuit `&&` on bool operands; result type `int`.
    LogAnd(Box<Expr>, Box<Expr>),
    /// Short-circuit `||` on bool operands; result type `int`.
    LogOr(Box<Expr>, Box<Expr>),
    /// `c ? a : b`; `a` and `b` have the expression's type; `c` is bool.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Conversion to the expression's type. Int→float rounds to nearest; float→int truncates
    /// and saturates to the target's range (NaN → 0); anything→bool is `!= 0`; integer
    /// narrowing (to `int` or `char`) wraps, keeping the low bits.
    Cast(Box<Expr>),
    /// Call of a function of the program.
    Call(FuncId, Vec<Arg>),
    /// Call of a math builtin.
    Builtin(Builtin, Vec<Expr>),
    /// The comma operator: evaluate the first, yield the second.
    Comma(Box<Expr>, Box<Expr>),
}

/// The kind of a run-time error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// An array index outside its extent.
    IndexOutOfBounds {
        /// The array's name.
        array: String,
        /// All indices of the access.
        index: Vec<i64>,
        /// The array's extents.
        shape: Vec<i64>,
        /// The first dimension that is out of range.
        dim: usize,
    },
    /// Integer division or remainder by zero.
    DivisionByZero,
    /// A shift count outside `0..width`.
    InvalidShift {
        /// The count.
        count: i64,
        /// The width of the shifted type.
        width: u32,
    },
    /// An array extent that is negative or too large.
    BadExtent {
        /// The array's name.
        array: String,
        /// The offending extents.
        shape: Vec<i64>,
    },
    /// An array passed to a function whose parameter declares an incompatible shape.
    ShapeMismatch {
        /// The parameter's name.
        param: String,
        /// The callee.
        function: String,
        /// Shape of the array passed.
        given: Vec<i64>,
        /// Shape the parameter declares.
        declared: Vec<i64>,
    },
    /// A value-returning function ended without `return`.
    MissingReturn {
        /// The function.
        function: String,
    },
    /// Recursion deeper than the limit.
    StackOverflow {
        /// The depth limit.
        limit: usize,
    },
    /// Local arrays exceed the arena limit.
    OutOfMemory {
        /// Bytes requested in total.
        requested: u64,
        /// The limit.
        limit: u64,
    },
    /// More loop iterations and calls than the step limit allows.
    StepLimit {
        /// The limit (`Limits::max_steps`).
        limit: u64,
    },
    /// The thread's native stack is nearly exhausted (deep recursion with large frames, or
    /// a thread with a small stack). Checked against the real stack bounds, so it is
    /// reported as an error before the process would crash.
    NativeStackOverflow,
    /// The arguments of a call through the Rust API are malformed: wrong count, a scalar
    /// for an array parameter (or the reverse), a wrong element type, a shape whose element
    /// count differs from the data's length or does not fit in `long`, or a kernel compiled
    /// without guards called through the safe API. Detected before anything runs.
    BadCall {
        /// What is wrong, naming the argument (`argument `x`: ...`).
        message: String,
    },
}

/// A run-time error: what went wrong, in which function, where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{loc}: runtime error: {kind} (in `{function}`)")]
pub struct RuntimeError {
    /// What.
    pub kind: ErrorKind,
    /// The function executing.
    pub function: String,
    /// The source location of the failing operation.
    pub loc: Loc,
}

fn fmt_list(v: &[i64]) -> String {
    v.iter().map(|x| format!("[{x}]")).collect::<String>()
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::IndexOutOfBounds { array, index, shape, dim } => write!(
                f,
                "index out of bounds: {array}{} but `{array}` has shape {} (index {} of dimension {dim} is not in 0..{})",
                fmt_list(index),
                fmt_list(shape),
                index[*dim],
                shape[*dim]
            ),
            ErrorKind::DivisionByZero => write!(f, "division by zero"),
            ErrorKind::InvalidShift { count, width } => {
                write!(f, "invalid shift: count {count} is not in 0..{width}")
            }
            ErrorKind::BadExtent { array, shape } => {
                write!(f, "bad extent: array `{array}` would have shape {}", fmt_list(shape))
            }
            ErrorKind::ShapeMismatch { param, function, given, declared } => write!(
                f,
                "shape mismatch: parameter `{param}` of `{function}` declares shape {} but the array passed has shape {}",
                fmt_list(declared),
                fmt_list(given)
            ),
            ErrorKind::MissingReturn { function } => {
                write!(f, "missing return: `{function}` reached its end without returning a value")
            }
            ErrorKind::StackOverflow { limit } => {
                write!(f, "stack overflow: recursion deeper than {limit} calls")
            }
            ErrorKind::OutOfMemory { requested, limit } => write!(
                f,
                "out of memory: local arrays need {requested} bytes, the arena limit is {limit}"
            ),
            ErrorKind::StepLimit { limit } => write!(
                f,
                "step limit reached: more than {limit} loop iterations and calls (raise --max-steps)"
            ),
            ErrorKind::NativeStackOverflow => write!(
                f,
                "stack overflow: the thread's native stack is exhausted (run on a thread with a larger stack)"
            ),
            ErrorKind::BadCall { message } => write!(f, "bad call: {message}"),
        }
    }
}

impl Expr {
    /// Calls `f` on this expression and every sub-expression (pre-order), including
    /// indices of places and arguments of calls.
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        let place = |p: &Place, f: &mut dyn FnMut(&Expr)| {
            if let Place::Elem { indices, .. } = p {
                for i in indices {
                    i.walk(f);
                }
            }
        };
        match &self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Var(_) => {}
            ExprKind::Load { indices, .. } => indices.iter().for_each(|i| i.walk(f)),
            ExprKind::Assign {
                place: p, value, ..
            } => {
                place(p, f);
                value.walk(f);
            }
            ExprKind::IncDec { place: p, .. } => place(p, f),
            ExprKind::Unary(_, a) | ExprKind::Cast(a) => a.walk(f),
            ExprKind::Binary(_, a, b)
            | ExprKind::Cmp(_, a, b)
            | ExprKind::LogAnd(a, b)
            | ExprKind::LogOr(a, b)
            | ExprKind::Comma(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Cond(c, a, b) => {
                c.walk(f);
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Call(_, args) => {
                for a in args {
                    match a {
                        Arg::Scalar(e) => e.walk(f),
                        Arg::Array { prefix, .. } => prefix.iter().for_each(|i| i.walk(f)),
                    }
                }
            }
            ExprKind::Builtin(_, args) => args.iter().for_each(|a| a.walk(f)),
        }
    }

    /// Calls `f` on this expression and, while `f` returns `true`, on its sub-expressions
    /// (pre-order; indices of places and arguments of calls included). `f` may replace the
    /// expression it is given; returning `false` then keeps the walk out of the replacement.
    pub fn walk_mut(&mut self, f: &mut dyn FnMut(&mut Expr) -> bool) {
        if !f(self) {
            return;
        }
        fn place(p: &mut Place, f: &mut dyn FnMut(&mut Expr) -> bool) {
            if let Place::Elem { indices, .. } = p {
                indices.iter_mut().for_each(|i| i.walk_mut(f));
            }
        }
        match &mut self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Var(_) => {}
            ExprKind::Load { indices, .. } => indices.iter_mut().for_each(|i| i.walk_mut(f)),
            ExprKind::Assign {
                place: p, value, ..
            } => {
                place(p, f);
                value.walk_mut(f);
            }
            ExprKind::IncDec { place: p, .. } => place(p, f),
            ExprKind::Unary(_, a) | ExprKind::Cast(a) => a.walk_mut(f),
            ExprKind::Binary(_, a, b)
            | ExprKind::Cmp(_, a, b)
            | ExprKind::LogAnd(a, b)
            | ExprKind::LogOr(a, b)
            | ExprKind::Comma(a, b) => {
                a.walk_mut(f);
                b.walk_mut(f);
            }
            ExprKind::Cond(c, a, b) => {
                c.walk_mut(f);
                a.walk_mut(f);
                b.walk_mut(f);
            }
            ExprKind::Call(_, args) => {
                for a in args {
                    match a {
                        Arg::Scalar(e) => e.walk_mut(f),
                        Arg::Array { prefix, .. } => prefix.iter_mut().for_each(|i| i.walk_mut(f)),
                    }
                }
            }
            ExprKind::Builtin(_, args) => args.iter_mut().for_each(|a| a.walk_mut(f)),
        }
    }

    /// The scalar variable this expression assigns directly (`v = ...`, `v += ...`, `v++`).
    pub fn assigned_scalar(&self) -> Option<VarId> {
        match &self.kind {
            ExprKind::Assign {
                place: Place::Var(v),
                ..
            }
            | ExprKind::IncDec {
                place: Place::Var(v),
                ..
            } => Some(*v),
            _ => None,
        }
    }
}

/// Calls `on_stmt` on every statement of `body` (pre-order, nested ones included) and
/// `on_expr` on every expression in them (see [`Expr::walk`]).
pub fn walk_stmts(body: &[Stmt], on_stmt: &mut dyn FnMut(&Stmt), on_expr: &mut dyn FnMut(&Expr)) {
    for s in body {
        on_stmt(s);
        match s {
            Stmt::Decl { init, .. } => {
                if let Some(e) = init {
                    e.walk(on_expr);
                }
            }
            Stmt::DeclArray { dims, .. } => dims.iter().for_each(|d| d.walk(on_expr)),
            Stmt::Expr(e) => e.walk(on_expr),
            Stmt::If { cond, then, els } => {
                cond.walk(on_expr);
                walk_stmts(then, on_stmt, on_expr);
                walk_stmts(els, on_stmt, on_expr);
            }
            Stmt::While {
                cond, body, step, ..
            } => {
                cond.walk(on_expr);
                walk_stmts(body, on_stmt, on_expr);
                if let Some(e) = step {
                    e.walk(on_expr);
                }
            }
            Stmt::ParFor { lo, hi, body, .. } => {
                lo.walk(on_expr);
                hi.walk(on_expr);
                walk_stmts(body, on_stmt, on_expr);
            }
            Stmt::Versioned { fast, original, .. } => {
                walk_stmts(fast, on_stmt, on_expr);
                walk_stmts(original, on_stmt, on_expr);
            }
            Stmt::DoWhile { body, cond } => {
                walk_stmts(body, on_stmt, on_expr);
                cond.walk(on_expr);
            }
            Stmt::Block(b) => walk_stmts(b, on_stmt, on_expr),
            Stmt::Break | Stmt::Continue => {}
            Stmt::Return(e, _) => {
                if let Some(e) = e {
                    e.walk(on_expr);
                }
            }
        }
    }
}

/// Calls `f` (as [`Expr::walk_mut`]) on every expression of `body`, nested statements
/// included.
pub fn walk_stmts_mut(body: &mut [Stmt], f: &mut dyn FnMut(&mut Expr) -> bool) {
    for s in body {
        match s {
            Stmt::Decl { init, .. } => {
                if let Some(e) = init {
                    e.walk_mut(f);
                }
            }
            Stmt::DeclArray { dims, .. } => dims.iter_mut().for_each(|d| d.walk_mut(f)),
            Stmt::Expr(e) => e.walk_mut(f),
            Stmt::If { cond, then, els } => {
                cond.walk_mut(f);
                walk_stmts_mut(then, f);
                walk_stmts_mut(els, f);
            }
            Stmt::While {
                cond, body, step, ..
            } => {
                cond.walk_mut(f);
                walk_stmts_mut(body, f);
                if let Some(e) = step {
                    e.walk_mut(f);
                }
            }
            Stmt::ParFor { lo, hi, body, .. } => {
                lo.walk_mut(f);
                hi.walk_mut(f);
                walk_stmts_mut(body, f);
            }
            Stmt::Versioned { fast, original, .. } => {
                walk_stmts_mut(fast, f);
                walk_stmts_mut(original, f);
            }
            Stmt::DoWhile { body, cond } => {
                walk_stmts_mut(body, f);
                cond.walk_mut(f);
            }
            Stmt::Block(b) => walk_stmts_mut(b, f),
            Stmt::Break | Stmt::Continue => {}
            Stmt::Return(e, _) => {
                if let Some(e) = e {
                    e.walk_mut(f);
                }
            }
        }
    }
}

/// The scalars that `body` assigns but does not declare: those a parallel loop must give
/// each iteration its own copy of (sorted by id).
pub fn scalars_written_not_declared(body: &[Stmt]) -> Vec<VarId> {
    let mut written = std::collections::BTreeSet::new();
    let mut declared = std::collections::BTreeSet::new();
    walk_stmts(
        body,
        &mut |s| {
            if let Stmt::Decl { var, .. } = s {
                declared.insert(*var);
            }
        },
        &mut |e| {
            if let Some(v) = e.assigned_scalar() {
                written.insert(v);
            }
        },
    );
    written.difference(&declared).copied().collect()
}
