//! Human-written quantities in plans: durations ("10s", "250ms"), byte sizes
//! ("512M", "1.5GiB") and fractions ("2%" or 0.02).
//!
//! Each parses strictly and says what it expected, so a plan error reads
//! "expected a duration like `10s` or `250ms`, got `10`" rather than a serde
//! type mismatch. Serialisation writes a form the parser reads back.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration written with a unit: `10s`, `1.5s`, `250ms`, `500us`, `2m`, `1h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct HumanDuration(pub Duration);

/// A byte size: an integer count of bytes, or a string with a unit. `K`, `M`,
/// `G`, `T` and `KiB` … `TiB` are powers of 1024 (as cgroups and Docker read
/// `512M`); `kB`, `MB`, `GB`, `TB` are powers of 1000; `B` or no unit is bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

/// A fraction: a number (0.02) or a percentage string ("2%").
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Fraction(pub f64);

/// What a duration looks like, for error messages.
pub const DURATION_EXPECTED: &str = "a duration like `10s`, `1.5s`, `250ms`, `500us`, `2m` or `1h`";
/// What a size looks like, for error messages.
pub const SIZE_EXPECTED: &str = "a size like `512M`, `1.5GiB`, `200MB` or a number of bytes";
/// What a fraction looks like, for error messages.
pub const FRACTION_EXPECTED: &str = "a fraction like `0.02` or a percentage like `\"2%\"`";

/// Parse a duration string; the error says what was expected.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("expected {DURATION_EXPECTED}, got `{text}`");
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds_per_unit = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(value * seconds_per_unit).map_err(|_| bad())
}

/// Parse a byte size string; the error says what was expected.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || format!("expected {SIZE_EXPECTED}, got `{text}`");
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let multiplier: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "k" | "K" | "KiB" => 1024.0,
        "M" | "MiB" => 1024.0 * 1024.0,
        "G" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => return Err(bad()),
    };
    let bytes = (value * multiplier).round();
    if !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
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
            // A bare number is ambiguous (seconds? milliseconds?): refuse it
            // with a message that shows the fix.
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Err(E::custom(format!(
                    "expected {DURATION_EXPECTED}, got the bare number {v}: write `\"{v}s\"`"
                )))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Err(E::custom(format!(
                    "expected {DURATION_EXPECTED}, got the bare number {v}: write `\"{v}s\"`"
                )))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Err(E::custom(format!(
                    "expected {DURATION_EXPECTED}, got the bare number {v}: write `\"{v}s\"`"
                )))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration(" 3 s "), Ok(Duration::from_secs(3)));
        for bad in ["10", "s", "", "ten s", "10 parsecs", "-1s", "1e400s"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(
                err.starts_with("expected a duration like `10s`"),
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
        for bad in ["", "M", "12 parsecs", "1..2M", "-5M"] {
            let err = parse_size(bad).unwrap_err();
            assert!(
                err.starts_with("expected a size like `512M`"),
                "{bad}: {err}"
            );
        }
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
        let err = serde_json::from_str::<HumanDuration>("10")
            .unwrap_err()
            .to_string();
        assert!(err.contains("write `\"10s\"`"), "{err}");
        let s: ByteSize = serde_json::from_str(r#""1K""#).unwrap();
        assert_eq!(s.0, 1024);
        let s: ByteSize = serde_json::from_str("1024").unwrap();
        assert_eq!(s.0, 1024);
        let f: Fraction = serde_json::from_str(r#""5%""#).unwrap();
        assert_eq!(f.0, 0.05);
    }
}
