//! Numbers and verdicts in words: value formatting per unit, short metric
//! labels, and the "1.18× [1.16, 1.20] faster" phrase.
//!
//! Shared by every text renderer so the terminal, Markdown, CSV and HTML say
//! exactly the same thing. Pure string building; no I/O.

use kurabe_model::experiment::Tone;
use kurabe_model::profile::ProfileOff;
use kurabe_model::stats::trend::difference_scale;
use kurabe_model::stats::{Comparison, Difference, Direction, NoIntervalReason, Unit, Verdict};
use kurabe_model::tree_counters::{Counter, Counts, HardwareOff, Unit as CounterUnit};

/// A value with its unit, scaled for reading (`39.0 MiB`, `850 µs`, `106.2/s`).
pub fn value(unit: Unit, v: f64) -> String {
    if !v.is_finite() {
        return "–".to_owned();
    }
    match unit {
        Unit::Bytes => bytes(v),
        Unit::PerSecond => format!("{}/s", num(v)),
        Unit::Microseconds if v.abs() >= 1e6 => format!("{} s", num(v / 1e6)),
        Unit::Microseconds if v.abs() >= 1e3 => format!("{} ms", num(v / 1e3)),
        Unit::Microseconds => format!("{} µs", num(v)),
        Unit::Milliseconds if v.abs() >= 1e4 => format!("{} s", num(v / 1e3)),
        // Below 1 ms in µs, as the microseconds case does, so 0.0095 ms and
        // 0.0103 ms read 9.50 µs and 10.3 µs, not both "0.010 ms".
        Unit::Milliseconds if v != 0.0 && v.abs() < 0.9995 => format!("{} µs", num(v * 1e3)),
        Unit::Milliseconds => format!("{} ms", num(v)),
        Unit::Seconds => format!("{} s", num(v)),
        Unit::Percent => format!("{} %", num(v)),
        Unit::Count if v == v.trunc() => format!("{v:.0}"),
        Unit::Count | Unit::Score => num(v),
    }
}

/// `kurabe watch`'s live status line: time since the start, processes,
/// Σ PSS and Σ RSS of the tree.
pub fn watch_live_line(t: std::time::Duration, processes: u32, pss: u64, rss: u64) -> String {
    format!(
        "{:7.1} s  {processes:4} procs  Σ PSS {}  Σ RSS {}",
        t.as_secs_f64(),
        mib(pss),
        mib(rss)
    )
}

/// `kurabe system`'s bar message: "2 x dhry2reg  pass 3/10" (`passes`
/// 0: the precision rule decides how many).
pub fn system_pass(copies: u32, test: &str, pass: u32, passes: u32) -> String {
    let of = if passes > 0 {
        format!("/{passes}")
    } else {
        String::new()
    };
    format!("{copies} x {test}  pass {pass}{of}")
}

/// `kurabe demo`'s opening lines: the built-in server and the load on it.
/// `http3`: the load speaks HTTP/3 (QUIC connections, which are kept
/// alive by nature).
pub fn demo_banner(
    url: &str,
    (threads, work_us): (usize, u64),
    (concurrency, http3): (u32, bool),
    duration: std::time::Duration,
) -> String {
    let threads = match threads {
        1 => "1 thread".to_owned(),
        n => format!("{n} threads"),
    };
    let conns = if http3 { "HTTP/3" } else { "keep-alive" };
    format!(
        "kurabe demo: built-in server on {url} ({threads}, {work_us} µs CPU per request);\n  \
         {concurrency} {conns} connections for {duration:?}"
    )
}

/// `kurabe demo`'s last report line: the server's own count of requests
/// served against the `sent` the client counted.
pub fn served_line(served: u64, sent: u64) -> String {
    let verdict = if served == sent { "match" } else { "MISMATCH" };
    format!("Server's own count:     {served} requests served ({verdict})\n")
}

/// Bytes as MiB with one decimal, whatever their size (`0.4 MiB`), for
/// columns that must line up.
pub fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / 1048576.0)
}

/// `text` broken at spaces into lines of at most `width` columns (a word
/// longer than that gets a line of its own).
pub fn wrap(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines.join("\n")
}

