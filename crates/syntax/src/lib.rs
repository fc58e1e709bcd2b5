//! Tessera's front end: source files and diagnostics, the preprocessor and lexer, the parser,
//! and the abstract syntax tree.
//!
//! `parse` is the entry point: text in, an [`ast::Unit`] or a list of [`diag::Diagnostic`]s
//! out. It never panics, whatever the input.

#![warn(missing_docs)]

pub mod ast;
pub mod diag;
pub mod lexer;
pub mod parser;
pub mod pp;

pub use diag::{Diagnostic, IncludedFile, SourceFile};
use std::collections::HashMap;
use std::path::Path;

/// Lexes, preprocesses and parses a text. `overrides` are the `-D NAME=value` definitions.
/// The text has no file behind it: `#include "file.h"` is an error (use [`parse_source`]).
/// Returns the unit, or all errors found.
pub fn parse(src: &str, overrides: &HashMap<String, String>) -> Result<ast::Unit, Vec<Diagnostic>> {
    deep_stack(|| parse_inner(src, None, overrides).0)
}

/// Lexes, preprocesses and parses a source file. `#include "file.h"` looks in `dir` (the
/// directory of the file; `None`: includes of that form are errors), and the files it
/// includes are recorded in `src.included`, so that diagnostics in them render with their
/// own names and lines.
pub fn parse_source(
    src: &mut SourceFile,
    dir: Option<&Path>,
    overrides: &HashMap<String, String>,
) -> Result<ast::Unit, Vec<Diagnostic>> {
    let (r, files) = deep_stack(|| parse_inner(&src.text, dir, overrides));
    src.included = files;
    r
}

/// Runs `f` with at least 64 MiB of stack left, on a fresh 1 GiB stack (reserved, committed
/// as used) if the current one has less. The tree-walking stages recurse once per level of
/// the syntax tree, which [`parser::MAX_TREE_DEPTH`] bounds; their entry points run under
/// this so that a library caller's ordinary thread (8 MiB, or 2 MiB for a spawned one)
/// suffices.
pub fn deep_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 << 20, 1 << 30, f)
}

type Parsed = (Result<ast::Unit, Vec<Diagnostic>>, Vec<IncludedFile>);

fn parse_inner(src: &str, dir: Option<&Path>, overrides: &HashMap<String, String>) -> Parsed {
    let lexed = pp::preprocess(src, dir, overrides);
    let files = lexed.files;
    (
        parse_tokens(
            lexed.tokens,
            lexed.includes,
            lexed.defines,
            lexed.diags,
            lexed.fatal,
        ),
        files,
    )
}

fn parse_tokens(
    tokens: Vec<lexer::Token>,
    includes: Vec<String>,
    defines: Vec<(String, String)>,
    diags: Vec<Diagnostic>,
    fatal: bool,
) -> Result<ast::Unit, Vec<Diagnostic>> {
    let mut diags = diags;
    if fatal {
        return Err(diags);
    }
    let mut p = parser::Parser::new(&tokens, &includes);
    let functions = p.unit();
    diags.extend(p.diags);
    if diags.is_empty() {
        Ok(ast::Unit {
            functions,
            includes,
            defines,
        })
    } else {
        diags.sort_by_key(|d| d.span.lo);
        Err(diags)
    }
}
