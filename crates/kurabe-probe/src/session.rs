//! A `kurabe watch` session: attach to a process tree (or start one), sample
//! it until it ends, and return the report model.
//!
//! Owns the session's lifetime: resolving the target (a PID, the listener on
//! a port, or a command started in its own process group and private
//! cgroup), the sampling loop (interval, optional duration, the root's exit,
//! a [`Stop`]), stopping the command and its cgroup, and folding everything
//! into a [`WatchReport`], including the command's exit status and any OOM
//! kill its cgroup counted. Must not print or render: each sample is handed
//! to a callback (the binary's live line), the report is data.

use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kurabe_model::probe::{CpuSource, ExitStatus, LimitsApplied, WatchEnd, WatchReport};
use kurabe_model::run_detail::TreeDetail;
use kurabe_stop::Stop;

use crate::cgroup::{Limits, RunCgroup};
use crate::error::{ProbeError, Result};
use crate::launch::{self, Started};
use crate::{host, procfs, Recorder, Sample, SamplerConfig, TreeSampler, WatchSummary};

/// How often a started command's exit is looked for when no thread could
/// be made to wait for it.
const EXIT_POLL: Duration = Duration::from_millis(20);
/// How long a started command gets after SIGTERM before its tree is killed.
const TERMINATE_GRACE: Duration = Duration::from_millis(200);

/// What to watch.
#[derive(Debug, Clone)]
pub enum WatchTarget {
    /// An existing process and its descendants.
    Pid(u32),
    /// The process listening on this TCP port, and its descendants.
    Port(u16),
    /// A command kurabe starts (and kills at the end).
    Command(CommandSpec),
}

/// A command to start and watch.
#[derive(Debug, Clone, Default)]
pub struct CommandSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// cgroup limits (a cgroup is then required).
    pub limits: Limits,
    /// Give the command a private cgroup (counts double-forked children, kills escapees).
    pub cgroup: bool,
    /// Send the command's stdout to kurabe's stderr (stdout carries the report).
    pub stdout_to_stderr: bool,
}

/// Sampling settings of a session.
#[derive(Debug, Clone, Copy)]
pub struct SessionConfig {
    /// Time between samples.
    pub interval: Duration,
    /// Stop after this long (a started command is then killed with its tree).
    pub duration: Option<Duration>,
    /// Share of one core the sampler may spend reading `smaps_rollup`.
    pub pss_budget: f64,
}

/// A running watch: the target resolved, the command (if any) started.
#[derive(Debug)]
pub struct WatchSession {
    cfg: SessionConfig,
    pid: u32,
    port: Option<u16>,
    command: Option<Vec<String>>,
    cgroup: Option<RunCgroup>,
    child: Option<Started>,
    sampler: TreeSampler,
    rec: Recorder,
    start: Instant,
    started_at: String,
    notes: Vec<String>,
}

impl WatchSession {
    /// Resolve `target` (starting the command) and take the first sample.
    pub fn start(target: &WatchTarget, cfg: SessionConfig) -> Result<Self> {
        let started_at = host::now_rfc3339();
        let mut notes = Vec::new();
        let Resolved {
            pid,
            port,
            command,
            child,
            cgroup,
        } = Resolved::of(target, &mut notes)?;
        let start = Instant::now();
        let config = SamplerConfig {
            interval: cfg.interval,
            pss_budget: cfg.pss_budget,
            count_from_root_start: child.is_some(),
            counters: true,
        };
        let sampler =
            TreeSampler::with_config(pid, config, cgroup.as_ref().map(RunCgroup::reader))?;
        Ok(Self {
            cfg,
            pid,
            port,
            rec: Recorder::new(pid, start, child.is_some()),
            command,
            cgroup,
            child,
            sampler,
            start,
            started_at,
            notes,
        })
    }

