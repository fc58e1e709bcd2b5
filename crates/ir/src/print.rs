//! Printing the TIR as C source, with every conversion explicit. Used by `tessera check
//! --print-ir`, by the C driver generator, and by later stages' `explain` output.
//!
//! The printed C has the meaning of the TIR when compiled with `gcc -fwrapv` (gcc or clang:
//! the prelude's `min`/`max` are statement expressions), except for the run-time checks,
//! which are not printed. Whole programs start with [`PRELUDE`].

use crate::*;
use std::fmt::Write;

fn c_ty(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::Bool => "_Bool",
        // Tessera's `char` is signed; spelt so whatever the C compiler's `char` is.
        ScalarTy::I8 => "signed char",
        t => t.c_name(),
    }
}

fn place(p: &Program, f: &Function, pl: &Place) -> String {
    match pl {
        Place::Var(v) => f.var(*v).name.clone(),
        Place::Elem { array, indices, .. } => {
            format!("{}{}", f.var(*array).name, index_list(p, f, indices))
        }
    }
}

fn index_list(p: &Program, f: &Function, idx: &[Expr]) -> String {
    idx.iter().map(|i| format!("[{}]", expr(p, f, i))).collect()
}

/// An expression as C.
pub fn expr(p: &Program, f: &Function, e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => match e.ty {
            Some(ScalarTy::I64) => format!("{v}L"),
            Some(ScalarTy::Bool) => format!("(_Bool){v}"),
            _ => format!("{v}"),
        },
        ExprKind::Float(v) => {
            let s = if v.is_finite() {
                format!("{v:?}")
            } else if v.is_nan() {
                "(0.0/0.0)".into()
            } else if *v > 0.0 {
                "(1.0/0.0)".into()
            } else {
                "(-1.0/0.0)".into()
            };
            if e.ty == Some(ScalarTy::F32) {
                format!("{s}f")
            } else {
                s
            }
        }
        ExprKind::Var(v) => f.var(*v).name.clone(),
        ExprKind::Load { array, indices, .. } => {
            format!("{}{}", f.var(*array).name, index_list(p, f, indices))
        }
        ExprKind::Assign {
            place: pl,
            op: None,
            value,
        } => format!("({} = {})", place(p, f, pl), expr(p, f, value)),
        ExprKind::Assign {
            place: pl,
            op: Some((op, _)),
            value,
        } => {
            format!("({} {}= {})", place(p, f, pl), op.c_op(), expr(p, f, value))
        }
        ExprKind::IncDec {
            place: pl,
            inc,
            prefix,
        } => {
            let o = if *inc { "++" } else { "--" };
            if *prefix {
                format!("({o}{})", place(p, f, pl))
            } else {
                format!("({}{o})", place(p, f, pl))
            }
        }
        ExprKind::Unary(op, a) => {
            let o = match op {
                UnOp::Neg => "-",
                UnOp::BitNot => "~",
                UnOp::Not => "!",
            };
            format!("({o}{})", expr(p, f, a))
        }
        ExprKind::Binary(op, a, b) => {
            format!("({} {} {})", expr(p, f, a), op.c_op(), expr(p, f, b))
        }
        ExprKind::Cmp(op, a, b) => format!("({} {} {})", expr(p, f, a), op.c_op(), expr(p, f, b)),
        ExprKind::LogAnd(a, b) => format!("({} && {})", expr(p, f, a), expr(p, f, b)),
        ExprKind::LogOr(a, b) => format!("({} || {})", expr(p, f, a), expr(p, f, b)),
        ExprKind::Cond(c, a, b) => format!(
            "({} ? {} : {})",
            expr(p, f, c),
            expr(p, f, a),
            expr(p, f, b)
        ),
        ExprKind::Cast(a) => format!("(({}){})", c_ty(e.sty()), expr(p, f, a)),
        ExprKind::Call(id, args) => {
            let args: Vec<String> = args
                .iter()
                .map(|a| match a {
                    Arg::Scalar(x) => expr(p, f, x),
                    Arg::Array { array, prefix, .. } => {
                        format!("{}{}", f.var(*array).name, index_list(p, f, prefix))
                    }
                })
                .collect();
            format!("{}({})", p.func(*id).name, args.join(", "))
        }
        ExprKind::Builtin(b, args) => {
            let suffix = if e.ty == Some(ScalarTy::F32) { "f" } else { "" };
            let args: Vec<String> = args.iter().map(|a| expr(p, f, a)).collect();
            format!("{}{suffix}({})", b.c_name(), args.join(", "))
        }
        ExprKind::Comma(a, b) => format!("({}, {})", expr(p, f, a), expr(p, f, b)),
    }
}

