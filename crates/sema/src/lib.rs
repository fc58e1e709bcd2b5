//! Name resolution and type checking: [`tessera_syntax::ast::Unit`] → [`tessera_ir::Program`].
//!
//! Every implicit C conversion becomes an explicit cast here, so the back ends never reason
//! about C's conversion rules: integer promotion (`bool`, `char` → `int`), the usual arithmetic
//! conversions (`int` < `long` < `float` < `double`), conversions on assignment, argument
//! passing and return, and conditions converted to `bool` (`x != 0`).

#![warn(missing_docs)]

use std::collections::HashMap;
use tessera_ir as ir;
use tessera_ir::{
    Arg, BinOp, Builtin, CmpOp, ExprKind, FuncId, Place, ScalarTy, Span, UnOp, Var, VarId, VarKind,
};
use tessera_syntax::ast::{self, BinaryOp, TypeName, UnaryOp};
use tessera_syntax::Diagnostic;

/// Parses and checks a source text in one step.
pub fn compile_source(
    src: &str,
    overrides: &HashMap<String, String>,
) -> Result<ir::Program, Vec<Diagnostic>> {
    tessera_syntax::deep_stack(|| {
        let unit = tessera_syntax::parse(src, overrides)?;
        check(&unit)
    })
}

/// Parses and checks a source file in one step: `#include "file.h"` looks in `dir`, and the
/// files included are recorded in `src` (for rendering diagnostics).
pub fn compile_file(
    src: &mut tessera_syntax::SourceFile,
    dir: Option<&std::path::Path>,
    overrides: &HashMap<String, String>,
) -> Result<ir::Program, Vec<Diagnostic>> {
    tessera_syntax::deep_stack(|| {
        let unit = tessera_syntax::parse_source(src, dir, overrides)?;
        check(&unit)
    })
}

/// Checks a parsed unit. Returns the typed program or every error found.
pub fn check(unit: &ast::Unit) -> Result<ir::Program, Vec<Diagnostic>> {
    tessera_syntax::deep_stack(|| check_inner(unit))
}

fn check_inner(unit: &ast::Unit) -> Result<ir::Program, Vec<Diagnostic>> {
    let mut cx = Checker {
        diags: vec![],
        sigs: vec![],
        by_name: HashMap::new(),
        has_math: unit.includes.iter().any(|h| h == "math.h"),
    };
    // Pass 1: signatures, in order of first appearance.
    let mut defined: Vec<Option<ir::Function>> = Vec::new();
    for f in &unit.functions {
        cx.declare(f);
    }
    defined.resize(cx.sigs.len(), None);
    // Pass 2: bodies. A function may only call functions declared before it (or itself), as
    // in C; `visible` grows as we go.
    let mut visible = 0usize;
    for f in &unit.functions {
        let id = cx.by_name[&f.name.name];
        visible = visible.max(id.0 as usize + 1);
        if let Some(body) = &f.body {
            if defined[id.0 as usize].is_some() {
                cx.err(
                    Diagnostic::error(
                        f.name.span,
                        format!("redefinition of function `{}`", f.name.name),
                    )
                    .note(Some(cx.sigs[id.0 as usize].span), "first defined here"),
                );
                continue;
            }
            if let Some(func) = cx.function(f, body, visible) {
                defined[id.0 as usize] = Some(func);
            }
        }
    }
    let mut functions = Vec::new();
    for (i, d) in defined.into_iter().enumerate() {
        match d {
            Some(f) => functions.push(f),
            None => {
                let s = cx.sigs[i].clone();
                if !s.has_body {
                    cx.err(Diagnostic::error(
                        s.span,
                        format!("function `{}` is declared but never defined", s.name),
                    ));
                }
                // Placeholder so FuncIds stay valid; only reached when errors were reported.
                functions.push(ir::Function {
                    name: s.name.clone(),
                    ret: s.ret,
                    params: vec![],
                    vars: vec![],
                    body: vec![],
                    span: s.span,
                });
            }
        }
    }
    if cx.diags.is_empty() {
        Ok(ir::Program {
            functions,
            defines: unit.defines.clone(),
        })
    } else {
        cx.diags.sort_by_key(|d| d.span.lo);
        Err(cx.diags)
    }
}

#[derive(Clone, Debug)]
struct ParamSig {
    name: String,
    kind: VarKind,
}

#[derive(Clone, Debug)]
struct Sig {
    name: String,
    ret: Option<ScalarTy>,
    params: Vec<ParamSig>,
    span: Span,
    has_body: bool,
}

struct Checker {
    diags: Vec<Diagnostic>,
    sigs: Vec<Sig>,
    by_name: HashMap<String, FuncId>,
    has_math: bool,
}

