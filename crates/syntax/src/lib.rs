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

pub use diag::{Diagnostic, SourceFile};
use std::collections::HashMap;

/// Lexes, preprocesses and parses a file. `overrides` replace `#define` bodies
/// (`-D NAME=value`). Returns the unit, or all errors found.
pub fn parse(src: &str, overrides: &HashMap<String, String>) -> Result<ast::Unit, Vec<Diagnostic>> {
    deep_stack(|| parse_inner(src, overrides))
}

/// Runs `f` with at least 64 MiB of stack left, on a fresh 1 GiB stack (reserved, committed
/// as used) if the current one has less. The tree-walking stages recurse once per level of
/// the syntax tree, which [`parser::MAX_TREE_DEPTH`] bounds; their entry points run under
/// this so that a library caller's ordinary thread (8 MiB, or 2 MiB for a spawned one)
/// suffices.
pub fn deep_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 << 20, 1 << 30, f)
}

fn parse_inner(
    src: &str,
    overrides: &HashMap<String, String>,
) -> Result<ast::Unit, Vec<Diagnostic>> {
    let lexed = lexer::lex(src, overrides);
    let mut diags = lexed.diags;
    if lexed.fatal {
        return Err(diags);
    }
    let mut p = parser::Parser::new(&lexed.tokens, &lexed.includes);
    let functions = p.unit();
    diags.extend(p.diags);
    if diags.is_empty() {
        Ok(ast::Unit {
            functions,
            includes: lexed.includes,
            defines: lexed.defines,
        })
    } else {
        diags.sort_by_key(|d| d.span.lo);
        Err(diags)
    }
}
