//! Tokens and the lexer of one file's text. The preprocessor that drives it (directives,
//! macros, conditionals, includes) is [`crate::pp`]; [`lex`] runs both.

use crate::diag::{Diagnostic, IncludedFile};
pub use crate::pp::{MAX_EXPANDED_TOKENS, MAX_MACRO_DEPTH};
use std::collections::HashMap;
use std::rc::Rc;
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
    HashHash,
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
            HashHash => "##",
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
    /// The files included with `#include "..."`, each at its base offset (spans of their
    /// tokens are offset by it; see [`crate::diag::SourceFile::included`]).
    pub files: Vec<IncludedFile>,
    /// A bound was exceeded (see [`MAX_EXPANDED_TOKENS`], [`MAX_MACRO_DEPTH`]): `tokens` is
    /// only the end of file, and parsing should not be attempted.
    pub fatal: bool,
}

/// A lexer over one file's text. Spans are offset by `base`, the file's place in the
/// combined offset space of a unit and its included files (see [`crate::diag::SourceFile`]).
pub(crate) struct Lexer {
    pub(crate) src: Rc<[u8]>,
    pub(crate) pos: usize,
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) base: u32,
    pub(crate) diags: Vec<Diagnostic>,
}

const MAX_DIAGS: usize = 50;

impl Lexer {
    /// A lexer at the start of `src`, whose spans start at `base`.
    pub(crate) fn new(src: Rc<[u8]>, base: u32) -> Lexer {
        Lexer {
            src,
            pos: 0,
            line: 1,
            col: 1,
            base,
            diags: vec![],
        }
    }
    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.src.len()
    }
    pub(crate) fn peek(&self, k: usize) -> u8 {
        *self.src.get(self.pos + k).unwrap_or(&0)
    }
    pub(crate) fn bump(&mut self) -> u8 {
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
    pub(crate) fn span_from(&self, lo: usize, line: u32, col: u32) -> Span {
        Span {
            lo: self.base + lo as u32,
            hi: self.base + self.pos as u32,
            line,
            col,
        }
    }
    pub(crate) fn err(&mut self, span: Span, msg: impl Into<String>) {
        if self.diags.len() < MAX_DIAGS {
            self.diags.push(Diagnostic::error(span, msg));
        }
    }

    /// Skips spaces and comments; returns true if a newline was crossed.
    pub(crate) fn skip_ws(&mut self, stop_at_newline: bool) -> bool {
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
                                lo: self.base + lo as u32,
                                hi: self.base + lo as u32 + 2,
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

    pub(crate) fn ident(&mut self) -> String {
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

    /// A character constant (`'A'`, `'\n'`, `'\0'`, `'\x41'`, `'\101'`): an `int`, as in C.
    /// Only one character, of value 0..=127 (above, C's value would depend on the
    /// signedness of `char`: written as a number, it is plain).
    fn char_const(&mut self) -> Tok {
        let (lo, line, col) = (self.pos, self.line, self.col);
        self.bump(); // the opening quote
        let mut values = Vec::new();
        let mut bad_escape = None;
        while self.pos < self.src.len() && !matches!(self.peek(0), b'\'' | b'\n') {
            let c = self.bump();
            if c != b'\\' {
                values.push(c as u32);
                continue;
            }
            if matches!(self.peek(0), b'\n' | 0) {
                break;
            }
            let e = self.bump();
            let v = match e {
                b'n' => 10,
                b't' => 9,
                b'r' => 13,
                b'0'..=b'7' => {
                    let mut v = (e - b'0') as u32;
                    for _ in 0..2 {
                        if matches!(self.peek(0), b'0'..=b'7') {
                            v = v * 8 + (self.bump() - b'0') as u32;
                        }
                    }
                    v
                }
                b'x' => {
                    let mut v: u32 = 0;
                    let mut digits = 0;
                    while self.peek(0).is_ascii_hexdigit() {
                        let d = (self.bump() as char).to_digit(16).unwrap();
                        v = v.saturating_mul(16).saturating_add(d);
                        digits += 1;
                    }
                    if digits == 0 {
                        bad_escape.get_or_insert_with(|| "\\x".to_string());
                    }
                    v
                }
                b'a' => 7,
                b'b' => 8,
                b'f' => 12,
                b'v' => 11,
                b'\\' | b'\'' | b'"' | b'?' => e as u32,
                _ => {
                    bad_escape.get_or_insert_with(|| format!("\\{}", e as char));
                    0
                }
            };
            values.push(v);
        }
        let closed = self.peek(0) == b'\'';
        if closed {
            self.bump();
        }
        let span = self.span_from(lo, line, col);
        let text = String::from_utf8_lossy(&self.src[lo..self.pos]).into_owned();
        if !closed {
            self.err(span, "unterminated character constant: expected `'`");
        } else if let Some(e) = bad_escape {
            self.err(span, format!("unknown escape sequence `{e}` in {text}"));
        } else if values.iter().any(|&v| v > 127) {
            self.err(
                span,
                format!("character constant {text} is not in 0..=127 (ASCII); write the number"),
            );
        } else if values.len() != 1 {
            self.err(
                span,
                format!("character constant {text} must hold exactly one character"),
            );
        } else {
            return Tok::Int(values[0] as u64, false);
        }
        Tok::Int(0, false)
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
            (b'#', b'#', _) => (HashHash, 2),
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
    pub(crate) fn token(&mut self, line_only: bool) -> Option<Token> {
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
            } else if c == b'\'' {
                self.char_const()
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

/// Lexes and preprocesses `src`, a text with no file behind it: `#include "..."` is an
/// error (see [`crate::pp::preprocess`], which takes the including file's directory).
/// `overrides` are the `-D name=value` definitions.
pub fn lex(src: &str, overrides: &HashMap<String, String>) -> Lexed {
    crate::pp::preprocess(src, None, overrides)
}
