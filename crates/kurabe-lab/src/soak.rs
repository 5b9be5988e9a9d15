//! Soak runs: keep HTTP load on a target for a long time and tell whether
//! its memory keeps growing with the work it does (a leak) or levels off.
//!
//! One continuous load run (the load generator's own warm-up first, which
//! is dropped), while this module samples the target tree's memory against
//! the requests served so far. The series goes to
//! [`kurabe_model::stats::trend::analyse`], which fits the slope of the
//! per-window floor and gives the verdict; this module adds the rate
//! (MB/hour at the measured requests/s) and stores the series for charts.
//! It must not print or touch the store.
//!
//! # What is fitted: the memory the target owns, not all of Σ PSS
//!
//! Σ PSS has a part that moves with the rest of the machine: file-backed
//! pages (the binary's code, shared libraries) are split between every
//! process that maps them, so the target's `Pss_File` drops when another
//! process running the same binary or libc starts, and rises when it
//! exits. Four idle `kurabe serve` processes started beside a debug-build
//! target cut its Σ PSS from 6.5 to 2.4 MB; a test suite that starts and
//! stops kurabe processes during a 6 s soak moved the floor by megabytes,
//! which read as −270 B/request (783 instead of 1 055 for a 1 KiB leak).
//! A leak lives in memory the target allocated, so the fit uses
//! Σ (`Pss_Anon` + `Pss_Shmem` + `Swap`) — anonymous and shared-memory
//! pages (split only between the target's own forks) and what of them was
//! swapped out — and the chart shows the same series. On kernels before
//! 5.9, whose `smaps_rollup` has no `Pss_Anon`, it falls back to Σ PSS
//! (the record's `fitted` field says which).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kurabe_model::http::HttpReport;
use kurabe_model::load::LoadSpec;
use kurabe_model::plan::HumanDuration;
use kurabe_model::run_detail::{HttpDetail, RunDetail, SoakDetail, SoakSample as Row};
use kurabe_model::stats::trend::{self, Point, TrendConfig, TrendVerdict};
use kurabe_probe::{Recorder, SamplerConfig, TreeSampler};
use kurabe_stop::Stop;

use crate::measured::{counter_metrics, load_metrics, tree_metrics, Measured, Probe};
use crate::target::RunFailure;

/// Samples per soak run the interval aims at (more is finer, but each
/// Σ PSS read costs the target a little).
const TARGET_SAMPLES: u32 = 300;

/// Sampling interval for a soak of `length`: ~300 samples, 50 ms – 2 s.
fn interval_for(length: Duration) -> Duration {
    (length / TARGET_SAMPLES).clamp(Duration::from_millis(50), Duration::from_secs(2))
}

/// One sample: requests served so far and the target's memory then.
#[derive(Debug, Clone, Copy)]
struct SoakSample {
    t_s: f64,
    requests: u64,
    /// Σ PSS (everything, file-backed pages included).
    pss_bytes: u64,
    /// Σ Pss_Anon + Pss_Shmem + Swap: what the target allocated itself;
    /// 0 when the kernel does not report Pss_Anon.
    owned_bytes: u64,
}

/// Which memory figure the fit used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fitted {
    /// Σ (Pss_Anon + Pss_Shmem + Swap).
    Owned,
    /// Σ PSS, on kernels without Pss_Anon.
    Pss,
}

impl Fitted {
    /// Column name in the record's samples.
    fn column(self) -> &'static str {
        match self {
            Fitted::Owned => kurabe_model::run_detail::OWNED_COLUMN,
            Fitted::Pss => "pss_bytes",
        }
    }

    /// Owned memory when every sample has it, else Σ PSS: a real process
    /// always has some anonymous memory (its stack), so a zero means the
    /// kernel did not report Pss_Anon.
    fn choose(series: &[SoakSample]) -> Fitted {
        if !series.is_empty() && series.iter().all(|s| s.owned_bytes > 0) {
            Fitted::Owned
        } else {
            Fitted::Pss
        }
    }

    fn value(self, s: &SoakSample) -> u64 {
        match self {
            Fitted::Owned => s.owned_bytes,
            Fitted::Pss => s.pss_bytes,
        }
    }
}