    /// PID of the watched tree's root.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sample until the root exits, `duration` passes or `stop` is set; then
    /// stop the command (if started) and return the report. `on_sample` sees
    /// every regular sample with the time since the start.
    pub fn run(
        mut self,
        stop: &Arc<Stop>,
        on_sample: &mut dyn FnMut(&Sample, Duration),
    ) -> WatchReport {
        // Wakes the loop at the stop, or at once when a started command
        // exits (a thread blocked on its pidfd), so nothing polls for the exit.
        let wake = stop.child();
        let unwatched = match &self.child {
            Some(c) => !wake_on_exit(c.pid(), wake.clone()),
            None => false,
        };
        let ended = self.sample_until(stop, &wake, unwatched, on_sample);
        let end = Instant::now();
        let stop_signal = (ended == WatchEnd::Interrupted)
            .then(|| stop.signal())
            .flatten();
        self.finish(ended, end, stop_signal)
    }

    /// The sampling loop; returns why it ended. It waits on `wake`: the
    /// stop, or the started command's exit (`unwatched`: no thread could be
    /// made to watch for the exit, so it is looked for every EXIT_POLL).
    fn sample_until(
        &mut self,
        stop: &Stop,
        wake: &Stop,
        unwatched: bool,
        on_sample: &mut dyn FnMut(&Sample, Duration),
    ) -> WatchEnd {
        let interval = self.cfg.interval;
        let end = self.cfg.duration.map(|d| self.start + d);
        // A started command is sampled from its start: its first sample is real CPU.
        let mut next = if self.child.is_some() {
            self.start + interval
        } else {
            self.start
        };
        loop {
            let now = Instant::now();
            if let Some(ended) = self.ended(stop, end, now) {
                return ended;
            }
            if now >= next {
                if !self.regular_sample(on_sample) {
                    return WatchEnd::Exited;
                }
                // From the end of the sample, which a starved thread may finish late.
                next = crate::watch::next_tick(next, interval, Instant::now());
                continue;
            }
            // A timed wait that paces the samples; the stop or the exit cut it short.
            let mut at = end.map_or(next, |e| next.min(e));
            if unwatched {
                at = at.min(now + EXIT_POLL);
            }
            wake.wait_until(at);
        }
    }

    /// Why the session ends now, if it does: interrupted, the command
    /// exited, or the duration is over (the last two take a closing sample).
    fn ended(&mut self, stop: &Stop, end: Option<Instant>, now: Instant) -> Option<WatchEnd> {
        if stop.is_set() {
            return Some(WatchEnd::Interrupted);
        }
        // The root is a zombie until reaped: its final CPU counters are still readable.
        let ended = if self.child.as_ref().is_some_and(Started::has_exited) {
            WatchEnd::Exited
        } else if end.is_some_and(|e| now >= e) {
            WatchEnd::Duration
        } else {
            return None;
        };
        self.last_sample();
        Some(ended)
    }

    /// One sample on the interval; false when the tree is gone. A sample
    /// that cannot be taken now (out of descriptors) is counted and skipped.
    fn regular_sample(&mut self, on_sample: &mut dyn FnMut(&Sample, Duration)) -> bool {
        let s = match self.sampler.sample() {
            Ok(s) => s,
            Err(ProbeError::NoSuchProcess(_)) => return false,
            Err(e) => {
                self.rec.skip(&e);
                return true;
            }
        };
        self.rec.push(&s);
        on_sample(
            &s,
            s.at.unwrap_or_else(Instant::now).duration_since(self.start),
        );
        self.child.is_some() || s.root_alive
    }

    /// A closing sample (errors ignored: the tree may be gone).
    fn last_sample(&mut self) {
        if let Ok(s) = self.sampler.sample() {
            self.rec.push(&s);
        }
    }

