//! Adaptive granularity controller.
