//! The preprocessor: directives, macro expansion, conditional compilation and includes.
//!
//! What it supports (docs/language.md, "The preprocessor", says the same for users):
//!
//! - `#define NAME body` and `#define F(a, b) body`, with C's expansion rules: arguments are
//!   split at top-level commas, macro-expanded, substituted for the parameters, and the
//!   result is rescanned; a macro is not expanded again inside its own expansion (each token
//!   carries the set of macros it came from, C's "hide set"); a function-like macro's name
//!   not followed by `(` is left alone. `#` (stringify) and `##` (paste) work as in C.
//!   Variadic macros (`...`) are rejected. `#undef NAME`.
//! - `#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`, `#endif`, with `defined X` / `defined(X)`
//!   and C's integer operators on `long` values after macro expansion; an identifier left
//!   after expansion is 0. Skipped regions are not lexed, except for directive names.
//! - `#include <math.h>` / `<stdint.h>` / `<stdbool.h>` (recorded: they enable names) and
//!   `#include "file.h"`, searched relative to the directory of the including file, at most
//!   [`MAX_INCLUDE_DEPTH`] deep; `#pragma once` and include guards both work.
//! - `#pragma` (otherwise ignored), `#error`.
//! - `-D NAME=VALUE` from the command line: it replaces the body of every `#define NAME` of
//!   the file, and `NAME` is defined from the start of the file (for `#ifdef`, `defined`,
//!   `#if`). A `-D` name that no directive mentions (it may bind a kernel parameter of that
//!   name instead) is not substituted in code; once a directive mentions it, it is a macro
//!   like any other for the rest of the file.
//!
//! Expansion is bounded: at most [`MAX_EXPANDED_TOKENS`] tokens in a file, and at most
//! [`MAX_MACRO_DEPTH`] macros nested in one expansion (or in the arguments of one call).

use crate::diag::{Diagnostic, IncludedFile};
use crate::lexer::{Lexed, Lexer, Tok, Token, ALLOWED_INCLUDES, P};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use tessera_ir::Span;

/// The most tokens macro expansion may produce in one file (the source's own tokens count
/// too, and so does every macro name expanded): nested macros can otherwise grow
/// exponentially (`#define A1 A0 A0`, `#define A2 A1 A1`, ...).
pub const MAX_EXPANDED_TOKENS: usize = 1_000_000;

/// The most macros that may be in expansion at once (a macro whose body uses a macro whose
/// body uses a macro ...), and the most macro calls nested in each other's arguments.
pub const MAX_MACRO_DEPTH: usize = 64;

/// The most files that may be open at once through `#include "..."` (the source file
/// included).
pub const MAX_INCLUDE_DEPTH: usize = 32;

/// The deepest parenthesis nesting of a `#if` expression.
const MAX_IF_DEPTH: usize = 256;

const MAX_DIAGS: usize = 50;

/// A hide set: the macros a token came from, outermost first.
type Hs = Rc<Vec<u32>>;

#[derive(Clone, Debug)]
struct PTok {
    tok: Tok,
    span: Span,
    hs: Option<Hs>,
    /// Whitespace precedes it (for `#`).
    space: bool,
}

impl PTok {
    fn plain(t: Token, space: bool) -> PTok {
        PTok {
            tok: t.tok,
            span: t.span,
            hs: None,
            space,
        }
    }
    fn is(&self, p: P) -> bool {
        self.tok == Tok::Punct(p)
    }
    fn depth(&self) -> usize {
        self.hs.as_ref().map_or(0, |h| h.len())
    }
}

struct Macro {
    /// `None` for an object-like macro.
    params: Option<Vec<String>>,
    body: Vec<PTok>,
    /// Where it was defined (the name in `#define`), or `None` for `-D` alone.
    def_span: Option<Span>,
    /// A `-D` definition the file has not `#define`d: only a macro in code once claimed.
    cmdline: bool,
    claimed: bool,
    /// The `-D` value did not lex.
    bad_value: bool,
}

struct Frame {
    lx: Lexer,
    /// Where `#include "..."` looks.
    dir: Option<PathBuf>,
    /// The file, canonical (for `#pragma once`); `None` for the main source.
    path: Option<PathBuf>,
    /// `conds.len()` when the file was entered.
    conds_base: usize,
    /// At the start of a line.
    bol: bool,
}

struct Cond {
    /// `#if`, `#ifdef` or `#ifndef`, for messages.
    kind: &'static str,
    span: Span,
    /// Lines here are kept.
    active: bool,
    /// A branch was taken already (or the whole group is skipped).
    taken: bool,
    parent_active: bool,
    else_span: Option<Span>,
}

struct Pp<'o> {
    frames: Vec<Frame>,
    conds: Vec<Cond>,
    macros: HashMap<String, Macro>,
    overrides: &'o HashMap<String, String>,
    names: Vec<String>,
    ids: HashMap<String, u32>,
    /// Tokens to read before the source: results of expansions.
    pending: VecDeque<PTok>,
    /// Reading only `pending` (an argument's or `#if` line's tokens), not the source.
    isolated: bool,
    /// Expanding a `#if` line: `-D` names are claimed as met.
    in_if: bool,
    arg_depth: usize,
    /// The function-like macros whose calls are being substituted, outermost first.
    calls: Vec<String>,
    produced: usize,
    fatal: Option<Diagnostic>,
    diags: Vec<Diagnostic>,
    includes: Vec<String>,
    defines: Vec<(String, String)>,
    files: Vec<IncludedFile>,
    /// Canonical path → (index in `files`, text).
    file_index: HashMap<PathBuf, (usize, Rc<[u8]>)>,
    next_base: u64,
    once: HashSet<PathBuf>,
    eof: Span,
}

/// Preprocesses and lexes `src`. `dir` is the directory of the source file, where
/// `#include "..."` looks (`None`: the source is a text, and such includes are errors);
/// `overrides` are the `-D NAME=VALUE` definitions.
pub fn preprocess(src: &str, dir: Option<&Path>, overrides: &HashMap<String, String>) -> Lexed {
    let text: Rc<[u8]> = Rc::from(src.as_bytes());
    let mut pp = Pp {
        frames: vec![Frame {
            lx: Lexer::new(text, 0),
            dir: dir.map(Path::to_path_buf),
            path: None,
            conds_base: 0,
            bol: true,
        }],
        conds: vec![],
        macros: HashMap::new(),
        overrides,
        names: vec![],
        ids: HashMap::new(),
        pending: VecDeque::new(),
        isolated: false,
        in_if: false,
        arg_depth: 0,
        calls: vec![],
        produced: 0,
        fatal: None,
        diags: vec![],
        includes: vec![],
        defines: vec![],
        files: vec![],
        file_index: HashMap::new(),
        next_base: src.len() as u64 + 1,
        once: HashSet::new(),
        eof: Span {
            lo: src.len() as u32,
            hi: src.len() as u32,
            line: 1,
            col: 1,
        },
    };
    let mut names: Vec<&String> = overrides.keys().collect();
    names.sort();
    for name in names {
        let (body, bad) = lex_value(&overrides[name], None);
        pp.macros.insert(
            name.clone(),
            Macro {
                params: None,
                body,
                def_span: None,
                cmdline: true,
                claimed: false,
                bad_value: bad,
            },
        );
    }
    let mut tokens = Vec::new();
    while let Some(t) = pp.expand_next() {
        tokens.push(Token {
            tok: t.tok,
            span: t.span,
        });
    }
    let fatal = if let Some(d) = pp.fatal.take() {
        pp.diags.push(d);
        tokens.clear();
        true
    } else {
        false
    };
    while let Some(f) = pp.frames.pop() {
        pp.diags.extend(f.lx.diags);
    }
    let mut diags = pp.diags;
    diags.sort_by_key(|d| d.span.lo);
    diags.truncate(MAX_DIAGS);
    tokens.push(Token {
        tok: Tok::Eof,
        span: pp.eof,
    });
    Lexed {
        tokens,
        includes: pp.includes,
        defines: pp.defines,
        diags,
        fatal,
        files: pp.files,
    }
}