    /// Stop the command and its cgroup and build the report.
    fn finish(mut self, ended: WatchEnd, end: Instant, stop_signal: Option<i32>) -> WatchReport {
        let (exit, rusage_cpu) = match self.child.as_mut() {
            Some(c) => {
                let (status, cpu) = c.terminate(TERMINATE_GRACE);
                (Some(status), Some(cpu))
            }
            None => (None, None),
        };
        let reader = self.cgroup.as_ref().map(RunCgroup::reader);
        // Read before cleanup: the counters go with the directory.
        let oom_kills = reader.as_ref().and_then(|r| r.oom_kills());
        let limits = self.limits_applied();
        let rec = std::mem::replace(&mut self.rec, Recorder::new(self.pid, self.start, false));
        let summary = rec.finish(end, &self.sampler);
        if let Some(mut cg) = self.cgroup.take() {
            if let Err(e) = cg.cleanup() {
                self.notes.push(format!("cgroup cleanup failed: {e}"));
            }
        }
        let outcome = Outcome {
            ended,
            exit,
            rusage_cpu,
            oom_kills,
            stop_signal,
            limits,
        };
        self.report(summary, outcome)
    }

    /// The limits the command ran under, if any were asked for.
    fn limits_applied(&self) -> Option<LimitsApplied> {
        let cg = self.cgroup.as_ref()?;
        let l = cg.limits().clone();
        (!l.is_empty()).then(|| LimitsApplied {
            cpus: l.cpus,
            cpuset: l.cpuset,
            memory_bytes: l.memory_bytes,
            cgroup_version: cg.version(),
        })
    }

    /// Fold the summary and the outcome into the report model.
    fn report(mut self, w: WatchSummary, o: Outcome) -> WatchReport {
        let (cpu_seconds, cpu_source) = headline_cpu(&w.tree, o.rusage_cpu);
        self.add_notes(&w, o.ended);
        let s = w.tree;
        let duration_s = s.duration_s;
        let ncpus = procfs::online_cpus();
        let cpu_percent_mean = if duration_s > 0.0 {
            cpu_seconds / duration_s * 100.0
        } else {
            0.0
        };
        WatchReport {
            schema_version: kurabe_model::SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: self.started_at,
            host: host::host_facts(),
            command: self.command,
            pid: self.pid,
            port: self.port,
            duration_s,
            interval_s: self.cfg.interval.as_secs_f64(),
            samples: s.samples,
            ncpus,
            cpu_seconds,
            cpu_source,
            cpu_seconds_proc: s.cpu_seconds_proc,
            cpu_percent_mean,
            cpu_percent_p95: w.cpu_percent_p95,
            cpu_percent_max: s.cpu_percent_max,
            cpu_share_of_all_cores_percent: cpu_percent_mean / f64::from(ncpus.max(1)),
            pss_available: !w.pss_unreadable,
            pss_mean_bytes: s.pss_mean_bytes,
            pss_peak_bytes: s.pss_peak_bytes,
            rss_peak_bytes: s.rss_peak_bytes,
            rss_overcounts: s.rss_overcounts(),
            uss_peak_bytes: s.uss_peak_bytes,
            root_hwm_bytes: w.root_hwm_bytes,
            cgroup_memory_peak_bytes: w.cgroup_memory_peak_bytes,
            processes_max: s.processes_max,
            threads_max: s.threads_max,
            counters: s.counters,
            limits: o.limits,
            exit: o.exit,
            oom_kills: o.oom_kills,
            ended: o.ended,
            stop_signal: o.stop_signal,
            notes: self.notes,
            sampler: w.cost,
            series: s.series,
        }
    }

    /// Notes the reader should see next to the figures.
    fn add_notes(&mut self, s: &WatchSummary, ended: WatchEnd) {
        if ended == WatchEnd::Exited && self.command.is_none() {
            self.notes.push(format!(
                "PID {} exited during the watch; figures cover what was seen until then",
                self.pid
            ));
        }
        if s.pss_unreadable {
            self.notes.push("some processes' smaps_rollup was not readable (permission): their RSS stands in for PSS and USS".into());
        }
        if let Some(note) = s.skipped_note() {
            self.notes.push(note);
        }
    }
}

/// How the session ended, gathered before the report is built.
struct Outcome {
    ended: WatchEnd,
    exit: Option<ExitStatus>,
    rusage_cpu: Option<f64>,
    oom_kills: Option<u64>,
    stop_signal: Option<i32>,
    limits: Option<LimitsApplied>,
}

