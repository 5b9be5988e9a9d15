//! The live terminal view's picture of one [`Frame`]: a ratatui widget
//! that draws rate, in flight, latency percentiles (last seconds and whole
//! run), status codes and failure buckets, the busiest request names, the
//! local server's CPU and Σ PSS, elapsed time and ETA, and a latency
//! histogram in whatever rows are left.
//!
//! Owns the layout and the wording. Must not touch the terminal (raw mode,
//! events, the screen are the binary's): it draws into a ratatui buffer,
//! so a test draws it into a plain one. Lines are in order of importance,
//! and a small area shows the first ones that fit, clipped, never wrapped.

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::board::{bucket_bounds, Frame, Percentiles, RECENT};

/// Request names shown at most.
const NAMES_SHOWN: usize = 5;

/// A [`Frame`] as the live view draws it.
#[derive(Debug)]
pub struct View<'a> {
    /// The figures to show.
    pub frame: &'a Frame,
    /// What the run is (`kurabe http URL`).
    pub title: &'a str,
}

impl Widget for View<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let lines = self.lines();
        let used = (lines.len() as u16).min(area.height);
        Paragraph::new(lines).render(area, buf);
        let rest = Rect {
            y: area.y + used,
            height: area.height - used,
            ..area
        };
        if rest.height >= 3 {
            histogram(self.frame, rest, buf);
        }
    }
}

impl View<'_> {
    /// The text lines, most important first.
    fn lines(&self) -> Vec<Line<'static>> {
        let f = self.frame;
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let mut lines = vec![
            Line::from(vec![
                Span::styled(self.title.to_owned(), bold),
                Span::raw(format!("  {}", clock(f))),
            ]),
            rate_line(f),
        ];
        lines.extend(stage_line(f));
        lines.extend([
            Line::from(format!(
                "{:<10}{:>9} {:>9} {:>9} {:>9}",
                "latency", "p50", "p90", "p99", "max"
            )),
            percentile_line(&format!("last {}s", RECENT.as_secs()), &f.recent),
            percentile_line("whole run", &f.whole),
            status_line(f),
        ]);
        lines.extend(failure_line(f));
        lines.extend(server_line(f));
        lines.extend(names_lines(f));
        lines.push(Line::styled(
            match f.finished {
                true => "finished".to_owned(),
                false => "q or Ctrl-C: stop the run and print the report".to_owned(),
            },
            Style::default().add_modifier(Modifier::DIM),
        ));
        lines
    }
}

/// "elapsed 12.3s  ETA 7.7s" (warm-up said so).
fn clock(f: &Frame) -> String {
    let mut s = format!("elapsed {}", secs(f.elapsed));
    if f.elapsed < f.info.warmup {
        s.push_str(&format!(" (warm-up until {})", secs(f.info.warmup)));
    }
    if let Some(eta) = f.eta() {
        s.push_str(&format!("  ETA {}", secs(eta)));
    }
    s
}

/// Achieved (and target) rate, in flight, sent, late.
fn rate_line(f: &Frame) -> Line<'static> {
    let mut s = format!("rate {}/s", count(f.sent_rate.round() as u64));
    let target = f.target_rate();
    if let Some(r) = target {
        s.push_str(&format!(" of {}/s", count(r.round() as u64)));
    }
    s.push_str(&format!(
        "  answered {}/s  in flight {}  sent {}",
        count(f.answered_rate.round() as u64),
        count(f.in_flight),
        count(f.counters.sent_requests)
    ));
    if target.is_some() {
        s.push_str(&format!("  late {}", count(f.counters.late_sends)));
        if f.counters.dropped_sends > 0 {
            s.push_str(&format!("  dropped {}", count(f.counters.dropped_sends)));
        }
    }
    Line::from(s)
}

/// "stage 2/3  200/s → 0/s  now 150/s  7.5s left", when the load has stages.
fn stage_line(f: &Frame) -> Option<Line<'static>> {
    let st = f.stage()?;
    let unit = match f.info.stages_connections {
        true => " connections",
        false => "/s",
    };
    let n = |v: f64| count(v.round() as u64);
    Some(Line::from(format!(
        "stage    {}/{}  {}{unit} → {}{unit}  now {}{unit}  {} left",
        st.index,
        st.count,
        n(st.from),
        n(st.to),
        n(st.now),
        secs(st.left)
    )))
}

