//! `kurabe mem`'s text: system memory in `free`'s layout (procps 4.x),
//! the "used" of older procps generations, and the top processes by PSS.
//! JSON is [`crate::Json`].

use std::fmt::Write as _;
use std::io::{self, Write};

use kurabe_model::probe::MemReport;

use crate::escape::terminal;
use crate::words::mib;
use crate::Render;

/// `free`-style text renderer of a [`MemReport`].
pub struct Free {
    /// How amounts are shown.
    pub unit: FreeUnit,
}

/// How `free` shows amounts (its `-b/-k/-m/-g/-h/--si` flags).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FreeUnit {
    /// Divide by this many bytes, print an integer.
    Fixed(u64),
    /// Human-readable with this base (1024 or 1000).
    Human(u64),
}

/// free's unit flags as given: `-b`, `-m`, `-g`, `-h`, `--si` (`-k` is the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FreeFlags {
    /// `-b`: bytes.
    pub bytes: bool,
    /// `-m`: mebibytes.
    pub mebi: bool,
    /// `-g`: gibibytes.
    pub gibi: bool,
    /// `-h`: human-readable.
    pub human: bool,
    /// `--si`: powers of 1000 instead of 1024.
    pub si: bool,
}

impl FreeFlags {
    /// The unit the flags choose (`-h` first, then `-b`, `-m`, `-g`; else KiB), as free does.
    pub fn unit(self) -> FreeUnit {
        let base = if self.si { 1000 } else { 1024 };
        if self.human {
            FreeUnit::Human(base)
        } else if self.bytes {
            FreeUnit::Fixed(1)
        } else if self.mebi {
            FreeUnit::Fixed(base * base)
        } else if self.gibi {
            FreeUnit::Fixed(base * base * base)
        } else {
            FreeUnit::Fixed(base)
        }
    }
}

impl Render<MemReport> for Free {
    fn render(&self, r: &MemReport, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(free(r, self.unit).as_bytes())
    }
}

/// One amount the way free prints it (integer division, or `-h` style).
fn scale(bytes: u64, u: FreeUnit) -> String {
    match u {
        FreeUnit::Fixed(d) => (bytes / d).to_string(),
        FreeUnit::Human(base) => {
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
fn free(r: &MemReport, u: FreeUnit) -> String {
    let s = |b: u64| scale(b, u);
    let mut o = String::new();
    free_table(r, &s, &mut o);
    legacy_used(r, &s, &mut o);
    top_processes(r, &mut o);
    if r.processes_unreadable > 0 {
        let _ = writeln!(
            o,
            "({} processes of other users not readable; run as root to include them)",
            r.processes_unreadable
        );
    }
    o
}

/// free's own table: memory and swap.
fn free_table(r: &MemReport, s: &dyn Fn(u64) -> String, o: &mut String) {
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
}

/// What older procps called "used", from the same snapshot.
fn legacy_used(r: &MemReport, s: &dyn Fn(u64) -> String, o: &mut String) {
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
        s(r.free_bytes + r.buffers_bytes + r.cached_bytes)
    );
}

/// The processes with the most PSS, when the report lists any.
fn top_processes(r: &MemReport, o: &mut String) {
    if r.top_processes.is_empty() {
        return;
    }
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
        // Kernel threads have no command line: their name stands in.
        let cmd = Some(&p.command)
            .filter(|c| !c.is_empty())
            .unwrap_or(&p.name);
        // 49 columns of figures before it: the line stays within 100.
        let cmd: String = terminal(cmd).chars().take(51).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{to_string, Json};

    #[test]
    fn free_flags_pick_the_unit_as_free_does() {
        let f = |human, bytes, gibi, si| {
            FreeFlags {
                human,
                bytes,
                gibi,
                si,
                mebi: false,
            }
            .unit()
        };
        assert_eq!(f(false, false, false, false), FreeUnit::Fixed(1024));
        assert_eq!(f(true, true, false, true), FreeUnit::Human(1000));
        assert_eq!(f(false, true, true, false), FreeUnit::Fixed(1));
        assert_eq!(f(false, false, true, true), FreeUnit::Fixed(1_000_000_000));
    }

    /// Snapshots over the fixture (`testdata/mem.json`).
    #[test]
    fn snapshots() {
        let r = crate::fixtures::mem();
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("snapshots");
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| {
            insta::assert_snapshot!(
                "mem_text_kibi",
                to_string(
                    &Free {
                        unit: FreeUnit::Fixed(1024)
                    },
                    &r
                )
            );
            insta::assert_snapshot!(
                "mem_text_human",
                to_string(
                    &Free {
                        unit: FreeUnit::Human(1024)
                    },
                    &r
                )
            );
            insta::assert_snapshot!("mem_json", to_string(&Json, &r));
        });
    }

    #[test]
    fn scales_like_free() {
        assert_eq!(scale(25_276_510_208, FreeUnit::Fixed(1024)), "24684092");
        assert_eq!(scale(25_276_510_208, FreeUnit::Human(1024)), "23Gi");
        assert_eq!(scale(9_072_640, FreeUnit::Human(1024)), "8.7Mi");
        assert_eq!(scale(2_673_872_896, FreeUnit::Human(1024)), "2.5Gi");
        assert_eq!(scale(725_790_720, FreeUnit::Human(1024)), "692Mi");
        assert_eq!(scale(0, FreeUnit::Human(1024)), "0B");
        assert_eq!(scale(3_000_000, FreeUnit::Fixed(1000 * 1000)), "3");
    }
}