/// Bytes in binary units.
fn bytes(v: f64) -> String {
    const KIB: f64 = 1024.0;
    let a = v.abs();
    if a >= KIB * KIB * KIB {
        format!("{:.2} GiB", v / (KIB * KIB * KIB))
    } else if a >= KIB * KIB {
        format!("{:.1} MiB", v / (KIB * KIB))
    } else if a >= KIB {
        format!("{:.1} KiB", v / KIB)
    } else {
        format!("{v:.0} B")
    }
}

/// A plain number with as many decimals as its size deserves.
pub fn num(v: f64) -> String {
    let a = v.abs();
    // Thresholds on the value as it will print, so 999.97 reads "1000",
    // not "1000.0", and 9.997 reads "10.0", not "10.00".
    if a == 0.0 {
        "0".to_owned()
    } else if a >= 999.95 || (a >= 10.0 && a == a.trunc()) {
        format!("{v:.0}")
    } else if a >= 9.995 {
        format!("{v:.1}")
    } else if a >= 0.9995 {
        format!("{v:.2}")
    } else {
        // Three significant digits: 0.500, 0.0421, 0.00950.
        let decimals = (2 - a.log10().floor() as i32).clamp(3, 12) as usize;
        format!("{v:.decimals$}")
    }
}

/// Spread as `±1.2%` (coefficient of variation), empty without one.
pub fn spread(cv: Option<f64>) -> String {
    cv.map(|c| format!("±{:.1}%", c * 100.0))
        .unwrap_or_default()
}

/// Short column label of a metric (`req/s`, `p99 latency`).
pub fn label(metric: &str) -> String {
    let known = match metric {
        "requests_per_second" => "req/s",
        "capacity_per_second" => "sustained rate (SLOs)",
        "latency_mean_us" => "mean latency",
        "latency_p50_us" => "p50 latency",
        "latency_p90_us" => "p90 latency",
        "latency_p99_us" => "p99 latency",
        "latency_p999_us" => "p99.9 latency",
        "failed_requests" => "failed req",
        "non_2xx_responses" => "non-2xx",
        "check_pass_percent" => "checks passed",
        // The cell carries the unit (µs below 1 ms): the label must not.
        "cpu_ms_per_request" => "CPU/req",
        "cpu_percent_mean" => "CPU %",
        "cpu_time_ms" => "CPU time",
        "pss_peak_bytes" => "PSS peak",
        "pss_slope_bytes_per_request" => "slope B/request",
        "pss_growth_mb_per_hour" => "growth MB/h",
        "pss_steady_bytes" => "PSS steady",
        "rss_peak_bytes" => "RSS peak",
        "uss_peak_bytes" => "USS peak",
        "wall_time_s" => "wall time",
        "user_time_s" => "user time",
        "system_time_s" => "system time",
        "max_rss_bytes" => "max RSS",
        "system_used_bytes" => "used memory",
        "system_index" => "index",
        other => return counter_label(other).unwrap_or_else(|| other.to_owned()),
    };
    known.to_owned()
}

/// Short label of a process-tree counter's metric: `minor faults`,
/// `minor faults/req`.
fn counter_label(metric: &str) -> Option<String> {
    Counter::ALL.into_iter().find_map(|c| {
        if c.key() == metric {
            Some(counter_name(c).to_owned())
        } else {
            (c.per_request() == metric).then(|| format!("{}/req", counter_name(c)))
        }
    })
}

/// A counter's short name.
pub fn counter_name(c: Counter) -> &'static str {
    match c {
        Counter::UserCpuMs => "user CPU",
        Counter::SystemCpuMs => "system CPU",
        Counter::VoluntarySwitches => "vol. switches",
        Counter::InvoluntarySwitches => "invol. switches",
        Counter::MinorFaults => "minor faults",
        Counter::MajorFaults => "major faults",
        Counter::ReadSyscalls => "read calls",
        Counter::WriteSyscalls => "write calls",
        Counter::ReadBytes => "bytes read",
        Counter::WriteBytes => "bytes written",
        Counter::CpuMigrations => "migrations",
        Counter::Instructions => "instructions",
        Counter::Cycles => "cycles",
        Counter::CacheReferences => "cache refs",
        Counter::CacheMisses => "cache misses",
        Counter::BranchMisses => "branch misses",
    }
}