fn strip_parens(s: String) -> String {
    if s.starts_with('(') && s.ends_with(')') {
        // Only strip if the outer parentheses match each other.
        let mut depth = 0;
        for (i, c) in s.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 && i != s.len() - 1 {
                        return s;
                    }
                }
                _ => {}
            }
        }
        return s[1..s.len() - 1].to_string();
    }
    s
}

/// A parameter declaration as C (`double A[ni][nk]`).
pub fn param(p: &Program, f: &Function, v: VarId) -> String {
    let var = f.var(v);
    let dims: String = var
        .dims
        .iter()
        .map(|d| format!("[{}]", strip_parens(extent(p, f, d))))
        .collect();
    format!("{} {}{}", c_ty(var.scalar_ty()), var.name, dims)
}

/// An extent expression, without the implicit cast to `long` that the checker adds.
fn extent(p: &Program, f: &Function, d: &Expr) -> String {
    match &d.kind {
        ExprKind::Cast(inner) if d.ty == Some(ScalarTy::I64) => expr(p, f, inner),
        _ => expr(p, f, d),
    }
}

/// The signature of a function as C.
pub fn signature(p: &Program, f: &Function) -> String {
    let params: Vec<String> = f.params.iter().map(|v| param(p, f, *v)).collect();
    format!(
        "{} {}({})",
        f.ret.map(c_ty).unwrap_or("void"),
        f.name,
        params.join(", ")
    )
}

/// How parallel loops ([`Stmt::ParFor`]) are printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Flavor {
    /// Plain C: a `for` loop with a `/* parallel */` comment.
    #[default]
    C,
    /// C with OpenMP: `#pragma omp parallel for`, the scalars the body assigns
    /// `firstprivate`.
    OpenMp,
}

fn stmts_as(p: &Program, f: &Function, out: &mut String, body: &[Stmt], ind: usize, fl: Flavor) {
    for s in body {
        stmt(p, f, out, s, ind, fl);
    }
    // Scratch arrays live on the heap (they can be large) until the end of their list.
    for s in body {
        if let Stmt::DeclArray { var, .. } = s {
            if f.var(*var).scratch {
                let _ = writeln!(out, "{}free({});", "  ".repeat(ind), f.var(*var).name);
            }
        }
    }
}

