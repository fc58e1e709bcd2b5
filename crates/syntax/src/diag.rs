//! Diagnostics: located messages rendered in the style of gcc and clang,
//! `file:line:col: error: message`, followed by the source line and a caret under the span.

use tessera_ir::Span;

/// Severity of a diagnostic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// An error: the input is rejected.
    Error,
    /// A note attached to an error.
    Note,
}

/// A located message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or note.
    pub severity: Severity,
    /// What is wrong, and what was expected.
    pub message: String,
    /// Where.
    pub span: Span,
    /// Short text shown under the caret.
    pub label: Option<String>,
    /// Extra notes (location, message).
    pub notes: Vec<(Option<Span>, String)>,
}

impl Diagnostic {
    /// A new error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            label: None,
            notes: vec![],
        }
    }
    /// Adds a label under the caret.
    pub fn label(mut self, l: impl Into<String>) -> Diagnostic {
        self.label = Some(l.into());
        self
    }
    /// Adds a note, optionally located.
    pub fn note(mut self, span: Option<Span>, n: impl Into<String>) -> Diagnostic {
        self.notes.push((span, n.into()));
        self
    }
}

/// A source file: name and text, and the files it included.
///
/// Spans are byte offsets in one space: the file's own text is `0..text.len()`, and each
/// file included with `#include "..."` follows at its [`IncludedFile::base`]. Rendering a
/// diagnostic names the file its span starts in, with that file's line and column.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// Name used in diagnostics (usually the path as given).
    pub name: String,
    /// The text. Invalid UTF-8 in the input is replaced (lossy) before lexing.
    pub text: String,
    /// Files included with `#include "..."` (filled in by [`crate::parse_source`]).
    pub included: Vec<IncludedFile>,
}

/// A file included with `#include "..."`, and where its spans start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncludedFile {
    /// Name used in diagnostics: the path as resolved from the including file.
    pub name: String,
    /// The text (invalid UTF-8 replaced).
    pub text: String,
    /// The offset of its first byte in the unit's span space.
    pub base: u32,
}

impl SourceFile {
    /// A source file from a name and text.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile {
            name: name.into(),
            text: text.into(),
            included: vec![],
        }
    }

    /// The file (name and text) a span starts in, and the span relative to that file.
    fn locate(&self, span: Span) -> (&str, &str, Span) {
        for f in self.included.iter().rev() {
            if span.lo >= f.base && (span.lo - f.base) as usize <= f.text.len() {
                let local = Span {
                    lo: span.lo - f.base,
                    hi: span.hi.saturating_sub(f.base),
                    ..span
                };
                return (&f.name, &f.text, local);
            }
        }
        (&self.name, &self.text, span)
    }

    /// The line holding `span.lo`, and the byte offset of `span.lo` within it (on a char
    /// boundary).
    fn line_of(text: &str, span: Span) -> (&str, usize) {
        let lo = floor_char(text, (span.lo as usize).min(text.len()));
        let start = text[..lo].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let end = text[lo..].find('\n').map(|i| lo + i).unwrap_or(text.len());
        (&text[start..end], lo - start)
    }

    /// Renders a diagnostic as text (several lines, ending with a newline).
    pub fn render(&self, d: &Diagnostic) -> String {
        let mut out = String::new();
        let sev = match d.severity {
            Severity::Error => "error",
            Severity::Note => "note",
        };
        out.push_str(&format!(
            "{}:{}:{}: {}: {}\n",
            self.locate(d.span).0,
            d.span.line,
            d.span.col,
            sev,
            d.message
        ));
        self.snippet(&mut out, d.span, d.label.as_deref());
        for (span, n) in &d.notes {
            match span {
                Some(s) => {
                    out.push_str(&format!(
                        "{}:{}:{}: note: {}\n",
                        self.locate(*s).0,
                        s.line,
                        s.col,
                        n
                    ));
                    self.snippet(&mut out, *s, None);
                }
                None => out.push_str(&format!("note: {n}\n")),
            }
        }
        out
    }

    fn snippet(&self, out: &mut String, span: Span, label: Option<&str>) {
        if span.line == 0 {
            return;
        }
        const MAX: usize = 160;
        // The caret's byte offset in its line comes from the span's byte offset: `col`
        // counts characters, which differs from bytes on non-ASCII lines.
        let (_, text, span) = self.locate(span);
        let (line, col0) = Self::line_of(text, span);
        // Long lines (minified or generated input) are cut around the caret.
        let (shown, shift, cut_left) = if line.len() > MAX {
            let start = floor_char(line, col0.saturating_sub(MAX / 2));
            let end = floor_char(line, (start + MAX).min(line.len()));
            (&line[start..end], start, start > 0)
        } else {
            (line, 0, false)
        };
        let shown: String = shown
            .chars()
            .map(|c| if c == '\t' { ' ' } else { c })
            .collect();
        let num = span.line.to_string();
        let pad = " ".repeat(num.len());
        let prefix = if cut_left { "..." } else { "" };
        out.push_str(&format!(" {num} | {prefix}{shown}\n"));
        let caret_col = prefix.len() + display_width(&line[shift..(col0.max(shift))]);
        // The marker spans the span's characters on this line (not its bytes).
        let span_end = floor_char(
            line,
            (col0 + span.hi.saturating_sub(span.lo) as usize).min(line.len()),
        );
        let width = display_width(&line[col0..span_end]).clamp(1, 80);
        let width = width.min(
            display_width(&shown)
                .saturating_sub(caret_col - prefix.len())
                .max(1),
        );
        let mut marker = format!(
            " {pad} | {}^{}",
            " ".repeat(caret_col),
            "~".repeat(width - 1)
        );
        if let Some(l) = label {
            marker.push(' ');
            marker.push_str(l);
        }
        out.push_str(&marker);
        out.push('\n');
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn display_width(s: &str) -> usize {
    s.chars().count()
}

/// Renders all diagnostics of a file, and a summary line if there are several errors.
pub fn render_all(file: &SourceFile, diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&file.render(d));
    }
    let n = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    if n > 1 {
        out.push_str(&format!("{n} errors generated.\n"));
    }
    out
}