fn percentile_line(label: &str, p: &Percentiles) -> Line<'static> {
    if p.count == 0 {
        return Line::from(format!("{label:<10}{:>9}", "—"));
    }
    Line::from(format!(
        "{label:<10}{:>9} {:>9} {:>9} {:>9}",
        us(p.p50_us),
        us(p.p90_us),
        us(p.p99_us),
        us(p.max_us)
    ))
}

/// "status 200: 12 340  503: 7".
fn status_line(f: &Frame) -> Line<'static> {
    let mut s = format!("status   {} ok", count(f.counters.completed));
    for (code, n) in f.counters.status.seen() {
        s.push_str(&format!("  {code}: {}", count(n)));
    }
    Line::from(s)
}

/// "failed 3  timeout: 2  connect: 1", when any failed.
fn failure_line(f: &Frame) -> Option<Line<'static>> {
    let total = f.counters.failures.total();
    if total == 0 {
        return None;
    }
    let mut s = format!("failed   {}", count(total));
    for b in f.counters.error_buckets() {
        s.push_str(&format!("  {}: {}", b.kind, count(b.count)));
    }
    Some(Line::styled(
        s,
        Style::default().add_modifier(Modifier::BOLD),
    ))
}

/// "server CPU 45 %  Σ PSS 12.3 MiB  2 processes".
fn server_line(f: &Frame) -> Option<Line<'static>> {
    let p = f.server?;
    Some(Line::from(format!(
        "server   CPU {:.0} %  Σ PSS {}  {} process{}",
        p.cpu_percent,
        mib(p.size.pss_bytes),
        p.size.processes,
        if p.size.processes == 1 { "" } else { "es" }
    )))
}

/// The busiest request names, when the run has more than one.
fn names_lines(f: &Frame) -> Vec<Line<'static>> {
    let mut rows: Vec<_> = f.counters.names.iter().collect();
    if rows.is_empty() {
        return Vec::new();
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.completed + r.failures.total()));
    let mut out = vec![Line::from(format!("busiest of {} names", rows.len()))];
    for r in rows.into_iter().take(NAMES_SHOWN) {
        out.push(Line::from(format!(
            "  {:>9} ok {:>6} failed  {}",
            count(r.completed),
            count(r.failures.total()),
            r.name
        )));
    }
    out
}

/// The last seconds' latencies as horizontal bars, one row per bucket of
/// the range seen (neighbours merged when rows are short).
fn histogram(f: &Frame, area: Rect, buf: &mut Buffer) {
    let counts = &f.recent_buckets;
    let (Some(lo), Some(hi)) = (
        counts.iter().position(|&n| n > 0),
        counts.iter().rposition(|&n| n > 0),
    ) else {
        return;
    };
    let rows = usize::from(area.height - 1);
    let per = (hi - lo + 1).div_ceil(rows);
    let bounds = bucket_bounds();
    let groups: Vec<(String, u64)> = (lo..=hi)
        .step_by(per)
        .map(|i| {
            let end = (i + per).min(hi + 1);
            let label = match bounds.get(end - 1) {
                Some(b) => format!("≤{}", us((b * 1e6).round() as u64)),
                None => format!(">{}", us((bounds[bounds.len() - 1] * 1e6) as u64)),
            };
            (label, counts[i..end].iter().sum())
        })
        .collect();
    let top = groups.iter().map(|g| g.1).max().unwrap_or(1).max(1);
    buf.set_string(
        area.x,
        area.y,
        format!("latency, last {}s", RECENT.as_secs()),
        Style::default().add_modifier(Modifier::DIM),
    );
    let width = usize::from(area.width);
    for (row, (label, n)) in groups.iter().enumerate() {
        let y = area.y + 1 + row as u16;
        let text = format!("{label:>9} {:>8} ", count(*n));
        let room = width.saturating_sub(text.chars().count());
        let bar = (*n as f64 / top as f64 * room as f64).round() as usize;
        let bar = if *n > 0 { bar.max(1) } else { 0 };
        buf.set_stringn(
            area.x,
            y,
            format!("{text}{}", "█".repeat(bar)),
            width,
            Style::default(),
        );
    }
}