/// The counted counters in one line, `name value` each, with the IPC
/// when instructions and cycles were both counted: "minor faults 82,
/// vol. switches 6, …". Counters not counted are left out (never 0).
pub fn counters_line(c: &Counts) -> String {
    let unit = |c: Counter| match c.unit() {
        CounterUnit::Milliseconds => Unit::Milliseconds,
        CounterUnit::Bytes => Unit::Bytes,
        CounterUnit::Count => Unit::Count,
    };
    let mut parts: Vec<String> = c
        .iter()
        .map(|(k, v)| format!("{} {}", counter_name(k), value(unit(k), round_count(k, v))))
        .collect();
    if let Some(ipc) = c.ipc() {
        parts.push(format!("IPC {ipc:.2}"));
    }
    parts.join(", ")
}

/// Counts of events shown whole from 100 up, with 3 significant digits below.
fn round_count(c: Counter, v: f64) -> f64 {
    if c.unit() == CounterUnit::Count && v.abs() >= 100.0 {
        v.round()
    } else {
        v
    }
}

/// Why `--profile` sampled nothing, in one line with the setting to change.
pub fn profile_off(why: &ProfileOff, flag: &str) -> String {
    let why = match why {
        ProfileOff::NotAllowed { paranoid: Some(p) } if *p >= 3 => {
            format!("perf events not allowed: set kernel.perf_event_paranoid to 2 or lower (it is {p}), or run as root")
        }
        // At 2 or lower a user may sample their own processes: something
        // else refuses (a container's seccomp filter, a missing capability).
        ProfileOff::NotAllowed { paranoid } => {
            let p = paranoid.map_or("unreadable".to_owned(), |p| p.to_string());
            format!("perf_event_open refused although kernel.perf_event_paranoid is {p} (a container's seccomp filter?): allow it, or run as root")
        }
        ProfileOff::OtherUser { pid } => {
            format!("process {pid} is another user's: run kurabe as that user, or as root")
        }
        ProfileOff::NoPerfEvents => "this kernel has no perf events".to_owned(),
        ProfileOff::Gone => "the process to sample had exited".to_owned(),
        ProfileOff::NoServer => {
            "no server process found to sample (a URL not on this machine, --no-server-metrics, or a listener kurabe cannot see)"
                .to_owned()
        }
        ProfileOff::Failed { why } => format!("perf events failed: {why}"),
    };
    format!("{flag}: no stacks sampled, {why}")
}

/// Why a profile has user-space frames only.
pub fn profile_user_only(paranoid: Option<i32>) -> String {
    let now = paranoid.map_or(String::new(), |p| format!(" (it is {p})"));
    format!("--profile: user-space stacks only; kernel.perf_event_paranoid 1 or lower{now}, or root, adds kernel frames")
}

/// Why the hardware counters were not counted, in one line.
pub fn hardware_off(why: HardwareOff) -> String {
    match why {
        HardwareOff::NoPmu => {
            "no hardware PMU: instructions not counted, nor cycles, cache or branch misses"
                .to_owned()
        }
        HardwareOff::NotAllowed { paranoid } => {
            let setting = paranoid.map_or(String::new(), |p| {
                format!(
                    " (kernel.perf_event_paranoid = {p}; 1 or lower, or CAP_PERFMON, allows them)"
                )
            });
            format!("perf events not allowed{setting}: instructions not counted")
        }
        HardwareOff::NoPerfEvents => {
            "this kernel has no perf events: instructions not counted".to_owned()
        }
    }
}

/// The words for "the candidate's value is higher" and "… lower".
fn change_words(metric: &str, unit: Unit) -> (&'static str, &'static str) {
    if metric.starts_with("latency") {
        return ("higher latency", "lower latency");
    }
    if metric == "capacity_per_second" {
        return ("the rate sustained", "the rate sustained");
    }
    if metric.starts_with("cpu") {
        return ("more CPU", "less CPU");
    }
    if metric.starts_with("failed") {
        return ("more failures", "fewer failures");
    }
    if metric == "instructions" {
        return ("more instructions", "fewer instructions");
    }
    match unit {
        Unit::PerSecond => ("faster", "slower"),
        Unit::Seconds | Unit::Milliseconds | Unit::Microseconds => ("slower", "faster"),
        Unit::Bytes => ("more memory", "less memory"),
        Unit::Percent => ("more CPU", "less CPU"),
        Unit::Count => ("more", "fewer"),
        Unit::Score => ("higher", "lower"),
    }
}

