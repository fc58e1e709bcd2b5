//! Cost models over Tessera fragments: the first layer of run-time retuning by cost.
//!
//! This crate transfers the cost analysis of tracing JITs (traces, labels, guards, bridges,
//! fragment counters, the CM0/CMC/CMW models and their NNLS calibration) to Tessera, whose
//! JIT compiles whole functions from the typed IR (TIR) rather than recording traces.
//!
//! # Labels, arms and fragments
//!
//! A trace has control flow only at guards, and control merges only at labels. On TIR, the
//! analogue is read off the structured control flow of each function:
//!
//! * **Labels** are the merge points: the function **entry**; every **loop header** (the
//!   condition test of `while`/`for`, the start of each `do`-`while` iteration, the
//!   iteration test of a parallel loop); the **latch** of a loop where `continue` lands and
//!   it is not the header (the step of a `for`, the condition of a `do`-`while`); the
//!   **loop exit** (reached from the test and from every `break`); and the **join** after
//!   every `if`. Loop headers and if-joins are the labels of the brief; latches and exits
//!   are added because `continue` and `break` make them merge points too.
//! * **Divergence** happens only at the condition of an `if` and at a loop test. Each is a
//!   guard whose two sides are **arms** (the analogue of a bridge: a path entered from a
//!   guard). An arm is counted like an entry point.
//! * A **node** (label or arm) starts a piece of straight-line code that ends at a label
//!   (the next statement's label, a loop back edge, `break`, `continue`), at an exit
//!   (`return`, the end of the function), or at a branch into two arms.
//! * A **fragment** is a path from a label through arms to the first label or exit: the
//!   straight-line code between two labels, with the branch guards it passed on the way.
//!   Fragments starting at one label share their prefix up to the first branch, exactly as
//!   trace fragments may overlap. The frequency of a fragment is the count of its last
//!   node (the count of the bridge for a fragment ending past a guard, in the paper's
//!   terms); its cost is the sum of its nodes' instructions.
//! * **Guard exits** inside a fragment are the run-time checks the JIT emits (see
//!   `tessera-jit`'s codegen): a bounds check per array index not proven by the polyhedral
//!   optimiser, integer division and remainder by a non-constant, shifts by a count not a
//!   constant in range, the extent check of a local array. They only leave the fragment on
//!   a run-time error (which ends the run), so they add cost but never end a fragment.
//! * **Calls** do not end fragments: a call is one instruction of class [`Class::Call`] in
//!   the caller (the analogue of the paper's calls, whose cost is not in the caller's
//!   trace), and the callee's body is counted through its own labels. (A tracing JIT
//!   inlines calls; a whole-function JIT does not.)
//! * Jumps are not counted (one per fragment, as in the paper); `&&`, `||` and `?:` branch
//!   below fragment granularity and both sides are counted.
//!
//! # Counting
//!
//! [`count_run`] runs the program under the reference interpreter after
//! [`instrument`] has added a counter array parameter and an increment at every label and
//! arm, so every count is exact (the tracing JIT's counters miss the warm-up iterations;
//! these do not). Since every label execution starts exactly one fragment execution,
//! Γ under CM0 equals the total number of label executions.
//!
//! # Models and calibration
//!
//! Instructions fall in the classes of [`Class`]; a fragment has a [`ClassCounts`] vector.
//! [`CostModel::Cm0`] gives γ = 1, [`CostModel::Cmc`] the instruction count, and
//! [`CostModel::Cmw`] a weighted sum; Γ(P) = Σ_j n_j γ_j ([`Profile::gamma`]). For CMW,
//! Γ is linear in the weights: Γ = Σ_c w_c · T_c with T_c = Σ_j n_j · classcount_{j,c}, the
//! per-class totals ([`design_row`]). Given rows and measured times, [`fit_cmw`] finds
//! `w ≥ 0` by non-negative least squares ([`nnls()`], Lawson–Hanson), with [`r_squared`]
//! and leave-one-out errors ([`loo_errors`], [`loo_rmse`]) to judge the fit.

#![warn(missing_docs)]

pub mod calibrate;
mod fragments;
pub mod jit;
mod model;
pub mod nnls;

pub use fragments::*;
pub use model::*;
pub use nnls::{nnls, NnlsError, NnlsSolution};

/// Errors of counting runs and calibration.
#[derive(Debug, thiserror::Error)]
pub enum CostError {
    /// The entry function does not exist.
    #[error("no function named `{0}`")]
    UnknownFunction(String),
    /// The counting run failed at run time.
    #[error(transparent)]
    Runtime(#[from] Box<tessera_ir::RuntimeError>),
    /// The counter array could not be allocated.
    #[error("cannot allocate {0} counters")]
    TooLarge(usize),
    /// The NNLS problem was malformed.
    #[error(transparent)]
    Nnls(#[from] NnlsError),
    /// Rows and times differ in number.
    #[error("{rows} design rows but {times} times")]
    Mismatch {
        /// Number of rows.
        rows: usize,
        /// Number of times.
        times: usize,
    },
    /// A row's length differs from the number of weights.
    #[error("a row has {row} entries but there are {weights} weights")]
    Width {
        /// Entries in the row.
        row: usize,
        /// Number of weights.
        weights: usize,
    },
    /// The counting build did not compile.
    #[error("counting build: {0}")]
    Jit(String),
    /// A measured time is zero, negative or not finite.
    #[error("a measured time must be positive and finite, got {0}")]
    BadTime(f64),
    /// A machine profile could not be read or written, or is of another version.
    #[error("machine profile: {0}")]
    Profile(String),
    /// Too few samples for leave-one-out.
    #[error("leave-one-out needs at least 2 samples, got {0}")]
    TooFewSamples(usize),
}