/// Run `spec` for `length` after `warmup` (both under load, one connection
/// pool) with `probe`'s tree sampled, and fit the memory floor's growth.
pub fn soak(
    spec: LoadSpec,
    length: Duration,
    warmup: Duration,
    probe: &Probe,
    stop: &Arc<Stop>,
) -> Result<Measured, RunFailure> {
    let spec = LoadSpec {
        requests: None,
        duration: Some(HumanDuration(length)),
        warmup: (!warmup.is_zero()).then_some(HumanDuration(warmup)),
        ..spec
    };
    let interval = interval_for(length);
    let mut taken = Sampling::start(probe, interval)?;
    let report = run_sampled(&spec, &mut taken, interval, stop)?;
    if taken.lost {
        return Err(RunFailure::new("the target exited during the soak"));
    }
    if stop.is_set() {
        return Err(RunFailure::new("interrupted"));
    }
    if report.complete_requests == 0 {
        return Err(RunFailure::new(format!(
            "no request completed during the soak ({} failed)",
            report.failed_requests
        )));
    }
    Ok(taken.measured(report))
}

/// What the soak's sampling collects while the load runs.
struct Sampling {
    sampler: TreeSampler,
    pid: u32,
    start: Instant,
    recorder: Option<Recorder>,
    series: Vec<SoakSample>,
    /// The target was gone at a sample.
    lost: bool,
}

impl Sampling {
    /// Ready to sample `probe`'s tree every `interval`.
    fn start(probe: &Probe, interval: Duration) -> Result<Self, RunFailure> {
        let sampler_cfg = SamplerConfig {
            interval,
            // Memory is the point of a soak run: fresh PSS on every sample.
            pss_budget: 0.05,
            ..SamplerConfig::default()
        };
        let sampler = TreeSampler::with_config(probe.pid, sampler_cfg, probe.cgroup.clone())
            .map_err(|e| RunFailure::new(format!("cannot sample the target: {e}")))?;
        Ok(Self {
            sampler,
            pid: probe.pid,
            start: Instant::now(),
            recorder: None,
            series: Vec::new(),
            lost: false,
        })
    }

    /// Sample the tree with `requests` served so far; false when the target is gone.
    fn take(&mut self, requests: u64) -> bool {
        let x = match self.sampler.sample() {
            Ok(x) if x.root_alive => x,
            Ok(_) | Err(_) => {
                self.lost = true;
                return false;
            }
        };
        if requests == 0 {
            // Still in the warm-up (progress counts the measured phase only).
            return true;
        }
        let pid = self.pid;
        let rec = self
            .recorder
            .get_or_insert_with(|| Recorder::new(pid, Instant::now(), false));
        rec.push(&x);
        let size = x.size;
        if x.pss_stale == 0 && size.rss_bytes > 0 {
            let owned = size.pss_anon_bytes + size.pss_shmem_bytes + size.swap_bytes;
            self.series.push(SoakSample {
                t_s: self.start.elapsed().as_secs_f64(),
                requests,
                pss_bytes: size.pss_bytes,
                owned_bytes: if size.pss_anon_bytes > 0 { owned } else { 0 },
            });
        }
        true
    }

