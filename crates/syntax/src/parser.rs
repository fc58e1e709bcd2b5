//! Recursive-descent parser with precedence climbing for expressions.
//!
//! Errors are collected; after an error the parser skips to the next `;` or `}` and goes on,
//! so independent errors in one file are all reported. Nesting (of statements and
//! expressions) is bounded by [`MAX_DEPTH`]. Chains that are flat in the source (`a + b + c`,
//! `f(x), g(x)`, `A[i][j]`, `if ... else if ... else if ...`) do not nest, but they deepen
//! the tree, one level per link: the depth of the tree (nesting plus open links) is bounded
//! by [`MAX_TREE_DEPTH`], so no input can exhaust the stack of the later tree-walking stages
//! (which also grow their stacks on demand, see `tessera_sema`).

use crate::ast::*;
use crate::diag::Diagnostic;
use crate::lexer::{Tok, Token, P};
use std::collections::HashMap;
use tessera_ir::Span;

/// Maximum nesting depth of statements and expressions (blocks, statement bodies,
/// parentheses, operands of unary operators, casts, conditionals, assignments, indices and
/// arguments); links of left-associative chains and `else if` do not count.
pub const MAX_DEPTH: usize = 256;

/// Maximum depth of the syntax tree: nesting plus the links of the chains that contain it
/// (a flat sum of `n` terms is `n - 1` deep; an `else if` chain one per `else if`).
pub const MAX_TREE_DEPTH: usize = 200_000;
const MAX_DIAGS: usize = 50;

/// A parse failure whose diagnostic has already been recorded in the parser's list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reported;

type PResult<T> = Result<T, Reported>;

/// Parser state.
pub struct Parser<'t> {
    toks: &'t [Token],
    pos: usize,
    depth: usize,
    /// Links of the flat chains open around the current position (see [`MAX_TREE_DEPTH`]).
    links: usize,
    fatal: bool,
    has_stdbool: bool,
    has_stdint: bool,
    /// File-scope `typedef`s: name → (type, where defined).
    typedefs: HashMap<String, (TypeName, Span)>,
    /// Collected errors.
    pub diags: Vec<Diagnostic>,
}

fn is_type_start(name: &str) -> bool {
    matches!(
        name,
        "void"
            | "int"
            | "long"
            | "float"
            | "double"
            | "_Bool"
            | "bool"
            | "int8_t"
            | "int32_t"
            | "int64_t"
            | "signed"
            | "unsigned"
            | "short"
            | "char"
            | "const"
            | "volatile"
            | "restrict"
            | "__restrict"
            | "__restrict__"
            | "static"
            | "inline"
            | "extern"
            | "register"
            | "struct"
            | "union"
            | "enum"
            | "size_t"
            | "uint8_t"
            | "uint32_t"
            | "uint64_t"
    )
}

/// Reserved words, which cannot name variables or functions.
pub fn is_keyword(name: &str) -> bool {
    is_type_start(name)
        && !matches!(
            name,
            "bool"
                | "int8_t"
                | "int32_t"
                | "int64_t"
                | "size_t"
                | "uint8_t"
                | "uint32_t"
                | "uint64_t"
        )
        || matches!(
            name,
            "if" | "else"
                | "for"
                | "while"
                | "do"
                | "break"
                | "continue"
                | "return"
                | "goto"
                | "switch"
                | "case"
                | "default"
                | "sizeof"
                | "typedef"
                | "auto"
        )
}

