//! Human-written quantities, the one grammar of every plan field and every
//! command-line flag: durations ("10", "10s", "250ms", "1m30s"), byte sizes
//! ("512M", "1.5GiB", "200MB") and fractions ("2%" or 0.02).
//!
//! Each parses strictly and says what it expected, so a plan error reads
//! "expected a duration like `10s` or `250ms`, got `10x`" rather than a serde
//! type mismatch. Serialisation writes a form the parser reads back.
//!
//! Hand-written rather than `humantime`: that crate refuses fractions
//! ("1.5s") and bare numbers ("-t 10", ab's form), both part of this grammar.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration: a number of seconds (`10`, `1.5`) or numbers with units
/// (`10s`, `250ms`, `500us`, `2m`, `1h`, `1m30s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct HumanDuration(pub Duration);

/// A byte size: an integer count of bytes, or a string with a unit.
///
/// `KiB` … `TiB` and Kubernetes' `Ki` … `Ti` are powers of 1024; `kB`/`KB`,
/// `MB`, `GB`, `TB` are powers of 1000, as systemd and Kubernetes read them.
/// A bare `K`, `M`, `G`, `T` is a power of 1024, as cgroups (`memory.max`),
/// systemd's `MemoryMax=` and Docker read `512M`: the people who write a
/// memory limit mean that. A lower-case `m` is refused: Docker reads it as
/// MiB but Kubernetes as *milli*, so either reading would surprise someone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

/// A fraction: a number (0.02) or a percentage string ("2%").
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Fraction(pub f64);

/// What a duration looks like, for error messages.
pub const DURATION_EXPECTED: &str =
    "a duration like `10` (seconds), `1.5s`, `250ms`, `500us`, `2m`, `1h` or `1m30s`";
/// What a size looks like, for error messages.
pub const SIZE_EXPECTED: &str = "a size like `512M`, `1.5GiB`, `200MB` or a number of bytes";
/// What a fraction looks like, for error messages.
pub const FRACTION_EXPECTED: &str = "a fraction like `0.02` or a percentage like `\"2%\"`";

/// Parse a duration: a bare number is seconds; otherwise one or more
/// number-unit pairs (`1m30s`, `1h 5m`). The error says what was expected.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("expected {DURATION_EXPECTED}, got `{text}`");
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if t.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return Duration::try_from_secs_f64(secs).map_err(|_| bad());
        }
    }
    let mut rest = t;
    let mut total = 0.0;
    while !rest.is_empty() {
        let (value, unit, tail) = duration_term(rest).ok_or_else(bad)?;
        total += value * duration_unit(unit).ok_or_else(bad)?;
        rest = tail.trim_start();
    }
    if t.is_empty() {
        return Err(bad());
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

/// A duration above zero (a timeout, say), in the grammar of [`parse_duration`].
pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err("must be above zero, e.g. 10s".into());
    }
    Ok(d)
}

/// The first "number unit" of `text`: (number, unit, what follows).
fn duration_term(text: &str) -> Option<(f64, &str, &str)> {
    let digits = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, after) = text.split_at(digits);
    let after = after.trim_start();
    let letters = after
        .find(|c: char| !(c.is_alphabetic()))
        .unwrap_or(after.len());
    let (unit, tail) = after.split_at(letters);
    let value: f64 = number.parse().ok()?;
    (!unit.is_empty()).then_some((value, unit, tail))
}

/// Seconds in one `unit` of a duration.
fn duration_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    })
}

/// Parse a byte size string (see [`ByteSize`]); the error says what was expected.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || format!("expected {SIZE_EXPECTED}, got `{text}`");
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let multiplier = match unit.trim() {
        "m" => {
            return Err(format!(
                "`{text}`: a lower-case `m` is ambiguous (Docker reads MiB, Kubernetes milli): \
                 write `{number}M` or `{number}MiB` for mebibytes, `{number}MB` for megabytes"
            ))
        }
        unit => size_unit(unit).ok_or_else(bad)?,
    };
    let too_large = || {
        format!(
            "`{text}` is too large: a size is at most {} bytes",
            u64::MAX
        )
    };
    // Whole numbers are exact (f64 would round 2^64 - 1 up to 2^64).
    if let Ok(whole) = number.parse::<u64>() {
        return whole.checked_mul(multiplier).ok_or_else(too_large);
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let bytes = (value * multiplier as f64).round();
    // `u64::MAX as f64` is 2^64 itself, so `>=` is the exact bound.
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(too_large());
    }
    Ok(bytes as u64)
}

/// Bytes in one `unit` of a size.
fn size_unit(unit: &str) -> Option<u64> {
    const KI: u64 = 1024;
    Some(match unit {
        "" | "B" => 1,
        "k" | "K" | "Ki" | "KiB" => KI,
        "M" | "Mi" | "MiB" => KI * KI,
        "G" | "Gi" | "GiB" => KI * KI * KI,
        "T" | "Ti" | "TiB" => KI * KI * KI * KI,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return None,
    })
}