fn stmt(p: &Program, f: &Function, out: &mut String, s: &Stmt, ind: usize, fl: Flavor) {
    let pad = "  ".repeat(ind);
    let stmts = |p: &Program, f: &Function, out: &mut String, body: &[Stmt], ind: usize| {
        stmts_as(p, f, out, body, ind, fl)
    };
    match s {
        Stmt::Decl { var, init } => {
            let v = f.var(*var);
            let init = init
                .as_ref()
                .map(|e| expr(p, f, e))
                .unwrap_or_else(|| "0".into());
            let _ = writeln!(
                out,
                "{pad}{} {} = {};",
                c_ty(v.scalar_ty()),
                v.name,
                strip_parens(init)
            );
        }
        Stmt::DeclArray { var, dims, .. } if f.var(*var).scratch => {
            // `T (*a)[d1]...[dn] = calloc(d0, sizeof *a)`: indexed like the array, on the heap.
            let v = f.var(*var);
            let d: Vec<String> = dims.iter().map(|d| strip_parens(extent(p, f, d))).collect();
            let rest: String = d[1..].iter().map(|x| format!("[{x}]")).collect();
            let _ = writeln!(
                out,
                "{pad}{} (*{}){rest} = calloc(({}) + 1, sizeof *{}); /* scratch, zeroed */",
                c_ty(v.scalar_ty()),
                v.name,
                d[0],
                v.name
            );
        }
        Stmt::DeclArray { var, dims, .. } => {
            let v = f.var(*var);
            let d: String = dims
                .iter()
                .map(|d| format!("[{}]", strip_parens(extent(p, f, d))))
                .collect();
            let _ = writeln!(
                out,
                "{pad}{} {}{d}; /* zeroed */",
                c_ty(v.scalar_ty()),
                v.name
            );
        }
        Stmt::Expr(e) => {
            // A value computed for its checks only (a forward-substituted temporary's
            // reads) is cast to void, as C programmers write it.
            let effect = {
                let mut x = false;
                e.walk(&mut |s| {
                    x |= matches!(
                        s.kind,
                        ExprKind::Assign { .. } | ExprKind::IncDec { .. } | ExprKind::Call(..)
                    )
                });
                x
            };
            let text = strip_parens(expr(p, f, e));
            if effect {
                let _ = writeln!(out, "{pad}{text};");
            } else {
                let _ = writeln!(out, "{pad}(void)({text});");
            }
        }
        Stmt::If { cond, then, els } => {
            let _ = writeln!(out, "{pad}if ({}) {{", strip_parens(expr(p, f, cond)));
            stmts(p, f, out, then, ind + 1);
            if els.is_empty() {
                let _ = writeln!(out, "{pad}}}");
            } else {
                let _ = writeln!(out, "{pad}}} else {{");
                stmts(p, f, out, els, ind + 1);
                let _ = writeln!(out, "{pad}}}");
            }
        }
        Stmt::While {
            cond, body, step, ..
        } => {
            match step {
                Some(st) => {
                    let _ = writeln!(
                        out,
                        "{pad}for (; {}; {}) {{",
                        strip_parens(expr(p, f, cond)),
                        strip_parens(expr(p, f, st))
                    );
                }
                None => {
                    let _ = writeln!(out, "{pad}while ({}) {{", strip_parens(expr(p, f, cond)));
                }
            }
            stmts(p, f, out, body, ind + 1);
            let _ = writeln!(out, "{pad}}}");
        }
        Stmt::ParFor { var, lo, hi, body } => {
            let name = &f.var(*var).name;
            match fl {
                Flavor::C => {
                    let _ = writeln!(out, "{pad}/* parallel */");
                }
                Flavor::OpenMp => {
                    let private: Vec<&str> = crate::scalars_written_not_declared(body)
                        .into_iter()
                        .map(|v| f.var(v).name.as_str())
                        .collect();
                    let clause = if private.is_empty() {
                        String::new()
                    } else {
                        format!(" firstprivate({})", private.join(", "))
                    };
                    // The bounds go into variables first: gcc 12 fails (internal compiler
                    // error) on statement expressions (`min`, `max`) in OpenMP loop bounds.
                    let _ = writeln!(out, "{pad}{{");
                    let _ = writeln!(
                        out,
                        "{pad}  long tsr_lo_{name} = {}, tsr_hi_{name} = {};",
                        strip_parens(expr(p, f, lo)),
                        strip_parens(expr(p, f, hi))
                    );
                    let _ = writeln!(out, "{pad}  #pragma omp parallel for{clause}");
                    let _ = writeln!(
                        out,
                        "{pad}  for (long {name} = tsr_lo_{name}; {name} < tsr_hi_{name}; {name}++) {{"
                    );
                    stmts(p, f, out, body, ind + 2);
                    let _ = writeln!(out, "{pad}  }}");
                    let _ = writeln!(out, "{pad}}}");
                    return;
                }
            }
            let _ = writeln!(
                out,
                "{pad}for (long {name} = {}; {name} < {}; {name}++) {{",
                strip_parens(expr(p, f, lo)),
                strip_parens(expr(p, f, hi))
            );
            stmts(p, f, out, body, ind + 1);
            let _ = writeln!(out, "{pad}}}");
        }
        Stmt::Versioned { site, fast, .. } => {
            // C gets the optimised version; the JIT keeps both and runs the faster.
            let _ = writeln!(
                out,
                "{pad}/* region {site}, optimised; the JIT also keeps the code as written and runs the faster */"
            );
            let _ = writeln!(out, "{pad}{{");
            stmts(p, f, out, fast, ind + 1);
            let _ = writeln!(out, "{pad}}}");
        }
        Stmt::DoWhile { body, cond } => {
            let _ = writeln!(out, "{pad}do {{");
            stmts(p, f, out, body, ind + 1);
            let _ = writeln!(out, "{pad}}} while ({});", strip_parens(expr(p, f, cond)));
        }
        Stmt::Block(b) => {
            let _ = writeln!(out, "{pad}{{");
            stmts(p, f, out, b, ind + 1);
            let _ = writeln!(out, "{pad}}}");
        }
        Stmt::Break => {
            let _ = writeln!(out, "{pad}break;");
        }
        Stmt::Continue => {
            let _ = writeln!(out, "{pad}continue;");
        }
        Stmt::Return(e, _) => match e {
            Some(e) => {
                let _ = writeln!(out, "{pad}return {};", strip_parens(expr(p, f, e)));
            }
            None => {
                let _ = writeln!(out, "{pad}return;");
            }
        },
    }
}

