//! The user's choices for a `kurabe system` run (tests, profile, copies,
//! placement) resolved into a [`Config`], with the defaults: all twelve
//! tests, the precision rule at ±2 % within 9 minutes, 1 copy and one per
//! CPU.
//!
//! Owns these defaults and the order overrides apply in. Must not parse
//! command lines (the binary fills [`Choices`]) or print.

use std::path::PathBuf;

use crate::{Config, Error, Profile, TestId};

/// Default target of the precision rule: ±2 % on the score.
pub const DEFAULT_PRECISION: f64 = 0.02;
/// Default time budget per copy count: a third of UnixBench's ~28 minutes.
pub const DEFAULT_MAX_TIME_S: f64 = 540.0;

/// What a run was asked for; `None` and empty mean "the default".
#[derive(Debug, Clone, Default)]
pub struct Choices {
    /// Comma-separated test names (default: all).
    pub tests: Option<String>,
    /// Short durations and fewer passes.
    pub quick: bool,
    /// UnixBench's own durations and passes.
    pub unixbench: bool,
    /// Target half-width of the score's interval, as a fraction.
    pub precision: Option<f64>,
    /// Time budget of the precision rule per copy count, in seconds.
    pub max_time_s: Option<f64>,
    /// Seconds per pass for every test.
    pub seconds: Option<f64>,
    /// Fixed passes per test.
    pub passes: Option<u32>,
    /// Copy counts (default: 1 and the number of CPUs).
    pub copies: Vec<u32>,
    /// "same-core" or "spread".
    pub pin: Option<String>,
    /// A replacement for the built-in Execl helper.
    pub execl_helper: Option<PathBuf>,
}

impl Choices {
    /// The run's configuration, or which choice is out of range.
    pub fn config(&self) -> Result<Config, Error> {
        let tests = match &self.tests {
            Some(list) => crate::parse_tests(list)?,
            None => crate::catalog::ALL
                .iter()
                .map(|s| s.id)
                .collect::<Vec<TestId>>(),
        };
        Ok(Config {
            tests,
            copies: self.copies(),
            profile: self.profile()?,
            execl_helper: self.execl_helper.clone(),
            temp_parent: std::env::temp_dir(),
            pin: self.pin.as_deref().and_then(crate::pin::Pin::parse),
            cgroup_procs: Vec::new(),
        })
    }

    fn profile(&self) -> Result<Profile, Error> {
        let mut profile = if self.quick {
            Profile::quick()
        } else if self.unixbench || self.passes.is_some() {
            Profile::default_unixbench()
        } else {
            Profile::precision(
                self.precision.unwrap_or(DEFAULT_PRECISION),
                self.max_time_s.unwrap_or(DEFAULT_MAX_TIME_S),
            )?
        };
        if let Some(s) = self.seconds {
            profile = profile.with_seconds(s)?;
        }
        if let Some(p) = self.passes {
            profile = profile.with_passes(p)?;
        }
        Ok(profile)
    }

    fn copies(&self) -> Vec<u32> {
        if !self.copies.is_empty() {
            return self.copies.clone();
        }
        let n = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        if n > 1 {
            vec![1, n]
        } else {
            vec![1]
        }
    }
}

/// `--precision`'s grammar: "2", "2%" or "0.5 %" are percentages.
pub fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let p = t.strip_suffix('%').map_or(t, str::trim);
    kurabe_model::plan::parse_fraction(&format!("{p}%"))
}

/// A duration flag in seconds, in the one duration grammar.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    kurabe_model::plan::parse_duration(s).map(|d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let c = Choices::default().config().unwrap();
        assert_eq!(c.tests.len(), crate::catalog::ALL.len());
        assert_eq!(c.copies[0], 1);
        let p = Choices {
            passes: Some(0),
            ..Choices::default()
        };
        assert!(p.config().is_err());
        assert_eq!(parse_pct("2").unwrap(), parse_pct(" 2 % ").unwrap());
        assert_eq!(parse_secs("1m30s").unwrap(), 90.0);
    }
}