/// The most trustworthy CPU seconds: cgroup counter, then rusage, then /proc.
fn headline_cpu(s: &TreeDetail, rusage_cpu: Option<f64>) -> (f64, CpuSource) {
    match (s.cpu_seconds_cgroup, rusage_cpu) {
        (Some(c), _) => (c, CpuSource::Cgroup),
        (None, Some(r)) => (r, CpuSource::Rusage),
        (None, None) => (s.cpu_seconds_proc, CpuSource::Proc),
    }
}

/// Trigger `wake` when process `pid` exits, from a thread that blocks on
/// its pidfd. The thread ends with the process, which the session always
/// ends (it terminates a started command before it returns). False when
/// no thread could be made.
fn wake_on_exit(pid: u32, wake: Arc<Stop>) -> bool {
    std::thread::Builder::new()
        .name("kurabe-exit".into())
        .spawn(move || {
            let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
            while !crate::exitwait::wait_exited(&[pid], far) {}
            wake.trigger(None);
        })
        .is_ok()
}

/// What a [`WatchTarget`] resolved to.
struct Resolved {
    pid: u32,
    port: Option<u16>,
    command: Option<Vec<String>>,
    child: Option<Started>,
    cgroup: Option<RunCgroup>,
}

impl Resolved {
    /// Find the process, or start the command (notes say what was missing).
    fn of(target: &WatchTarget, notes: &mut Vec<String>) -> Result<Self> {
        let only = |pid, port| Resolved {
            pid,
            port,
            command: None,
            child: None,
            cgroup: None,
        };
        Ok(match target {
            WatchTarget::Pid(p) => only(existing_pid(*p)?, None),
            WatchTarget::Port(port) => only(crate::require_listener(*port)?, Some(*port)),
            WatchTarget::Command(spec) => {
                let (child, cgroup) = launch_command(spec, notes)?;
                Resolved {
                    pid: child.pid(),
                    port: None,
                    command: Some(spec.argv.clone()),
                    child: Some(child),
                    cgroup,
                }
            }
        })
    }
}

/// `pid` if such a process exists.
fn existing_pid(pid: u32) -> Result<u32> {
    if pid == 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
        return Err(ProbeError::NoSuchProcess(pid));
    }
    Ok(pid)
}

/// The command's private cgroup, if it asked for one; without limits a
/// cgroup that cannot be made is a note, with limits an error.
fn private_cgroup(spec: &CommandSpec, notes: &mut Vec<String>) -> Result<Option<RunCgroup>> {
    if !spec.cgroup {
        return Ok(None);
    }
    match RunCgroup::create(&spec.limits) {
        Ok(cg) => Ok(Some(cg)),
        Err(e) if spec.limits.is_empty() => {
            notes.push(format!(
                "no private cgroup ({e}); CPU comes from /proc and rusage, double-forked processes are not seen"
            ));
            Ok(None)
        }
        Err(e) => Err(ProbeError::Limits(e)),
    }
}

/// Start the command, in its private cgroup when one can be made.
fn launch_command(
    spec: &CommandSpec,
    notes: &mut Vec<String>,
) -> Result<(Started, Option<RunCgroup>)> {
    let cgroup = private_cgroup(spec, notes)?;
    let program = spec.argv.first().cloned().unwrap_or_default();
    let mut cmd = Command::new(&program);
    cmd.args(spec.argv.iter().skip(1));
    if spec.stdout_to_stderr {
        let err = std::io::stderr().as_fd().try_clone_to_owned();
        let err = err.map_err(|source| ProbeError::Spawn {
            program: program.clone(),
            source,
        })?;
        cmd.stdout(Stdio::from(err));
    }
    let child = launch::spawn(&mut cmd, cgroup.as_ref())
        .map_err(|source| ProbeError::Spawn { program, source })?;
    Ok((child, cgroup))
}
