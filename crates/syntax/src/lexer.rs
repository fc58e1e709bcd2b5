//! Lexer and preprocessor.
//!
//! The preprocessor is the small part of C's that kernels need: `#include` of `<math.h>`,
//! `<stdint.h>` and `<stdbool.h>` (recorded, since they enable names), `#pragma` (ignored),
//! object-like `#define NAME tokens` (substituted at token level, overridable from the
//! command line). Everything else is an error.

use crate::diag::Diagnostic;
use std::collections::HashMap;
use tessera_ir::Span;

/// Punctuators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum P {
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Semi,
    Comma,
    Question,
    Colon,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Amp,
    Pipe,
    Caret,
    Tilde,
    Bang,
    Assign,
    Lt,
    Gt,
    PlusEq,
    MinusEq,
    StarEq,
    SlashEq,
    PercentEq,
    AmpEq,
    PipeEq,
    CaretEq,
    ShlEq,
    ShrEq,
    Shl,
    Shr,
    EqEq,
    Ne,
    Le,
    Ge,
    AndAnd,
    OrOr,
    PlusPlus,
    MinusMinus,
    Dot,
    Arrow,
    Hash,
}

impl P {
    /// The C spelling.
    pub fn text(self) -> &'static str {
        use P::*;
        match self {
            LParen => "(",
            RParen => ")",
            LBracket => "[",
            RBracket => "]",
            LBrace => "{",
            RBrace => "}",
            Semi => ";",
            Comma => ",",
            Question => "?",
            Colon => ":",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            Percent => "%",
            Amp => "&",
            Pipe => "|",
            Caret => "^",
            Tilde => "~",
            Bang => "!",
            Assign => "=",
            Lt => "<",
            Gt => ">",
            PlusEq => "+=",
            MinusEq => "-=",
            StarEq => "*=",
            SlashEq => "/=",
            PercentEq => "%=",
            AmpEq => "&=",
            PipeEq => "|=",
            CaretEq => "^=",
            ShlEq => "<<=",
            ShrEq => ">>=",
            Shl => "<<",
            Shr => ">>",
            EqEq => "==",
            Ne => "!=",
            Le => "<=",
            Ge => ">=",
            AndAnd => "&&",
            OrOr => "||",
            PlusPlus => "++",
            MinusMinus => "--",
            Dot => ".",
            Arrow => "->",
            Hash => "#",
        }
    }
}

/// A token.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// Identifier or keyword.
    Ident(String),
    /// Integer literal: value, and whether it has an `L`/`LL` suffix.
    Int(u64, bool),
    /// Floating literal: value, and whether it has an `f` suffix (then it is exactly the
    /// nearest `f32`, stored widened).
    Float(f64, bool),
    /// A string literal (only meaningful after `#include`; an error elsewhere).
    Str(String),
    /// A punctuator.
    Punct(P),
    /// End of input.
    Eof,
}

impl Tok {
    /// A short description for diagnostics (`identifier `x``, `` `;` ``, `end of file`).
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(v, _) => format!("integer `{v}`"),
            Tok::Float(v, _) => format!("number `{v}`"),
            Tok::Str(s) => format!("string \"{s}\""),
            Tok::Punct(p) => format!("`{}`", p.text()),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// A token with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Where.
    pub span: Span,
}

/// The headers a file may include.
pub const ALLOWED_INCLUDES: [&str; 3] = ["math.h", "stdint.h", "stdbool.h"];

/// Output of lexing and preprocessing.
#[derive(Debug, Default)]
pub struct Lexed {
    /// Tokens after macro substitution, ending with [`Tok::Eof`].
    pub tokens: Vec<Token>,
    /// Included headers (from [`ALLOWED_INCLUDES`]).
    pub includes: Vec<String>,
    /// The defines after overrides: name → replacement text.
    pub defines: Vec<(String, String)>,
    /// Errors.
    pub diags: Vec<Diagnostic>,
    /// A bound was exceeded (see [`MAX_EXPANDED_TOKENS`], [`MAX_MACRO_DEPTH`]): `tokens` is
    /// only the end of file, and parsing should not be attempted.
    pub fatal: bool,
}

struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    line: u32,
    col: u32,
    diags: Vec<Diagnostic>,
}

const MAX_DIAGS: usize = 50;

impl<'a> Lexer<'a> {
    fn peek(&self, k: usize) -> u8 {
        *self.src.get(self.pos + k).unwrap_or(&0)
    }
    fn bump(&mut self) -> u8 {
        let c = self.peek(0);
        self.pos += 1;
        if c == b'\n' {
            self.line += 1;
            self.col = 1;
        } else if (c & 0xC0) != 0x80 {
            // Count columns per character, not per UTF-8 continuation byte.
            self.col += 1;
        }
        c
    }
    fn span_from(&self, lo: usize, line: u32, col: u32) -> Span {
        Span {
            lo: lo as u32,
            hi: self.pos as u32,
            line,
            col,
        }
    }
    fn err(&mut self, span: Span, msg: impl Into<String>) {
        if self.diags.len() < MAX_DIAGS {
            self.diags.push(Diagnostic::error(span, msg));
        }
    }

    /// Skips spaces and comments; returns true if a newline was crossed.
    fn skip_ws(&mut self, stop_at_newline: bool) -> bool {
        let mut nl = false;
        loop {
            let c = self.peek(0);
            match c {
                b'\n' if stop_at_newline => return nl,
                b'\n' => {
                    nl = true;
                    self.bump();
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {
                    self.bump();
                }
                b'\\' if self.peek(1) == b'\n' => {
                    self.bump();
                    self.bump();
                }
                b'\\' if self.peek(1) == b'\r' && self.peek(2) == b'\n' => {
                    self.bump();
                    self.bump();
                    self.bump();
                }
                b'/' if self.peek(1) == b'/' => {
                    while self.pos < self.src.len() && self.peek(0) != b'\n' {
                        self.bump();
                    }
                }
                b'/' if self.peek(1) == b'*' => {
                    let (lo, line, col) = (self.pos, self.line, self.col);
                    self.bump();
                    self.bump();
                    loop {
                        if self.pos >= self.src.len() {
                            let sp = Span {
                                lo: lo as u32,
                                hi: lo as u32 + 2,
                                line,
                                col,
                            };
                            self.err(sp, "unterminated comment: expected `*/` before end of file");
                            break;
                        }
                        if self.peek(0) == b'*' && self.peek(1) == b'/' {
                            self.bump();
                            self.bump();
                            break;
                        }
                        if self.peek(0) == b'\n' {
                            nl = true;
                        }
                        self.bump();
                    }
                }
                _ => return nl,
            }
        }
    }

    fn ident(&mut self) -> String {
        let lo = self.pos;
        while self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
            self.bump();
        }
        String::from_utf8_lossy(&self.src[lo..self.pos]).into_owned()
    }