/// A whole function as C.
pub fn function(p: &Program, f: &Function) -> String {
    function_as(p, f, Flavor::C)
}

/// A whole function as C of the given flavour.
pub fn function_as(p: &Program, f: &Function, fl: Flavor) -> String {
    let mut out = format!("{} {{\n", signature(p, f));
    stmts_as(p, f, &mut out, &f.body, 1, fl);
    out.push_str("}\n");
    out
}

/// The whole program as C (includes first).
pub fn program(p: &Program) -> String {
    program_as(p, Flavor::C)
}

/// The C definitions of Tessera's builtins with its semantics (`min`, `max`, `fmin`,
/// `fmax`), under an include guard; also `tests/gcc-prelude.h`.
pub const PRELUDE: &str = include_str!("prelude.h");

/// The whole program as C of the given flavour (includes and [`PRELUDE`] first).
pub fn program_as(p: &Program, fl: Flavor) -> String {
    let mut out = String::from("#include <math.h>\n#include <stdbool.h>\n#include <stdlib.h>\n");
    out.push_str(PRELUDE);
    out.push('\n');
    for f in &p.functions {
        out.push_str(&function_as(p, f, fl));
        out.push('\n');
    }
    out
}

/// The whole program as C of the given flavour, with every function's local scalars declared
/// once at its top (under unique names) and their declarations inside the body printed as
/// assignments. The polyhedral optimiser's output needs this form: its statement instances
/// assign the original loop counters and scalars in blocks of their own, so the C scopes of
/// the source no longer enclose their uses. The meaning is unchanged (a declaration without
/// initialiser assigns zero).
pub fn program_hoisted(p: &Program, fl: Flavor) -> String {
    let mut q = p.clone();
    for f in &mut q.functions {
        hoist_scalars(f);
    }
    program_as(&q, fl)
}

fn hoist_scalars(f: &mut Function) {
    let mut used: std::collections::HashSet<String> = std::collections::HashSet::new();
    for v in f.vars.iter_mut() {
        if used.contains(&v.name) && !v.is_param {
            let mut k = 1;
            while used.contains(&format!("{}_{k}", v.name)) {
                k += 1;
            }
            v.name = format!("{}_{k}", v.name);
        }
        used.insert(v.name.clone());
    }
    fn rewrite(f: &Function, body: &mut [Stmt]) {
        for s in body.iter_mut() {
            match s {
                Stmt::Decl { var, init } => {
                    let v = f.var(*var);
                    let t = v.scalar_ty();
                    let value = init.take().unwrap_or(Expr {
                        kind: match t {
                            ScalarTy::F32 | ScalarTy::F64 => ExprKind::Float(0.0),
                            _ => ExprKind::Int(0),
                        },
                        ty: Some(t),
                        span: v.span,
                    });
                    let span = value.span;
                    *s = Stmt::Expr(Expr {
                        kind: ExprKind::Assign {
                            place: Place::Var(*var),
                            op: None,
                            value: Box::new(value),
                        },
                        ty: Some(t),
                        span,
                    });
                }
                Stmt::If { then, els, .. }
                | Stmt::Versioned {
                    fast: then,
                    original: els,
                    ..
                } => {
                    rewrite(f, then);
                    rewrite(f, els);
                }
                Stmt::While { body, .. }
                | Stmt::DoWhile { body, .. }
                | Stmt::ParFor { body, .. }
                | Stmt::Block(body) => rewrite(f, body),
                _ => {}
            }
        }
    }
    let mut body = std::mem::take(&mut f.body);
    rewrite(f, &mut body);
    let mut top: Vec<Stmt> = f
        .vars
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_param && !v.is_array())
        .map(|(i, _)| Stmt::Decl {
            var: VarId(i as u32),
            init: None,
        })
        .collect();
    top.extend(body);
    f.body = top;
}
