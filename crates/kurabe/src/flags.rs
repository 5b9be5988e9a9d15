//! Flag-value grammars shared by several commands (`http`, `demo`, `run`,
//! `worker`), so each flag reads its value the same way.
//!
//! Owns parsing a flag's text into a typed value with an error that says
//! what to write instead. Must not know which command uses it.

use std::time::Duration;

/// "5" (seconds), "1.5s", "500ms", "2m", "1h" → a duration.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration: use e.g. 10, 10s, 500ms or 2m"))?;
    let secs = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown unit '{other}' in '{s}': use ms, s, m or h"
            ))
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("'{s}' is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("5x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("-1").is_err());
    }
}
