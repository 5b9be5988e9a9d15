//! kurabe's experiment layer.
//!
//! Owns turning a plan file into a validated [`kurabe_model::plan::Plan`]
//! ([`plan::load_plan`], errors name the file, line and field) and running
//! it ([`runner::run_experiment`]): the interleaved schedule, the target's
//! life cycle ([`target`]), the workloads and probes ([`measure`]), handing
//! each finished run to the store, and the verdicts and `[[check]]`
//! results ([`analysis`]). [`cmd`] is `kurabe cmd` (hyperfine's one-liner),
//! [`http_compare`] is `kurabe http A B`, [`noise`] is `kurabe noise` (a
//! workload against itself), [`import`] reads other harnesses'
//! results (`kurabe results import --from`) as experiments, [`prepare`] turns a plan path and
//! `--set` values into what the runner needs. [`http_load`] runs one HTTP load by hand
//! (`kurabe http`, `kurabe demo`) with the server's tree sampled.
//!
//! It must not print (progress goes through a callback), and it must not
//! define plan types (they live in `kurabe-model` so the store and reports
//! share them).

pub mod analysis;
pub mod bisect_run;
pub mod cachegrind;
pub mod cmd;
pub mod demo;
pub mod dry_run;
mod ending;
mod execute;
pub mod find_rate;
pub mod git;
pub mod http_compare;
pub mod http_load;
pub mod http_runs;
pub mod import;
pub mod measure;
mod measured;
pub mod noise;
pub mod plan;
pub mod prepare;
mod profiled;
pub mod runner;
pub mod saved_result;
pub mod saved_search;
pub mod schedule;
pub mod soak;
pub mod target;

pub use plan::{load_plan, load_plan_filled, load_plan_with_text, parse_plan, PlanError};
pub use runner::{
    check_supported, run_experiment, Event, FailedCell, LabError, MoreRounds, Outcome, RunOptions,
};