    /// The run's metrics and record from the load's `report` and what was sampled.
    fn measured(self, report: HttpReport) -> Measured {
        let fitted = Fitted::choose(&self.series);
        let fit = fit_of(&self.series, fitted);
        let rps = report.requests_per_second;
        let mut m = BTreeMap::new();
        load_metrics(&report, &mut m);
        let soak = soak_record(&self.series, fitted, fit.as_ref(), rps);
        let mut target = None;
        if let Some(rec) = self.recorder {
            let tree = rec.finish(Instant::now(), &self.sampler).tree;
            tree_metrics(&tree, &mut m);
            let answered = report.answered_requests();
            counter_metrics(&tree.counters, Some(answered), &mut m);
            if let Some(cpu) = tree.server_metrics(answered).cpu_ms_per_request {
                m.insert("cpu_ms_per_request", cpu);
            }
            target = Some(tree);
        }
        if let Some(t) = &fit {
            fit_metrics(t, rps, &mut m);
        }
        let record = RunDetail::Http(Box::new(HttpDetail {
            http: report,
            target,
            settling: None,
            throughput_settling: None,
            soak: Some(soak),
        }));
        Measured { metrics: m, record }
    }
}

/// The trend of the `fitted` memory figure over requests served.
fn fit_of(series: &[SoakSample], fitted: Fitted) -> Option<trend::Trend> {
    let points: Vec<Point> = series
        .iter()
        .map(|s| Point {
            x: s.requests as f64,
            y: fitted.value(s) as f64,
        })
        .collect();
    trend::analyse(&points, &TrendConfig::default())
}

/// The fitted growth as metrics (`pss_growing` only with a verdict).
fn fit_metrics(t: &trend::Trend, rps: f64, m: &mut BTreeMap<&'static str, f64>) {
    m.insert("pss_slope_bytes_per_request", t.bytes_per_request());
    m.insert("pss_growth_mb_per_hour", t.mb_per_hour(rps));
    if t.verdict != TrendVerdict::Unknown {
        let growing = t.verdict == TrendVerdict::Growing;
        m.insert("pss_growing", f64::from(u8::from(growing)));
    }
}

/// Requests served so far, as the load's observer last saw them (the
/// workers publish every ~50 ms; a sample reads the latest).
struct Served(AtomicU64);

impl kurabe_http::load::Observer for Served {
    fn progress_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(50))
    }

    fn progress(&self, p: kurabe_http::load::Progress) {
        self.0.store(p.completed, Ordering::Relaxed);
    }
}

/// Sample every `interval` until the load is `finished`; a lost target
/// stops the load (`load_stop`; the run's own stop reaches it directly).
fn sample_until_done(
    taken: &mut Sampling,
    interval: Duration,
    served: &Served,
    wake: &Stop,
    finished: &AtomicBool,
    load_stop: &Stop,
) {
    let mut next = Instant::now();
    while !finished.load(Ordering::SeqCst) {
        next = kurabe_probe::watch::next_tick(next, interval, Instant::now());
        // Kept as a timed wait: it paces the samples to a schedule, and
        // the load's end or a stop cuts it short at once.
        wake.wait_until(next);
        if load_stop.is_set() {
            break;
        }
        // Requests first: a sample never credits memory to requests not yet served.
        let requests = served.0.load(Ordering::Relaxed);
        if !taken.take(requests) {
            // The target is gone: stop the load now rather than
            // hammer a closed port for the rest of a long soak.
            load_stop.trigger(None);
        }
    }
}

/// Run the load on a thread and sample every `interval` on this one until
/// it ends; a stop or a lost target stops the load.
fn run_sampled(
    spec: &LoadSpec,
    taken: &mut Sampling,
    interval: Duration,
    stop: &Arc<Stop>,
) -> Result<HttpReport, RunFailure> {
    let served = Served(AtomicU64::new(0));
    // The load's stop: the run's, or the sampler's when the target is lost.
    let load_stop = stop.child();
    // Set by the load's end or by the stop: what the sampling waits on.
    let wake = stop.child();
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        let load = s.spawn(|| {
            let r = kurabe_http::load::run(spec, &load_stop, &served);
            finished.store(true, Ordering::SeqCst);
            wake.trigger(None);
            r
        });
        sample_until_done(taken, interval, &served, &wake, &finished, &load_stop);
        load.join()
            .map_err(|_| RunFailure::new("load generator panicked"))?
            .map(|run| run.report)
            .map_err(|e| RunFailure::new(format!("load generator: {e}")))
    })
}

