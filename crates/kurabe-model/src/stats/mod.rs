//! Statistics that turn repeated measurements into verdicts.
//!
//! Small pure modules, each with its tests beside it: [`summary`] describes
//! one variant's samples, [`metric`] says what a number means and which way
//! is better, [`student_t`] gives the t quantiles the interval needs,
//! [`estimate`] turns two sides into a log-scale Welch estimate and
//! [`decide()`] — the one place a ratio verdict is decided — turns that into
//! a ratio, a 95 % interval, a [`Verdict`] and the smallest change the
//! data could have detected ([`power`]); [`compare()`] does both for
//! two variants' samples ([`difference`] the same on the difference scale, for soak
//! slopes that may be 0 or negative, [`trend`] fits those slopes; both name
//! their answer with [`verdict`]'s words; [`from_summary`] compares as
//! [`compare()`] does when a side is known only by its summary),
//! [`noise`] reads an A/A run's spread, drift and power (`kurabe noise`),
//! [`changepoint`] finds where a history of experiments steps, [`bisect`]
//! searches commits for the first one where a metric changes, and
//! [`schedule`] decides the interleaved order in
//! which runs happen.
//!
//! Nothing here does I/O, reads the clock or draws entropy from the system:
//! the same inputs (and seed) always give the same outputs.

pub mod bisect;
pub mod changepoint;
pub mod compare;
pub mod difference;
pub mod estimate;
pub mod from_summary;
pub mod metric;
pub mod noise;
pub mod power;
pub mod schedule;
pub mod student_t;
pub mod summary;
pub mod trend;
pub mod verdict;
pub mod warmup;

pub use compare::{compare, compare_at, compare_metric, compare_metric_at, decide, Comparison};
pub use difference::Difference;
pub use estimate::{LogEstimate, LogMoments};
pub use metric::{Direction, Metric, Unit, DEFAULT_NOISE_BAND};
pub use schedule::randomized_blocks;
pub use summary::Summary;
pub use verdict::{NoIntervalReason, Verdict, VerdictWord, CONFIDENCE};
