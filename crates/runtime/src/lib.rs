//! Parallel runtime of Tessera.
//!
//! * [`Runtime`]: a work-stealing pool (rayon), sized explicitly, else by
//!   `TESSERA_THREADS`, else by the available parallelism.
//! * [`tessera_parallel_for`]: the C ABI parallel-for entry for JIT code
//!   (all `unsafe` lives in the `ffi` module).
//! * Skeletons (`par_map`, `par_map_chunk`, `par_map_stride`,
//!   `par_divconq`, `par_divconq_thresh`) as methods of [`Runtime`].
//! * [`VersionSite`]: the choice between two equivalent versions of a region (optimised,
//!   as written) by timing each, for JIT code ([`tessera_version_begin`]).
//! * [`Controller`]: adaptive granularity — runs the work in batches and
//!   retunes tau through the skeleton's [`CostDerivative`] so that tasks land
//!   in a target time window (BACKGROUND §1).
//!
//! ```
//! use tessera_runtime::{Controller, ControllerConfig, Runtime};
//!
//! let rt = Runtime::new(Some(2)).unwrap();
//! let xs: Vec<u64> = (1..=100).collect();
//! let squares = rt.par_map_chunk(8, |&x| Ok::<_, String>(x * x), &xs).unwrap();
//! assert_eq!(squares[9], 100);
//!
//! let ctl = Controller::new(&rt, ControllerConfig::with_window(1.0, 10.0));
//! let run = ctl.map_chunk(|&x| Ok::<_, String>(x + 1), &xs, None).unwrap();
//! assert_eq!(run.value[0], 2);
//! println!("{}", run.log());
//! ```

#![warn(missing_docs)]

mod controller;
mod cost;
mod error;
mod ffi;
mod pool;
mod skeleton;
mod version;

pub use controller::{AdaptiveRun, Controller, ControllerConfig, Decision, Tuner};
pub use cost::{tau_for_cost_ratio, CostDerivative, CostFn, TaskRecord, TaskShape, PHI};
pub use error::{ParallelForError, RuntimeError, SkelError};
pub use ffi::{
    tessera_parallel_for, tessera_runtime_free, tessera_runtime_global, tessera_runtime_new,
    tessera_version_begin, tessera_version_end, RuntimeHandle, TesseraBody, TESSERA_ERR_PANIC,
};
pub use pool::{
    available_parallelism, max_threads, resolve_threads, Runtime, MAX_THREADS, THREADS_ENV,
};
pub use skeleton::Traced;
pub use version::{VersionReport, VersionSite, VERSION_FAST, VERSION_ORIGINAL};
