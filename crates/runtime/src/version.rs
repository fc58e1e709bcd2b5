//! Version selection by measurement: a region compiled in two equivalent versions (the
//! polyhedral optimiser's code and the code as written, `Stmt::Versioned` of the IR) runs
//! each a few times, timed, and then keeps the faster on this machine.
//!
//! The optimiser's choices come from models and rules; on code it was not tuned on they can
//! lose to the code as written (PolyBench's syr2k at MEDIUM: the k-innermost reduction it
//! builds is 1.2x slower than the original j loop here, with gcc as with LLVM). Both versions
//! compute the same results bit for bit, so which one runs is invisible but for the time.
//!
//! Policy ([`VersionSite`]): executions 1 and 3 run the optimised version, 2 and 4 the
//! original (then alternating, until each has two samples: an execution that fails reports
//! none); each version's time is the least of its samples (the first execution pays cold
//! caches and code); with two samples each, the original is kept if it was at least 3%
//! faster, else the optimised one. The exploration stops early, keeping the optimised version, when the
//! original's first sample is over twice the optimised one's best (an optimiser that gives
//! 7x — seidel-2d — costs one slow execution, not two). Executions started while a decision
//! is pending may run either version; the choice is final once made.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// Which version an execution runs: the optimised code.
pub const VERSION_FAST: u32 = 0;
/// Which version an execution runs: the code as written.
pub const VERSION_ORIGINAL: u32 = 1;

/// The exploration plan: the version of executions 1, 2, 3, 4.
const PLAN: [u32; 4] = [
    VERSION_FAST,
    VERSION_ORIGINAL,
    VERSION_FAST,
    VERSION_ORIGINAL,
];

/// The state of one versioned region (one per `Stmt::Versioned` of a compiled program).
#[derive(Debug, Default)]
pub struct VersionSite {
    /// `0`: undecided; `1 + v`: version `v` chosen.
    decided: AtomicU32,
    /// Executions handed a version so far (while undecided).
    issued: AtomicU32,
    /// The samples, per version (nanoseconds).
    samples: Mutex<[Vec<u64>; 2]>,
}

/// What a [`VersionSite`] has measured and chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionReport {
    /// The version kept ([`VERSION_FAST`] or [`VERSION_ORIGINAL`]); `None` while exploring.
    pub chosen: Option<u32>,
    /// The best time of each version so far, in nanoseconds (`None`: not run, or not timed).
    pub best_ns: [Option<u64>; 2],
    /// How many timed executions each version had.
    pub runs: [usize; 2],
}

impl VersionSite {
    /// A new, undecided site.
    pub fn new() -> VersionSite {
        VersionSite::default()
    }

    /// The version the next execution runs.
    pub fn begin(&self) -> u32 {
        match self.decided.load(Ordering::Acquire) {
            0 => {
                // The plan, then alternation until both versions have their samples (an
                // execution that fails, or one still running, reports none).
                let k = self.issued.fetch_add(1, Ordering::Relaxed) as usize;
                PLAN[k % PLAN.len()]
            }
            d => d - 1,
        }
    }

    /// Records that an execution of `version` took `ns` nanoseconds, and decides when the
    /// plan is done (see the module's documentation).
    pub fn end(&self, version: u32, ns: u64) {
        if self.decided.load(Ordering::Acquire) != 0 || version > 1 {
            return;
        }
        let mut s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        if self.decided.load(Ordering::Acquire) != 0 {
            return;
        }
        s[version as usize].push(ns);
        let best = |v: &Vec<u64>| v.iter().copied().min();
        let choice = match (best(&s[0]), best(&s[1])) {
            (Some(f), Some(o)) if o > f.saturating_mul(2) => Some(VERSION_FAST),
            (Some(f), Some(o)) if s[0].len() >= 2 && s[1].len() >= 2 => {
                // The original must win by 3% (o <= 0.97 f).
                Some(if o.saturating_mul(100) <= f.saturating_mul(97) {
                    VERSION_ORIGINAL
                } else {
                    VERSION_FAST
                })
            }
            _ => None,
        };
        if let Some(v) = choice {
            self.decided.store(v + 1, Ordering::Release);
        }
    }

    /// [`begin`](Self::begin) for the C ABI: a token `start_ns * 2 + version` (the version
    /// in the low bit) for [`end_token`](Self::end_token). Once the choice is made the
    /// clock is not read (the token's start is 0): decided regions pay two loads.
    pub fn begin_token(&self) -> u64 {
        let v = self.begin() as u64;
        if self.decided.load(Ordering::Acquire) != 0 {
            return v;
        }
        (clock_ns() << 1) | v
    }

    /// [`end`](Self::end) for the C ABI, the time measured from `token`'s start (nothing
    /// once the choice is made).
    pub fn end_token(&self, token: u64) {
        if self.decided.load(Ordering::Acquire) != 0 {
            return;
        }
        self.end((token & 1) as u32, clock_ns().saturating_sub(token >> 1));
    }

    /// What has been measured and chosen so far.
    pub fn report(&self) -> VersionReport {
        let s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        VersionReport {
            chosen: match self.decided.load(Ordering::Acquire) {
                0 => None,
                d => Some(d - 1),
            },
            best_ns: [s[0].iter().copied().min(), s[1].iter().copied().min()],
            runs: [s[0].len(), s[1].len()],
        }
    }
}

/// Nanoseconds on a monotonic clock (since the first call in the process).
fn clock_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the plan with the given times per version; returns the versions run.
    fn drive(site: &VersionSite, fast: u64, original: u64, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| {
                let v = site.begin();
                site.end(v, if v == VERSION_FAST { fast } else { original });
                v
            })
            .collect()
    }

    #[test]
    fn the_original_is_kept_when_it_is_faster_by_3_percent() {
        let s = VersionSite::new();
        assert_eq!(drive(&s, 1000, 960, 6), [0, 1, 0, 1, 1, 1]);
        let r = s.report();
        assert_eq!(r.chosen, Some(VERSION_ORIGINAL));
        assert_eq!((r.best_ns, r.runs), ([Some(1000), Some(960)], [2, 2]));
    }

    #[test]
    fn ties_and_small_wins_keep_the_optimised_version() {
        let s = VersionSite::new();
        assert_eq!(drive(&s, 1000, 980, 6), [0, 1, 0, 1, 0, 0]);
        assert_eq!(s.report().chosen, Some(VERSION_FAST));
    }

    #[test]
    fn a_much_slower_original_is_run_once() {
        let s = VersionSite::new();
        assert_eq!(drive(&s, 1000, 7000, 5), [0, 1, 0, 0, 0]);
        assert_eq!(s.report().runs, [1, 1]);
    }

    #[test]
    fn executions_that_report_nothing_do_not_stall_the_choice() {
        // The first execution (optimised) fails and reports no time: the versions keep
        // alternating until each has two samples.
        let s = VersionSite::new();
        assert_eq!(s.begin(), VERSION_FAST);
        let ran = drive(&s, 1000, 960, 6);
        assert_eq!(ran, [1, 0, 1, 0, 1, 1]);
        assert_eq!(s.report().chosen, Some(VERSION_ORIGINAL));
    }

    #[test]
    fn each_version_counts_its_best_sample() {
        // The optimised version's first (cold) execution is slow, its second fast.
        let s = VersionSite::new();
        let times = [1500u64, 1000, 900, 1000];
        for t in times {
            let v = s.begin();
            s.end(v, t);
        }
        assert_eq!(s.report().best_ns, [Some(900), Some(1000)]);
        assert_eq!(s.report().chosen, Some(VERSION_FAST));
    }
}
