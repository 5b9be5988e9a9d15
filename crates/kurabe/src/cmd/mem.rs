//! `kurabe mem`: system memory the way `free` shows it, in every procps
//! generation's meaning of "used", plus the top processes by PSS.
//!
//! The numbers and formulas live in `kurabe_probe::meminfo` (with the procps
//! version boundaries); this file parses free-style unit flags, renders the
//! current procps layout plus the legacy lines, or the JSON record.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use kurabe_model::probe::MemReport;
use kurabe_probe::MemInfo;

use super::watch::{mib, write_output};

/// Output format of `kurabe mem`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `free`'s layout plus the legacy lines and the top processes.
    Text,
    /// The versioned JSON record.
    Json,
}

/// Arguments of `kurabe mem`.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    #[command(flatten)]
    pub save: super::save::SaveArgs,
    /// Show amounts in bytes.
    #[arg(short = 'b', long, group = "unit")]
    pub bytes: bool,
    /// Show amounts in kibibytes (the default, like free).
    #[arg(short = 'k', long, group = "unit")]
    pub kibi: bool,
    /// Show amounts in mebibytes.
    #[arg(short = 'm', long, group = "unit")]
    pub mebi: bool,
    /// Show amounts in gibibytes.
    #[arg(short = 'g', long, group = "unit")]
    pub gibi: bool,
    /// Show amounts human-readable (B, Ki, Mi, Gi, Ti), like free -h.
    #[arg(short = 'h', long, group = "unit")]
    pub human: bool,
    /// Use powers of 1000 instead of 1024 (kB, MB, GB), like free --si.
    #[arg(long)]
    pub si: bool,
    /// How many processes to list by PSS (0 = none).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the output to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

/// Run `kurabe mem`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let m = MemInfo::read()?;
    let host = kurabe_probe::host::host_facts();
    let time = kurabe_probe::host::now_rfc3339();
    let (top, unreadable) = if args.top > 0 {
        kurabe_probe::top_by_pss(args.top)
    } else {
        (Vec::new(), 0)
    };
    let report = MemReport {
        schema_version: kurabe_model::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        host: host.hostname,
        kernel: host.kernel,
        arch: host.arch,
        time,
        total_bytes: m.total,
        free_bytes: m.free,
        available_bytes: m.available,
        buffers_bytes: m.buffers,
        cached_bytes: m.cached,
        sreclaimable_bytes: m.sreclaimable,
        buff_cache_bytes: m.buff_cache(),
        shared_bytes: m.shared,
        used_bytes: m.used(),
        used_legacy_bytes: m.used_legacy(),
        used_minus_buffers_cache_bytes: m.used_minus_buffers_cache(),
        swap_total_bytes: m.swap_total,
        swap_free_bytes: m.swap_free,
        swap_used_bytes: m.swap_used(),
        top_processes: top,
        processes_unreadable: unreadable,
    };
    let body = match args.format {
        Format::Json => serde_json::to_string_pretty(&report)? + "\n",
        Format::Text => render_text(&report, &m, unit(&args)),
    };
    write_output(args.output.as_deref(), &body)?;
    args.save.save_if_asked(
        kurabe_model::record::ResultKind::Mem,
        &format!("mem {} {}", report.host, report.arch),
        &report,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Display unit chosen by the flags.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    /// Divide by this many bytes, print an integer.
    Fixed(u64),
    /// Human-readable with this base (1024 or 1000).
    Human(u64),
}

fn unit(a: &Args) -> Unit {
    let base = if a.si { 1000 } else { 1024 };
    if a.human {
        Unit::Human(base)
    } else if a.bytes {
        Unit::Fixed(1)
    } else if a.mebi {
        Unit::Fixed(base * base)
    } else if a.gibi {
        Unit::Fixed(base * base * base)
    } else {
        Unit::Fixed(base)
    }
}

