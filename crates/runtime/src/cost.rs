//! Task records, per-task cost callbacks and skeleton cost derivatives.

/// How the cost of one task scales with the tuning parameter tau.
///
/// The retuning rule (BACKGROUND §1) observes a task cost γ0 at tau0, wants
/// a cost γ1, and must pick tau1 such that `γ1/γ0 = cost_ratio(tau0, tau1)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CostDerivative {
    /// Cost ∝ tau (d cost/d tau ratio 1). `par_map_chunk`: doubling the chunk
    /// doubles the task cost; also `par_divconq_thresh` over linear-work
    /// recursions (e.g. a sum over a range halved at each step: a leaf task
    /// of size ≤ tau does ∝ tau work).
    Linear,
    /// Cost ∝ n/tau (1/x). `par_map_stride`: doubling the stride (number of
    /// interleaved tasks) halves each task's cost.
    Inverse,
    /// Cost ∝ base^tau. `par_divconq_thresh` over fib-like recursion: the
    /// sequential task below the threshold solves a problem of size ~tau,
    /// which costs ~φ^tau, so raising tau by one multiplies the task cost by
    /// `base` (φ ≈ 1.618 for fib).
    Exponential {
        /// Growth factor of the task cost per unit of tau (must be > 1).
        base: f64,
    },
}

/// The golden ratio, the [`CostDerivative::Exponential`] base for fib.
pub const PHI: f64 = 1.618_033_988_749_895;

impl CostDerivative {
    /// Predicted `γ(tau1) / γ(tau0)`.
    pub fn cost_ratio(&self, tau0: f64, tau1: f64) -> f64 {
        match *self {
            CostDerivative::Linear => tau1 / tau0,
            CostDerivative::Inverse => tau0 / tau1,
            CostDerivative::Exponential { base } => base.powf(tau1 - tau0),
        }
    }

    /// The inverse of [`CostDerivative::cost_ratio`]: the tau1 whose task
    /// cost is `ratio` times the cost at `tau0` (not rounded or clamped).
    pub fn tau_for_cost_ratio(&self, tau0: f64, ratio: f64) -> f64 {
        match *self {
            CostDerivative::Linear => tau0 * ratio,
            CostDerivative::Inverse => tau0 / ratio,
            CostDerivative::Exponential { base } => tau0 + ratio.ln() / base.ln(),
        }
    }
}

/// Free-function form of [`CostDerivative::tau_for_cost_ratio`].
pub fn tau_for_cost_ratio(model: CostDerivative, tau0: f64, ratio: f64) -> f64 {
    model.tau_for_cost_ratio(tau0, ratio)
}

/// What a task covers, handed to a [`CostFn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskShape {
    /// Task number within its skeleton call / batch.
    pub index: usize,
    /// The tuning parameter in force.
    pub tau: usize,
    /// Index (into the whole input) of the task's first element; 0 for
    /// divide-and-conquer tasks.
    pub first: usize,
    /// Distance between the task's elements: 1 for chunks, the stride for
    /// strided tasks, 0 for divide-and-conquer tasks.
    pub step: usize,
    /// Number of elements (map skeletons) or `size` of the leaf problem
    /// (divide-and-conquer).
    pub len: usize,
}

/// A per-task cost callback (γ of the task, e.g. from JIT trace counters),
/// called after the task ran.
pub type CostFn<'a> = dyn Fn(&TaskShape) -> f64 + Sync + 'a;

/// One executed task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// Controller batch number (0 outside the controller).
    pub batch: usize,
    /// The tuning parameter the task ran with.
    pub tau: usize,
    /// Task number within its skeleton call / batch.
    pub index: usize,
    /// Start time, ns after the start of the skeleton call / controller run.
    pub start_ns: u64,
    /// Wall time of the task in ns.
    pub elapsed_ns: u64,
    /// The cost γ given by the cost callback, if one was supplied.
    pub cost: Option<f64>,
}

impl TaskRecord {
    /// Elapsed time in milliseconds.
    pub fn elapsed_ms(&self) -> f64 {
        self.elapsed_ns as f64 / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tau_for_cost_ratio_inverts_cost_ratio() {
        let models = [
            CostDerivative::Linear,
            CostDerivative::Inverse,
            CostDerivative::Exponential { base: PHI },
        ];
        for m in models {
            for (tau0, ratio) in [(1.0, 16.0), (10.0, 0.25), (7.0, 1.0), (30.0, 3.5)] {
                let tau1 = m.tau_for_cost_ratio(tau0, ratio);
                let back = m.cost_ratio(tau0, tau1);
                assert!((back - ratio).abs() < 1e-9 * ratio, "{m:?} {tau0} {ratio}");
            }
        }
    }

    #[test]
    fn derivative_shapes() {
        // chunk: doubling tau doubles the cost.
        assert_eq!(CostDerivative::Linear.cost_ratio(4.0, 8.0), 2.0);
        // stride: doubling tau halves the cost.
        assert_eq!(CostDerivative::Inverse.cost_ratio(4.0, 8.0), 0.5);
        // fib: one more level multiplies by phi.
        let e = CostDerivative::Exponential { base: PHI };
        assert!((e.cost_ratio(20.0, 21.0) - PHI).abs() < 1e-12);
        assert!((tau_for_cost_ratio(e, 20.0, PHI * PHI) - 22.0).abs() < 1e-9);
        assert_eq!(tau_for_cost_ratio(CostDerivative::Linear, 10.0, 3.0), 30.0);
        assert_eq!(tau_for_cost_ratio(CostDerivative::Inverse, 10.0, 2.0), 5.0);
    }
}