/// A count with thin spaces between thousands.
fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// Microseconds as µs, ms or s, three significant digits or so.
fn us(v: u64) -> String {
    match v {
        0..=999 => format!("{v}µs"),
        1_000..=999_999 => format!("{:.2}ms", v as f64 / 1e3),
        _ => format!("{:.2}s", v as f64 / 1e6),
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::{Board, RunInfo};
    use kurabe_model::load_stats::Snapshot;

    fn frame() -> Frame {
        let board = Board::new(RunInfo {
            name: "http://127.0.0.1:1/".into(),
            method: "GET".into(),
            target_rate: Some(1000.0),
            duration: Some(Duration::from_secs(10)),
            ..RunInfo::default()
        });
        let mut s = Snapshot::empty();
        board.update(&s);
        s.elapsed = Duration::from_secs(1);
        s.measured = s.elapsed;
        for v in [100, 120, 150, 3000] {
            s.latency.record_n(v, 250).unwrap();
        }
        s.counters.completed = 1000;
        s.counters.sent_requests = 1003;
        s.counters.failures.timeout = 3;
        for _ in 0..1000 {
            s.counters.status.count(200);
        }
        s.in_flight = 2;
        board.update(&s);
        Frame::clone(&board.frame())
    }

    fn draw(f: &Frame, w: u16, h: u16) -> Vec<String> {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        View {
            frame: f,
            title: "kurabe http",
        }
        .render(area, &mut buf);
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
            })
            .collect()
    }

    #[test]
    fn a_frame_shows_rate_latency_status_and_failures() {
        let screen = draw(&frame(), 100, 30);
        let text = screen.join("\n");
        assert!(
            screen[0].starts_with("kurabe http  elapsed 1.0s  ETA 9.0s"),
            "{text}"
        );
        assert!(
            screen[1].starts_with("rate 1 003/s of 1 000/s  answered 1 003/s  in flight 2"),
            "{text}"
        );
        assert!(text.contains("status   1 000 ok  200: 1 000"), "{text}");
        assert!(text.contains("failed   3  timeout: 3"), "{text}");
        assert!(
            text.contains("whole run     120µs    3.00ms    3.00ms    3.00ms"),
            "{text}"
        );
        assert!(text.contains("latency, last 5s"), "{text}");
        assert!(text.contains('█'));
    }

    #[test]
    fn dropped_sends_are_shown_once_there_are_some() {
        let mut f = frame();
        assert!(!draw(&f, 100, 30)[1].contains("dropped"));
        f.counters.dropped_sends = 12;
        let line = draw(&f, 100, 30)[1].clone();
        assert!(line.trim_end().ends_with("late 0  dropped 12"), "{line}");
    }

    #[test]
    fn a_staged_load_shows_its_stage_and_the_ramps_rate_now() {
        let mut f = frame();
        assert!(!draw(&f, 100, 30).join("\n").contains("stage"));
        f.info.stages = vec![
            (Duration::from_secs(2), 2000.0),
            (Duration::from_secs(8), 0.0),
        ];
        let screen = draw(&f, 100, 30);
        // One second into a 2 s ramp to 2 000/s: 1 000/s now.
        assert!(
            screen[1].starts_with("rate 1 003/s of 1 000/s"),
            "{}",
            screen[1]
        );
        assert_eq!(
            screen[2].trim_end(),
            "stage    1/2  0/s → 2 000/s  now 1 000/s  1.0s left"
        );
        f.info.stages_connections = true;
        let screen = draw(&f, 100, 30);
        assert!(
            screen[1].starts_with("rate 1 003/s  answered"),
            "{}",
            screen[1]
        );
        assert!(screen[2].contains("0 connections → 2 000 connections"));
    }

    #[test]
    fn a_small_area_shows_what_fits_and_nothing_else() {
        let f = frame();
        let big = draw(&f, 100, 30);
        let small = draw(&f, 60, 15);
        // The same lines, cut at 60 columns.
        for (s, b) in small.iter().zip(&big).take(9) {
            assert_eq!(
                s.trim_end(),
                b.chars().take(60).collect::<String>().trim_end()
            );
        }
        let tiny = draw(&f, 20, 3);
        assert_eq!(tiny.len(), 3);
        assert!(tiny[0].starts_with("kurabe http  elapse"));
    }

    #[test]
    fn counts_and_times_read_at_a_glance() {
        assert_eq!(count(1234567), "1 234 567");
        assert_eq!(count(999), "999");
        assert_eq!(
            (us(999), us(1500), us(2_500_000)),
            ("999µs".into(), "1.50ms".into(), "2.50s".into())
        );
    }
}
