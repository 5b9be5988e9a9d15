//! `kurabe watch`: CPU and memory of a process tree over time.
//!
//! The tree is a PID (`-p`), the server behind a TCP port (`--port`), or a
//! command kurabe starts (`-- CMD ARGS`, optionally under cgroup limits). The
//! session (sampling loop, cgroup, the child's lifetime) is
//! `kurabe_probe::WatchSession`; this file turns flags into its config, shows
//! the live line, renders the report as text, JSON, CSV or an SVG chart and
//! picks the exit status: the command's own (128 + signal when killed), or
//! 128 + signal when kurabe was stopped by SIGINT/SIGTERM/SIGHUP. A started
//! command dies with the watch: its process group, its descendants and its
//! cgroup are killed at the end, and with kurabe itself (`PR_SET_PDEATHSIG`).

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use kurabe_model::plan::{parse_duration, parse_size};
use kurabe_model::probe::{CpuSource, WatchEnd, WatchReport};
use kurabe_probe::cgroup::Limits;
use kurabe_probe::{CommandSpec, SessionConfig, WatchSession, WatchTarget};

/// Output format of `kurabe watch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable summary.
    Text,
    /// The full report (summary and series) as JSON.
    Json,
    /// The time series, one row per sample.
    Csv,
}

/// Arguments of `kurabe watch`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["pid", "port", "command"])))]
#[command(after_help = "\
Exit status with -- CMD: CMD's own (128 + the signal when a signal killed it), as /usr/bin/time \
passes it on (137 after an OOM kill at --memory); 0 when --duration ended it. Watching a PID or \
port: 0 when it exited or --duration ended. Stopped by a signal: 128 + the signal (130 Ctrl-C, \
143 SIGTERM, 129 SIGHUP), after the command's tree and cgroup are killed.")]
pub struct Args {
    #[command(flatten)]
    pub save: super::save::SaveArgs,
    /// Watch this process and all its descendants.
    #[arg(short = 'p', long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Watch the process listening on this TCP port (IPv4 or IPv6) and its descendants.
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Time between samples ("0.5" seconds, "500ms", "2s").
    #[arg(short, long, default_value = "0.5", value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Duration,
    /// Stop after this long ("30" seconds, "2s", "1m30s"; a started command is then killed with its tree).
    #[arg(short, long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// CPU quota for the started command in cores, e.g. 0.5 (cgroup CFS quota).
    #[arg(long, value_name = "CORES")]
    pub cpus: Option<f64>,
    /// CPUs the started command may run on, e.g. 0 or 0-1 (cgroup cpuset).
    #[arg(long, value_name = "LIST")]
    pub cpuset: Option<String>,
    /// Memory limit for the started command (cgroup): 512M or 512MiB = 512 × 2²⁰ bytes, 500MB = 500 × 10⁶, as in plans.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,
    /// Output format: text summary, JSON report, or CSV time series.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the output to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also draw CPU and memory over time as an SVG chart into this file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Do not give the started command a private cgroup (CPU from /proc and rusage only).
    #[arg(long, hide = true)]
    pub no_cgroup: bool,
    /// Share of one core the sampler may spend reading smaps_rollup (PSS).
    #[arg(long, hide = true, default_value_t = 0.004)]
    pub pss_budget: f64,
    /// The command to start and watch (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Run `kurabe watch`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cfg = session_config(&args)?;
    let target = resolve(&args)?;
    super::check_outputs(&[
        ("-o", args.output.as_deref()),
        ("--svg", args.svg.as_deref()),
    ])?;
    let stop = crate::signal::install_stop()?;
    let session = WatchSession::start(&target, cfg)?;
    let live = std::io::stderr().is_terminal();
    let report = session.run(&stop, &mut |s, t| {
        if live {
            live_line(s, t);
        }
    });
    if live {
        eprint!("\r\x1b[K");
    }
    write_report(&args, &report)?;
    Ok(exit_code(&report))
}

/// The exit status of a watch: 128 + signal when a signal stopped it, the
/// command's own status when it exited by itself, else 0.
fn exit_code(report: &WatchReport) -> ExitCode {
    match report.ended {
        WatchEnd::Interrupted => ExitCode::from(crate::signal::status_for(report.stop_signal)),
        WatchEnd::Exited => {
            let status = report.exit.and_then(|e| e.shell_status()).unwrap_or(0);
            ExitCode::from(u8::try_from(status).unwrap_or(1))
        }
        WatchEnd::Duration => ExitCode::SUCCESS,
    }
}

/// Render the report to stdout or `-o`, the SVG to `--svg`, and save it if asked.
fn write_report(args: &Args, report: &WatchReport) -> anyhow::Result<()> {
    let body = match args.format {
        Format::Text => render_text(report),
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
        Format::Csv => render_csv(report),
    };
    write_output(args.output.as_deref(), &body)?;
    if let Some(path) = &args.svg {
        write_output(Some(path), &render_svg(report))?;
    }
    let label = match &report.command {
        Some(argv) => format!("watch {}", argv.join(" ")),
        None => format!("watch pid {}", report.pid),
    };
    args.save
        .save_if_asked(kurabe_model::record::ResultKind::Watch, &label, report)
}