/// A capacity comparison in one sentence: `B sustains 1.42× [1.35, 1.49]
/// A's rate within p(99)<50ms: better`.
pub fn sustains(variant: &str, baseline: &str, slos: &[String], c: &Comparison) -> Option<String> {
    let r = c.ratio?;
    let interval = match (c.ratio_low, c.ratio_high) {
        (Some(l), Some(h)) => format!(" [{l:.2}, {h:.2}]"),
        _ => String::new(),
    };
    let verdict = capacity_verdict(c.verdict);
    let within = if slos.is_empty() {
        String::new()
    } else {
        format!(" within {}", slos.join(" and "))
    };
    Some(format!(
        "{variant} sustains {}{interval} {baseline}'s rate{within}: {verdict}",
        ratio(r)
    ))
}

/// The verdict of a capacity comparison, ending its sentence.
fn capacity_verdict(v: Verdict) -> String {
    match v {
        Verdict::Better => "better".to_owned(),
        Verdict::Worse => "worse".to_owned(),
        Verdict::WithinNoise => "within noise".to_owned(),
        Verdict::Inconclusive { runs_needed } => {
            format!("inconclusive (~{runs_needed} runs would decide)")
        }
        Verdict::NoInterval {
            reason: NoIntervalReason::TooFewRuns { .. },
        } => "no interval: fewer than 3 runs".to_owned(),
        Verdict::NoInterval { .. } => "no interval".to_owned(),
    }
}

/// A single-value ratio in words: `1.60× more memory`, `2.70× slower`.
pub fn single(metric: &str, unit: Unit, r: f64) -> String {
    let (head, word) = directed(metric, unit, r, None);
    format!("{head} {word}")
}

/// `1.18×`; `1.004×` when two decimals would read 1.00 but it is not one.
pub fn ratio(r: f64) -> String {
    let two = format!("{r:.2}");
    if two == "1.00" && r != 1.0 {
        format!("{r:.3}×")
    } else {
        format!("{two}×")
    }
}

/// The ratio `r` (candidate / baseline) with its interval, put the way it
/// reads: a factor of at least one and the word for its direction. Below
/// one the factor is inverted, so 0.37 of the baseline's requests/s reads
/// `2.70× slower`, never `0.37× slower`; exactly one reads `the same`.
fn directed(
    metric: &str,
    unit: Unit,
    r: f64,
    interval: Option<(f64, f64)>,
) -> (String, &'static str) {
    let (up, down) = change_words(metric, unit);
    let bounds = |l: f64, h: f64| format!(" [{l:.2}, {h:.2}]");
    if r >= 1.0 || r <= 0.0 {
        let word = if r == 1.0 { "the same" } else { up };
        let i = interval.map_or(String::new(), |(l, h)| bounds(l, h));
        (format!("{}{i}", ratio(r)), word)
    } else {
        let i = interval.map_or(String::new(), |(l, h)| bounds(1.0 / h, 1.0 / l));
        (format!("{}{i}", ratio(1.0 / r)), down)
    }
}

/// The ratio and its interval as they are, for within noise, which has no
/// direction.
fn plain_ratio(r: f64, interval: Option<(f64, f64)>) -> String {
    format!(
        "{r:.2}×{}",
        interval.map_or(String::new(), |(l, h)| format!(" [{l:.2}, {h:.2}]"))
    )
}

/// A change in percent as it reads: `1.8 %`, `0.42 %`, `12.0 %`.
pub fn change_pct(p: f64) -> String {
    if p > 0.0 && p < 0.995 {
        format!("{p:.2} %")
    } else {
        format!("{p:.1} %")
    }
}

