//! UTC calendar dates and RFC 3339 timestamps, without a date library.
//!
//! Pure arithmetic on the time it is given: it never reads the clock and
//! knows no time zones (every timestamp kurabe writes is UTC, `Z`).

use std::time::{SystemTime, UNIX_EPOCH};

/// `2026-11-29T22:30:00.123Z` for `t`, to the millisecond (times before 1970
/// clamp to the epoch).
pub fn rfc3339(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    format!(
        "{}.{:03}Z",
        date_time(since.as_secs()),
        since.subsec_millis()
    )
}

/// `2026-11-29T22:30:00Z` for `unix_s` seconds since the epoch.
pub fn rfc3339_secs(unix_s: u64) -> String {
    format!("{}Z", date_time(unix_s))
}

/// `YYYY-MM-DDTHH:MM:SS` for `unix_s` seconds since the epoch.
fn date_time(unix_s: u64) -> String {
    let rem = unix_s % 86_400;
    let (y, m, d) = civil_from_days((unix_s / 86_400) as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month 1–12, day 1–31) in the proleptic
/// Gregorian calendar (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn known_instants() {
        let at = |ms| UNIX_EPOCH + Duration::from_millis(ms);
        assert_eq!(rfc3339(at(0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(at(951_782_400_250)), "2000-02-29T00:00:00.250Z");
        assert_eq!(rfc3339(at(1_700_000_000_123)), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339(at(1_795_991_465_000)), "2026-11-29T22:31:05.000Z");
        assert_eq!(rfc3339(at(4_102_444_799_999)), "2099-12-31T23:59:59.999Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_secs(1)),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(rfc3339_secs(1_795_991_397), "2026-11-29T22:29:57Z");
        assert_eq!(rfc3339_secs(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn civil_dates_round_the_year_and_leap_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(59), (1970, 3, 1)); // 1970 is not a leap year
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(47_540), (2100, 2, 28)); // 2100 is not a leap year
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
    }
}