impl<'t> Parser<'t> {
    /// A parser over `toks` (which must end with [`Tok::Eof`]).
    pub fn new(toks: &'t [Token], includes: &[String]) -> Parser<'t> {
        Parser {
            toks,
            pos: 0,
            depth: 0,
            links: 0,
            fatal: false,
            has_stdbool: includes.iter().any(|h| h == "stdbool.h"),
            has_stdint: includes.iter().any(|h| h == "stdint.h"),
            typedefs: HashMap::new(),
            diags: vec![],
        }
    }

    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }
    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }
    fn span(&self) -> Span {
        self.toks[self.pos].span
    }
    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1)].span
    }
    fn bump(&mut self) -> &Token {
        let t = &self.toks[self.pos];
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn is(&self, p: P) -> bool {
        *self.peek() == Tok::Punct(p)
    }
    fn eat(&mut self, p: P) -> bool {
        if self.is(p) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Ident(x) if x == s)
    }
    fn error(&mut self, span: Span, msg: impl Into<String>) {
        if self.diags.len() < MAX_DIAGS {
            self.diags.push(Diagnostic::error(span, msg));
        }
    }
    fn expected(&mut self, what: &str) -> PResult<()> {
        let found = self.peek().describe();
        let sp = self.span();
        if self.diags.len() < MAX_DIAGS {
            self.diags.push(
                Diagnostic::error(sp, format!("expected {what}, found {found}"))
                    .label(format!("expected {what}")),
            );
        }
        Err(Reported)
    }
    fn expect(&mut self, p: P, context: &str) -> PResult<Span> {
        if self.is(p) {
            Ok(self.bump().span)
        } else {
            self.expected(&format!("`{}` {context}", p.text()))?;
            unreachable!()
        }
    }
    /// One more link of a flat chain (binary operators of one level, commas, indices,
    /// `else if`): deepens the tree but is not nesting.
    fn link(&mut self) -> PResult<()> {
        self.links += 1;
        if self.depth + self.links > MAX_TREE_DEPTH {
            let sp = self.span();
            self.error(
                sp,
                format!(
                    "expression or statement chain too long: the syntax tree would be more than {MAX_TREE_DEPTH} levels deep (split it into several statements)"
                ),
            );
            self.fatal = true;
            return Err(Reported);
        }
        Ok(())
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let sp = self.span();
            self.error(
                sp,
                format!(
                    "nesting too deep: more than {MAX_DEPTH} levels of statements or expressions"
                ),
            );
            self.fatal = true;
            return Err(Reported);
        }
        if self.depth + self.links > MAX_TREE_DEPTH {
            let sp = self.span();
            self.error(
                sp,
                format!(
                    "expression or statement chain too long: the syntax tree would be more than {MAX_TREE_DEPTH} levels deep (split it into several statements)"
                ),
            );
            self.fatal = true;
            return Err(Reported);
        }
        Ok(())
    }

    /// Skips to just after the next `;` or to the next `}` at the current brace level.
    fn sync(&mut self) {
        let mut depth = 0i32;
        loop {
            match self.peek() {
                Tok::Eof => return,
                Tok::Punct(P::Semi) if depth <= 0 => {
                    self.bump();
                    return;
                }
                Tok::Punct(P::LBrace) => depth += 1,
                Tok::Punct(P::RBrace) => {
                    if depth <= 0 {
                        return;
                    }
                    depth -= 1;
                    if depth == 0 {
                        self.bump();
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek().clone() {
            Tok::Ident(name) if self.typedefs.contains_key(&name) => {
                let sp = self.span();
                let def = self.typedefs[&name].1;
                self.diags.push(
                    Diagnostic::error(
                        sp,
                        format!("expected {what}, found `{name}`, which is a typedef name"),
                    )
                    .note(Some(def), format!("`{name}` is defined as a type here")),
                );
                Err(Reported)
            }
            Tok::Ident(name) if !is_keyword(&name) => {
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            Tok::Ident(name) => {
                let sp = self.span();
                self.error(sp, format!("expected {what}, found keyword `{name}`"));
                Err(Reported)
            }
            _ => self.expected(what).map(|_| unreachable!()),
        }
    }

    fn at_type(&self) -> bool {
        matches!(self.peek(), Tok::Ident(n) if self.is_type(n))
    }

    /// A type keyword or a typedef name.
    fn is_type(&self, name: &str) -> bool {
        is_type_start(name) || self.typedefs.contains_key(name)
    }

    /// Parses `typedef TYPE NAME;` (the `typedef` is next): scalar types only.
    fn typedef(&mut self) -> PResult<()> {
        self.bump();
        let (ty, _) = self.type_name()?;
        if self.is(P::Star) {
            let sp = self.span();
            self.error(
                sp,
                "pointers are not supported: a typedef names a scalar type",
            );
            return Err(Reported);
        }
        let span = self.span();
        let name = match self.peek().clone() {
            Tok::Ident(n) if !is_keyword(&n) => n,
            _ => {
                self.expected("a name for the typedef")?;
                unreachable!()
            }
        };
        self.bump();
        if self.is(P::LBracket) || self.is(P::LParen) {
            let sp = self.span();
            self.error(
                sp,
                format!("typedef `{name}`: only scalar types can be given names (no arrays or functions)"),
            );
            return Err(Reported);
        }
        self.expect(P::Semi, "after the typedef")?;
        if let Some(&(old, old_span)) = self.typedefs.get(&name) {
            if old != ty {
                self.diags.push(
                    Diagnostic::error(
                        span,
                        format!(
                            "typedef `{name}` redefined as a different type: it was `{}`, now `{}`",
                            type_text(old),
                            type_text(ty)
                        ),
                    )
                    .note(Some(old_span), "the previous definition is here"),
                );
            }
            return Ok(());
        }
        self.typedefs.insert(name, (ty, span));
        Ok(())
    }

    /// Parses declaration specifiers: qualifiers (ignored) and one type.
    fn type_name(&mut self) -> PResult<(TypeName, Span)> {
        let start = self.span();
        let mut longs = 0;
        let mut base: Option<TypeName> = None;
        let mut seen_int = false;
        let mut seen_signed = false;
        while let Tok::Ident(n) = self.peek().clone() {
            let sp = self.span();
            match n.as_str() {
                "const" | "volatile" | "restrict" | "__restrict" | "__restrict__" | "static"
                | "inline" | "extern" | "register" => {
                    self.bump();
                }
                "signed" => {
                    self.bump();
                    seen_signed = true;
                }
                "long" => {
                    self.bump();
                    longs += 1;
                }
                "int" => {
                    self.bump();
                    seen_int = true;
                }
                "void" | "char" | "float" | "double" | "_Bool" => {
                    self.bump();
                    if base.is_some() {
                        self.error(sp, "two types in one declaration");
                        return Err(Reported);
                    }
                    base = Some(match n.as_str() {
                        "void" => TypeName::Void,
                        "char" => TypeName::Char,
                        "float" => TypeName::Float,
                        "double" => TypeName::Double,
                        _ => TypeName::Bool,
                    });
                }
                _ if self.typedefs.contains_key(&n) => {
                    if base.is_some() || longs > 0 || seen_int || seen_signed {
                        // The declarator's name: `ident` says what is wrong.
                        break;
                    }
                    self.bump();
                    base = Some(self.typedefs[&n].0);
                }
                "bool" | "int8_t" | "int32_t" | "int64_t" => {
                    let needs = if n == "bool" { "stdbool.h" } else { "stdint.h" };
                    let ok = if n == "bool" {
                        self.has_stdbool
                    } else {
                        self.has_stdint
                    };
                    if !ok {
                        self.error(
                            sp,
                            format!("unknown type name `{n}`: add `#include <{needs}>`"),
                        );
                    }
                    self.bump();
                    if base.is_some() {
                        self.error(sp, "two types in one declaration");
                        return Err(Reported);
                    }
                    base = Some(match n.as_str() {
                        "bool" => TypeName::Bool,
                        "int8_t" => TypeName::Char,
                        "int32_t" => TypeName::Int,
                        _ => TypeName::Long,
                    });
                }
                "unsigned" | "short" | "struct" | "union" | "enum" | "size_t" | "uint8_t"
                | "uint32_t" | "uint64_t" => {
                    let why = if n.starts_with('u') {
                        " (there are no unsigned types; `char` is signed)"
                    } else {
                        ""
                    };
                    self.error(
                        sp,
                        format!(
                            "type `{n}` is not supported{why}: expected one of int, long, char, float, double, bool, int8_t, int32_t, int64_t"
                        ),
                    );
                    self.bump();
                    return Err(Reported);
                }
                _ => break,
            }
        }
        let span = start.to(self.prev_span());
        let t = match (base, longs, seen_int) {
            (Some(TypeName::Double), 1, false) => {
                self.error(span, "`long double` is not supported; use `double`");
                return Err(Reported);
            }
            // `signed` goes with the integer types only (`signed char`, `signed long`).
            (Some(TypeName::Char), 0, false) => TypeName::Char,
            (Some(b), 0, false) if !seen_signed => b,
            (Some(_), _, _) => {
                self.error(span, "invalid combination of type specifiers");
                return Err(Reported);
            }
            (None, 0, true) => TypeName::Int,
            (None, 0, false) if seen_signed => TypeName::Int,
            (None, 1 | 2, _) => TypeName::Long,
            (None, 0, false) => {
                self.expected("a type (int, long, char, float, double, bool or void)")?;
                unreachable!()
            }
            (None, _, _) => {
                self.error(span, "`long long long` is too long");
                return Err(Reported);
            }
        };
        Ok((t, span))
    }

    /// Parses a whole translation unit.
    pub fn unit(&mut self) -> Vec<FunctionDef> {
        let mut fns = Vec::new();
        while *self.peek() != Tok::Eof {
            if self.diags.len() >= MAX_DIAGS || self.fatal {
                break;
            }
            let before = self.pos;
            self.depth = 0;
            self.links = 0;
            if self.is_ident("typedef") {
                if self.typedef().is_err() {
                    if self.fatal {
                        break;
                    }
                    self.sync();
                    if self.pos == before {
                        self.bump();
                    }
                }
                continue;
            }
            match self.function() {
                Ok(f) => fns.push(f),
                Err(Reported) => {
                    if self.fatal {
                        break;
                    }
                    self.sync();
                    if self.pos == before {
                        self.bump();
                    }
                }
            }
        }
        fns
    }

    fn function(&mut self) -> PResult<FunctionDef> {
        if !self.at_type() {
            if self.is(P::Semi) {
                self.bump();
                return Err(Reported);
            }
            self.expected("a function definition (e.g. `void kernel(int n, double A[n])`)")?;
        }
        let (ret, ty_span) = self.type_name()?;
        let name = self.ident("a function name")?;
        if !self.is(P::LParen) {
            let sp = self.span();
            self.error(
                sp,
                format!(
                    "expected `(` after `{}`: global variables are not supported, only functions",
                    name.name
                ),
            );
            return Err(Reported);
        }
        self.bump();
        let mut params = Vec::new();
        if self.is_ident("void") && *self.peek_at(1) == Tok::Punct(P::RParen) {
            self.bump();
        }
        if !self.is(P::RParen) {
            loop {
                params.push(self.param()?);
                if !self.eat(P::Comma) {
                    break;
                }
            }
        }
        let close = self.expect(P::RParen, "to close the parameter list")?;
        let span = ty_span.to(close);
        if self.eat(P::Semi) {
            return Ok(FunctionDef {
                ret,
                name,
                params,
                body: None,
                span,
            });
        }
        if !self.is(P::LBrace) {
            self.expected("`{` to start the function body")?;
        }
        let body = self.block()?;
        Ok(FunctionDef {
            ret,
            name,
            params,
            body: Some(body),
            span,
        })
    }

    fn param(&mut self) -> PResult<ParamDecl> {
        if !self.at_type() {
            self.expected("a parameter type")?;
        }
        let (ty, ty_span) = self.type_name()?;
        if self.is(P::Star) {
            let sp = self.span();
            self.error(sp, "pointers are not supported: declare an array parameter with extents, e.g. `double A[n][m]`");
            return Err(Reported);
        }
        let name = self.ident("a parameter name")?;
        let dims = self.dims()?;
        Ok(ParamDecl {
            ty,
            ty_span,
            name,
            dims,
        })
    }

    fn dims(&mut self) -> PResult<Vec<Option<Expr>>> {
        let mut dims = Vec::new();
        while self.eat(P::LBracket) {
            if self.eat(P::RBracket) {
                dims.push(None);
                continue;
            }
            // C99 allows `static` and qualifiers in array parameter brackets.
            while matches!(self.peek(), Tok::Ident(n) if n == "static" || n == "const" || n == "restrict")
            {
                self.bump();
            }
            let e = self.assign_expr()?;
            self.expect(P::RBracket, "to close the array extent")?;
            dims.push(Some(e));
        }
        Ok(dims)
    }

    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.expect(P::LBrace, "to open a block")?;
        self.enter()?;
        let mut stmts = Vec::new();
        loop {
            if self.is(P::RBrace) {
                self.bump();
                break;
            }
            if *self.peek() == Tok::Eof {
                let sp = self.span();
                self.error(sp, "expected `}` before end of file");
                self.depth -= 1;
                return Err(Reported);
            }
            if self.diags.len() >= MAX_DIAGS {
                self.depth -= 1;
                return Err(Reported);
            }
            let before = self.pos;
            let saved = (self.depth, self.links);
            match self.stmt() {
                Ok(s) => stmts.push(s),
                Err(Reported) => {
                    (self.depth, self.links) = saved;
                    if self.fatal {
                        self.depth -= 1;
                        return Err(Reported);
                    }
                    self.sync();
                    if self.pos == before {
                        self.bump();
                    }
                }
            }
        }
        self.depth -= 1;
        Ok(stmts)
    }

    fn decl(&mut self) -> PResult<Stmt> {
        let (ty, ty_span) = self.type_name()?;
        let mut decls = Vec::new();
        loop {
            if self.is(P::Star) {
                let sp = self.span();
                self.error(sp, "pointers are not supported");
                return Err(Reported);
            }
            let name = self.ident("a variable name")?;
            if self.is(P::LParen) {
                let sp = self.span();
                self.error(sp, "nested function declarations are not supported");
                return Err(Reported);
            }
            let dims = self.dims()?;
            let init = if self.eat(P::Assign) {
                if self.is(P::LBrace) {
                    let sp = self.span();
                    self.error(sp, "array initialisers `{...}` are not supported: local arrays start zeroed; assign elements in a loop");
                    return Err(Reported);
                }
                Some(self.assign_expr()?)
            } else {
                None
            };
            decls.push(Declarator { name, dims, init });
            if !self.eat(P::Comma) {
                break;
            }
        }
        self.expect(P::Semi, "after the declaration")?;
        Ok(Stmt::Decl { ty, ty_span, decls })
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        self.enter()?;
        let r = self.stmt_inner();
        self.depth -= 1;
        r
    }

    fn paren_cond(&mut self, kw: &str) -> PResult<Expr> {
        self.expect(P::LParen, &format!("after `{kw}`"))?;
        let e = self.expr()?;
        self.expect(P::RParen, &format!("to close the `{kw}` condition"))?;
        Ok(e)
    }

    fn stmt_inner(&mut self) -> PResult<Stmt> {
        if self.at_type() {
            return self.decl();
        }
        let span = self.span();
        if let Tok::Ident(kw) = self.peek().clone() {
            match kw.as_str() {
                "if" => {
                    self.bump();
                    let c = self.paren_cond("if")?;
                    let t = self.stmt()?;
                    let e = if self.is_ident("else") {
                        self.bump();
                        if self.is_ident("if") {
                            // `else if`: a link of a chain, not nesting.
                            let saved = self.links;
                            self.link()?;
                            let s = self.stmt_inner()?;
                            self.links = saved;
                            Some(Box::new(s))
                        } else {
                            Some(Box::new(self.stmt()?))
                        }
                    } else {
                        None
                    };
                    return Ok(Stmt::If(c, Box::new(t), e));
                }
                "while" => {
                    self.bump();
                    let c = self.paren_cond("while")?;
                    let b = self.stmt()?;
                    return Ok(Stmt::While(c, Box::new(b)));
                }
                "do" => {
                    self.bump();
                    let b = self.stmt()?;
                    if !self.is_ident("while") {
                        self.expected("`while` after the body of `do`")?;
                    }
                    self.bump();
                    let c = self.paren_cond("do ... while")?;
                    self.expect(P::Semi, "after `do ... while (...)`")?;
                    return Ok(Stmt::DoWhile(Box::new(b), c));
                }
                "for" => {
                    self.bump();
                    self.expect(P::LParen, "after `for`")?;
                    let init = if self.eat(P::Semi) {
                        None
                    } else if self.at_type() {
                        Some(Box::new(self.decl()?))
                    } else {
                        let e = self.expr()?;
                        self.expect(P::Semi, "after the `for` initialiser")?;
                        Some(Box::new(Stmt::Expr(e)))
                    };
                    let cond = if self.is(P::Semi) {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    self.expect(P::Semi, "after the `for` condition")?;
                    let step = if self.is(P::RParen) {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    self.expect(P::RParen, "to close the `for` header")?;
                    let body = Box::new(self.stmt()?);
                    return Ok(Stmt::For {
                        init,
                        cond,
                        step,
                        body,
                        span,
                    });
                }
                "break" | "continue" => {
                    self.bump();
                    self.expect(P::Semi, &format!("after `{kw}`"))?;
                    return Ok(if kw == "break" {
                        Stmt::Break(span)
                    } else {
                        Stmt::Continue(span)
                    });
                }
                "return" => {
                    self.bump();
                    let e = if self.is(P::Semi) {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    self.expect(P::Semi, "after `return`")?;
                    return Ok(Stmt::Return(e, span));
                }
                "else" => {
                    self.error(span, "`else` without a matching `if`");
                    self.bump();
                    return Err(Reported);
                }
                "typedef" => {
                    self.error(
                        span,
                        "`typedef` is only supported at file scope, outside functions",
                    );
                    return Err(Reported);
                }
                "goto" | "switch" | "case" | "default" | "sizeof" => {
                    self.error(span, format!("`{kw}` is not supported in Tessera kernels"));
                    return Err(Reported);
                }
                _ => {}
            }
        }
        if self.eat(P::Semi) {
            return Ok(Stmt::Empty);
        }
        if self.is(P::LBrace) {
            return Ok(Stmt::Block(self.block()?));
        }
        let e = self.expr()?;
        if !self.is(P::Semi) {
            let prev = self.prev_span();
            let found = self.peek().describe();
            self.diags.push(
                Diagnostic::error(
                    Span {
                        lo: prev.hi,
                        hi: prev.hi + 1,
                        line: prev.line,
                        col: prev.col + (prev.hi - prev.lo),
                    },
                    format!("expected `;` after the expression, found {found}"),
                )
                .label("expected `;`"),
            );
            return Err(Reported);
        }
        self.bump();
        Ok(Stmt::Expr(e))
    }

    /// Parses an expression (comma operator included).
    pub fn expr(&mut self) -> PResult<Expr> {
        let mut e = self.assign_expr()?;
        let saved = self.links;
        while self.eat(P::Comma) {
            self.link()?;
            let r = self.assign_expr()?;
            let span = e.span.to(r.span);
            e = Expr {
                kind: ExprKind::Comma(Box::new(e), Box::new(r)),
                span,
            };
        }
        self.links = saved;
        Ok(e)
    }

    fn assign_expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let lhs = self.cond_expr()?;
        let op = match self.peek() {
            Tok::Punct(P::Assign) => Some(None),
            Tok::Punct(P::PlusEq) => Some(Some(BinaryOp::Add)),
            Tok::Punct(P::MinusEq) => Some(Some(BinaryOp::Sub)),
            Tok::Punct(P::StarEq) => Some(Some(BinaryOp::Mul)),
            Tok::Punct(P::SlashEq) => Some(Some(BinaryOp::Div)),
            Tok::Punct(P::PercentEq) => Some(Some(BinaryOp::Rem)),
            Tok::Punct(P::AmpEq) => Some(Some(BinaryOp::BitAnd)),
            Tok::Punct(P::PipeEq) => Some(Some(BinaryOp::BitOr)),
            Tok::Punct(P::CaretEq) => Some(Some(BinaryOp::BitXor)),
            Tok::Punct(P::ShlEq) => Some(Some(BinaryOp::Shl)),
            Tok::Punct(P::ShrEq) => Some(Some(BinaryOp::Shr)),
            _ => None,
        };
        let r = if let Some(op) = op {
            self.bump();
            let rhs = self.assign_expr()?;
            let span = lhs.span.to(rhs.span);
            Expr {
                kind: ExprKind::Assign(op, Box::new(lhs), Box::new(rhs)),
                span,
            }
        } else {
            lhs
        };
        self.depth -= 1;
        Ok(r)
    }

    fn cond_expr(&mut self) -> PResult<Expr> {
        let c = self.binary(1)?;
        if self.eat(P::Question) {
            self.enter()?;
            let t = self.expr()?;
            self.expect(P::Colon, "in the conditional expression `c ? a : b`")?;
            let e = self.cond_expr()?;
            self.depth -= 1;
            let span = c.span.to(e.span);
            return Ok(Expr {
                kind: ExprKind::Cond(Box::new(c), Box::new(t), Box::new(e)),
                span,
            });
        }
        Ok(c)
    }

    fn binop_at(&self, level: u8) -> Option<BinaryOp> {
        use BinaryOp::*;
        let Tok::Punct(p) = self.peek() else {
            return None;
        };
        let (l, op) = match p {
            P::OrOr => (1, LogOr),
            P::AndAnd => (2, LogAnd),
            P::Pipe => (3, BitOr),
            P::Caret => (4, BitXor),
            P::Amp => (5, BitAnd),
            P::EqEq => (6, Eq),
            P::Ne => (6, Ne),
            P::Lt => (7, Lt),
            P::Gt => (7, Gt),
            P::Le => (7, Le),
            P::Ge => (7, Ge),
            P::Shl => (8, Shl),
            P::Shr => (8, Shr),
            P::Plus => (9, Add),
            P::Minus => (9, Sub),
            P::Star => (10, Mul),
            P::Slash => (10, Div),
            P::Percent => (10, Rem),
            _ => return None,
        };
        (l == level).then_some(op)
    }

    fn binary(&mut self, level: u8) -> PResult<Expr> {
        if level > 10 {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        let saved = self.links;
        while let Some(op) = self.binop_at(level) {
            self.bump();
            // Each link of a left-associative chain deepens the tree by one, but is not
            // nesting: `a + a + ... + a` is flat.
            self.link()?;
            let rhs = self.binary(level + 1)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
        self.links = saved;
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> PResult<Expr> {
        let span = self.span();
        let op = match self.peek() {
            Tok::Punct(P::Minus) => Some(UnaryOp::Neg),
            Tok::Punct(P::Plus) => Some(UnaryOp::Plus),
            Tok::Punct(P::Bang) => Some(UnaryOp::Not),
            Tok::Punct(P::Tilde) => Some(UnaryOp::BitNot),
            Tok::Punct(P::PlusPlus) => Some(UnaryOp::PreInc),
            Tok::Punct(P::MinusMinus) => Some(UnaryOp::PreDec),
            Tok::Punct(P::Amp) | Tok::Punct(P::Star) => {
                self.error(span, "pointers are not supported: `&` and unary `*` have no meaning in Tessera kernels");
                return Err(Reported);
            }
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            let e = self.unary()?;
            let span = span.to(e.span);
            return Ok(Expr {
                kind: ExprKind::Unary(op, Box::new(e)),
                span,
            });
        }
        if self.is(P::LParen) {
            if let Tok::Ident(n) = self.peek_at(1) {
                if self.is_type(n) {
                    self.bump();
                    let (t, _) = self.type_name()?;
                    self.expect(P::RParen, "to close the cast")?;
                    let e = self.unary()?;
                    let span = span.to(e.span);
                    return Ok(Expr {
                        kind: ExprKind::Cast(t, Box::new(e)),
                        span,
                    });
                }
            }
        }
        self.postfix()
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        let saved = self.links;
        loop {
            if self.is(P::LBracket) {
                self.bump();
                self.link()?;
                self.enter()?;
                let i = self.expr()?;
                self.depth -= 1;
                let close = self.expect(P::RBracket, "to close the index")?;
                let span = e.span.to(close);
                e = Expr {
                    kind: ExprKind::Index(Box::new(e), Box::new(i)),
                    span,
                };
            } else if self.is(P::LParen) {
                let ExprKind::Name(n) = &e.kind else {
                    let sp = self.span();
                    self.error(sp, "only named functions can be called");
                    return Err(Reported);
                };
                let name = Ident {
                    name: n.clone(),
                    span: e.span,
                };
                self.bump();
                let mut args = Vec::new();
                if !self.is(P::RParen) {
                    loop {
                        args.push(self.assign_expr()?);
                        if !self.eat(P::Comma) {
                            break;
                        }
                    }
                }
                let close = self.expect(P::RParen, "to close the argument list")?;
                let span = e.span.to(close);
                e = Expr {
                    kind: ExprKind::Call(name, args),
                    span,
                };
            } else if self.is(P::PlusPlus) || self.is(P::MinusMinus) {
                let op = if self.is(P::PlusPlus) {
                    UnaryOp::PostInc
                } else {
                    UnaryOp::PostDec
                };
                let sp = self.bump().span;
                self.link()?;
                let span = e.span.to(sp);
                e = Expr {
                    kind: ExprKind::Unary(op, Box::new(e)),
                    span,
                };
            } else if self.is(P::Dot) || self.is(P::Arrow) {
                let sp = self.span();
                self.error(sp, "member access is not supported: there are no structs");
                return Err(Reported);
            } else {
                break;
            }
        }
        self.links = saved;
        Ok(e)
    }

    fn primary(&mut self) -> PResult<Expr> {
        let span = self.span();
        match self.peek().clone() {
            Tok::Int(v, l) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Int(v, l),
                    span,
                })
            }
            Tok::Float(v, f) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Float(v, f),
                    span,
                })
            }
            Tok::Ident(n) if (n == "true" || n == "false") && self.has_stdbool => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Bool(n == "true"),
                    span,
                })
            }
            Tok::Ident(n) if self.typedefs.contains_key(&n) => {
                let def = self.typedefs[&n].1;
                self.diags.push(
                    Diagnostic::error(span, format!("`{n}` is a typedef name, not a value"))
                        .note(Some(def), format!("`{n}` is defined as a type here")),
                );
                self.bump();
                Err(Reported)
            }
            Tok::Ident(n) if !is_keyword(&n) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Name(n),
                    span,
                })
            }
            Tok::Punct(P::LParen) => {
                self.bump();
                let e = self.expr()?;
                let close = self.expect(P::RParen, "to close the parenthesis")?;
                Ok(Expr {
                    kind: e.kind,
                    span: span.to(close),
                })
            }
            Tok::Str(_) => {
                self.error(span, "string literals are not supported in kernels");
                self.bump();
                Err(Reported)
            }
            _ => self.expected("an expression").map(|_| unreachable!()),
        }
    }
}