/// One amount the way free prints it (integer division, or `-h` style).
fn scale(bytes: u64, u: Unit) -> String {
    match u {
        Unit::Fixed(d) => (bytes / d).to_string(),
        Unit::Human(base) => {
            let suffixes: &[&str] = if base == 1024 {
                &["B", "Ki", "Mi", "Gi", "Ti", "Pi"]
            } else {
                &["B", "k", "M", "G", "T", "P"]
            };
            if bytes < base {
                return format!("{bytes}B");
            }
            let mut v = bytes as f64;
            let mut i = 0;
            while v >= base as f64 && i + 1 < suffixes.len() {
                v /= base as f64;
                i += 1;
            }
            // free prints one decimal below 10 and truncates above.
            if v < 10.0 {
                format!("{v:.1}{}", suffixes[i])
            } else {
                format!("{}{}", v.trunc(), suffixes[i])
            }
        }
    }
}

/// free's layout (procps 4.x) plus the legacy "used" lines and the top list.
fn render_text(r: &MemReport, m: &MemInfo, u: Unit) -> String {
    let s = |b: u64| scale(b, u);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "", "total", "used", "free", "shared", "buff/cache", "available"
    );
    let _ = writeln!(
        o,
        "{:8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "Mem:",
        s(r.total_bytes),
        s(r.used_bytes),
        s(r.free_bytes),
        s(r.shared_bytes),
        s(r.buff_cache_bytes),
        s(r.available_bytes)
    );
    let _ = writeln!(
        o,
        "{:8} {:>11} {:>11} {:>11}",
        "Swap:",
        s(r.swap_total_bytes),
        s(r.swap_used_bytes),
        s(r.swap_free_bytes)
    );
    let _ = writeln!(o);
    let _ = writeln!(o, "\"used\" in older procps (same snapshot):");
    let _ = writeln!(
        o,
        "  procps ≥ 4.0.1         total − available                        {:>11}",
        s(r.used_bytes)
    );
    let _ = writeln!(
        o,
        "  procps 3.3.12–4.0.0    total − free − buffers − cache(+SRecl.)  {:>11}",
        s(r.used_legacy_bytes)
    );
    let _ = writeln!(
        o,
        "  procps ≤ 3.3.9         -/+ buffers/cache: used {:>11}  free {:>11}",
        s(r.used_minus_buffers_cache_bytes),
        s(m.free_plus_buffers_cache())
    );
    if !r.top_processes.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Top {} processes by PSS:\n{:>8} {:>12} {:>12} {:>12}  command",
            r.top_processes.len(),
            "pid",
            "PSS",
            "RSS",
            "USS"
        );
        for p in &r.top_processes {
            let cmd = if p.command.is_empty() {
                &p.name
            } else {
                &p.command
            };
            let cmd: String = cmd.chars().take(60).collect();
            let _ = writeln!(
                o,
                "{:>8} {:>12} {:>12} {:>12}  {cmd}",
                p.pid,
                mib(p.pss_bytes),
                mib(p.rss_bytes),
                mib(p.uss_bytes)
            );
        }
    }
    if r.processes_unreadable > 0 {
        let _ = writeln!(
            o,
            "({} processes of other users not readable; run as root to include them)",
            r.processes_unreadable
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_like_free() {
        assert_eq!(scale(25_276_510_208, Unit::Fixed(1024)), "24684092");
        assert_eq!(scale(25_276_510_208, Unit::Human(1024)), "23Gi");
        assert_eq!(scale(9_072_640, Unit::Human(1024)), "8.7Mi");
        assert_eq!(scale(2_673_872_896, Unit::Human(1024)), "2.5Gi");
        assert_eq!(scale(725_790_720, Unit::Human(1024)), "692Mi");
        assert_eq!(scale(0, Unit::Human(1024)), "0B");
        assert_eq!(scale(3_000_000, Unit::Fixed(1000 * 1000)), "3");
    }
}
