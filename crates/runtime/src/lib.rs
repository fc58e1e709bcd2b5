//! Parallel runtime of Tessera.
//!
//! * [`Runtime`]: a work-stealing pool (rayon), sized explicitly, else by
//!   `TESSERA_THREADS`, else by the available parallelism.
//! * [`tessera_parallel_for`]: the C ABI parallel-for entry for JIT code
//!   (all `unsafe` lives in the `ffi` module).
//! * Skeletons (`par_map`, `par_map_chunk`, `par_map_stride`,
//!   `par_divconq`, `par_divconq_thresh`) as methods of [`Runtime`].
//! * [`Controller`]: adaptive granularity — runs the work in batches and
//!   retunes tau through the skeleton's [`CostDerivative`] so that tasks land
//!   in a target time window (BACKGROUND §1).

mod controller;
mod cost;
mod error;
mod ffi;
mod pool;
mod skeleton;

pub use controller::{AdaptiveRun, Controller, ControllerConfig, Decision, Tuner};
pub use cost::{tau_for_cost_ratio, CostDerivative, CostFn, TaskRecord, TaskShape, PHI};
pub use error::{ParallelForError, RuntimeError, SkelError};
pub use ffi::{
    tessera_parallel_for, tessera_runtime_free, tessera_runtime_global, tessera_runtime_new,
    RuntimeHandle, TesseraBody, TESSERA_ERR_PANIC,
};
pub use pool::{resolve_threads, Runtime, THREADS_ENV};
pub use skeleton::Traced;