/// A noise band in percent: `2 %`, `0.5 %`.
fn band_pct(band: f64) -> String {
    let p = band * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// What a moved verdict could have seen, after its words:
/// ` (could detect ≥ 1.5 %)`; nothing without an interval.
pub fn could_detect(detectable_pct: Option<f64>) -> String {
    detectable_pct.map_or(String::new(), |d| {
        format!(" (could detect ≥ {})", change_pct(d))
    })
}

/// What a settled "within noise" rules out, after its words:
/// `: no change larger than 1.8 %` — the farther edge of the interval
/// (anything larger lies outside it), and never below what the run could
/// detect (a smaller figure would promise more than the run can see).
pub fn no_change_larger(
    low: Option<f64>,
    high: Option<f64>,
    detectable_pct: Option<f64>,
) -> String {
    let (Some(l), Some(h), Some(d)) = (low, high, detectable_pct) else {
        return String::new();
    };
    let edge = ((h - 1.0).max(1.0 - l) * 100.0).max(d);
    format!(": no change larger than {}", change_pct(edge))
}

/// Why an inconclusive verdict is one, in the run's power:
/// `inconclusive: this run could only detect changes above 9.0 %; ≈40
/// runs per variant would reach 2 %`.
pub fn inconclusive(detectable_pct: Option<f64>, runs_needed: u32, band: f64) -> String {
    match detectable_pct {
        Some(d) => format!(
            "inconclusive: this run could only detect changes above {}; ≈{runs_needed} runs per variant would reach {}",
            change_pct(d),
            band_pct(band)
        ),
        None => format!("inconclusive: ≈{runs_needed} runs needed"),
    }
}

/// The comparison in words, and whether it is good news.
///
/// `direction` is `None` for a metric kurabe does not know: the interval
/// is still shown, but nothing is called better or worse. Every verdict
/// with an interval states its power: what it could detect, what it rules
/// out ([`could_detect`], [`no_change_larger`], [`inconclusive`]).
pub fn verdict(
    metric: &str,
    unit: Unit,
    direction: Option<Direction>,
    c: &Comparison,
) -> (Tone, String) {
    if let Some(d) = &c.difference {
        return difference_verdict(metric, direction, c, d);
    }
    let Some(r) = c.ratio else {
        return (Tone::Neutral, no_ratio(c.verdict));
    };
    let interval = match (c.ratio_low, c.ratio_high) {
        (Some(l), Some(h)) => Some((l, h)),
        _ => None,
    };
    let (head, word) = directed(metric, unit, r, interval);
    let plain = plain_ratio(r, interval);
    let mde = c.detectable_change_pct;
    let still = |runs_needed: Option<u32>| match runs_needed {
        None => format!(
            "{plain} within noise{}",
            no_change_larger(c.ratio_low, c.ratio_high, mde)
        ),
        Some(n) => format!(
            "{plain} within noise ({})",
            inconclusive(mde, n, c.noise_band)
        ),
    };
    let moved = format!("{head} {word}{}", could_detect(mde));
    worded(c.verdict, direction, &moved, &still)
}

/// Why there is no ratio: `no ratio: a value is zero or negative`.
fn no_ratio(v: Verdict) -> String {
    let why = match v {
        Verdict::NoInterval {
            reason: NoIntervalReason::NonPositiveValue,
        } => "a value is zero or negative",
        _ => "no samples on one side",
    };
    format!("no ratio: {why}")
}

/// The tone and words of a verdict: `moved` (the directed phrase) when the
/// comparison moved or has no interval, good or bad only for a metric
/// with a direction; `still(runs needed)` within noise or inconclusive.
fn worded(
    verdict: Verdict,
    direction: Option<Direction>,
    moved: &str,
    still: &dyn Fn(Option<u32>) -> String,
) -> (Tone, String) {
    match verdict {
        Verdict::Better | Verdict::Worse if direction.is_none() => {
            (Tone::Neutral, moved.to_owned())
        }
        Verdict::Better => (Tone::Good, moved.to_owned()),
        Verdict::Worse => (Tone::Bad, moved.to_owned()),
        Verdict::WithinNoise => (Tone::Neutral, still(None)),
        Verdict::Inconclusive { runs_needed } => (Tone::Neutral, still(Some(runs_needed))),
        Verdict::NoInterval {
            reason: NoIntervalReason::TooFewRuns { .. },
        } => (
            Tone::Neutral,
            format!("{moved} (no interval: fewer than 3 runs)"),
        ),
        Verdict::NoInterval { .. } => (Tone::Neutral, format!("{moved} (no interval)")),
    }
}

/// `+12` for a positive number, `-12` and `0` as they are.
fn signed(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", num(v))
    } else {
        num(v)
    }
}