    fn number(&mut self) -> Tok {
        let (lo, line, col) = (self.pos, self.line, self.col);
        let is_hex = self.peek(0) == b'0' && matches!(self.peek(1), b'x' | b'X');
        if is_hex {
            self.bump();
            self.bump();
        }
        let mut is_float = false;
        loop {
            let c = self.peek(0);
            if c.is_ascii_alphanumeric() || c == b'_' {
                if !is_hex && matches!(c, b'e' | b'E') && matches!(self.peek(1), b'+' | b'-') {
                    is_float = true;
                    self.bump();
                }
                if !is_hex && matches!(c, b'e' | b'E') {
                    is_float = true;
                }
                self.bump();
            } else if c == b'.' && !is_hex {
                is_float = true;
                self.bump();
            } else {
                break;
            }
        }
        let text = String::from_utf8_lossy(&self.src[lo..self.pos]).into_owned();
        let span = self.span_from(lo, line, col);
        if is_float {
            let (body, f32_suffix) = match text.strip_suffix(['f', 'F']) {
                Some(b) => (b, true),
                None => (text.as_str(), false),
            };
            if body.ends_with(['l', 'L']) {
                self.err(
                    span,
                    format!("`{text}`: `long double` is not supported; use `double`"),
                );
                return Tok::Float(0.0, false);
            }
            let parsed = if f32_suffix {
                body.parse::<f32>().map(|v| v as f64)
            } else {
                body.parse::<f64>()
            };
            match parsed {
                Ok(v) => Tok::Float(v, f32_suffix),
                Err(_) => {
                    self.err(span, format!("invalid floating constant `{text}`"));
                    Tok::Float(0.0, false)
                }
            }
        } else {
            let digits_end = text
                .char_indices()
                .rev()
                .take_while(|(_, c)| matches!(c, 'l' | 'L' | 'u' | 'U'))
                .last()
                .map(|(i, _)| i)
                .unwrap_or(text.len());
            let (digits, suffix) = text.split_at(digits_end);
            let long = match suffix.to_ascii_lowercase().as_str() {
                "" => false,
                "l" | "ll" => true,
                _ => {
                    self.err(
                        span,
                        format!("integer suffix `{suffix}` is not supported: there are no unsigned types; use `L` for long"),
                    );
                    false
                }
            };
            let value = if is_hex {
                u64::from_str_radix(&digits[2..], 16)
            } else if digits.len() > 1 && digits.starts_with('0') {
                u64::from_str_radix(&digits[1..], 8)
            } else {
                digits.parse::<u64>()
            };
            match value {
                Ok(v) if v <= i64::MAX as u64 => Tok::Int(v, long),
                Ok(_) => {
                    self.err(
                        span,
                        format!("integer constant `{text}` is too large for `long`"),
                    );
                    Tok::Int(0, long)
                }
                Err(_) => {
                    self.err(span, format!("invalid integer constant `{text}`"));
                    Tok::Int(0, long)
                }
            }
        }
    }

    fn punct(&mut self) -> Option<P> {
        use P::*;
        let c0 = self.peek(0);
        let c1 = self.peek(1);
        let c2 = self.peek(2);
        let (p, n) = match (c0, c1, c2) {
            (b'<', b'<', b'=') => (ShlEq, 3),
            (b'>', b'>', b'=') => (ShrEq, 3),
            (b'<', b'<', _) => (Shl, 2),
            (b'>', b'>', _) => (Shr, 2),
            (b'+', b'=', _) => (PlusEq, 2),
            (b'-', b'=', _) => (MinusEq, 2),
            (b'*', b'=', _) => (StarEq, 2),
            (b'/', b'=', _) => (SlashEq, 2),
            (b'%', b'=', _) => (PercentEq, 2),
            (b'&', b'=', _) => (AmpEq, 2),
            (b'|', b'=', _) => (PipeEq, 2),
            (b'^', b'=', _) => (CaretEq, 2),
            (b'=', b'=', _) => (EqEq, 2),
            (b'!', b'=', _) => (Ne, 2),
            (b'<', b'=', _) => (Le, 2),
            (b'>', b'=', _) => (Ge, 2),
            (b'&', b'&', _) => (AndAnd, 2),
            (b'|', b'|', _) => (OrOr, 2),
            (b'+', b'+', _) => (PlusPlus, 2),
            (b'-', b'-', _) => (MinusMinus, 2),
            (b'-', b'>', _) => (Arrow, 2),
            (b'(', _, _) => (LParen, 1),
            (b')', _, _) => (RParen, 1),
            (b'[', _, _) => (LBracket, 1),
            (b']', _, _) => (RBracket, 1),
            (b'{', _, _) => (LBrace, 1),
            (b'}', _, _) => (RBrace, 1),
            (b';', _, _) => (Semi, 1),
            (b',', _, _) => (Comma, 1),
            (b'?', _, _) => (Question, 1),
            (b':', _, _) => (Colon, 1),
            (b'+', _, _) => (Plus, 1),
            (b'-', _, _) => (Minus, 1),
            (b'*', _, _) => (Star, 1),
            (b'/', _, _) => (Slash, 1),
            (b'%', _, _) => (Percent, 1),
            (b'&', _, _) => (Amp, 1),
            (b'|', _, _) => (Pipe, 1),
            (b'^', _, _) => (Caret, 1),
            (b'~', _, _) => (Tilde, 1),
            (b'!', _, _) => (Bang, 1),
            (b'=', _, _) => (Assign, 1),
            (b'<', _, _) => (Lt, 1),
            (b'>', _, _) => (Gt, 1),
            (b'.', _, _) => (Dot, 1),
            (b'#', _, _) => (Hash, 1),
            _ => return None,
        };
        for _ in 0..n {
            self.bump();
        }
        Some(p)
    }

