//! A command run's profile (`--profile`): the sampler attached to the
//! helper that runs the executions, and its samples of the timed ones.
//!
//! Owns choosing the executions (the warm-up's are left out: their pids
//! are not among the timed ones) and the symbol cache every run shares
//! (a 15 MB binary's tables are read once, not once per run). Must not
//! compare profiles (kurabe-model does) or word anything.

use std::sync::Mutex;

use kurabe_model::profile::{Profiling, RunProfile};
use kurabe_profile::{Sampler, Symbols};

/// The symbol tables read so far, shared by the runs of this process.
static SYMBOLS: Mutex<Option<Symbols>> = Mutex::new(None);

/// A sampler on `helper` (its future children are the executions) when
/// profiling is on; none when off or when it cannot be opened (kurabe
/// said why before the runs: [`kurabe_profile::available`]).
pub(crate) fn attach(profile: Profiling, helper: Option<u32>) -> Option<Sampler> {
    match profile {
        Profiling::Off => None,
        Profiling::Sampled { hz } => Sampler::attach(helper?, hz).ok(),
    }
}

/// Stop `sampler`; the samples of the executions `pids`, per execution.
pub(crate) fn finish(sampler: Sampler, pids: &[u32]) -> RunProfile {
    let samples = sampler.finish();
    let mut cache = SYMBOLS.lock().unwrap_or_else(|e| e.into_inner());
    let symbols = cache.get_or_insert_with(Symbols::new);
    let timed: std::collections::HashSet<u32> = pids.iter().copied().collect();
    samples.run_profile(|root| timed.contains(&root), pids.len() as u64, symbols)
}
