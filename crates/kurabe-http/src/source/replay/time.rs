//! The timestamps replay reads, as microseconds since the Unix epoch:
//! nginx `$time_local` / Apache `%t` (`10/Oct/2000:13:55:36 -0700`),
//! `$time_iso8601` and HAR's `startedDateTime` (RFC 3339, fraction and
//! offset optional), `$msec` (`1700000000.123`) and durations in seconds
//! (`$request_time`).
//!
//! Pure arithmetic (days from the civil date); must not read the clock
//! or the local time zone: every format read here carries its offset.

/// `dd/Mon/yyyy:HH:MM:SS ±hhmm`.
pub fn clf(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 26 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' || b[20] != b' ' {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == &s[3..6])? as u32 + 1;
    let date = (num(&s[7..11])?, month, num(&s[0..2])? as u32);
    let secs = clock(&s[12..20])?;
    let off = offset(&s[21..])?;
    epoch_us(date, secs, 0, off)
}

/// RFC 3339 / ISO 8601: `yyyy-mm-ddTHH:MM:SS[.frac](Z|±hh:mm|±hhmm)`.
pub fn iso8601(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let date = (
        num(&s[0..4])?,
        num(&s[5..7])? as u32,
        num(&s[8..10])? as u32,
    );
    let secs = clock(&s[11..19])?;
    let mut rest = &s[19..];
    let mut frac_us = 0;
    if let Some(f) = rest.strip_prefix('.') {
        let n = f.find(|c: char| !c.is_ascii_digit()).unwrap_or(f.len());
        if n == 0 {
            return None;
        }
        let digits = &f[..n.min(6)];
        frac_us = digits.parse::<i64>().ok()? * 10_i64.pow(6 - digits.len() as u32);
        rest = &f[n..];
    }
    let off = match rest {
        "Z" | "z" => 0,
        _ => offset(&rest.replace(':', ""))?,
    };
    epoch_us(date, secs, frac_us, off)
}

/// `$msec`: seconds since the epoch with up to six decimals.
pub fn msec(s: &str) -> Option<i64> {
    seconds_us(s)
}

/// A non-negative number of seconds with up to six decimals (`0.004`).
pub fn seconds_us(s: &str) -> Option<i64> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = &frac[..frac.len().min(6)];
    let frac_us = if digits.is_empty() {
        0
    } else {
        digits.parse::<i64>().ok()? * 10_i64.pow(6 - digits.len() as u32)
    };
    whole
        .parse::<i64>()
        .ok()?
        .checked_mul(1_000_000)?
        .checked_add(frac_us)
}

fn num(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `HH:MM:SS` as seconds into the day.
fn clock(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let (h, m, sec) = (num(&s[0..2])?, num(&s[3..5])?, num(&s[6..8])?);
    (h < 24 && m < 60 && sec <= 60).then_some(h * 3600 + m * 60 + sec)
}

/// `±hhmm` as seconds east of UTC.
fn offset(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 5 || !matches!(b[0], b'+' | b'-') {
        return None;
    }
    let (h, m) = (num(&s[1..3])?, num(&s[3..5])?);
    let off = h * 3600 + m * 60;
    Some(if b[0] == b'-' { -off } else { off })
}

fn epoch_us((y, m, d): (i64, u32, u32), secs: i64, frac_us: i64, off: i64) -> Option<i64> {
    if !(1..=12).contains(&m) || d == 0 || d > 31 {
        return None;
    }
    let days = days_from_civil(y, m, d);
    Some(((days * 86_400 + secs - off) * 1_000_000) + frac_us)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    // `date -u -d '2000-10-10T20:55:36Z' +%s` = 971211336.
    const T: i64 = 971_211_336_000_000;

    #[test]
    fn clf_reads_the_offset() {
        assert_eq!(clf("10/Oct/2000:13:55:36 -0700"), Some(T));
        assert_eq!(clf("10/Oct/2000:20:55:36 +0000"), Some(T));
        for bad in ["10/Oct/2000:13:55:36", "10/Foo/2000:13:55:36 -0700", "x"] {
            assert_eq!(clf(bad), None, "{bad}");
        }
    }

    #[test]
    fn iso8601_with_fraction_and_offsets() {
        assert_eq!(iso8601("2000-10-10T20:55:36Z"), Some(T));
        assert_eq!(iso8601("2000-10-10T22:55:36.25+02:00"), Some(T + 250_000));
        assert_eq!(
            iso8601("2000-10-10T13:55:36.1234567-0700"),
            Some(T + 123_456)
        );
        assert_eq!(iso8601("2000-10-10T20:55:36"), None, "no offset");
        assert_eq!(iso8601("2000-13-10T20:55:36Z"), None);
    }

    #[test]
    fn msec_and_seconds() {
        assert_eq!(msec("971211336.123"), Some(T + 123_000));
        assert_eq!(seconds_us("0.004"), Some(4_000));
        assert_eq!(seconds_us("2"), Some(2_000_000));
        for bad in ["", "-1", "1.x", ".5"] {
            assert_eq!(seconds_us(bad), None, "{bad}");
        }
    }

    #[test]
    fn civil_days_match_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2026, 12, 2), 20_789);
    }
}