    /// Lexes one token (not a directive). Returns None at end of line when `line_only`.
    fn token(&mut self, line_only: bool) -> Option<Token> {
        loop {
            self.skip_ws(line_only);
            let (lo, line, col) = (self.pos, self.line, self.col);
            if self.pos >= self.src.len() || (line_only && self.peek(0) == b'\n') {
                return None;
            }
            let c = self.peek(0);
            let tok = if c.is_ascii_alphabetic() || c == b'_' {
                Tok::Ident(self.ident())
            } else if c.is_ascii_digit() || (c == b'.' && self.peek(1).is_ascii_digit()) {
                self.number()
            } else if c == b'"' {
                self.bump();
                let s0 = self.pos;
                while self.pos < self.src.len() && !matches!(self.peek(0), b'"' | b'\n') {
                    self.bump();
                }
                let s = String::from_utf8_lossy(&self.src[s0..self.pos]).into_owned();
                if self.peek(0) == b'"' {
                    self.bump();
                } else {
                    let sp = self.span_from(lo, line, col);
                    self.err(sp, "unterminated string literal: expected `\"`");
                }
                Tok::Str(s)
            } else if let Some(p) = self.punct() {
                Tok::Punct(p)
            } else {
                // Skip one whole UTF-8 character.
                self.bump();
                while self.pos < self.src.len() && (self.peek(0) & 0xC0) == 0x80 {
                    self.bump();
                }
                let sp = self.span_from(lo, line, col);
                let text = String::from_utf8_lossy(&self.src[lo..self.pos]).into_owned();
                let shown = if text == "\u{fffd}" {
                    "(invalid UTF-8, shown as `\u{fffd}`)".to_string()
                } else if text.chars().all(|c| !c.is_control()) {
                    format!("`{text}`")
                } else {
                    format!("byte 0x{:02x}", self.src[lo])
                };
                self.err(sp, format!("unexpected character {shown} in the source"));
                continue;
            };
            return Some(Token {
                tok,
                span: self.span_from(lo, line, col),
            });
        }
    }
}

