//! The text summary of a [`WatchReport`]: CPU, memory, processes, limits,
//! how the command ended and what the sampler cost.

use std::fmt::Write as _;
use std::io::{self, Write};

use kurabe_model::probe::{CpuSource, LimitsApplied, WatchEnd, WatchReport};

use crate::escape::terminal;
use crate::terminal::WIDTH;
use crate::words::{mib, wrap};
use crate::{Render, Terminal};

impl Render<WatchReport> for Terminal {
    fn render(&self, r: &WatchReport, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(summary(r).as_bytes())
    }
}

/// The text summary.
fn summary(r: &WatchReport) -> String {
    let mut o = String::new();
    let what = match (&r.command, r.port) {
        (Some(cmd), _) => format!("{} (pid {})", terminal(&cmd.join(" ")), r.pid),
        (None, Some(port)) => format!("port {port} → pid {}", r.pid),
        (None, None) => format!("pid {}", r.pid),
    };
    let _ = writeln!(
        o,
        "kurabe watch: {what}\n  {:.2} s, {} samples every {:.2} s",
        r.duration_s, r.samples, r.interval_s
    );
    cpu(r, &mut o);
    memory(r, &mut o);
    limits_and_end(r, &mut o);
    let _ = writeln!(
        o,
        "  sampler    {:.2} % of one core, {:.1} µs per process per sample",
        r.sampler.cpu_percent, r.sampler.us_per_process_sample
    );
    for n in &r.notes {
        let note = wrap(&format!("note: {}", terminal(n)), WIDTH - 8);
        let _ = writeln!(o, "  {}", note.replace('\n', "\n        "));
    }
    o
}

/// CPU percent (mean, p95, max) and CPU time, with where it was read.
fn cpu(r: &WatchReport, o: &mut String) {
    let _ = writeln!(
        o,
        "  CPU        mean {:.1} %   p95 {:.1} %   max {:.1} %   (100 % = one core; {:.1} % of all {} cores)",
        r.cpu_percent_mean, r.cpu_percent_p95, r.cpu_percent_max, r.cpu_share_of_all_cores_percent, r.ncpus
    );
    let source = match r.cpu_source {
        CpuSource::Cgroup => "the run's cgroup counter",
        CpuSource::Rusage => "the kernel's rusage of the command",
        CpuSource::Proc => "/proc utime+stime of the tree",
    };
    let _ = writeln!(
        o,
        "  CPU time   {:.3} s   (from {source}; /proc sampling says {:.3} s)",
        r.cpu_seconds, r.cpu_seconds_proc
    );
}

/// Σ PSS, Σ RSS, Σ USS, the cgroup peak, processes and threads.
fn memory(r: &WatchReport, o: &mut String) {
    let pss_note = if r.pss_available {
        ""
    } else {
        "   (RSS stands in where PSS was unreadable)"
    };
    let rss_note = if r.rss_overcounts {
        "   over-counts pages the processes share; Σ PSS is the footprint"
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "  Σ PSS      mean {}   peak {}{pss_note}",
        mib(r.pss_mean_bytes),
        mib(r.pss_peak_bytes),
    );
    let _ = writeln!(o, "  Σ RSS      peak {}{rss_note}", mib(r.rss_peak_bytes));
    let _ = writeln!(o, "  Σ USS      peak {}", mib(r.uss_peak_bytes));
    if let Some(p) = r.cgroup_memory_peak_bytes {
        let _ = writeln!(
            o,
            "  cgroup     memory peak {} (page cache included)",
            mib(p)
        );
    }
    let (processes, threads) = (r.processes_max, r.threads_max);
    let _ = writeln!(o, "  processes  max {processes}, threads max {threads}");
    if !r.counters.is_empty() {
        let line = wrap(&crate::words::counters_line(&r.counters), WIDTH - 13);
        let _ = writeln!(o, "  counters   {}", line.replace('\n', "\n             "));
    }
}

/// The limits applied and how the command ended.
fn limits_and_end(r: &WatchReport, o: &mut String) {
    if let Some(l) = &r.limits {
        let _ = writeln!(
            o,
            "  limits     {} (cgroup v{})",
            limits_text(l),
            l.cgroup_version
        );
    }
    if let Some(e) = r.exit {
        let how = match (e.code, e.signal) {
            _ if r.oom_killed() => oom_text(r),
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            _ => "unknown".into(),
        };
        let why = match r.ended {
            WatchEnd::Exited => "exited".to_string(),
            WatchEnd::Duration => "stopped at --duration".to_string(),
            WatchEnd::Interrupted => format!("stopped by {}", signal_name(r.stop_signal)),
        };
        let _ = writeln!(o, "  command    {why}, {how}");
    }
}

/// `cpus 0.5, cpuset 0-1, memory 512 MiB`: the limits that were set.
fn limits_text(l: &LimitsApplied) -> String {
    let mut parts = Vec::new();
    if let Some(c) = l.cpus {
        parts.push(format!("cpus {c}"));
    }
    if let Some(c) = &l.cpuset {
        parts.push(format!("cpuset {c}"));
    }
    if let Some(m) = l.memory_bytes {
        parts.push(format!("memory {}", mib(m)));
    }
    parts.join(", ")
}

/// "OOM-killed at the 20 MiB limit" (the limit when one was set).
fn oom_text(r: &WatchReport) -> String {
    kurabe_model::probe::oom_killed_text(r.limits.as_ref().and_then(|l| l.memory_bytes))
}

// Linux signal numbers (x86, arm, riscv alike): no libc in a renderer.
const SIGHUP: i32 = 1;
const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// How a stop signal reads: Ctrl-C only for SIGINT.
fn signal_name(signal: Option<i32>) -> String {
    match signal {
        Some(SIGINT) | None => "Ctrl-C (SIGINT)".into(),
        Some(SIGTERM) => "SIGTERM".into(),
        Some(SIGHUP) => "SIGHUP".into(),
        Some(s) => format!("signal {s}"),
    }
}