/// Parse a fraction string: `"2%"` or `"0.02"`.
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    let bad = || format!("expected {FRACTION_EXPECTED}, got `{text}`");
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => t.parse::<f64>().map_err(|_| bad())?,
    };
    value.is_finite().then_some(value).ok_or_else(bad)
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.subsec_nanos() == 0 {
            write!(f, "{}s", d.as_secs())
        } else if d.as_nanos() % 1_000_000 == 0 {
            write!(f, "{}ms", d.as_millis())
        } else if d.as_nanos() % 1_000 == 0 {
            write!(f, "{}us", d.as_micros())
        } else {
            write!(f, "{}ns", d.as_nanos())
        }
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(DURATION_EXPECTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                parse_duration(v).map(HumanDuration).map_err(E::custom)
            }
            // A bare number is seconds, as on the command line.
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                self.visit_f64(v as f64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Duration::try_from_secs_f64(v)
                    .map(HumanDuration)
                    .map_err(|_| E::custom(format!("expected {DURATION_EXPECTED}, got {v}")))
            }
        }
        d.deserialize_any(V)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MIB: u64 = 1024 * 1024;
        if self.0 >= MIB && self.0 % MIB == 0 {
            write!(f, "{}MiB", self.0 / MIB)
        } else {
            write!(f, "{}B", self.0)
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(SIZE_EXPECTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                parse_size(v).map(ByteSize).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("expected {SIZE_EXPECTED}, got {v}")))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Fraction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Fraction;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(FRACTION_EXPECTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                parse_fraction(v).map(Fraction).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Fraction(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Fraction(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Fraction(v as f64))
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for HumanDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HumanDuration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": DURATION_EXPECTED,
            "type": ["string", "number"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_positive_duration_is_above_zero() {
        assert_eq!(
            parse_positive_duration("500ms"),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(
            parse_positive_duration("0s").unwrap_err(),
            "must be above zero, e.g. 10s"
        );
        assert!(parse_positive_duration("x").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration(" 3 s "), Ok(Duration::from_secs(3)));
        // A bare number is seconds.
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0.25"), Ok(Duration::from_millis(250)));
        // Compound forms add up.
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h 2m 3s"), Ok(Duration::from_secs(3723)));
        assert_eq!(parse_duration("1s500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2µs"), Ok(Duration::from_micros(2)));
        for bad in [
            "s",
            "",
            "ten s",
            "10 parsecs",
            "-1s",
            "-1",
            "1e400s",
            "1e400",
            "inf",
            "NaN",
            "1m30",
            "1..5s",
            "5 s s",
        ] {
            let err = parse_duration(bad).unwrap_err();
            assert!(
                err.starts_with("expected a duration like `10` (seconds)"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("200MB"), Ok(200_000_000));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("100 B"), Ok(100));
        // Decimal units are powers of 1000, as systemd and Kubernetes read them.
        assert_eq!(parse_size("1kB"), Ok(1000));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        // Kubernetes' binary suffixes.
        assert_eq!(parse_size("64Mi"), Ok(64 << 20));
        assert_eq!(parse_size("2Gi"), Ok(2 << 30));
        // `m` means MiB to Docker and milli to Kubernetes: refused with the fix.
        let err = parse_size("512m").unwrap_err();
        assert!(err.contains("write `512M` or `512MiB`"), "{err}");
        assert!(err.contains("`512MB` for megabytes"), "{err}");
        for bad in ["", "M", "12 parsecs", "1..2M", "-5M", "5mb", "5 MBs"] {
            let err = parse_size(bad).unwrap_err();
            assert!(
                err.starts_with("expected a size like `512M`"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn sizes_beyond_u64_are_refused_not_rounded() {
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_size("15.5GiB"), Ok(31 << 29));
        for big in [
            "18446744073709551616",
            "16777216TiB",
            "16777216.0TiB",
            "18446744073709551615.5",
            "99999999999999999999",
            "1e400",
        ] {
            let err = parse_size(big).unwrap_err();
            assert!(
                err.contains("is too large") || err.starts_with("expected a size"),
                "{big}: {err}"
            );
        }
        let err = parse_size("16777216TiB").unwrap_err();
        assert!(err.contains("`16777216TiB` is too large"), "{err}");
    }

    #[test]
    fn fractions() {
        assert_eq!(parse_fraction("2%"), Ok(0.02));
        assert_eq!(parse_fraction("0.05"), Ok(0.05));
        assert!(parse_fraction("two").is_err());
    }

    #[test]
    fn display_round_trips() {
        for d in [
            Duration::from_secs(10),
            Duration::from_millis(1500),
            Duration::from_micros(7),
            Duration::from_nanos(3),
        ] {
            let text = HumanDuration(d).to_string();
            assert_eq!(parse_duration(&text), Ok(d), "{text}");
        }
        for b in [512 << 20, 1000, 0] {
            assert_eq!(parse_size(&ByteSize(b).to_string()), Ok(b));
        }
    }

    #[test]
    fn serde_forms() {
        let d: HumanDuration = serde_json::from_str(r#""250ms""#).unwrap();
        assert_eq!(d.0, Duration::from_millis(250));
        // A bare number is seconds, in plans as on the command line.
        let d: HumanDuration = serde_json::from_str("10").unwrap();
        assert_eq!(d.0, Duration::from_secs(10));
        let d: HumanDuration = serde_json::from_str("0.5").unwrap();
        assert_eq!(d.0, Duration::from_millis(500));
        assert!(serde_json::from_str::<HumanDuration>("-1").is_err());
        let s: ByteSize = serde_json::from_str(r#""1K""#).unwrap();
        assert_eq!(s.0, 1024);
        let s: ByteSize = serde_json::from_str("1024").unwrap();
        assert_eq!(s.0, 1024);
        let f: Fraction = serde_json::from_str(r#""5%""#).unwrap();
        assert_eq!(f.0, 0.05);
    }
}