/// The soak part of a run record: verdict, both fits, the floor and the
/// raw series (requests, Σ PSS, owned memory) for the memory-over-requests
/// chart; `fitted` names the column the fits and the floor are in.
fn soak_record(
    series: &[SoakSample],
    fitted: Fitted,
    fit: Option<&trend::Trend>,
    rps: f64,
) -> SoakDetail {
    let samples = series
        .iter()
        .map(|s| Row::Owned(s.t_s, s.requests, s.pss_bytes, s.owned_bytes))
        .collect();
    let columns = ["t_s", "requests", "pss_bytes", Fitted::Owned.column()];
    SoakDetail {
        samples_columns: columns.map(str::to_owned).to_vec(),
        samples,
        fitted: Some(fitted.column().to_owned()),
        verdict: fit.map_or(TrendVerdict::Unknown, |t| t.verdict),
        pss_slope_bytes_per_request: fit.map(|t| t.theil_sen.slope),
        pss_slope_low_bytes_per_request: fit.map(|t| t.theil_sen.slope_low),
        pss_slope_high_bytes_per_request: fit.map(|t| t.theil_sen.slope_high),
        pss_growth_mb_per_hour: fit.map(|t| t.mb_per_hour(rps)),
        least_squares: fit.map(|t| t.least_squares),
        theil_sen: fit.map(|t| t.theil_sen),
        last_half: fit.map(|t| t.last_half),
        floor: fit.map(|t| t.floor.iter().map(|p| [p.x, p.y]).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_aims_at_300_samples_within_bounds() {
        assert_eq!(
            interval_for(Duration::from_secs(60)),
            Duration::from_millis(200)
        );
        assert_eq!(
            interval_for(Duration::from_secs(1)),
            Duration::from_millis(50)
        );
        assert_eq!(
            interval_for(Duration::from_secs(3600)),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn record_without_fit_says_unknown() {
        let r = soak_record(&[], Fitted::Pss, None, 100.0);
        assert_eq!(r.verdict, TrendVerdict::Unknown);
        assert!(r.theil_sen.is_none() && r.floor.is_none());
        assert_eq!(r.fitted_column(), "pss_bytes");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["verdict"], "unknown");
        assert!(json.get("theil_sen").is_none() && json.get("last_half").is_none());
    }

    fn sample(pss_bytes: u64, owned_bytes: u64) -> SoakSample {
        SoakSample {
            t_s: 1.0,
            requests: 10,
            pss_bytes,
            owned_bytes,
        }
    }

    #[test]
    fn fits_owned_memory_unless_the_kernel_lacks_pss_anon() {
        let both = [sample(6_000_000, 1_200_000), sample(2_400_000, 1_300_000)];
        assert_eq!(Fitted::choose(&both), Fitted::Owned);
        assert_eq!(Fitted::Owned.value(&both[1]), 1_300_000);
        let old_kernel = [sample(6_000_000, 0), sample(6_100_000, 0)];
        assert_eq!(Fitted::choose(&old_kernel), Fitted::Pss);
        assert_eq!(Fitted::Pss.value(&old_kernel[1]), 6_100_000);
        assert_eq!(Fitted::choose(&[]), Fitted::Pss);
        let r = soak_record(&both, Fitted::Owned, None, 1.0);
        assert_eq!(r.fitted_column(), "pss_anon_shmem_swap_bytes");
        assert_eq!(r.samples_columns[3], "pss_anon_shmem_swap_bytes");
        assert_eq!(r.samples[1], Row::Owned(1.0, 10, 2_400_000, 1_300_000));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["samples"][1][3], 1_300_000);
    }
}
