//! The abstract syntax tree, as parsed (before name resolution and type checking).

use tessera_ir::Span;

/// A type specifier as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeName {
    /// `void`
    Void,
    /// `bool` / `_Bool`
    Bool,
    /// `char` / `signed char` / `int8_t`
    Char,
    /// `int` / `int32_t`
    Int,
    /// `long` / `long long` / `int64_t`
    Long,
    /// `float`
    Float,
    /// `double`
    Double,
}

/// A name with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// A translation unit: the functions of one file.
#[derive(Clone, Debug, PartialEq)]
pub struct Unit {
    /// Functions and prototypes in source order.
    pub functions: Vec<FunctionDef>,
    /// Headers included.
    pub includes: Vec<String>,
    /// `#define`s after overrides.
    pub defines: Vec<(String, String)>,
}

/// A function definition or prototype.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    /// Return type.
    pub ret: TypeName,
    /// Name.
    pub name: Ident,
    /// Parameters.
    pub params: Vec<ParamDecl>,
    /// Body; `None` for a prototype.
    pub body: Option<Vec<Stmt>>,
    /// Span of the return type through the parameter list.
    pub span: Span,
}

/// A parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    /// Element or scalar type.
    pub ty: TypeName,
    /// Span of the type.
    pub ty_span: Span,
    /// Name.
    pub name: Ident,
    /// Extents (`None` for `[]`); empty for scalars.
    pub dims: Vec<Option<Expr>>,
}

/// One declarator of a declaration: `x`, `x = e`, `a[n][m]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Declarator {
    /// Name.
    pub name: Ident,
    /// Array extents (`None` for `[]`).
    pub dims: Vec<Option<Expr>>,
    /// Initialiser.
    pub init: Option<Expr>,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `T a = e, b[n];`
    Decl {
        /// The type.
        ty: TypeName,
        /// Span of the type.
        ty_span: Span,
        /// Declarators.
        decls: Vec<Declarator>,
    },
    /// `e;`
    Expr(Expr),
    /// `;`
    Empty,
    /// `{ ... }`
    Block(Vec<Stmt>),
    /// `if (c) s else s`
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    /// `while (c) s`
    While(Expr, Box<Stmt>),
    /// `do s while (c);`
    DoWhile(Box<Stmt>, Expr),
    /// `for (init; cond; step) s`
    For {
        /// Declaration or expression statement (or empty).
        init: Option<Box<Stmt>>,
        /// Condition (absent: true).
        cond: Option<Expr>,
        /// Step.
        step: Option<Expr>,
        /// Body.
        body: Box<Stmt>,
        /// Span of the `for` keyword.
        span: Span,
    },
    /// `break;`
    Break(Span),
    /// `continue;`
    Continue(Span),
    /// `return e;`
    Return(Option<Expr>, Span),
}

/// Binary operators as written (assignment and logical ones included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogAnd,
    LogOr,
}

/// Unary operators as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum UnaryOp {
    Plus,
    Neg,
    Not,
    BitNot,
    PreInc,
    PreDec,
    PostInc,
    PostDec,
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What.
    pub kind: ExprKind,
    /// Where.
    pub span: Span,
}

/// Expression forms.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// Integer literal and whether it has an `L` suffix.
    Int(u64, bool),
    /// Floating literal and whether it has an `f` suffix.
    Float(f64, bool),
    /// `true` / `false` (with <stdbool.h>).
    Bool(bool),
    /// A name.
    Name(String),
    /// `a[i]` (nested for several dimensions).
    Index(Box<Expr>, Box<Expr>),
    /// `f(args)`.
    Call(Ident, Vec<Expr>),
    /// Unary operators, including `++`/`--`.
    Unary(UnaryOp, Box<Expr>),
    /// Binary operators.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `a = b` or `a op= b`.
    Assign(Option<BinaryOp>, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `(T) e`.
    Cast(TypeName, Box<Expr>),
    /// `a, b`.
    Comma(Box<Expr>, Box<Expr>),
}
