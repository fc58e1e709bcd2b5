//! The errors of a query: bad SQL, unknown names, types, files, and run-time faults.

use std::fmt;

/// A position in the query text (1-based line and column), where sqlparser knows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// Line, 1-based (0: unknown).
    pub line: u64,
    /// Column, 1-based (0: unknown).
    pub col: u64,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "query")
        } else {
            write!(f, "query:{}:{}", self.line, self.col)
        }
    }
}

/// Everything that can go wrong with a query. No query input makes the engine panic.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The SQL text does not parse.
    #[error("query: syntax error: {0}")]
    Syntax(String),
    /// A construct outside the supported subset, at `pos`, with the offending text.
    #[error("{pos}: unsupported: {what}: `{text}`")]
    Unsupported {
        /// Where.
        pos: Pos,
        /// What is not supported, and what is expected instead.
        what: String,
        /// The offending SQL text.
        text: String,
    },
    /// A column name that the table does not have.
    #[error("{pos}: unknown column `{name}`; the table `{table}` has: {columns}")]
    UnknownColumn {
        /// Where.
        pos: Pos,
        /// The name as written.
        name: String,
        /// The table.
        table: String,
        /// Its columns, comma-separated.
        columns: String,
    },
    /// A function name that is neither built in nor a user function.
    #[error("{pos}: unknown function `{name}`; built in: {builtins}; user functions: {user}")]
    UnknownFunction {
        /// Where.
        pos: Pos,
        /// The name as written.
        name: String,
        /// The built-in functions.
        builtins: String,
        /// The user functions, comma-separated (or "none").
        user: String,
    },
    /// A type error: an operand or argument of the wrong type.
    #[error("{pos}: type error in `{text}`: {msg}")]
    Type {
        /// Where.
        pos: Pos,
        /// The offending SQL text.
        text: String,
        /// What was expected.
        msg: String,
    },
    /// A table name that is not registered, or a file that does not exist.
    #[error("{pos}: unknown table `{name}`: not registered and not a readable file (.csv, .parquet, .npy or a directory of .npy)")]
    UnknownTable {
        /// Where.
        pos: Pos,
        /// The name as written.
        name: String,
    },
    /// A data file that cannot be read or has an unsupported layout.
    #[error("{path}: {msg}")]
    Data {
        /// The file.
        path: String,
        /// What is wrong.
        msg: String,
    },
    /// The user functions' source does not compile (the diagnostics, rendered).
    #[error("user functions:\n{0}")]
    UserFunctions(String),
    /// A run-time error of the compiled pipeline (a user function's division by zero, an
    /// integer division by zero in the query), naming the row of the table.
    #[error("row {row} of `{table}`: {error}")]
    Row {
        /// The table.
        table: String,
        /// The row (0-based) whose evaluation failed.
        row: u64,
        /// The kernel's run-time error, located in the source.
        error: String,
    },
    /// Compiling the pipeline failed (an internal error: the generated code is ours).
    #[error("internal error compiling the query's pipeline: {0}")]
    Internal(String),
    /// Writing the result failed.
    #[error("{path}: cannot write the result: {msg}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        msg: String,
    },
}

/// `Result` with [`QueryError`].
pub type Result<T> = std::result::Result<T, QueryError>;