/// Lexes and preprocesses `src`. `overrides` replace the bodies of `#define`d names (from
/// `-D name=value`); names that are not defined are ignored here (they may bind parameters).
pub fn lex(src: &str, overrides: &HashMap<String, String>) -> Lexed {
    let mut lx = Lexer {
        src: src.as_bytes(),
        pos: 0,
        line: 1,
        col: 1,
        diags: vec![],
    };
    let mut raw: Vec<Token> = Vec::new();
    let mut includes = Vec::new();
    let mut defines: Vec<(String, Vec<Token>, Span)> = Vec::new();
    let mut at_line_start = true;
    loop {
        let nl = lx.skip_ws(false);
        at_line_start |= nl;
        if lx.pos >= lx.src.len() {
            break;
        }
        if at_line_start && lx.peek(0) == b'#' {
            directive(&mut lx, &mut includes, &mut defines);
            at_line_start = true;
            continue;
        }
        at_line_start = false;
        match lx.token(false) {
            Some(t) => raw.push(t),
            None => break,
        }
    }
    let eof = Span {
        lo: lx.pos as u32,
        hi: lx.pos as u32,
        line: lx.line,
        col: lx.col,
    };
    let mut diags = std::mem::take(&mut lx.diags);

    // Apply overrides.
    let mut table: HashMap<String, Vec<Token>> = HashMap::new();
    let mut define_texts = Vec::new();
    for (name, body, span) in defines {
        let (body, text) = match overrides.get(&name) {
            Some(v) => {
                let mut l2 = Lexer {
                    src: v.as_bytes(),
                    pos: 0,
                    line: 0,
                    col: 0,
                    diags: vec![],
                };
                let mut toks = Vec::new();
                while let Some(mut t) = l2.token(false) {
                    t.span = span;
                    toks.push(t);
                }
                if !l2.diags.is_empty() {
                    diags.push(Diagnostic::error(
                        span,
                        format!("invalid value `{v}` given with -D for `{name}`"),
                    ));
                }
                (toks, v.clone())
            }
            None => {
                let text = body
                    .first()
                    .zip(body.last())
                    .map(|(a, b)| src[a.span.lo as usize..b.span.hi as usize].to_string())
                    .unwrap_or_default();
                (body, text)
            }
        };
        define_texts.push((name.clone(), text));
        table.insert(name, body);
    }

    // Substitute macros, within bounds on the tokens produced and the nesting of macros.
    let mut tokens = Vec::with_capacity(raw.len() + 1);
    let mut ex = Expander {
        table: &table,
        stack: Vec::new(),
        out: &mut tokens,
        produced: 0,
        error: None,
    };
    for t in raw {
        ex.expand(t, None);
        if ex.error.is_some() {
            break;
        }
    }
    let fatal = if let Some(d) = ex.error.take() {
        diags.push(d);
        tokens.clear();
        true
    } else {
        false
    };
    tokens.push(Token {
        tok: Tok::Eof,
        span: eof,
    });
    Lexed {
        tokens,
        includes,
        defines: define_texts,
        diags,
        fatal,
    }
}

/// The most tokens macro expansion may produce in one file (the source's own tokens count
/// too, and so does every macro name expanded): nested object-like macros can otherwise grow exponentially (`#define A1 A0 A0`,
/// `#define A2 A1 A1`, ...).
pub const MAX_EXPANDED_TOKENS: usize = 1_000_000;

/// The most macros that may be in expansion at once (a macro whose body uses a macro whose
/// body uses a macro ...).
pub const MAX_MACRO_DEPTH: usize = 64;

struct Expander<'a> {
    table: &'a HashMap<String, Vec<Token>>,
    /// The macros being expanded, outermost first.
    stack: Vec<String>,
    out: &'a mut Vec<Token>,
    /// Tokens produced so far.
    produced: usize,
    /// The first bound exceeded (expansion stops there).
    error: Option<Diagnostic>,
}

impl Expander<'_> {
    fn expand(&mut self, t: Token, use_span: Option<Span>) {
        if self.error.is_some() {
            return;
        }
        let span = use_span.unwrap_or(t.span);
        // Every token, the macro names being expanded included (empty macros would otherwise
        // expand without bound and produce nothing), counts toward the bound.
        self.produced += 1;
        if self.produced > MAX_EXPANDED_TOKENS {
            let what = match self.stack.first() {
                Some(outer) => format!("the expansion of macro `{outer}` here"),
                None => "this token".to_string(),
            };
            self.error = Some(Diagnostic::error(
                span,
                format!(
                    "macro expansion produces too many tokens: {what} makes the file exceed {MAX_EXPANDED_TOKENS} tokens"
                ),
            ));
            return;
        }
        if let Tok::Ident(name) = &t.tok {
            if let Some(body) = self.table.get(name) {
                // C leaves a self-referential macro name unexpanded; so do we.
                if !self.stack.contains(name) {
                    if self.stack.len() >= MAX_MACRO_DEPTH {
                        let outer = self.stack.first().cloned().unwrap_or_default();
                        self.error = Some(Diagnostic::error(
                            span,
                            format!(
                                "macro expansion too deep: expanding `{outer}` nests more than {MAX_MACRO_DEPTH} macros (`{name}` at depth {})",
                                MAX_MACRO_DEPTH + 1
                            ),
                        ));
                        return;
                    }
                    self.stack.push(name.clone());
                    for b in body {
                        self.expand(b.clone(), Some(span));
                        if self.error.is_some() {
                            break;
                        }
                    }
                    self.stack.pop();
                    return;
                }
            }
        }
        self.out.push(Token { tok: t.tok, span });
    }
}

