//! A run's profile (`--profile`): the sampler attached to what the run
//! measures — the helper that runs a command's executions, or the
//! server tree behind an http load — and its samples of the measured
//! phase.
//!
//! Owns choosing what is kept (a command's warm-up executions are left
//! out: their pids are not among the timed ones; a server's samples all
//! count, from the end of the warm-up to the end of the load), what the
//! CPU is divided by (executions, or requests answered), and the symbol
//! cache every run shares (a 15 MB binary's tables are read once, not
//! once per run). Must not compare profiles (kurabe-model does) or word
//! anything.

use std::sync::Mutex;

use kurabe_model::profile::{Profiling, RunProfile};
use kurabe_probe::cgroup::CgroupReader;
use kurabe_probe::{SamplerConfig, TreeSampler};
use kurabe_profile::{Sampler, Samples, Symbols};

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

/// A sampler on every thread of every process of the running tree under
/// `root` (and of `cgroup`, which catches children that left the tree),
/// found as the server's CPU and memory sampler finds it, and on what
/// they start from now on; none when off or when it cannot be opened.
pub(crate) fn attach_tree(
    profile: Profiling,
    root: u32,
    cgroup: Option<CgroupReader>,
) -> Option<Sampler> {
    let Profiling::Sampled { hz } = profile else {
        return None;
    };
    let config = SamplerConfig {
        counters: false,
        ..SamplerConfig::default()
    };
    let mut tree = TreeSampler::with_config(root, config, cgroup).ok()?;
    let mut pids = tree.sample().map(|s| s.pids).unwrap_or_default();
    // The root first: the tree's processes hang under it.
    pids.retain(|p| *p != root);
    pids.insert(0, root);
    Sampler::attach_tree(&pids, hz).ok()
}

/// Stop `sampler`; the samples of the executions `pids`, per execution.
pub(crate) fn finish(sampler: Sampler, pids: &[u32]) -> RunProfile {
    let timed: std::collections::HashSet<u32> = pids.iter().copied().collect();
    named(sampler.finish(), |root| timed.contains(&root), pids.len())
}

/// Stop a tree's `sampler`; all its samples, per request answered.
pub(crate) fn finish_tree(sampler: Sampler, requests: u64) -> RunProfile {
    named(sampler.finish(), |_| true, requests as usize)
}

/// `samples` kept by `keep`, named with the shared symbol cache, per `divisor`.
fn named(samples: Samples, keep: impl Fn(u32) -> bool, divisor: usize) -> RunProfile {
    let mut cache = SYMBOLS.lock().unwrap_or_else(|e| e.into_inner());
    let symbols = cache.get_or_insert_with(Symbols::new);
    samples.run_profile(keep, divisor.max(1) as u64, symbols)
}