/// Lexes a `-D` value; its tokens get `span` (or none). Returns the tokens and whether the
/// value failed to lex.
fn lex_value(v: &str, span: Option<Span>) -> (Vec<PTok>, bool) {
    let mut lx = Lexer::new(Rc::from(v.as_bytes()), 0);
    let mut out = Vec::new();
    loop {
        let before = lx.pos;
        lx.skip_ws(false);
        let space = lx.pos != before;
        match lx.token(false) {
            Some(mut t) => {
                if let Some(s) = span {
                    t.span = s;
                }
                out.push(PTok::plain(t, space));
            }
            None => break,
        }
    }
    let bad = !lx.diags.is_empty();
    (out, bad)
}

/// The spelling of a token, as `#` and `##` see it (numbers in canonical form).
fn spell(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => s.clone(),
        Tok::Int(v, l) => format!("{v}{}", if *l { "L" } else { "" }),
        Tok::Float(v, f) => {
            let s = format!("{v:?}");
            if *f {
                s + "f"
            } else {
                s
            }
        }
        Tok::Str(s) => format!("\"{s}\""),
        Tok::Punct(p) => p.text().to_string(),
        Tok::Eof => String::new(),
    }
}

fn union(a: &Option<Hs>, id: u32) -> Hs {
    let mut v = a.as_ref().map(|h| h.as_ref().clone()).unwrap_or_default();
    if !v.contains(&id) {
        v.push(id);
    }
    Rc::new(v)
}

fn merge(a: &Option<Hs>, b: &Hs) -> Hs {
    match a {
        None => b.clone(),
        Some(a) => {
            let mut v = a.as_ref().clone();
            for x in b.iter() {
                if !v.contains(x) {
                    v.push(*x);
                }
            }
            Rc::new(v)
        }
    }
}