fn type_text(t: TypeName) -> &'static str {
    match t {
        TypeName::Void => "void",
        TypeName::Bool => "bool",
        TypeName::Char => "char",
        TypeName::Int => "int",
        TypeName::Long => "long",
        TypeName::Float => "float",
        TypeName::Double => "double",
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::TypeName;
    use std::collections::HashMap;

    fn errs(src: &str) -> Vec<String> {
        match crate::parse(src, &HashMap::new()) {
            Ok(_) => vec![],
            Err(ds) => ds
                .iter()
                .map(|d| format!("{}:{}: {}", d.span.line, d.span.col, d.message))
                .collect(),
        }
    }

    #[test]
    fn typedefs_name_scalar_types() {
        let src = "typedef double D;\ntypedef long I;\ntypedef I J;\ntypedef D D;\n\
                   static inline D f(J n, D A[10 + 0][n]) { J i = (J)1; D t[2 * 3]; return A[i][0]; }";
        let u = crate::parse(src, &HashMap::new()).unwrap();
        let f = &u.functions[0];
        assert_eq!(f.ret, TypeName::Double);
        assert_eq!(f.params[0].ty, TypeName::Long);
        assert_eq!(f.params[1].dims.len(), 2);
    }

    #[test]
    fn typedef_errors_are_located() {
        assert_eq!(
            errs("typedef double T;\ntypedef int T;"),
            ["2:13: typedef `T` redefined as a different type: it was `double`, now `int`"]
        );
        assert_eq!(errs("typedef int T;\nvoid f(int T) {}").len(), 1);
        assert_eq!(errs("typedef int T;\nint f(void) { return T; }").len(), 1);
        assert_eq!(errs("typedef int T;\nvoid T(void) {}").len(), 1);
        assert_eq!(errs("typedef int V[3];").len(), 1);
        assert_eq!(errs("typedef int *P;").len(), 1);
        assert_eq!(errs("void f(void) { typedef int T; }").len(), 1);
        assert_eq!(errs("typedef int;").len(), 1);
        assert_eq!(errs("typedef").len(), 1);
    }

    #[test]
    fn char_and_signed_type_names() {
        let src = "#include <stdint.h>\ntypedef char base;\n\
                   signed char f(char a, signed char b, char signed c, int8_t d, base e[2], \
                   signed g, signed int h, signed long i, long signed int j) { return a; }";
        let u = crate::parse(src, &HashMap::new()).unwrap();
        let f = &u.functions[0];
        assert_eq!(f.ret, TypeName::Char);
        let tys: Vec<TypeName> = f.params.iter().map(|p| p.ty).collect();
        use TypeName::*;
        assert_eq!(tys, [Char, Char, Char, Char, Char, Int, Int, Long, Long]);
        // `int8_t` needs <stdint.h>; no unsigned types; `signed` with integer types only.
        assert_eq!(errs("void f(int8_t x) {}").len(), 1);
        for bad in [
            "void f(unsigned char x) {}",
            "void f(char int x) {}",
            "void f(long char x) {}",
            "void f(char char x) {}",
            "void f(signed double x) {}",
            "void f(signed _Bool x) {}",
        ] {
            assert_eq!(errs(bad).len(), 1, "{bad}");
        }
    }

    #[test]
    fn character_constants_are_ints() {
        let src =
            "int f(void) { return 'A' + '\\n' + '\\0' + '\\x41' + '\\101' + '\\'' + '\\\\'; }";
        assert_eq!(errs(src), Vec::<String>::new());
        let u = crate::parse(src, &HashMap::new()).unwrap();
        let crate::ast::Stmt::Return(Some(e), _) = &u.functions[0].body.as_ref().unwrap()[0] else {
            panic!("not a return");
        };
        fn sum(e: &crate::ast::Expr) -> u64 {
            match &e.kind {
                crate::ast::ExprKind::Int(v, false) => *v,
                crate::ast::ExprKind::Binary(_, a, b) => sum(a) + sum(b),
                k => panic!("{k:?}"),
            }
        }
        // 'A', '\n', '\0', '\x41', '\101', '\'', '\\'.
        assert_eq!(sum(e), 65 + 10 + 65 + 65 + 39 + 92);
        assert_eq!(
            errs("int f(void) { return 'ab'; }"),
            ["1:22: character constant 'ab' must hold exactly one character"]
        );
        assert_eq!(errs("int f(void) { return '\\xff'; }").len(), 1);
        assert_eq!(errs("int f(void) { return '\\q'; }").len(), 1);
        assert_eq!(errs("int f(void) { return 'x; }").len(), 3);
    }
}