/// Which way a difference went: a slope grows faster or slower, anything
/// else is higher or lower.
fn difference_word(metric: &str, difference: f64) -> &'static str {
    let (up, down) = if metric.starts_with("pss_slope") || metric.starts_with("pss_growth") {
        ("grows faster", "grows slower")
    } else {
        ("higher", "lower")
    };
    if difference > 0.0 {
        up
    } else if difference < 0.0 {
        down
    } else {
        "the same"
    }
}

/// A comparison on the difference scale (soak slopes) in words:
/// `+1056 B/request [+1051, +1060] grows faster`, with the ratio of the
/// growth rates appended when both variants leak.
fn difference_verdict(
    metric: &str,
    direction: Option<Direction>,
    c: &Comparison,
    d: &Difference,
) -> (Tone, String) {
    let unit = difference_scale(metric).map_or(String::new(), |s| format!(" {}", s.unit));
    let head = format!("{}{unit}{}", signed(d.difference), difference_interval(d));
    let word = difference_word(metric, d.difference);
    let times = growth_ratio(c);
    let still = |runs_needed: Option<u32>| match runs_needed {
        None => format!(
            "{head} within noise (±{}{unit})",
            num(d.difference_noise_band)
        ),
        Some(n) => format!("{head} inconclusive, ≈{n} runs needed"),
    };
    worded(
        c.verdict,
        direction,
        &format!("{head} {word}{times}"),
        &still,
    )
}

/// The difference's interval, ` [+1051, +1060]`; nothing without one.
fn difference_interval(d: &Difference) -> String {
    match (d.difference_low, d.difference_high) {
        (Some(l), Some(h)) => format!(" [{}, {}]", signed(l), signed(h)),
        _ => String::new(),
    }
}

/// The ratio of the growth rates with its interval, ` (1.50× [1.40, 1.60])`;
/// nothing when there is no ratio (a variant that does not leak).
fn growth_ratio(c: &Comparison) -> String {
    match (c.ratio, c.ratio_low, c.ratio_high) {
        (Some(r), Some(l), Some(h)) => format!(" ({} [{l:.2}, {h:.2}])", ratio(r)),
        (Some(r), _, _) => format!(" ({})", ratio(r)),
        _ => String::new(),
    }
}

/// A warm-up check in words: `warm-up 0.0 s is shorter than where the
/// target's CPU settled: 2.1 s after the load began (median of 3 of 3 runs)`.
pub fn warmup(c: &kurabe_model::experiment::WarmupCheck) -> String {
    let what = match c.series.as_str() {
        "completed_per_s" => "the throughput",
        _ => "the target's CPU",
    };
    let mut text = format!(
        "{}: warm-up {:.1} s is shorter than where {what} settled: {:.1} s after the load began (median of {} of {} runs)",
        c.variant, c.warmup_s, c.settled_after_s, c.runs_late, c.runs
    );
    if c.runs_unsteady > 0 {
        text.push_str(&format!(
            "; {} runs never reached a steady state",
            c.runs_unsteady
        ));
    }
    text
}