impl Pp<'_> {
    fn err(&mut self, d: Diagnostic) {
        if self.diags.len() < MAX_DIAGS {
            self.diags.push(d);
        }
    }
    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.err(Diagnostic::error(span, msg));
    }
    fn set_fatal(&mut self, d: Diagnostic) {
        if self.fatal.is_none() {
            self.fatal = Some(d);
        }
    }
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), i);
        i
    }
    fn lx(&mut self) -> &mut Lexer {
        &mut self.frames.last_mut().expect("a file is open").lx
    }
    fn active(&self) -> bool {
        self.conds.last().is_none_or(|c| c.active)
    }

    /// Makes a `-D` name a macro in code from here on (a directive mentions it).
    fn claim(&mut self, name: &str, span: Span) {
        let Some(m) = self.macros.get_mut(name) else {
            return;
        };
        if !m.cmdline || m.claimed {
            return;
        }
        m.claimed = true;
        let bad = m.bad_value;
        let v = self.overrides.get(name).cloned().unwrap_or_default();
        if bad {
            self.error(
                span,
                format!("invalid value `{v}` given with -D for `{name}`"),
            );
        }
        self.record_define(name, v);
    }

    fn record_define(&mut self, name: &str, text: String) {
        match self.defines.iter_mut().find(|(n, _)| n == name) {
            Some(d) => d.1 = text,
            None => self.defines.push((name.to_string(), text)),
        }
    }

    // ---- Reading the source -------------------------------------------------------

    /// The next token of the source (directives done, skipped regions skipped), or `None` at
    /// the end of the main file.
    fn raw_next(&mut self) -> Option<PTok> {
        loop {
            if self.fatal.is_some() {
                return None;
            }
            let active = self.active();
            let f = self.frames.last_mut()?;
            let before = f.lx.pos;
            let nl = f.lx.skip_ws(false);
            f.bol |= nl;
            let space = f.lx.pos != before;
            if f.lx.at_end() {
                self.end_frame();
                continue;
            }
            if f.bol && f.lx.peek(0) == b'#' {
                self.directive();
                continue;
            }
            if !active {
                skip_line(&mut f.lx);
                f.bol = false;
                continue;
            }
            f.bol = false;
            if let Some(t) = f.lx.token(true) {
                return Some(PTok::plain(t, space));
            }
        }
    }

    fn end_frame(&mut self) {
        let Some(f) = self.frames.pop() else {
            return;
        };
        while self.conds.len() > f.conds_base {
            let c = self.conds.pop().expect("checked");
            self.error(
                c.span,
                format!(
                    "unterminated `#{}`: expected `#endif` before the end of the file",
                    c.kind
                ),
            );
        }
        if self.frames.is_empty() {
            self.eof = f.lx.span_from(f.lx.pos, f.lx.line, f.lx.col);
        }
        self.diags.extend(f.lx.diags);
    }

    /// The tokens of the rest of the directive's line.
    fn line_tokens(&mut self) -> Vec<PTok> {
        let lx = self.lx();
        let mut out = Vec::new();
        loop {
            let before = lx.pos;
            lx.skip_ws(true);
            let space = lx.pos != before;
            match lx.token(true) {
                Some(t) => out.push(PTok::plain(t, space)),
                None => return out,
            }
        }
    }

    fn expect_eol(&mut self, what: &str) {
        let extra = self.line_tokens();
        if let Some(t) = extra.first() {
            self.error(
                t.span,
                format!(
                    "unexpected {} after {what}: expected the end of the line",
                    t.tok.describe()
                ),
            );
        }
    }

    fn directive(&mut self) {
        let active = self.active();
        let lx = self.lx();
        let (lo, line, col) = (lx.pos, lx.line, lx.col);
        lx.bump(); // '#'
        lx.skip_ws(true);
        let (nlo, nline, ncol) = (lx.pos, lx.line, lx.col);
        let name = lx.ident();
        let name_span = if name.is_empty() {
            let mut s = lx.span_from(lo, line, col);
            s.hi = s.lo + 1;
            s
        } else {
            lx.span_from(nlo, nline, ncol)
        };
        let at_eol = lx.at_end() || lx.peek(0) == b'\n';
        let in_file = self.conds.len() > self.frames.last().map_or(0, |f| f.conds_base);
        match name.as_str() {
            "if" | "ifdef" | "ifndef" => {
                let kind = match name.as_str() {
                    "if" => "if",
                    "ifdef" => "ifdef",
                    _ => "ifndef",
                };
                if !active {
                    skip_line(self.lx());
                    self.conds.push(Cond {
                        kind,
                        span: name_span,
                        active: false,
                        taken: true,
                        parent_active: false,
                        else_span: None,
                    });
                    return;
                }
                let v = if kind == "if" {
                    self.if_line(name_span, "#if")
                } else {
                    self.ifdef_line(name_span, kind) != (kind == "ifndef")
                };
                self.conds.push(Cond {
                    kind,
                    span: name_span,
                    active: v,
                    taken: v,
                    parent_active: true,
                    else_span: None,
                });
            }
            "elif" | "else" | "endif" => {
                if !in_file {
                    self.error(
                        name_span,
                        format!("`#{name}` without `#if`: no conditional is open here"),
                    );
                    skip_line(self.lx());
                    return;
                }
                let top = self.conds.len() - 1;
                if name != "endif" {
                    if let Some(es) = self.conds[top].else_span {
                        self.err(
                            Diagnostic::error(name_span, format!("`#{name}` after `#else`"))
                                .note(Some(es), "the `#else` is here"),
                        );
                        skip_line(self.lx());
                        return;
                    }
                }
                match name.as_str() {
                    "elif" => {
                        let c = &self.conds[top];
                        if c.parent_active && !c.taken {
                            let v = self.if_line(name_span, "#elif");
                            let c = &mut self.conds[top];
                            c.active = v;
                            c.taken = v;
                        } else {
                            self.conds[top].active = false;
                            skip_line(self.lx());
                        }
                    }
                    "else" => {
                        let c = &mut self.conds[top];
                        c.active = c.parent_active && !c.taken;
                        c.taken = true;
                        c.else_span = Some(name_span);
                        if c.parent_active {
                            self.expect_eol("#else");
                        } else {
                            skip_line(self.lx());
                        }
                    }
                    _ => {
                        let c = self.conds.pop().expect("checked");
                        if c.parent_active {
                            self.expect_eol("#endif");
                        } else {
                            skip_line(self.lx());
                        }
                    }
                }
            }
            _ if !active => skip_line(self.lx()),
            "" if at_eol => {} // null directive
            "pragma" => {
                let lx = self.lx();
                lx.skip_ws(true);
                let (plo, pline, pcol) = (lx.pos, lx.line, lx.col);
                let word = lx.ident();
                let wspan = lx.span_from(plo, pline, pcol);
                if word == "once" {
                    self.expect_eol("#pragma once");
                    if let Some(p) = self.frames.last().and_then(|f| f.path.clone()) {
                        self.once.insert(p);
                    }
                    let _ = wspan;
                    return;
                }
                let lx = self.lx();
                while !lx.at_end() && lx.peek(0) != b'\n' {
                    if lx.peek(0) == b'\\' && lx.peek(1) == b'\n' {
                        lx.bump();
                    }
                    lx.bump();
                }
            }
            "include" => self.include(),
            "define" => self.define(),
            "undef" => {
                let toks = self.line_tokens();
                match toks.first() {
                    Some(PTok {
                        tok: Tok::Ident(n),
                        span,
                        ..
                    }) => {
                        let (n, span) = (n.clone(), *span);
                        self.claim(&n, span);
                        self.macros.remove(&n);
                        if let Some(t) = toks.get(1) {
                            self.error(
                                t.span,
                                format!(
                                    "unexpected {} after #undef {n}: expected the end of the line",
                                    t.tok.describe()
                                ),
                            );
                        }
                    }
                    Some(t) => self.error(
                        t.span,
                        format!(
                            "expected a macro name after #undef, found {}",
                            t.tok.describe()
                        ),
                    ),
                    None => self.error(name_span, "expected a macro name after #undef"),
                }
            }
            "error" => {
                let toks = self.line_tokens();
                let text: Vec<String> = toks.iter().map(|t| spell(&t.tok)).collect();
                self.error(name_span, format!("#error {}", text.join(" ")));
            }
            _ => {
                self.error(
                    name_span,
                    format!(
                        "unsupported preprocessor directive `#{name}`: expected #include, #define, #undef, #if, #ifdef, #ifndef, #elif, #else, #endif, #pragma or #error"
                    ),
                );
                skip_line(self.lx());
            }
        }
    }

    fn ifdef_line(&mut self, span: Span, kind: &str) -> bool {
        let toks = self.line_tokens();
        match toks.first() {
            Some(PTok {
                tok: Tok::Ident(n),
                span: nspan,
                ..
            }) => {
                let (n, nspan) = (n.clone(), *nspan);
                self.claim(&n, nspan);
                if let Some(t) = toks.get(1) {
                    self.error(
                        t.span,
                        format!(
                            "unexpected {} after #{kind} {n}: expected the end of the line",
                            t.tok.describe()
                        ),
                    );
                }
                self.macros.contains_key(&n)
            }
            Some(t) => {
                self.error(
                    t.span,
                    format!(
                        "expected a macro name after #{kind}, found {}",
                        t.tok.describe()
                    ),
                );
                false
            }
            None => {
                self.error(span, format!("expected a macro name after #{kind}"));
                false
            }
        }
    }

    /// Evaluates the rest of a `#if` / `#elif` line. Errors make it false.
    fn if_line(&mut self, span: Span, what: &str) -> bool {
        let toks = self.line_tokens();
        if toks.is_empty() {
            self.error(span, format!("expected an expression after {what}"));
            return false;
        }
        // `defined X` and `defined(X)` first, before macro expansion.
        let mut line = Vec::with_capacity(toks.len());
        let mut i = 0;
        while i < toks.len() {
            let t = &toks[i];
            if t.tok == Tok::Ident("defined".into()) {
                let (name, used) = match (toks.get(i + 1), toks.get(i + 2), toks.get(i + 3)) {
                    (
                        Some(PTok {
                            tok: Tok::Ident(n), ..
                        }),
                        _,
                        _,
                    ) => (Some(n.clone()), 2),
                    (
                        Some(l),
                        Some(PTok {
                            tok: Tok::Ident(n), ..
                        }),
                        Some(r),
                    ) if l.is(P::LParen) && r.is(P::RParen) => (Some(n.clone()), 4),
                    _ => (None, 1),
                };
                let Some(name) = name else {
                    self.error(
                        t.span,
                        "expected a macro name after `defined`, as `defined X` or `defined(X)`",
                    );
                    return false;
                };
                self.claim(&name, t.span);
                let v = self.macros.contains_key(&name);
                line.push(PTok {
                    tok: Tok::Int(v as u64, false),
                    ..t.clone()
                });
                i += used;
                continue;
            }
            if let Tok::Ident(n) = &t.tok {
                let n = n.clone();
                self.claim(&n, t.span);
            }
            line.push(t.clone());
            i += 1;
        }
        let saved = std::mem::replace(&mut self.in_if, true);
        let expanded = self.expand_list(line);
        self.in_if = saved;
        let Some(expanded) = expanded else {
            return false;
        };
        let mut ev = IfEval {
            t: &expanded,
            i: 0,
            end: span,
            what,
            depth: 0,
        };
        let r = ev.cond(true).and_then(|v| match ev.t.get(ev.i) {
            None => Ok(v),
            Some(t) => Err(Diagnostic::error(
                t.span,
                format!(
                    "unexpected {} in the {what} expression: expected an operator or the end of the line",
                    t.tok.describe()
                ),
            )),
        });
        match r {
            Ok(v) => v != 0,
            Err(d) => {
                self.err(d);
                false
            }
        }
    }

    fn include(&mut self) {
        let lx = self.lx();
        lx.skip_ws(true);
        let (hlo, hline, hcol) = (lx.pos, lx.line, lx.col);
        enum H {
            System(String),
            Quoted(String),
            Bad,
        }
        let header = if lx.peek(0) == b'<' {
            lx.bump();
            let s = lx.pos;
            while !lx.at_end() && !matches!(lx.peek(0), b'>' | b'\n') {
                lx.bump();
            }
            let h = String::from_utf8_lossy(&lx.src[s..lx.pos]).into_owned();
            if lx.peek(0) == b'>' {
                lx.bump();
                H::System(h)
            } else {
                H::Bad
            }
        } else if lx.peek(0) == b'"' {
            match lx.token(true) {
                Some(Token {
                    tok: Tok::Str(s), ..
                }) if !s.is_empty() => H::Quoted(s),
                _ => H::Bad,
            }
        } else {
            H::Bad
        };
        let hspan = self.lx().span_from(hlo, hline, hcol);
        if matches!(header, H::Bad) {
            skip_line(self.lx());
        } else {
            self.expect_eol("#include");
        }
        let system = |pp: &mut Self, h: String| {
            if ALLOWED_INCLUDES.contains(&h.as_str()) {
                if !pp.includes.contains(&h) {
                    pp.includes.push(h);
                }
            } else {
                pp.error(
                    hspan,
                    format!(
                        "cannot include `{h}`: only <math.h>, <stdint.h> and <stdbool.h> may be included"
                    ),
                );
            }
        };
        match header {
            H::System(h) => system(self, h),
            H::Bad => self.error(
                hspan,
                "expected a header name like `<math.h>` or `\"file.h\"` after #include",
            ),
            H::Quoted(h) => {
                let Some(dir) = self.frames.last().and_then(|f| f.dir.clone()) else {
                    if ALLOWED_INCLUDES.contains(&h.as_str()) {
                        return system(self, h);
                    }
                    self.error(
                        hspan,
                        format!(
                            "cannot include \"{h}\": the source was given as text, with no directory to search"
                        ),
                    );
                    return;
                };
                let path = dir.join(&h);
                let canon = path.canonicalize().unwrap_or_else(|_| path.clone());
                if let Some((_, _)) = self.file_index.get(&canon) {
                    if self.once.contains(&canon) {
                        return;
                    }
                }
                if self.frames.len() >= MAX_INCLUDE_DEPTH {
                    self.error(
                        hspan,
                        format!(
                            "#include nested too deeply: more than {MAX_INCLUDE_DEPTH} files open at once (does a file include itself without an include guard?)"
                        ),
                    );
                    return;
                }
                let (idx, text) = match self.file_index.get(&canon) {
                    Some((i, t)) => (*i, t.clone()),
                    None => {
                        let bytes = match std::fs::read(&path) {
                            Ok(b) => b,
                            Err(e) => {
                                if ALLOWED_INCLUDES.contains(&h.as_str()) {
                                    return system(self, h);
                                }
                                self.error(
                                    hspan,
                                    format!(
                                        "cannot open included file `{}`: {}",
                                        path.display(),
                                        io_reason(&e)
                                    ),
                                );
                                return;
                            }
                        };
                        let text = String::from_utf8_lossy(&bytes).into_owned();
                        let base = self.next_base;
                        if base + text.len() as u64 + 1 >= u32::MAX as u64 {
                            self.error(hspan, "included files too large: more than 4 GiB in all");
                            return;
                        }
                        self.next_base += text.len() as u64 + 1;
                        let rc: Rc<[u8]> = Rc::from(text.as_bytes());
                        self.files.push(IncludedFile {
                            name: path.display().to_string(),
                            text,
                            base: base as u32,
                        });
                        let i = self.files.len() - 1;
                        self.file_index.insert(canon.clone(), (i, rc.clone()));
                        (i, rc)
                    }
                };
                let base = self.files[idx].base;
                let conds_base = self.conds.len();
                self.frames.push(Frame {
                    lx: Lexer::new(text, base),
                    dir: path.parent().map(Path::to_path_buf),
                    path: Some(canon),
                    conds_base,
                    bol: true,
                });
            }
        }
    }

    fn define(&mut self) {
        let lx = self.lx();
        lx.skip_ws(true);
        let (nlo, nline, ncol) = (lx.pos, lx.line, lx.col);
        let mname = lx.ident();
        let mspan = lx.span_from(nlo, nline, ncol);
        if mname.is_empty() || mname.as_bytes()[0].is_ascii_digit() {
            self.error(mspan, "expected a macro name after #define");
            skip_line(self.lx());
            return;
        }
        if mname == "defined" {
            self.error(mspan, "`defined` cannot be defined as a macro");
            skip_line(self.lx());
            return;
        }
        let mut params = None;
        if self.lx().peek(0) == b'(' {
            self.lx().bump();
            let mut ps: Vec<String> = Vec::new();
            let toks = self.line_tokens();
            let mut it = toks.into_iter();
            let mut close = false;
            let mut expect_name = true;
            let mut rest = Vec::new();
            for t in it.by_ref() {
                match &t.tok {
                    Tok::Punct(P::RParen) if !expect_name || ps.is_empty() => {
                        close = true;
                        break;
                    }
                    Tok::Ident(p) if expect_name => {
                        if ps.contains(p) {
                            self.error(
                                t.span,
                                format!("duplicate parameter `{p}` in macro `{mname}`"),
                            );
                            return;
                        }
                        ps.push(p.clone());
                        expect_name = false;
                    }
                    Tok::Punct(P::Comma) if !expect_name => expect_name = true,
                    Tok::Punct(P::Dot) => {
                        self.error(
                            t.span,
                            format!("variadic macros (`...`) are not supported: macro `{mname}`"),
                        );
                        return;
                    }
                    _ => {
                        let what = if expect_name {
                            "a parameter name"
                        } else {
                            "`,` or `)`"
                        };
                        self.error(
                            t.span,
                            format!(
                                "expected {what} in the parameter list of macro `{mname}`, found {}",
                                t.tok.describe()
                            ),
                        );
                        return;
                    }
                }
            }
            if !close {
                self.error(
                    mspan,
                    format!("expected `)` to close the parameter list of macro `{mname}`"),
                );
                return;
            }
            rest.extend(it);
            params = Some((ps, rest));
        }
        let (params, mut body) = match params {
            Some((ps, rest)) => (Some(ps), rest),
            None => (None, self.line_tokens()),
        };
        if let Some(first) = body.first_mut() {
            first.space = false;
        }
        // Check `#` and `##`.
        for (k, t) in body.iter().enumerate() {
            if t.is(P::HashHash) && (k == 0 || k + 1 == body.len()) {
                self.error(
                    t.span,
                    format!("`##` cannot be at either end of the body of macro `{mname}`"),
                );
                return;
            }
            if let Some(ps) = &params {
                if t.is(P::Hash) {
                    let ok = matches!(body.get(k + 1), Some(PTok { tok: Tok::Ident(n), .. }) if ps.contains(n));
                    if !ok {
                        self.error(
                            t.span,
                            format!("`#` must be followed by a parameter of macro `{mname}`"),
                        );
                        return;
                    }
                }
            }
        }
        let text = match (body.first(), body.last()) {
            (Some(a), Some(b)) => {
                let lx = self.lx();
                let base = lx.base;
                let lo = (a.span.lo - base) as usize;
                let hi = ((b.span.hi - base) as usize).min(lx.src.len());
                String::from_utf8_lossy(&lx.src[lo.min(hi)..hi]).into_owned()
            }
            _ => String::new(),
        };
        let (body, text) = match self.overrides.get(&mname) {
            Some(v) => {
                let (toks, bad) = lex_value(v, Some(mspan));
                if bad {
                    self.error(
                        mspan,
                        format!("invalid value `{v}` given with -D for `{mname}`"),
                    );
                }
                (toks, v.clone())
            }
            None => (body, text),
        };
        if let Some(old) = self.macros.get(&mname) {
            if let Some(old_span) = old.def_span {
                let same = old.params == params
                    && old.body.len() == body.len()
                    && old.body.iter().zip(&body).all(|(a, b)| a.tok == b.tok);
                if !same {
                    self.err(
                        Diagnostic::error(
                            mspan,
                            format!(
                                "macro `{mname}` is redefined differently (use #undef {mname} first)"
                            ),
                        )
                        .note(Some(old_span), "the previous definition is here"),
                    );
                    return;
                }
            }
        }
        self.record_define(&mname, text);
        self.macros.insert(
            mname,
            Macro {
                params,
                body,
                def_span: Some(mspan),
                cmdline: false,
                claimed: true,
                bad_value: false,
            },
        );
    }

    // ---- Expansion ----------------------------------------------------------------

    /// The next token before expansion: from `pending`, else from the source (unless
    /// isolated). Counts toward [`MAX_EXPANDED_TOKENS`].
    fn next_unexpanded(&mut self) -> Option<PTok> {
        if self.fatal.is_some() {
            return None;
        }
        let t = match self.pending.pop_front() {
            Some(t) => t,
            None if self.isolated => return None,
            None => self.raw_next()?,
        };
        self.produced += 1;
        if self.produced > MAX_EXPANDED_TOKENS {
            self.too_many(t.span, &t.hs, None);
            return None;
        }
        Some(t)
    }

    fn too_many(&mut self, span: Span, hs: &Option<Hs>, expanding: Option<&str>) {
        let outer = match hs.as_ref().and_then(|h| h.first()) {
            Some(&outer) => Some(self.names[outer as usize].clone()),
            None => self
                .calls
                .first()
                .cloned()
                .or(expanding.map(str::to_string)),
        };
        let what = match outer {
            Some(m) => format!("the expansion of macro `{m}` here"),
            None => "this token".to_string(),
        };
        self.set_fatal(Diagnostic::error(
            span,
            format!(
                "macro expansion produces too many tokens: {what} makes the file exceed {MAX_EXPANDED_TOKENS} tokens"
            ),
        ));
    }

    fn push_front(&mut self, toks: Vec<PTok>, use_tok: &PTok, name: &str) -> bool {
        if self.produced + toks.len() > MAX_EXPANDED_TOKENS {
            self.too_many(use_tok.span, &use_tok.hs, Some(name));
            return false;
        }
        for t in toks.into_iter().rev() {
            self.pending.push_front(t);
        }
        true
    }

    /// Expands a list of tokens on its own (an argument, a `#if` line). `None` after a fatal
    /// error.
    fn expand_list(&mut self, toks: Vec<PTok>) -> Option<Vec<PTok>> {
        self.arg_depth += 1;
        if self.arg_depth > MAX_MACRO_DEPTH {
            let span = toks.first().map(|t| t.span).unwrap_or(self.eof);
            self.set_fatal(Diagnostic::error(
                span,
                format!(
                    "macro expansion too deep: macro calls nested in arguments more than {MAX_MACRO_DEPTH} deep"
                ),
            ));
            self.arg_depth -= 1;
            return None;
        }
        let saved = std::mem::replace(&mut self.pending, toks.into());
        let saved_iso = std::mem::replace(&mut self.isolated, true);
        let mut out = Vec::new();
        while let Some(t) = self.expand_next() {
            out.push(t);
        }
        self.pending = saved;
        self.isolated = saved_iso;
        self.arg_depth -= 1;
        if self.fatal.is_some() {
            None
        } else {
            Some(out)
        }
    }

    /// The next fully expanded token.
    fn expand_next(&mut self) -> Option<PTok> {
        loop {
            let t = self.next_unexpanded()?;
            let Tok::Ident(name) = &t.tok else {
                return Some(t);
            };
            let Some(m) = self.macros.get(name) else {
                return Some(t);
            };
            if m.cmdline && !m.claimed {
                if !self.in_if {
                    return Some(t);
                }
                let name = name.clone();
                self.claim(&name, t.span);
            }
            let name = name.clone();
            let id = self.intern(&name);
            if t.hs.as_ref().is_some_and(|h| h.contains(&id)) {
                return Some(t);
            }
            let m = &self.macros[&name];
            let is_fn = m.params.is_some();
            if is_fn {
                // A function-like macro's name is a call only before `(`.
                let Some(n) = self.next_unexpanded() else {
                    if self.fatal.is_some() {
                        return None;
                    }
                    return Some(t);
                };
                if !n.is(P::LParen) {
                    self.produced -= 1;
                    self.pending.push_front(n);
                    return Some(t);
                }
            }
            if t.depth() >= MAX_MACRO_DEPTH {
                let outer =
                    t.hs.as_ref()
                        .and_then(|h| h.first())
                        .map(|&o| self.names[o as usize].clone())
                        .unwrap_or_default();
                self.set_fatal(Diagnostic::error(
                    t.span,
                    format!(
                        "macro expansion too deep: expanding `{outer}` nests more than {MAX_MACRO_DEPTH} macros (`{name}` at depth {})",
                        MAX_MACRO_DEPTH + 1
                    ),
                ));
                return None;
            }
            let result = if is_fn {
                match self.call(&name, id, &t) {
                    Some(r) => r,
                    None => {
                        if self.fatal.is_some() {
                            return None;
                        }
                        continue;
                    }
                }
            } else {
                let hs = union(&t.hs, id);
                let m = &self.macros[&name];
                let body = m.body.clone();
                self.substitute(&name, body, &[], &t, hs)
            };
            if !self.push_front(result, &t, &name) {
                return None;
            }
        }
    }

    /// Reads the arguments of a call of `name` (after its `(`) and substitutes them. `None`
    /// if the call is wrong (reported) or on a fatal error.
    fn call(&mut self, name: &str, id: u32, t: &PTok) -> Option<Vec<PTok>> {
        let mut args: Vec<Vec<PTok>> = vec![vec![]];
        let mut depth = 0usize;
        let rparen = loop {
            let Some(a) = self.next_unexpanded() else {
                if self.fatal.is_none() {
                    let where_ = if self.isolated {
                        "the end of the macro argument or #if line"
                    } else {
                        "the end of the file"
                    };
                    self.error(
                        t.span,
                        format!(
                            "unterminated call of macro `{name}`: expected `)` before {where_}"
                        ),
                    );
                }
                return None;
            };
            match a.tok {
                Tok::Punct(P::LParen) => depth += 1,
                Tok::Punct(P::RParen) if depth == 0 => break a,
                Tok::Punct(P::RParen) => depth -= 1,
                Tok::Punct(P::Comma) if depth == 0 => {
                    args.push(vec![]);
                    continue;
                }
                _ => {}
            }
            args.last_mut().expect("non-empty").push(a);
        };
        let m = &self.macros[name];
        let params = m.params.clone().unwrap_or_default();
        let def_span = m.def_span;
        if params.is_empty() && args.len() == 1 && args[0].is_empty() {
            args.clear();
        }
        if args.len() != params.len() {
            let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
            let mut d = Diagnostic::error(
                t.span,
                format!(
                    "macro `{name}` takes {} {}, but {} {} given",
                    params.len(),
                    plural(params.len()),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            );
            if let Some(s) = def_span {
                d = d.note(Some(s), format!("macro `{name}` is defined here"));
            }
            self.err(d);
            return None;
        }
        let hs = {
            let inter: Vec<u32> = match (&t.hs, &rparen.hs) {
                (Some(a), Some(b)) => a.iter().copied().filter(|x| b.contains(x)).collect(),
                _ => vec![],
            };
            union(&Some(Rc::new(inter)), id)
        };
        let body = self.macros[name].body.clone();
        let named: Vec<(String, Vec<PTok>)> = params.into_iter().zip(args).collect();
        self.calls.push(name.to_string());
        let r = self.substitute(name, body, &named, t, hs);
        self.calls.pop();
        Some(r)
    }

    /// Substitutes `args` for the parameters in `body` (with `#` and `##`), gives the result
    /// the hide set `hs`, and the spans of the use (`t`) where tokens come from the body.
    fn substitute(
        &mut self,
        name: &str,
        body: Vec<PTok>,
        args: &[(String, Vec<PTok>)],
        t: &PTok,
        hs: Hs,
    ) -> Vec<PTok> {
        let is_fn = self.macros.get(name).is_some_and(|m| m.params.is_some());
        let param = |tok: &Tok| match tok {
            Tok::Ident(n) => args.iter().position(|(p, _)| p == n),
            _ => None,
        };
        let mut expanded: Vec<Option<Vec<PTok>>> = vec![None; args.len()];
        // Placemarkers (empty arguments next to `##`) are `Tok::Eof`, removed at the end.
        let placemarker = PTok {
            tok: Tok::Eof,
            span: t.span,
            hs: None,
            space: false,
        };
        let from_body = |b: &PTok| PTok {
            tok: b.tok.clone(),
            span: t.span,
            hs: None,
            space: b.space,
        };
        let mut out: Vec<PTok> = Vec::new();
        let mut i = 0;
        while i < body.len() {
            let b = &body[i];
            if is_fn && b.is(P::Hash) {
                if let Some(p) = body.get(i + 1).and_then(|n| param(&n.tok)) {
                    let mut s = String::new();
                    for (k, a) in args[p].1.iter().enumerate() {
                        if k > 0 && a.space {
                            s.push(' ');
                        }
                        let sp = spell(&a.tok);
                        if matches!(a.tok, Tok::Str(_)) {
                            s.push_str(&sp.replace('\\', "\\\\").replace('"', "\\\""));
                        } else {
                            s.push_str(&sp);
                        }
                    }
                    out.push(PTok {
                        tok: Tok::Str(s),
                        span: t.span,
                        hs: None,
                        space: b.space,
                    });
                    i += 2;
                    continue;
                }
            }
            if b.is(P::HashHash) && i + 1 < body.len() {
                let next = &body[i + 1];
                let rhs: Vec<PTok> = match param(&next.tok) {
                    Some(p) => args[p].1.clone(),
                    None => vec![from_body(next)],
                };
                let lhs = out.pop().unwrap_or_else(|| placemarker.clone());
                let mut rhs = rhs.into_iter();
                match rhs.next() {
                    None => out.push(lhs),
                    Some(r) if lhs.tok == Tok::Eof => out.push(r),
                    Some(r) => {
                        let text = format!("{}{}", spell(&lhs.tok), spell(&r.tok));
                        let (toks, bad) = lex_value(&text, Some(t.span));
                        if bad || toks.len() != 1 {
                            self.error(
                                t.span,
                                format!(
                                    "pasting `{}` and `{}` with `##` in macro `{name}` does not give a valid token",
                                    spell(&lhs.tok),
                                    spell(&r.tok)
                                ),
                            );
                            out.push(lhs);
                            out.push(r);
                        } else {
                            let mut p = toks.into_iter().next().expect("one token");
                            p.space = lhs.space;
                            out.push(p);
                        }
                    }
                }
                out.extend(rhs);
                i += 2;
                continue;
            }
            if let Some(p) = param(&b.tok) {
                if body.get(i + 1).is_some_and(|n| n.is(P::HashHash)) {
                    // An operand of `##`: not expanded.
                    if args[p].1.is_empty() {
                        out.push(placemarker.clone());
                    } else {
                        out.extend(args[p].1.iter().cloned());
                    }
                } else {
                    if expanded[p].is_none() {
                        let Some(e) = self.expand_list(args[p].1.clone()) else {
                            return vec![];
                        };
                        expanded[p] = Some(e);
                    }
                    let e = expanded[p].as_ref().expect("just set");
                    let start = out.len();
                    out.extend(e.iter().cloned());
                    if let Some(f) = out.get_mut(start) {
                        f.space = b.space;
                    }
                }
                i += 1;
                continue;
            }
            out.push(from_body(b));
            i += 1;
        }
        out.retain(|x| x.tok != Tok::Eof);
        for x in &mut out {
            x.hs = Some(merge(&x.hs, &hs));
        }
        if let Some(f) = out.first_mut() {
            f.space = t.space;
        }
        out
    }
}