fn scalar_of(t: TypeName) -> Option<ScalarTy> {
    match t {
        TypeName::Void => None,
        TypeName::Bool => Some(ScalarTy::Bool),
        TypeName::Char => Some(ScalarTy::I8),
        TypeName::Int => Some(ScalarTy::I32),
        TypeName::Long => Some(ScalarTy::I64),
        TypeName::Float => Some(ScalarTy::F32),
        TypeName::Double => Some(ScalarTy::F64),
    }
}

/// Integer promotion: `bool` and `char` → `int`.
pub fn promote(t: ScalarTy) -> ScalarTy {
    match t {
        ScalarTy::Bool | ScalarTy::I8 => ScalarTy::I32,
        t => t,
    }
}

/// The usual arithmetic conversions of C, for our types.
pub fn common(a: ScalarTy, b: ScalarTy) -> ScalarTy {
    promote(a).max(promote(b))
}

fn mk(kind: ExprKind, ty: ScalarTy, span: Span) -> ir::Expr {
    ir::Expr {
        kind,
        ty: Some(ty),
        span,
    }
}

/// Converts `e` to `to`, inserting a cast if the types differ.
fn cast(e: ir::Expr, to: ScalarTy) -> ir::Expr {
    if e.ty == Some(to) {
        return e;
    }
    let span = e.span;
    // Fold casts of integer constants, so literals keep their obvious meaning in the IR.
    if let ExprKind::Int(v) = e.kind {
        if to.is_integral() {
            let v = match to {
                ScalarTy::Bool => (v != 0) as i64,
                ScalarTy::I8 => v as i8 as i64,
                ScalarTy::I32 => v as i32 as i64,
                _ => v,
            };
            return mk(ExprKind::Int(v), to, span);
        }
    }
    mk(ExprKind::Cast(Box::new(e)), to, span)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + (ca != *cb) as usize)
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

fn suggest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    candidates
        .filter(|c| *c != name)
        .map(|c| (levenshtein(name, c), c))
        // Names of one or two characters are too short for a typo to be recognisable.
        .filter(|(d, c)| name.len() > 2 && *d <= 2.min(c.len() / 2).max(1))
        .min()
        .map(|(_, c)| c.to_string())
}

struct FnCx {
    vars: Vec<Var>,
    scopes: Vec<HashMap<String, VarId>>,
    ret: Option<ScalarTy>,
    fname: String,
    loop_depth: usize,
    visible: usize,
    self_id: FuncId,
}

impl FnCx {
    fn lookup(&self, name: &str) -> Option<VarId> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }
    fn names(&self) -> impl Iterator<Item = &str> {
        self.scopes
            .iter()
            .flat_map(|s| s.keys().map(|k| k.as_str()))
    }
}

type R<T> = Result<T, ()>;

