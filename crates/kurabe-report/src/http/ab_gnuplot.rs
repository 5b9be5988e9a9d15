//! ab's `-g` file: a header, then one TSV line per request (start time
//! as `ctime(3)` and in seconds, ctime, dtime, ttime and wait in whole
//! milliseconds). The engine streams the lines itself, so it calls
//! [`line()`] per request into its own buffer. Times are UTC (ab uses the
//! local zone; we do not read time-zone data).
//!
//! Owns the header and the line. Must not write files: the engine's `-g`
//! tap buffers and writes them.

use std::io::Write as _;

use kurabe_model::load_stats::RequestTimes;
use kurabe_model::time::civil_from_days;

/// Header line ab writes.
pub const HEADER: &str = "starttime\tseconds\tctime\tdtime\tttime\twait\n";

/// Append the line of one request to `out`.
pub fn line(out: &mut Vec<u8>, t: &RequestTimes) {
    let secs = t.start_unix_us / 1_000_000;
    // Writing into a Vec cannot fail.
    let _ = writeln!(
        out,
        "{}\t{}\t{}\t{}\t{}\t{}",
        ctime_string(secs),
        secs,
        ms(t.connect_us),
        ms(t.processing_us),
        ms(t.total_us),
        ms(t.wait_us)
    );
}

/// ab rounds to whole milliseconds.
fn ms(us: u64) -> u64 {
    (us + 500) / 1000
}

/// `ctime(3)`-style "Sun Nov 29 22:29:57 2026" (UTC).
fn ctime_string(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        y
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_format_like_ctime() {
        assert_eq!(ctime_string(0), "Thu Jan  1 00:00:00 1970");
        // 2026-11-29 22:29:57 UTC was a Sunday.
        assert_eq!(ctime_string(1_795_991_397), "Sun Nov 29 22:29:57 2026");
    }

    #[test]
    fn a_line_rounds_to_milliseconds() {
        let mut out = Vec::new();
        let t = RequestTimes {
            start_unix_us: 1_795_991_397_000_000,
            connect_us: 1_400,
            processing_us: 2_600,
            total_us: 4_000,
            wait_us: 2_000,
        };
        line(&mut out, &t);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Sun Nov 29 22:29:57 2026\t1795991397\t1\t3\t4\t2\n"
        );
    }
}