/// Skips the rest of a line without lexing it (comments and quotes are respected, so that a
/// `"` or `'` in a skipped region cannot hide a line end).
fn skip_line(lx: &mut Lexer) {
    loop {
        lx.skip_ws(true);
        if lx.at_end() || lx.peek(0) == b'\n' {
            return;
        }
        let c = lx.peek(0);
        lx.bump();
        if c == b'"' || c == b'\'' {
            while !lx.at_end() && lx.peek(0) != c && lx.peek(0) != b'\n' {
                if lx.peek(0) == b'\\' {
                    lx.bump();
                }
                lx.bump();
            }
            if lx.peek(0) == c {
                lx.bump();
            }
        }
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    }
}

/// The evaluator of `#if` expressions: C's integer operators on `long` values, wrapping.
struct IfEval<'a> {
    t: &'a [PTok],
    i: usize,
    /// Where errors at the end of the line point.
    end: Span,
    what: &'a str,
    depth: usize,
}

type Ev = Result<i64, Diagnostic>;

impl IfEval<'_> {
    fn peek(&self) -> Option<&PTok> {
        self.t.get(self.i)
    }
    fn at(&self, p: P) -> bool {
        self.peek().is_some_and(|t| t.is(p))
    }
    fn err_here(&self, msg: &str) -> Diagnostic {
        match self.peek() {
            Some(t) => Diagnostic::error(
                t.span,
                format!(
                    "expected {msg} in the {} expression, found {}",
                    self.what,
                    t.tok.describe()
                ),
            ),
            None => Diagnostic::error(
                self.end,
                format!(
                    "expected {msg} in the {} expression, found the end of the line",
                    self.what
                ),
            ),
        }
    }

    fn cond(&mut self, eval: bool) -> Ev {
        self.depth += 1;
        if self.depth > MAX_IF_DEPTH {
            let sp = self.peek().map(|t| t.span).unwrap_or(self.end);
            return Err(Diagnostic::error(
                sp,
                format!(
                    "{} expression nested too deeply (more than {MAX_IF_DEPTH} levels)",
                    self.what
                ),
            ));
        }
        let c = self.binary(1, eval)?;
        let r = if self.at(P::Question) {
            self.i += 1;
            let a = self.cond(eval && c != 0)?;
            if !self.at(P::Colon) {
                return Err(self.err_here("`:`"));
            }
            self.i += 1;
            let b = self.cond(eval && c == 0)?;
            if c != 0 {
                a
            } else {
                b
            }
        } else {
            c
        };
        self.depth -= 1;
        Ok(r)
    }

    fn level(p: P) -> Option<u8> {
        use P::*;
        Some(match p {
            OrOr => 1,
            AndAnd => 2,
            Pipe => 3,
            Caret => 4,
            Amp => 5,
            EqEq | Ne => 6,
            Lt | Gt | Le | Ge => 7,
            Shl | Shr => 8,
            Plus | Minus => 9,
            Star | Slash | Percent => 10,
            _ => return None,
        })
    }

    fn binary(&mut self, level: u8, eval: bool) -> Ev {
        if level > 10 {
            return self.unary(eval);
        }
        let mut l = self.binary(level + 1, eval)?;
        loop {
            let Some(op_tok) = self.peek() else {
                return Ok(l);
            };
            let Tok::Punct(op) = op_tok.tok else {
                return Ok(l);
            };
            if Self::level(op) != Some(level) {
                return Ok(l);
            }
            let op_span = op_tok.span;
            self.i += 1;
            let rhs_eval = match op {
                P::OrOr => eval && l == 0,
                P::AndAnd => eval && l != 0,
                _ => eval,
            };
            let r = self.binary(level + 1, rhs_eval)?;
            use P::*;
            l = match op {
                OrOr => (l != 0 || r != 0) as i64,
                AndAnd => (l != 0 && r != 0) as i64,
                Pipe => l | r,
                Caret => l ^ r,
                Amp => l & r,
                EqEq => (l == r) as i64,
                Ne => (l != r) as i64,
                Lt => (l < r) as i64,
                Gt => (l > r) as i64,
                Le => (l <= r) as i64,
                Ge => (l >= r) as i64,
                Shl | Shr => {
                    if !(0..64).contains(&r) {
                        if rhs_eval {
                            return Err(Diagnostic::error(
                                op_span,
                                format!(
                                    "shift count {r} out of range (0 to 63) in the {} expression",
                                    self.what
                                ),
                            ));
                        }
                        0
                    } else if op == Shl {
                        l.wrapping_shl(r as u32)
                    } else {
                        l >> r
                    }
                }
                Plus => l.wrapping_add(r),
                Minus => l.wrapping_sub(r),
                Star => l.wrapping_mul(r),
                Slash | Percent => {
                    if r == 0 {
                        if rhs_eval {
                            return Err(Diagnostic::error(
                                op_span,
                                format!("division by zero in the {} expression", self.what),
                            ));
                        }
                        0
                    } else if op == Slash {
                        l.wrapping_div(r)
                    } else {
                        l.wrapping_rem(r)
                    }
                }
                _ => unreachable!("levels cover the operators"),
            };
        }
    }

    fn unary(&mut self, eval: bool) -> Ev {
        let Some(t) = self.peek().cloned() else {
            return Err(self.err_here("an integer constant"));
        };
        self.i += 1;
        match &t.tok {
            Tok::Punct(P::Minus) => Ok(self.unary_nested(eval)?.wrapping_neg()),
            Tok::Punct(P::Plus) => self.unary_nested(eval),
            Tok::Punct(P::Tilde) => Ok(!self.unary_nested(eval)?),
            Tok::Punct(P::Bang) => Ok((self.unary_nested(eval)? == 0) as i64),
            Tok::Punct(P::LParen) => {
                let v = self.cond(eval)?;
                if !self.at(P::RParen) {
                    return Err(self.err_here("`)`"));
                }
                self.i += 1;
                Ok(v)
            }
            Tok::Int(v, _) => Ok(*v as i64),
            // An identifier left after expansion is 0, as in C.
            Tok::Ident(_) => Ok(0),
            Tok::Float(..) => Err(Diagnostic::error(
                t.span,
                format!(
                    "floating constant in the {} expression: only integer constants are allowed",
                    self.what
                ),
            )),
            _ => {
                self.i -= 1;
                Err(self.err_here("an integer constant"))
            }
        }
    }

    fn unary_nested(&mut self, eval: bool) -> Ev {
        self.depth += 1;
        if self.depth > MAX_IF_DEPTH {
            let sp = self.peek().map(|t| t.span).unwrap_or(self.end);
            return Err(Diagnostic::error(
                sp,
                format!(
                    "{} expression nested too deeply (more than {MAX_IF_DEPTH} levels)",
                    self.what
                ),
            ));
        }
        let r = self.unary(eval);
        self.depth -= 1;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pp_with(src: &str, defs: &[(&str, &str)]) -> Lexed {
        let o: HashMap<String, String> = defs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        preprocess(src, None, &o)
    }
    /// The tokens after preprocessing, spelt and joined by spaces (no Eof).
    fn out(src: &str) -> String {
        let l = pp_with(src, &[]);
        assert!(l.diags.is_empty(), "{:?}", l.diags);
        spelt(&l)
    }
    fn spelt(l: &Lexed) -> String {
        let v: Vec<String> = l.tokens[..l.tokens.len() - 1]
            .iter()
            .map(|t| spell(&t.tok))
            .collect();
        v.join(" ")
    }
    fn errs(src: &str) -> Vec<String> {
        pp_with(src, &[])
            .diags
            .iter()
            .map(|d| format!("{}:{}: {}", d.span.line, d.span.col, d.message))
            .collect()
    }

    #[test]
    fn function_like_macros() {
        assert_eq!(out("#define F(a, b) a + b\nF(1, (2, 3))"), "1 + ( 2 , 3 )");
        assert_eq!(out("#define F(a) [a]\nF()"), "[ ]");
        assert_eq!(out("#define G() 7\nG() G"), "7 G");
        assert_eq!(out("#define F(x) x\nF (1) F"), "1 F");
        assert_eq!(out("#define F(x) x\nF\n(2)"), "2");
        // Rescanning, and arguments expanded before substitution.
        assert_eq!(out("#define A B\n#define B(x) x*2\nA(3)"), "3 * 2");
        assert_eq!(out("#define F(x) x\nF(F(F(1)))"), "1");
        // Blue paint: direct and indirect self-reference.
        assert_eq!(out("#define x (x + 1)\nx"), "( x + 1 )");
        assert_eq!(out("#define f(a) a + f(a)\nf(1)"), "1 + f ( 1 )");
        assert_eq!(out("#define P Q\n#define Q P\nP Q"), "P Q");
        // A macro is in effect from its #define on, until #undef.
        assert_eq!(out("N\n#define N 1\nN\n#undef N\nN"), "N 1 N");
    }

    #[test]
    fn stringify_and_paste() {
        assert_eq!(
            out("#define C(a, b) a ## b\nC(x, 1) C(, y) C(z,) C(0x10, 2)"),
            "x1 y z 162"
        );
        assert_eq!(out("#define S(a) #a\nS(a  +  b)"), "\"a + b\"");
        assert_eq!(out("#define C(a, b) a ## b\n#define E\nC(E, 1)"), "E1");
        assert_eq!(out("#define XY 5\n#define C(a, b) a ## b\nC(X, Y)"), "5");
        assert_eq!(errs("#define C(a, b) a ## b\nC(+, /)").len(), 1);
    }

    #[test]
    fn conditionals() {
        let src = "#if 2 * 3 == 6 && defined(A) == 0\na\n#elif 1\nb\n#else\nc\n#endif";
        assert_eq!(out(src), "a");
        assert_eq!(out("#ifdef X\nx\n#elif 0\ny\n#else\nz\n#endif"), "z");
        assert_eq!(out("#define X\n#ifndef X\nx\n#else\ny\n#endif"), "y");
        assert_eq!(out("#if 0\n#if 1/0\n#else\n'\n#endif\n#endif\nk"), "k");
        assert_eq!(
            out("#define N 3\n#if N > 2 ? UNKNOWN + 1 : 1 / 0\nt\n#endif"),
            "t"
        );
        assert_eq!(
            out("#if -1 >> 1 == -1 && ~0 == -1 && !0 && 7 % 4 == 3\nt\n#endif"),
            "t"
        );
        assert_eq!(out("#if 0 && 1 / 0 || 1\nt\n#endif"), "t");
    }

    #[test]
    fn conditional_errors_are_located() {
        assert_eq!(
            errs("#if 1 / 0\n#endif"),
            ["1:7: division by zero in the #if expression"]
        );
        assert_eq!(
            errs("x\n#if 1\n"),
            ["2:2: unterminated `#if`: expected `#endif` before the end of the file"]
        );
        assert_eq!(
            errs("#endif"),
            ["1:2: `#endif` without `#if`: no conditional is open here"]
        );
        assert_eq!(errs("#if 1\n#else\n#else\n#endif").len(), 1);
        assert_eq!(errs("#if 1\n#else x\n#endif").len(), 1);
        assert_eq!(errs("#if\n#endif").len(), 1);
        assert_eq!(errs("#if (((1)\n#endif").len(), 1);
        let deep = format!("#if {}1\n#endif", "(".repeat(100_000));
        assert_eq!(errs(&deep).len(), 1);
    }

    #[test]
    fn command_line_definitions() {
        // Visible to #ifdef, substituted once a directive mentions the name.
        let l = pp_with("#ifdef BIG\nn BIG\n#endif", &[("BIG", "2")]);
        assert_eq!(spelt(&l), "n 2");
        let l = pp_with("#ifndef N\n#define N 10\n#endif\nN", &[("N", "4")]);
        assert_eq!(spelt(&l), "4");
        // A name no directive mentions is left to bind a parameter.
        let l = pp_with("int n", &[("n", "4")]);
        assert_eq!(spelt(&l), "int n");
        // It replaces the body of a function-like macro too.
        let l = pp_with("#define F(x) x\nF(1)", &[("F", "x + x")]);
        assert_eq!(spelt(&l), "1 + 1");
        assert!(pp_with("#define N 1", &[("N", "@")]).diags.len() == 1);
    }

    #[test]
    fn macro_errors_are_located() {
        let e = errs("#define F(a, b) a\nF(1)");
        assert_eq!(e, ["2:1: macro `F` takes 2 arguments, but 1 was given"]);
        let e = errs("#define F(a) a\nx F(1, (2");
        assert_eq!(
            e,
            ["2:3: unterminated call of macro `F`: expected `)` before the end of the file"]
        );
        assert_eq!(errs("#define F(a a").len(), 1);
        assert_eq!(errs("#define F(...) 1").len(), 1);
        assert_eq!(errs("#define F(a) #b").len(), 1);
        assert_eq!(errs("#define F(a) a ##").len(), 1);
        assert_eq!(errs("#define A 1\n#define A 2").len(), 1);
        assert!(errs("#define A 1\n#define A 1").is_empty());
        assert_eq!(errs("#include \"x.h\"").len(), 1);
        assert_eq!(errs("#foo").len(), 1);
    }

    #[test]
    fn bounds_are_fatal_and_located() {
        let l = pp_with("#define D(x) x x x x x x x x\nD(D(D(D(D(D(D(1)))))))", &[]);
        assert!(l.fatal);
        assert!(l.diags[0].message.contains("`D`"), "{:?}", l.diags);
        let src = format!("#define I(x) x\n{}1{}", "I(".repeat(100), ")".repeat(100));
        let l = pp_with(&src, &[]);
        assert!(l.fatal && l.diags[0].message.contains("too deep"));
        // Recursion through arguments terminates.
        let l = pp_with("#define F(x) F(x) F(x)\nF(F(1))", &[]);
        assert!(!l.fatal);
        // Unterminated calls inside arguments and #if lines.
        assert_eq!(
            errs("#define F(x) x\n#define G(x) x\nG(F)(1) G(F(1)").len(),
            1
        );
        assert_eq!(errs("#define F(x) x\n#if F(1\n#endif").len(), 2);
    }

    #[test]
    fn includes_from_files() {
        let dir = std::env::temp_dir().join(format!("tessera-pp-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(
            dir.join("sub/a.h"),
            "#pragma once\n#include \"b.h\"\n#define A B + 1\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("sub/b.h"),
            "#ifndef B_H\n#define B_H\n#define B 2\n#endif\n@",
        )
        .unwrap();
        let src = "#include \"sub/a.h\"\n#include \"sub/a.h\"\n#include \"sub/b.h\"\nA";
        let l = preprocess(src, Some(&dir), &HashMap::new());
        assert_eq!(spelt(&l), "2 + 1");
        // The stray `@` in b.h is reported once per inclusion, located in b.h.
        assert_eq!(l.files.len(), 2);
        let b = l.files.iter().find(|f| f.name.ends_with("b.h")).unwrap();
        assert!(!l.diags.is_empty());
        for d in &l.diags {
            assert!(d.span.lo >= b.base && d.span.line == 5, "{d:?}");
        }
        let l = preprocess(
            "#include \"nope.h\"\n#include \"math.h\"",
            Some(&dir),
            &HashMap::new(),
        );
        assert_eq!(l.diags.len(), 1);
        assert_eq!(l.includes, ["math.h"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