impl Checker {
    fn err(&mut self, d: Diagnostic) {
        if self.diags.len() < 100 {
            self.diags.push(d);
        }
    }
    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.err(Diagnostic::error(span, msg));
    }

    fn declare(&mut self, f: &ast::FunctionDef) {
        let ret = scalar_of(f.ret);
        let params: Vec<ParamSig> = f
            .params
            .iter()
            .map(|p| ParamSig {
                name: p.name.name.clone(),
                kind: match scalar_of(p.ty) {
                    Some(t) if p.dims.is_empty() => VarKind::Scalar(t),
                    Some(t) => VarKind::Array {
                        elem: t,
                        rank: p.dims.len(),
                    },
                    None => VarKind::Scalar(ScalarTy::I32),
                },
            })
            .collect();
        let name = &f.name.name;
        match self.by_name.get(name) {
            Some(&id) => {
                let old = &self.sigs[id.0 as usize];
                let same = old.ret == ret
                    && old.params.len() == params.len()
                    && old
                        .params
                        .iter()
                        .zip(&params)
                        .all(|(a, b)| a.kind == b.kind);
                if !same {
                    let prev = old.span;
                    self.err(
                        Diagnostic::error(f.name.span, format!("conflicting types for `{name}`"))
                            .note(Some(prev), "previous declaration is here"),
                    );
                }
                if f.body.is_some() {
                    self.sigs[id.0 as usize].has_body = true;
                }
            }
            None => {
                let id = FuncId(self.sigs.len() as u32);
                self.by_name.insert(name.clone(), id);
                self.sigs.push(Sig {
                    name: name.clone(),
                    ret,
                    params,
                    span: f.name.span,
                    has_body: f.body.is_some(),
                });
            }
        }
    }

    fn function(
        &mut self,
        f: &ast::FunctionDef,
        body: &[ast::Stmt],
        visible: usize,
    ) -> Option<ir::Function> {
        let n0 = self.diags.len();
        let mut fx = FnCx {
            vars: vec![],
            scopes: vec![HashMap::new()],
            ret: scalar_of(f.ret),
            fname: f.name.name.clone(),
            loop_depth: 0,
            visible,
            self_id: self.by_name[&f.name.name],
        };
        let mut params = Vec::new();
        for p in &f.params {
            let Some(ty) = scalar_of(p.ty) else {
                self.error(
                    p.ty_span,
                    format!("parameter `{}` has type `void`", p.name.name),
                );
                continue;
            };
            let mut dims = Vec::new();
            for (k, d) in p.dims.iter().enumerate() {
                match d {
                    None => self.error(
                        p.name.span,
                        format!(
                            "array parameter `{}` needs an extent in dimension {k} (e.g. `{}[n]`): Tessera checks every access against it",
                            p.name.name, p.name.name
                        ),
                    ),
                    Some(e) => {
                        if let Ok(x) = self.extent(&mut fx, e, &p.name.name) {
                            if modifies(&x) {
                                // Where the side effect lands (callee frame or caller) would
                                // differ between back ends; C evaluates it on entry. Reject.
                                self.error(
                                    e.span,
                                    format!(
                                        "extent of array parameter `{}` must not assign or increment variables",
                                        p.name.name
                                    ),
                                );
                            } else {
                                dims.push(x);
                            }
                        }
                    }
                }
            }
            if fx.scopes[0].contains_key(&p.name.name) {
                self.error(
                    p.name.span,
                    format!("duplicate parameter `{}`", p.name.name),
                );
                continue;
            }
            let kind = if p.dims.is_empty() {
                VarKind::Scalar(ty)
            } else {
                VarKind::Array {
                    elem: ty,
                    rank: p.dims.len(),
                }
            };
            let id = VarId(fx.vars.len() as u32);
            fx.vars.push(Var {
                name: p.name.name.clone(),
                kind,
                dims,
                is_param: true,
                scratch: false,
                span: p.name.span,
            });
            fx.scopes[0].insert(p.name.name.clone(), id);
            params.push(id);
        }
        // The body shares the parameters' scope level for redeclaration checks (as in C).
        let stmts = self.stmts(&mut fx, body, false);
        if self.diags.len() > n0 {
            return None;
        }
        Some(ir::Function {
            name: f.name.name.clone(),
            ret: fx.ret,
            params,
            vars: fx.vars,
            body: stmts,
            span: f.name.span,
        })
    }

    /// An array extent: an integer expression over earlier scalar parameters (for parameters)
    /// or any integer expression (locals); converted to `long`.
    fn extent(&mut self, fx: &mut FnCx, e: &ast::Expr, array: &str) -> R<ir::Expr> {
        let x = self.expr(fx, e)?;
        let t = self.value_ty(&x)?;
        if !t.is_integral() {
            self.error(
                e.span,
                format!("extent of array `{array}` must be an integer, found `{t}`"),
            );
            return Err(());
        }
        Ok(cast(x, ScalarTy::I64))
    }

    fn stmts(&mut self, fx: &mut FnCx, body: &[ast::Stmt], new_scope: bool) -> Vec<ir::Stmt> {
        if new_scope {
            fx.scopes.push(HashMap::new());
        }
        let mut out = Vec::new();
        for s in body {
            if let Ok(s) = self.stmt(fx, s) {
                out.extend(s);
            }
        }
        if new_scope {
            fx.scopes.pop();
        }
        out
    }

    fn declare_var(&mut self, fx: &mut FnCx, name: &ast::Ident, kind: VarKind) -> VarId {
        if let Some(&prev) = fx.scopes.last().unwrap().get(&name.name) {
            let pspan = fx.vars[prev.0 as usize].span;
            self.err(
                Diagnostic::error(name.span, format!("redefinition of `{}`", name.name))
                    .note(Some(pspan), "previous definition is here"),
            );
        }
        let id = VarId(fx.vars.len() as u32);
        fx.vars.push(Var {
            name: name.name.clone(),
            kind,
            dims: vec![],
            is_param: false,
            scratch: false,
            span: name.span,
        });
        fx.scopes.last_mut().unwrap().insert(name.name.clone(), id);
        id
    }

    fn cond(&mut self, fx: &mut FnCx, e: &ast::Expr) -> R<ir::Expr> {
        let x = self.expr(fx, e)?;
        self.value_ty(&x)?;
        Ok(cast(x, ScalarTy::Bool))
    }

    fn body(&mut self, fx: &mut FnCx, s: &ast::Stmt) -> Vec<ir::Stmt> {
        match s {
            ast::Stmt::Block(b) => self.stmts(fx, b, true),
            other => {
                fx.scopes.push(HashMap::new());
                let r = self.stmt(fx, other).unwrap_or_default();
                fx.scopes.pop();
                r
            }
        }
    }

    fn stmt(&mut self, fx: &mut FnCx, s: &ast::Stmt) -> R<Vec<ir::Stmt>> {
        Ok(match s {
            ast::Stmt::Decl { ty, ty_span, decls } => {
                let Some(t) = scalar_of(*ty) else {
                    self.error(*ty_span, "variables cannot have type `void`");
                    return Err(());
                };
                let mut out = Vec::new();
                for d in decls {
                    if d.dims.is_empty() {
                        let init = match &d.init {
                            Some(e) => match self.expr(fx, e) {
                                Ok(x) => match self.value_ty(&x) {
                                    Ok(_) => Some(cast(x, t)),
                                    Err(()) => None,
                                },
                                Err(()) => None,
                            },
                            None => None,
                        };
                        let var = self.declare_var(fx, &d.name, VarKind::Scalar(t));
                        out.push(ir::Stmt::Decl { var, init });
                    } else {
                        let mut dims = Vec::new();
                        for (k, dim) in d.dims.iter().enumerate() {
                            match dim {
                                None => self.error(
                                    d.name.span,
                                    format!(
                                        "local array `{}` needs an extent in dimension {k}",
                                        d.name.name
                                    ),
                                ),
                                Some(e) => {
                                    if let Ok(x) = self.extent(fx, e, &d.name.name) {
                                        dims.push(x);
                                    }
                                }
                            }
                        }
                        if let Some(init) = &d.init {
                            self.error(
                                init.span,
                                format!("array `{}` cannot have an initialiser", d.name.name),
                            );
                        }
                        let var = self.declare_var(
                            fx,
                            &d.name,
                            VarKind::Array {
                                elem: t,
                                rank: d.dims.len(),
                            },
                        );
                        out.push(ir::Stmt::DeclArray {
                            var,
                            dims,
                            span: d.name.span,
                        });
                    }
                }
                out
            }
            ast::Stmt::Expr(e) => vec![ir::Stmt::Expr(self.expr(fx, e)?)],
            ast::Stmt::Empty => vec![],
            ast::Stmt::Block(b) => vec![ir::Stmt::Block(self.stmts(fx, b, true))],
            ast::Stmt::If(c, t, e) => {
                let c = self.cond(fx, c);
                let then = self.body(fx, t);
                let els = e.as_ref().map(|e| self.body(fx, e)).unwrap_or_default();
                vec![ir::Stmt::If {
                    cond: c?,
                    then,
                    els,
                }]
            }
            ast::Stmt::While(c, b) => {
                let c = self.cond(fx, c);
                fx.loop_depth += 1;
                let body = self.body(fx, b);
                fx.loop_depth -= 1;
                vec![ir::Stmt::While {
                    cond: c?,
                    body,
                    step: None,
                    is_for: false,
                    vectorize: true,
                }]
            }
            ast::Stmt::DoWhile(b, c) => {
                fx.loop_depth += 1;
                let body = self.body(fx, b);
                fx.loop_depth -= 1;
                let c = self.cond(fx, c)?;
                vec![ir::Stmt::DoWhile { body, cond: c }]
            }
            ast::Stmt::For {
                init,
                cond,
                step,
                body,
                span,
            } => {
                fx.scopes.push(HashMap::new());
                let init = match init {
                    Some(s) => self.stmt(fx, s).unwrap_or_default(),
                    None => vec![],
                };
                let c = match cond {
                    Some(c) => self.cond(fx, c),
                    None => Ok(mk(ExprKind::Int(1), ScalarTy::Bool, *span)),
                };
                let st = match step {
                    Some(s) => self.expr(fx, s).map(Some),
                    None => Ok(None),
                };
                fx.loop_depth += 1;
                let b = self.body(fx, body);
                fx.loop_depth -= 1;
                fx.scopes.pop();
                let mut out = init;
                out.push(ir::Stmt::While {
                    cond: c?,
                    body: b,
                    step: st?,
                    is_for: true,
                    vectorize: true,
                });
                vec![ir::Stmt::Block(out)]
            }
            ast::Stmt::Break(sp) | ast::Stmt::Continue(sp) => {
                let is_break = matches!(s, ast::Stmt::Break(_));
                if fx.loop_depth == 0 {
                    let kw = if is_break { "break" } else { "continue" };
                    self.error(*sp, format!("`{kw}` outside of a loop"));
                    return Err(());
                }
                vec![if is_break {
                    ir::Stmt::Break
                } else {
                    ir::Stmt::Continue
                }]
            }
            ast::Stmt::Return(e, sp) => match (e, fx.ret) {
                (None, None) => vec![ir::Stmt::Return(None, *sp)],
                (Some(e), Some(t)) => {
                    let x = self.expr(fx, e)?;
                    self.value_ty(&x)?;
                    vec![ir::Stmt::Return(Some(cast(x, t)), *sp)]
                }
                (Some(e), None) => {
                    self.error(
                        e.span,
                        format!("void function `{}` cannot return a value", fx.fname),
                    );
                    return Err(());
                }
                (None, Some(t)) => {
                    self.error(
                        *sp,
                        format!("function `{}` must return a `{t}` value", fx.fname),
                    );
                    return Err(());
                }
            },
        })
    }

    fn value_ty(&mut self, e: &ir::Expr) -> R<ScalarTy> {
        match e.ty {
            Some(t) => Ok(t),
            None => {
                self.error(e.span, "a void function's result used as a value");
                Err(())
            }
        }
    }

    /// Splits `A[i][j]` into (name, span, [i, j]).
    fn index_chain<'e>(&mut self, e: &'e ast::Expr) -> R<(&'e str, Span, Vec<&'e ast::Expr>)> {
        let mut idx = Vec::new();
        let mut cur = e;
        while let ast::ExprKind::Index(b, i) = &cur.kind {
            idx.push(&**i);
            cur = b;
        }
        idx.reverse();
        match &cur.kind {
            ast::ExprKind::Name(n) => Ok((n, cur.span, idx)),
            _ => {
                self.error(cur.span, "only named arrays can be indexed");
                Err(())
            }
        }
    }

    fn lookup(&mut self, fx: &FnCx, name: &str, span: Span) -> R<VarId> {
        match fx.lookup(name) {
            Some(v) => Ok(v),
            None => {
                let mut d =
                    Diagnostic::error(span, format!("use of undeclared identifier `{name}`"));
                if let Some(s) = suggest(name, fx.names()) {
                    d = d.note(None, format!("did you mean `{s}`?"));
                }
                self.err(d);
                Err(())
            }
        }
    }

    fn indices(&mut self, fx: &mut FnCx, idx: &[&ast::Expr]) -> R<Vec<ir::Expr>> {
        let mut out = Vec::new();
        let mut ok = true;
        for i in idx {
            match self.expr(fx, i).and_then(|x| {
                let t = self.value_ty(&x)?;
                if t.is_float() {
                    self.error(
                        i.span,
                        format!("array index must be an integer, found `{t}`"),
                    );
                    return Err(());
                }
                Ok(cast(x, ScalarTy::I64))
            }) {
                Ok(x) => out.push(x),
                Err(()) => ok = false,
            }
        }
        if ok {
            Ok(out)
        } else {
            Err(())
        }
    }

    /// Resolves an assignable place.
    fn place(&mut self, fx: &mut FnCx, e: &ast::Expr) -> R<(Place, ScalarTy)> {
        match &e.kind {
            ast::ExprKind::Name(n) => {
                let v = self.lookup(fx, n, e.span)?;
                match fx.vars[v.0 as usize].kind {
                    VarKind::Scalar(t) => Ok((Place::Var(v), t)),
                    VarKind::Array { .. } => {
                        self.error(
                            e.span,
                            format!("cannot assign to array `{n}` as a whole; assign its elements"),
                        );
                        Err(())
                    }
                }
            }
            ast::ExprKind::Index(..) => {
                let (array, indices, t) = self.elem(fx, e)?;
                Ok((
                    Place::Elem {
                        array,
                        indices,
                        proven: 0,
                    },
                    t,
                ))
            }
            _ => {
                self.error(
                    e.span,
                    "expression is not assignable: expected a variable or an array element",
                );
                Err(())
            }
        }
    }

    /// A fully indexed array element.
    fn elem(&mut self, fx: &mut FnCx, e: &ast::Expr) -> R<(VarId, Vec<ir::Expr>, ScalarTy)> {
        let (name, nspan, idx) = self.index_chain(e)?;
        let v = self.lookup(fx, name, nspan)?;
        let (elem, rank) = match fx.vars[v.0 as usize].kind {
            VarKind::Array { elem, rank } => (elem, rank),
            VarKind::Scalar(t) => {
                self.error(
                    nspan,
                    format!("`{name}` is a `{t}`, not an array, and cannot be indexed"),
                );
                return Err(());
            }
        };
        if idx.len() != rank {
            self.error(
                e.span,
                format!(
                    "array `{name}` has {rank} dimension{} but is indexed with {}",
                    if rank == 1 { "" } else { "s" },
                    idx.len()
                ),
            );
            return Err(());
        }
        let indices = self.indices(fx, &idx)?;
        Ok((v, indices, elem))
    }

    fn expr(&mut self, fx: &mut FnCx, e: &ast::Expr) -> R<ir::Expr> {
        use ast::ExprKind as K;
        let span = e.span;
        Ok(match &e.kind {
            K::Int(v, long) => {
                if !*long && *v <= i32::MAX as u64 {
                    mk(ExprKind::Int(*v as i64), ScalarTy::I32, span)
                } else {
                    mk(ExprKind::Int(*v as i64), ScalarTy::I64, span)
                }
            }
            K::Float(v, f) => mk(
                ExprKind::Float(*v),
                if *f { ScalarTy::F32 } else { ScalarTy::F64 },
                span,
            ),
            K::Bool(b) => mk(ExprKind::Int(*b as i64), ScalarTy::I32, span),
            K::Name(n) => {
                let v = self.lookup(fx, n, span)?;
                match fx.vars[v.0 as usize].kind {
                    VarKind::Scalar(t) => mk(ExprKind::Var(v), t, span),
                    VarKind::Array { rank, .. } => {
                        self.error(
                            span,
                            format!(
                                "array `{n}` used as a value: index it with {rank} subscript{} (or pass it to a function)",
                                if rank == 1 { "" } else { "s" }
                            ),
                        );
                        return Err(());
                    }
                }
            }
            K::Index(..) => {
                let (array, indices, t) = self.elem(fx, e)?;
                mk(
                    ExprKind::Load {
                        array,
                        indices,
                        proven: 0,
                    },
                    t,
                    span,
                )
            }
            K::Call(name, args) => return self.call(fx, name, args, span),
            K::Unary(op, x) => match op {
                UnaryOp::PreInc | UnaryOp::PreDec | UnaryOp::PostInc | UnaryOp::PostDec => {
                    let (place, t) = self.place(fx, x)?;
                    let inc = matches!(op, UnaryOp::PreInc | UnaryOp::PostInc);
                    let prefix = matches!(op, UnaryOp::PreInc | UnaryOp::PreDec);
                    mk(ExprKind::IncDec { place, inc, prefix }, t, span)
                }
                UnaryOp::Not => {
                    let a = self.expr(fx, x)?;
                    self.value_ty(&a)?;
                    let b = mk(
                        ExprKind::Unary(UnOp::Not, Box::new(cast(a, ScalarTy::Bool))),
                        ScalarTy::Bool,
                        span,
                    );
                    cast(b, ScalarTy::I32)
                }
                UnaryOp::Neg | UnaryOp::Plus | UnaryOp::BitNot => {
                    let a = self.expr(fx, x)?;
                    let t = promote(self.value_ty(&a)?);
                    if *op == UnaryOp::BitNot && t.is_float() {
                        self.error(
                            span,
                            format!("operator `~` needs an integer operand, found `{t}`"),
                        );
                        return Err(());
                    }
                    let a = cast(a, t);
                    match op {
                        UnaryOp::Plus => a,
                        UnaryOp::Neg => mk(ExprKind::Unary(UnOp::Neg, Box::new(a)), t, span),
                        _ => mk(ExprKind::Unary(UnOp::BitNot, Box::new(a)), t, span),
                    }
                }
            },
            K::Binary(op, l, r) => {
                let a = self.expr(fx, l);
                let b = self.expr(fx, r);
                let (a, b) = (a?, b?);
                let ta = self.value_ty(&a)?;
                let tb = self.value_ty(&b)?;
                self.binary(*op, a, b, ta, tb, span)?
            }
            K::Assign(op, l, r) => {
                let place = self.place(fx, l);
                let v = self.expr(fx, r);
                let ((place, pt), v) = (place?, v?);
                let vt = self.value_ty(&v)?;
                match op {
                    None => mk(
                        ExprKind::Assign {
                            place,
                            op: None,
                            value: Box::new(cast(v, pt)),
                        },
                        pt,
                        span,
                    ),
                    Some(op) => {
                        let (bop, opt, v) = match op {
                            BinaryOp::Shl | BinaryOp::Shr => {
                                let lt = promote(pt);
                                let rt = promote(vt);
                                if lt.is_float() || rt.is_float() {
                                    self.error(span, "shift operators need integer operands");
                                    return Err(());
                                }
                                let bop = if *op == BinaryOp::Shl {
                                    BinOp::Shl
                                } else {
                                    BinOp::Shr
                                };
                                (bop, lt, cast(v, rt))
                            }
                            _ => {
                                let t = common(pt, vt);
                                let bop = arith_op(*op);
                                if matches!(bop, BinOp::Rem | BinOp::And | BinOp::Or | BinOp::Xor)
                                    && t.is_float()
                                {
                                    self.error(
                                        span,
                                        format!(
                                            "operator `{}=` needs integer operands, found `{t}`",
                                            bop.c_op()
                                        ),
                                    );
                                    return Err(());
                                }
                                (bop, t, cast(v, t))
                            }
                        };
                        mk(
                            ExprKind::Assign {
                                place,
                                op: Some((bop, opt)),
                                value: Box::new(v),
                            },
                            pt,
                            span,
                        )
                    }
                }
            }
            K::Cond(c, t, f) => {
                let c = self.cond(fx, c);
                let a = self.expr(fx, t);
                let b = self.expr(fx, f);
                let (c, a, b) = (c?, a?, b?);
                let ta = self.value_ty(&a)?;
                let tb = self.value_ty(&b)?;
                let t = if ta == tb { ta } else { common(ta, tb) };
                mk(
                    ExprKind::Cond(Box::new(c), Box::new(cast(a, t)), Box::new(cast(b, t))),
                    t,
                    span,
                )
            }
            K::Cast(t, x) => {
                let a = self.expr(fx, x)?;
                self.value_ty(&a)?;
                let Some(t) = scalar_of(*t) else {
                    self.error(span, "casts to `void` are not supported");
                    return Err(());
                };
                let c = cast(a, t);
                ir::Expr { span, ..c }
            }
            K::Comma(a, b) => {
                let a = self.expr(fx, a);
                let b = self.expr(fx, b);
                let (a, b) = (a?, b?);
                let t = b.ty;
                ir::Expr {
                    kind: ExprKind::Comma(Box::new(a), Box::new(b)),
                    ty: t,
                    span,
                }
            }
        })
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        a: ir::Expr,
        b: ir::Expr,
        ta: ScalarTy,
        tb: ScalarTy,
        span: Span,
    ) -> R<ir::Expr> {
        Ok(match op {
            BinaryOp::LogAnd | BinaryOp::LogOr => {
                let (a, b) = (
                    Box::new(cast(a, ScalarTy::Bool)),
                    Box::new(cast(b, ScalarTy::Bool)),
                );
                let k = if op == BinaryOp::LogAnd {
                    ExprKind::LogAnd(a, b)
                } else {
                    ExprKind::LogOr(a, b)
                };
                mk(k, ScalarTy::I32, span)
            }
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => {
                let t = common(ta, tb);
                let c = match op {
                    BinaryOp::Eq => CmpOp::Eq,
                    BinaryOp::Ne => CmpOp::Ne,
                    BinaryOp::Lt => CmpOp::Lt,
                    BinaryOp::Le => CmpOp::Le,
                    BinaryOp::Gt => CmpOp::Gt,
                    _ => CmpOp::Ge,
                };
                mk(
                    ExprKind::Cmp(c, Box::new(cast(a, t)), Box::new(cast(b, t))),
                    ScalarTy::I32,
                    span,
                )
            }
            BinaryOp::Shl | BinaryOp::Shr => {
                let (lt, rt) = (promote(ta), promote(tb));
                if lt.is_float() || rt.is_float() {
                    self.error(
                        span,
                        format!("shift operators need integer operands, found `{lt}` and `{rt}`"),
                    );
                    return Err(());
                }
                let bop = if op == BinaryOp::Shl {
                    BinOp::Shl
                } else {
                    BinOp::Shr
                };
                mk(
                    ExprKind::Binary(bop, Box::new(cast(a, lt)), Box::new(cast(b, rt))),
                    lt,
                    span,
                )
            }
            _ => {
                let t = common(ta, tb);
                let bop = arith_op(op);
                if matches!(bop, BinOp::Rem | BinOp::And | BinOp::Or | BinOp::Xor) && t.is_float() {
                    self.error(
                        span,
                        format!(
                            "operator `{}` needs integer operands, found `{ta}` and `{tb}`",
                            bop.c_op()
                        ),
                    );
                    return Err(());
                }
                mk(
                    ExprKind::Binary(bop, Box::new(cast(a, t)), Box::new(cast(b, t))),
                    t,
                    span,
                )
            }
        })
    }

    fn call(
        &mut self,
        fx: &mut FnCx,
        name: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> R<ir::Expr> {
        let fid = self.by_name.get(&name.name).copied();
        let callable = fid.filter(|id| (id.0 as usize) < fx.visible || *id == fx.self_id);
        let Some(id) = callable else {
            if let Some((b, is_f32)) = Builtin::from_name(&name.name) {
                return self.builtin(fx, name, b, is_f32, args, span);
            }
            if fid.is_some() {
                self.error(
                    name.span,
                    format!("function `{}` is used before it is declared: define it (or a prototype) above `{}`", name.name, fx.fname),
                );
                return Err(());
            }
            let mut d = Diagnostic::error(
                name.span,
                format!("call to unknown function `{}`", name.name),
            );
            if let Some(s) = suggest(&name.name, self.by_name.keys().map(|k| k.as_str())) {
                d = d.note(None, format!("did you mean `{s}`?"));
            }
            self.err(d);
            return Err(());
        };
        let sig = self.sigs[id.0 as usize].clone();
        if args.len() != sig.params.len() {
            self.err(
                Diagnostic::error(
                    span,
                    format!(
                        "function `{}` takes {} argument{} but {} were given",
                        sig.name,
                        sig.params.len(),
                        if sig.params.len() == 1 { "" } else { "s" },
                        args.len()
                    ),
                )
                .note(Some(sig.span), "declared here"),
            );
            return Err(());
        }
        let mut out = Vec::new();
        let mut ok = true;
        for (a, p) in args.iter().zip(&sig.params) {
            let r = match p.kind {
                VarKind::Scalar(t) => self.expr(fx, a).and_then(|x| {
                    self.value_ty(&x)?;
                    Ok(Arg::Scalar(cast(x, t)))
                }),
                VarKind::Array { elem, rank } => {
                    self.array_arg(fx, a, elem, rank, &p.name, &sig.name)
                }
            };
            match r {
                Ok(x) => out.push(x),
                Err(()) => ok = false,
            }
        }
        if !ok {
            return Err(());
        }
        Ok(ir::Expr {
            kind: ExprKind::Call(id, out),
            ty: sig.ret,
            span,
        })
    }

    fn array_arg(
        &mut self,
        fx: &mut FnCx,
        a: &ast::Expr,
        elem: ScalarTy,
        rank: usize,
        pname: &str,
        fname: &str,
    ) -> R<Arg> {
        let (name, nspan, idx) = match &a.kind {
            ast::ExprKind::Name(_) | ast::ExprKind::Index(..) => self.index_chain(a)?,
            _ => {
                self.error(
                    a.span,
                    format!("parameter `{pname}` of `{fname}` is an array: pass an array variable"),
                );
                return Err(());
            }
        };
        let v = self.lookup(fx, name, nspan)?;
        let VarKind::Array { elem: ae, rank: ar } = fx.vars[v.0 as usize].kind else {
            self.error(
                a.span,
                format!("parameter `{pname}` of `{fname}` is an array, but `{name}` is a scalar"),
            );
            return Err(());
        };
        if ae != elem {
            self.error(a.span, format!("parameter `{pname}` of `{fname}` is a `{elem}` array, but `{name}` holds `{ae}`"));
            return Err(());
        }
        if idx.len() > ar || ar - idx.len() != rank {
            self.error(
                a.span,
                format!(
                    "parameter `{pname}` of `{fname}` has {rank} dimension{}, but `{}` has {}",
                    if rank == 1 { "" } else { "s" },
                    &a_text(name, idx.len()),
                    ar as i64 - idx.len() as i64
                ),
            );
            return Err(());
        }
        let prefix = self.indices(fx, &idx)?;
        Ok(Arg::Array {
            array: v,
            prefix,
            span: a.span,
        })
    }

    fn builtin(
        &mut self,
        fx: &mut FnCx,
        name: &ast::Ident,
        b: Builtin,
        is_f32: bool,
        args: &[ast::Expr],
        span: Span,
    ) -> R<ir::Expr> {
        let is_minmax = matches!(b, Builtin::Min | Builtin::Max);
        if !is_minmax && !self.has_math {
            self.error(
                name.span,
                format!("`{}` needs `#include <math.h>`", name.name),
            );
            return Err(());
        }
        if args.len() != b.arity() {
            self.error(
                span,
                format!(
                    "`{}` takes {} argument{} but {} were given",
                    name.name,
                    b.arity(),
                    if b.arity() == 1 { "" } else { "s" },
                    args.len()
                ),
            );
            return Err(());
        }
        let mut xs = Vec::new();
        for a in args {
            let x = self.expr(fx, a)?;
            let t = self.value_ty(&x)?;
            xs.push((x, t));
        }
        let t = if is_minmax {
            let t = xs.iter().fold(ScalarTy::I32, |acc, (_, t)| common(acc, *t));
            if t.is_float() {
                self.error(
                    span,
                    format!(
                        "`{}` takes integers; use `f{}` for floating-point values",
                        name.name, name.name
                    ),
                );
                return Err(());
            }
            t
        } else if is_f32 {
            ScalarTy::F32
        } else {
            ScalarTy::F64
        };
        let xs = xs.into_iter().map(|(x, _)| cast(x, t)).collect();
        Ok(mk(ExprKind::Builtin(b, xs), t, span))
    }
}

