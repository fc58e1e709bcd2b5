//! Error types of the runtime.

use thiserror::Error;

/// Errors raised while building a [`crate::Runtime`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RuntimeError {
    /// A thread count of zero was requested explicitly.
    #[error("thread count must be at least 1")]
    ZeroThreads,
    /// More threads than [`crate::max_threads`] allows were requested (explicitly or through
    /// `TESSERA_THREADS`).
    #[error("{requested} threads requested; at most {max} are allowed (1024, and at most 64 per available core: {cores} here)")]
    TooManyThreads {
        /// The count asked for.
        requested: usize,
        /// The bound.
        max: usize,
        /// Available cores.
        cores: usize,
    },
    /// `TESSERA_THREADS` is set but is not a positive integer.
    #[error("TESSERA_THREADS must be a positive integer, got {0:?}")]
    BadThreadsEnv(String),
    /// rayon refused to build the pool.
    #[error("failed to build thread pool: {0}")]
    PoolBuild(String),
    /// The global runtime already exists with this many threads.
    #[error("the global runtime already exists with {0} threads")]
    GlobalExists(usize),
}

/// Errors of [`crate::Runtime::parallel_for`] (and, as codes, of the C entry).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ParallelForError {
    /// A loop body returned this non-zero code (that of the earliest failing chunk).
    #[error("loop body returned error code {0}")]
    Body(i32),
    /// A loop body panicked; the payload message is kept.
    #[error("loop body panicked: {0}")]
    Panic(String),
}

impl ParallelForError {
    /// The code the C entry returns for this error: the body's own code, or
    /// [`crate::TESSERA_ERR_PANIC`] for a panic.
    pub fn code(&self) -> i32 {
        match self {
            ParallelForError::Body(c) => *c,
            ParallelForError::Panic(_) => crate::TESSERA_ERR_PANIC,
        }
    }
}

/// Errors of the skeletons and of the adaptive [`crate::Controller`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SkelError<E> {
    /// The first task error observed; the remaining tasks were stopped.
    #[error("task failed: {0}")]
    Task(E),
    /// A task (or a combine step) panicked; the payload message is kept.
    #[error("task panicked: {0}")]
    Panic(String),
    /// The tuning parameter tau must be at least 1.
    #[error("tuning parameter tau must be >= 1")]
    ZeroTau,
}

/// Turns a panic payload into a message.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