/// `--interval`, `--duration`, `--pss-budget` → the session's sampling settings.
fn session_config(args: &Args) -> anyhow::Result<SessionConfig> {
    if !(0.0..=1.0).contains(&args.pss_budget) {
        bail!("--pss-budget must be between 0 and 1 (a share of one core)");
    }
    Ok(SessionConfig {
        interval: at_least_10ms("--interval", args.interval)?,
        duration: args
            .duration
            .map(|d| at_least_10ms("--duration", d))
            .transpose()?,
        pss_budget: args.pss_budget,
    })
}

/// `d` when it is at least 10 ms (sampling faster than that measures the sampler).
fn at_least_10ms(flag: &str, d: Duration) -> anyhow::Result<Duration> {
    if d < Duration::from_millis(10) {
        bail!("{flag} {d:?}: give at least 10ms");
    }
    Ok(d)
}

/// Flags → what to watch.
fn resolve(args: &Args) -> anyhow::Result<WatchTarget> {
    let limited = args.cpus.is_some() || args.cpuset.is_some() || args.memory.is_some();
    if limited && args.command.is_empty() {
        bail!("--cpus, --cpuset and --memory apply to a command kurabe starts: use `kurabe watch --cpus 0.5 -- CMD ARGS`");
    }
    if let Some(pid) = args.pid {
        return Ok(WatchTarget::Pid(pid));
    }
    if let Some(port) = args.port {
        return Ok(WatchTarget::Port(port));
    }
    let memory_bytes = args.memory;
    if memory_bytes.is_some_and(|m| m < 1 << 20) {
        bail!("--memory is too small for a process: give at least 1M");
    }
    if args.no_cgroup && limited {
        bail!("--cpus, --cpuset and --memory need a cgroup; drop --no-cgroup");
    }
    Ok(WatchTarget::Command(CommandSpec {
        argv: args.command.clone(),
        limits: Limits {
            cpus: args.cpus,
            cpuset: args.cpuset.clone(),
            memory_bytes,
        },
        cgroup: !args.no_cgroup,
        // stdout carries the report: the command's output goes to stderr.
        stdout_to_stderr: args.format != Format::Text && args.output.is_none(),
    }))
}

/// The live status line on a terminal; `t` is the time since the start.
fn live_line(s: &kurabe_probe::Sample, t: Duration) {
    eprint!(
        "\r\x1b[K{:7.1} s  {:4} procs  Σ PSS {}  Σ RSS {}",
        t.as_secs_f64(),
        s.processes,
        mib(s.pss_bytes),
        mib(s.rss_bytes)
    );
    let _ = std::io::stderr().flush();
}

/// Bytes as MiB with one decimal.
pub(crate) fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / 1048576.0)
}

/// Write `body` to `path` (through the one file writer) or to stdout.
pub(crate) fn write_output(path: Option<&Path>, body: &str) -> anyhow::Result<()> {
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(body.as_bytes())?;
            out.flush()?;
        }
        Some(p) => kurabe_report::write::write_file(p, body.as_bytes()).context("-o")?,
    }
    Ok(())
}