fn a_text(name: &str, n: usize) -> String {
    format!("{name}{}", "[_]".repeat(n))
}

fn arith_op(op: BinaryOp) -> BinOp {
    match op {
        BinaryOp::Add => BinOp::Add,
        BinaryOp::Sub => BinOp::Sub,
        BinaryOp::Mul => BinOp::Mul,
        BinaryOp::Div => BinOp::Div,
        BinaryOp::Rem => BinOp::Rem,
        BinaryOp::BitAnd => BinOp::And,
        BinaryOp::BitOr => BinOp::Or,
        BinaryOp::BitXor => BinOp::Xor,
        BinaryOp::Shl => BinOp::Shl,
        BinaryOp::Shr => BinOp::Shr,
        _ => unreachable!("not an arithmetic operator"),
    }
}

/// Whether evaluating `e` assigns to or increments a variable (calls cannot modify the
/// caller's scalars, so they do not count).
fn modifies(e: &ir::Expr) -> bool {
    use ir::ExprKind as K;
    match &e.kind {
        K::Assign { .. } | K::IncDec { .. } => true,
        K::Int(_) | K::Float(_) | K::Var(_) => false,
        K::Load { indices, .. } => indices.iter().any(modifies),
        K::Unary(_, x) | K::Cast(x) => modifies(x),
        K::Binary(_, a, b)
        | K::Cmp(_, a, b)
        | K::LogAnd(a, b)
        | K::LogOr(a, b)
        | K::Comma(a, b) => modifies(a) || modifies(b),
        K::Cond(c, a, b) => modifies(c) || modifies(a) || modifies(b),
        K::Builtin(_, xs) => xs.iter().any(modifies),
        K::Call(_, args) => args.iter().any(|a| match a {
            ir::Arg::Scalar(x) => modifies(x),
            _ => false,
        }),
    }
}