fn directive(
    lx: &mut Lexer<'_>,
    includes: &mut Vec<String>,
    defines: &mut Vec<(String, Vec<Token>, Span)>,
) {
    let (lo, line, col) = (lx.pos, lx.line, lx.col);
    lx.bump(); // '#'
    lx.skip_ws(true);
    let name_start = (lx.pos, lx.line, lx.col);
    let name = lx.ident();
    let name_span = lx.span_from(name_start.0, name_start.1, name_start.2);
    let rest_of_line = |lx: &mut Lexer<'_>| {
        let mut toks = Vec::new();
        while let Some(t) = lx.token(true) {
            toks.push(t);
        }
        toks
    };
    match name.as_str() {
        "" if lx.peek(0) == b'\n' || lx.pos >= lx.src.len() => {} // null directive
        "pragma" => {
            while lx.pos < lx.src.len() && lx.peek(0) != b'\n' {
                if lx.peek(0) == b'\\' && lx.peek(1) == b'\n' {
                    lx.bump();
                }
                lx.bump();
            }
        }
        "include" => {
            lx.skip_ws(true);
            let (hlo, hline, hcol) = (lx.pos, lx.line, lx.col);
            let header = if lx.peek(0) == b'<' {
                lx.bump();
                let s = lx.pos;
                while lx.pos < lx.src.len() && !matches!(lx.peek(0), b'>' | b'\n') {
                    lx.bump();
                }
                let h = String::from_utf8_lossy(&lx.src[s..lx.pos]).into_owned();
                if lx.peek(0) == b'>' {
                    lx.bump();
                    Some(h)
                } else {
                    None
                }
            } else if lx.peek(0) == b'"' {
                match lx.token(true) {
                    Some(Token {
                        tok: Tok::Str(s), ..
                    }) => Some(s),
                    _ => None,
                }
            } else {
                None
            };
            let hspan = lx.span_from(hlo, hline, hcol);
            match header {
                Some(h) if ALLOWED_INCLUDES.contains(&h.as_str()) => includes.push(h),
                Some(h) => lx.err(
                    hspan,
                    format!(
                        "cannot include `{h}`: only <math.h>, <stdint.h> and <stdbool.h> may be included"
                    ),
                ),
                None => lx.err(hspan, "expected a header name like `<math.h>` after #include"),
            }
            let extra = rest_of_line(lx);
            if let Some(t) = extra.first() {
                lx.err(
                    t.span,
                    format!("unexpected {} after #include", t.tok.describe()),
                );
            }
        }
        "define" => {
            lx.skip_ws(true);
            let (nlo, nline, ncol) = (lx.pos, lx.line, lx.col);
            let mname = lx.ident();
            let mspan = lx.span_from(nlo, nline, ncol);
            if mname.is_empty() || mname.as_bytes()[0].is_ascii_digit() {
                lx.err(mspan, "expected a macro name after #define");
                rest_of_line(lx);
                return;
            }
            if lx.peek(0) == b'(' {
                lx.err(
                    mspan,
                    format!("function-like macro `{mname}` is not supported: only `#define NAME constant`"),
                );
                rest_of_line(lx);
                return;
            }
            let body = rest_of_line(lx);
            if defines.iter().any(|(n, _, _)| *n == mname) {
                lx.err(mspan, format!("`{mname}` is defined twice"));
                return;
            }
            defines.push((mname, body, mspan));
        }
        _ => {
            let sp = if name.is_empty() {
                Span {
                    lo: lo as u32,
                    hi: lo as u32 + 1,
                    line,
                    col,
                }
            } else {
                name_span
            };
            lx.err(
                sp,
                format!(
                    "unsupported preprocessor directive `#{name}`: expected #include, #define or #pragma"
                ),
            );
            rest_of_line(lx);
        }
    }
}