/// The text summary.
fn render_text(r: &WatchReport) -> String {
    let mut o = String::new();
    let what = match (&r.command, r.port) {
        (Some(cmd), _) => format!("{} (pid {})", cmd.join(" "), r.pid),
        (None, Some(port)) => format!("port {port} → pid {}", r.pid),
        (None, None) => format!("pid {}", r.pid),
    };
    let _ = writeln!(
        o,
        "kurabe watch: {what}\n  {:.2} s, {} samples every {:.2} s",
        r.duration_s, r.samples, r.interval_s
    );
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
    let _ = writeln!(
        o,
        "  Σ PSS      mean {}   peak {}{}",
        mib(r.pss_mean_bytes),
        mib(r.pss_peak_bytes),
        if r.pss_available {
            ""
        } else {
            "   (RSS stands in where PSS was unreadable)"
        }
    );
    let _ = writeln!(
        o,
        "  Σ RSS      peak {}{}",
        mib(r.rss_peak_bytes),
        if r.rss_overcounts {
            "   over-count: pages shared between the processes are counted once per process; Σ PSS is the footprint"
        } else {
            ""
        }
    );
    let _ = writeln!(o, "  Σ USS      peak {}", mib(r.uss_peak_bytes));
    if let Some(p) = r.cgroup_memory_peak_bytes {
        let _ = writeln!(
            o,
            "  cgroup     memory peak {} (page cache included)",
            mib(p)
        );
    }
    let _ = writeln!(
        o,
        "  processes  max {}, threads max {}",
        r.processes_max, r.threads_max
    );
    if let Some(l) = &r.limits {
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
        let _ = writeln!(
            o,
            "  limits     {} (cgroup v{})",
            parts.join(", "),
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
    let _ = writeln!(
        o,
        "  sampler    {:.2} % of one core, {:.1} µs per process per sample",
        r.sampler.cpu_percent, r.sampler.us_per_process_sample
    );
    for n in &r.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    o
}

/// "OOM-killed at the 20 MiB limit" (the limit when one was set).
fn oom_text(r: &WatchReport) -> String {
    match r.limits.as_ref().and_then(|l| l.memory_bytes) {
        Some(b) if b % 1048576 == 0 => format!("OOM-killed at the {} MiB limit", b / 1048576),
        Some(b) => format!("OOM-killed at the {} limit", mib(b)),
        None => "OOM-killed".into(),
    }
}

/// How a stop signal reads: Ctrl-C only for SIGINT.
fn signal_name(signal: Option<i32>) -> String {
    match signal {
        Some(libc::SIGINT) | None => "Ctrl-C (SIGINT)".into(),
        Some(libc::SIGTERM) => "SIGTERM".into(),
        Some(libc::SIGHUP) => "SIGHUP".into(),
        Some(s) => format!("signal {s}"),
    }
}

/// The time series as CSV.
fn render_csv(r: &WatchReport) -> String {
    let mut o = String::from(
        "t_s,cpu_percent,cpu_seconds,rss_bytes,pss_bytes,pss_anon_bytes,pss_file_bytes,pss_shmem_bytes,uss_bytes,swap_bytes,processes,threads\n",
    );
    for p in &r.series {
        let _ = writeln!(
            o,
            "{:.3},{:.2},{:.4},{},{},{},{},{},{},{},{},{}",
            p.t_s,
            p.cpu_percent,
            p.cpu_seconds,
            p.rss_bytes,
            p.pss_bytes,
            p.pss_anon_bytes,
            p.pss_file_bytes,
            p.pss_shmem_bytes,
            p.uss_bytes,
            p.swap_bytes,
            p.processes,
            p.threads
        );
    }
    o
}

/// CPU % and memory over time: two stacked line charts, hand-written SVG.
fn render_svg(r: &WatchReport) -> String {
    const W: f64 = 720.0;
    const H: f64 = 180.0;
    const LEFT: f64 = 70.0;
    const PAD: f64 = 30.0;
    let t_max = r
        .series
        .iter()
        .map(|p| p.t_s)
        .fold(r.duration_s, f64::max)
        .max(1e-3);
    let cpu_max = r.series.iter().map(|p| p.cpu_percent).fold(100.0, f64::max);
    let mem_max = r
        .series
        .iter()
        .map(|p| p.rss_bytes.max(p.pss_bytes) as f64 / 1048576.0)
        .fold(1.0, f64::max);
    let x = |t: f64| LEFT + t / t_max * (W - LEFT - PAD);
    let mut o = String::new();
    let total_h = 2.0 * (H + PAD) + PAD;
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{total_h}" viewBox="0 0 {W} {total_h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let mut panel = |top: f64, title: &str, max: f64, unit: &str, lines: &[(&str, Vec<f64>)]| {
        let y = |v: f64| top + H - v / max * H;
        let _ = writeln!(
            o,
            r##"<text x="{LEFT}" y="{:.1}" font-weight="bold">{}</text>"##,
            top - 8.0,
            xml(title)
        );
        let _ = writeln!(
            o,
            r##"<rect x="{LEFT}" y="{top}" width="{:.1}" height="{H}" fill="none" stroke="#999"/>"##,
            W - LEFT - PAD
        );
        for i in 0..=4 {
            let v = max * f64::from(i) / 4.0;
            let _ = writeln!(
                o,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{v:.0} {unit}</text><line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
                LEFT - 4.0,
                y(v) + 4.0,
                W - PAD,
                y(v),
                y(v)
            );
        }
        let _ = writeln!(
            o,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{t_max:.1} s</text>"##,
            W - PAD,
            top + H + 14.0
        );
        for (li, (color, vals)) in lines.iter().enumerate() {
            let pts: Vec<String> = r
                .series
                .iter()
                .zip(vals)
                .map(|(p, v)| format!("{:.1},{:.1}", x(p.t_s), y(*v)))
                .collect();
            let _ = writeln!(
                o,
                r##"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"##,
                pts.join(" ")
            );
            let _ = li;
        }
    };
    let cpu: Vec<f64> = r.series.iter().map(|p| p.cpu_percent).collect();
    panel(PAD, "CPU, % of one core", cpu_max, "%", &[("#1f77b4", cpu)]);
    let pss: Vec<f64> = r
        .series
        .iter()
        .map(|p| p.pss_bytes as f64 / 1048576.0)
        .collect();
    let rss: Vec<f64> = r
        .series
        .iter()
        .map(|p| p.rss_bytes as f64 / 1048576.0)
        .collect();
    panel(
        2.0 * PAD + H,
        "Memory: Σ PSS (orange), Σ RSS (grey, over-counts shared pages)",
        mem_max,
        "MiB",
        &[("#bbbbbb", rss), ("#ff7f0e", pss)],
    );
    o.push_str("</svg>\n");
    o
}

/// Escape text for XML.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