/// `a, b, c` cut after commas into lines of at most `width` columns (a part
/// longer than that stays whole).
pub(crate) fn wrap_parts(line: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for part in line.split(", ") {
        let add = if cur.is_empty() {
            part.chars().count()
        } else {
            part.chars().count() + 2
        };
        if !cur.is_empty() && cur.chars().count() + add + 1 > width {
            lines.push(format!("{cur},"));
            cur.clear();
        }
        if !cur.is_empty() {
            cur.push_str(", ");
        }
        cur.push_str(part);
    }
    lines.push(cur);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::stats::compare;

    #[test]
    fn values_scale_by_unit() {
        assert_eq!(value(Unit::Bytes, 39.0 * 1024.0 * 1024.0), "39.0 MiB");
        assert_eq!(value(Unit::Bytes, 512.0), "512 B");
        assert_eq!(value(Unit::PerSecond, 106.24), "106.2/s");
        assert_eq!(value(Unit::Microseconds, 850.0), "850 µs");
        assert_eq!(value(Unit::Microseconds, 1250.0), "1.25 ms");
        assert_eq!(value(Unit::Milliseconds, 9.4), "9.40 ms");
        assert_eq!(value(Unit::Score, 1078.7), "1079");
        assert_eq!(value(Unit::Milliseconds, 8.0), "8.00 ms");
        assert_eq!(value(Unit::Seconds, f64::NAN), "–");
        assert_eq!(spread(Some(0.0104)), "±1.0%");
        assert_eq!(num(999.97), "1000");
        assert_eq!(num(999.94), "999.9");
        assert_eq!(num(9.997), "10.0");
        assert_eq!(num(0.99999), "1.00");
    }

    #[test]
    fn sub_millisecond_values_keep_three_significant_digits() {
        // Medians 8 % apart must not print alike ("0.009" / "0.010" before).
        assert_eq!(value(Unit::Milliseconds, 0.0095), "9.50 µs");
        assert_eq!(value(Unit::Milliseconds, 0.0103), "10.3 µs");
        assert_eq!(value(Unit::Milliseconds, 0.25), "250 µs");
        assert_eq!(value(Unit::Milliseconds, 0.0), "0 ms");
        assert_eq!(num(0.0095), "0.00950");
        assert_eq!(num(0.0103), "0.0103");
        assert_eq!(num(0.5), "0.500");
        assert_eq!(num(-0.0421), "-0.0421");
    }

    fn cmp(b: &[f64], c: &[f64], d: Direction) -> Comparison {
        compare(b, c, d, 0.02)
    }

    #[test]
    fn a_capacity_comparison_is_one_sentence_naming_the_slos() {
        let hi = Direction::HigherIsBetter;
        let slos = ["p(99)<50ms".to_owned(), "failed<0.1%".to_owned()];
        let c = cmp(&[1000.0, 1010.0, 990.0], &[1420.0, 1430.0, 1410.0], hi);
        let s = sustains("B", "A", &slos, &c).unwrap();
        assert!(s.starts_with("B sustains 1.42× ["), "{s}");
        assert!(
            s.ends_with("] A's rate within p(99)<50ms and failed<0.1%: better"),
            "{s}"
        );
        let c = cmp(&[1000.0], &[500.0], hi);
        let s = sustains("B", "A", &slos[..1], &c).unwrap();
        assert_eq!(
            s,
            "B sustains 0.50× A's rate within p(99)<50ms: no interval: fewer than 3 runs"
        );
    }

    #[test]
    fn phrases_follow_the_direction() {
        let hi = Direction::HigherIsBetter;
        let lo = Direction::LowerIsBetter;
        let c = cmp(&[100.0, 101.0, 99.0], &[118.0, 119.0, 117.0], hi);
        let (tone, p) = verdict("requests_per_second", Unit::PerSecond, Some(hi), &c);
        assert_eq!(tone, Tone::Good);
        assert!(p.starts_with("1.18× ["), "{p}");
        assert!(
            p.contains("] faster (could detect ≥ ") && p.ends_with(" %)"),
            "{p}"
        );

        let c = cmp(&[100.0, 101.0, 99.0], &[154.0, 155.0, 153.0], lo);
        let (tone, p) = verdict("pss_peak_bytes", Unit::Bytes, Some(lo), &c);
        assert_eq!(tone, Tone::Bad);
        assert!(p.contains("more memory (could detect ≥ "), "{p}");

        let c = cmp(&[100.0, 100.5, 99.5], &[100.0, 100.5, 99.5], hi);
        let (_, p) = verdict("requests_per_second", Unit::PerSecond, Some(hi), &c);
        // Log spread 0.005 a side, 3 runs: the interval reaches ±1.1 %, the
        // run could detect 1.5 % (power.rs), so that is what it rules out.
        assert_eq!(
            p,
            "1.00× [0.99, 1.01] within noise: no change larger than 1.5 %"
        );

        let c = cmp(&[100.0, 101.0], &[120.0, 121.0], lo);
        let (_, p) = verdict("cpu_ms_per_request", Unit::Milliseconds, Some(lo), &c);
        assert_eq!(p, "1.20× more CPU (no interval: fewer than 3 runs)");

        let c = cmp(&[100.0, 110.0, 90.0], &[103.0, 113.0, 93.0], hi);
        let (tone, p) = verdict("requests_per_second", Unit::PerSecond, Some(hi), &c);
        assert_eq!(tone, Tone::Neutral);
        assert!(
            p.contains("] within noise (inconclusive: this run could only detect changes above "),
            "{p}"
        );
        assert!(p.ends_with(" runs per variant would reach 2 %)"), "{p}");

        let c = cmp(&[0.0, 1.0, 2.0], &[1.0, 2.0, 3.0], lo);
        let (_, p) = verdict("failed_requests", Unit::Count, Some(lo), &c);
        assert_eq!(p, "no ratio: a value is zero or negative");
    }

    #[test]
    fn slope_differences_in_words() {
        use kurabe_model::stats::compare_metric;
        let lo = Direction::LowerIsBetter;
        let m = "pss_slope_bytes_per_request";
        let flat = [-1.6, 0.4, 2.6];
        let leak = [1050.0, 1055.0, 1058.5];
        let (tone, p) = verdict(
            m,
            Unit::Count,
            Some(lo),
            &compare_metric(m, &flat, &leak, lo, 0.02),
        );
        assert_eq!(tone, Tone::Bad);
        assert!(
            p.starts_with("+1054 B/request [+") && p.ends_with("] grows faster"),
            "{p}"
        );
        let (tone, p) = verdict(
            m,
            Unit::Count,
            Some(lo),
            &compare_metric(m, &flat, &[0.0, 1.0, -0.5], lo, 0.02),
        );
        assert_eq!(tone, Tone::Neutral);
        assert!(p.ends_with("within noise (±16 B/request)"), "{p}");
        let double = [2100.0, 2110.0, 2117.0];
        let (_, p) = verdict(
            m,
            Unit::Count,
            Some(lo),
            &compare_metric(m, &leak, &double, lo, 0.02),
        );
        assert!(p.contains("grows faster (2.00× ["), "{p}");
        let (tone, p) = verdict(
            m,
            Unit::Count,
            Some(lo),
            &compare_metric(m, &leak, &flat, lo, 0.02),
        );
        assert_eq!(tone, Tone::Good);
        assert!(
            p.starts_with("-1054 B/request") && p.ends_with("grows slower"),
            "{p}"
        );
        let (_, p) = verdict(
            m,
            Unit::Count,
            Some(lo),
            &compare_metric(m, &flat[..2], &leak, lo, 0.02),
        );
        assert!(
            p.ends_with("grows faster (no interval: fewer than 3 runs)"),
            "{p}"
        );
    }

    #[test]
    fn ratios_below_one_read_as_the_inverse_factor() {
        let hi = Direction::HigherIsBetter;
        let lo = Direction::LowerIsBetter;
        assert_eq!(
            single("requests_per_second", Unit::PerSecond, 0.37),
            "2.70× slower"
        );
        assert_eq!(
            single("requests_per_second", Unit::PerSecond, 2.7),
            "2.70× faster"
        );
        assert_eq!(
            single("pss_peak_bytes", Unit::Bytes, 1.004),
            "1.004× more memory"
        );
        assert_eq!(single("pss_peak_bytes", Unit::Bytes, 1.0), "1.00× the same");
        assert_eq!(single("wall_time_s", Unit::Seconds, 0.5), "2.00× faster");
        let c = cmp(&[100.0, 101.0, 99.0], &[37.0, 37.5, 36.5], hi);
        let (tone, p) = verdict("requests_per_second", Unit::PerSecond, Some(hi), &c);
        assert_eq!(tone, Tone::Bad);
        assert!(
            p.starts_with("2.70× [2.6") && p.contains("] slower (could detect ≥ "),
            "{p}"
        );
        let c = cmp(&[100.0, 101.0, 99.0], &[50.0, 50.5, 49.5], lo);
        let (tone, p) = verdict("pss_peak_bytes", Unit::Bytes, Some(lo), &c);
        assert_eq!(tone, Tone::Good);
        assert!(
            p.starts_with("2.00× [1.9") && p.contains("] less memory (could detect ≥ "),
            "{p}"
        );
    }

    #[test]
    fn unknown_direction_is_never_good_or_bad() {
        let c = cmp(
            &[1.0, 1.0, 1.0],
            &[2.0, 2.0, 2.0],
            Direction::HigherIsBetter,
        );
        let (tone, p) = verdict("frobs", Unit::Count, None, &c);
        assert_eq!(tone, Tone::Neutral);
        // No spread at all: any change would have been seen.
        assert_eq!(p, "2.00× [2.00, 2.00] more (could detect ≥ 0.0 %)");
    }
}
