//! Load shaped over time: `--stage 30s:200` ramps the arrival rate
//! linearly to 200 requests/s over 30 s (open model, k6's
//! `ramping-arrival-rate`), `--stage 30s:c=100` ramps the number of
//! connections to 100 (closed model, k6's `ramping-vus`).
//!
//! Owns the stage grammar, the typed [`Stages`] and their form in a load
//! spec ([`StageSpec`] and the executor their kind needs), both ways: the
//! command line parses its flags into typed stages and writes them as the
//! spec's, the engine reads a spec's (a plan's, a fleet's) back into typed
//! stages once. Must not send or time anything: the engine's ramp does.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::quantity::{parse_duration, HumanDuration};

/// One stage as a [`LoadSpec`](crate::load::LoadSpec) holds it: a plan's
/// `{ duration = "30s", target = 200 }`, `--stage 30s:200` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct StageSpec {
    /// How long the ramp to `target` takes.
    #[schemars(with = "String")]
    pub duration: HumanDuration,
    /// What the stage reaches at its end: the arrival rate, requests per
    /// second, or with `executor = "ramping-vus"` the open connections.
    pub target: f64,
}

/// k6's executor names, where they mean what a kurabe load does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Executor {
    /// Open model at one `rate` (`--rate`).
    ConstantArrivalRate,
    /// Open model ramped through `stages` (`--stage 30s:200`).
    RampingArrivalRate,
    /// Closed model: `concurrency` connections, each sending as soon as
    /// its last response arrived.
    ConstantVus,
    /// Closed model with `stages` of connections (`--stage 30s:c=100`):
    /// each stage's `target` is a number of open connections.
    RampingVus,
}

impl Executor {
    /// The name as k6 and plans write it.
    pub fn name(self) -> &'static str {
        match self {
            Executor::ConstantArrivalRate => "constant-arrival-rate",
            Executor::RampingArrivalRate => "ramping-arrival-rate",
            Executor::ConstantVus => "constant-vus",
            Executor::RampingVus => "ramping-vus",
        }
    }
}

/// What a stage's text must look like, for errors.
pub const STAGE_EXPECTED: &str =
    "DURATION:RATE (requests/s, open model) or DURATION:c=CONNECTIONS (closed model), \
e.g. '30s:200' or '2m:c=100'";

/// What a stage ramps to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StageTarget {
    /// Arrival rate, requests per second.
    Rate(f64),
    /// Open connections.
    Connections(u32),
}

impl StageTarget {
    /// `Ok(self)` when `ok`, else `Err(e)`.
    fn with(self, ok: bool, e: SpecTargetError) -> Result<StageTarget, SpecTargetError> {
        if ok {
            Ok(self)
        } else {
            Err(e)
        }
    }

    /// The target as a number: requests per second, or connections.
    pub fn value(self) -> f64 {
        match self {
            StageTarget::Rate(r) => r,
            StageTarget::Connections(c) => f64::from(c),
        }
    }
}

/// A stage of a [`LoadSpec`](crate::load::LoadSpec) whose target is not
/// of its kind: the target as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SpecTargetError {
    /// A rate that is not a finite number, 0 or more.
    Rate(f64),
    /// Connections that are not a whole number, 0 or more.
    Connections(f64),
}

/// One stage: reach `target` linearly over `duration` from where the previous stage ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the ramp takes.
    pub duration: Duration,
    /// Where it ends.
    pub target: StageTarget,
}

/// A stage that does not parse: the text and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageError {
    /// The text as given.
    pub text: String,
    /// What is wrong, naming the token.
    pub problem: String,
}

impl fmt::Display for StageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stage '{}': {}; expected {STAGE_EXPECTED}",
            self.text, self.problem
        )
    }
}

impl std::error::Error for StageError {}

impl std::str::FromStr for Stage {
    type Err = StageError;

    fn from_str(text: &str) -> Result<Stage, StageError> {
        let fail = |problem: String| StageError {
            text: text.to_owned(),
            problem,
        };
        let (d, t) = text
            .split_once(':')
            .ok_or_else(|| fail("no ':' between the duration and the target".into()))?;
        let duration = parse_duration(d.trim()).map_err(fail)?;
        let t = t.trim();
        let target = match t.strip_prefix("c=") {
            Some(c) => StageTarget::Connections(
                c.trim()
                    .parse()
                    .map_err(|_| fail(format!("'{c}': connections are a whole number")))?,
            ),
            None => StageTarget::Rate(
                t.trim_end_matches("/s")
                    .parse::<f64>()
                    .ok()
                    .filter(|r| r.is_finite() && *r >= 0.0)
                    .ok_or_else(|| fail(format!("'{t}': a rate is requests per second")))?,
            ),
        };
        Ok(Stage { duration, target })
    }
}

/// A checked sequence of stages, all of one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages(Vec<Stage>);

impl Stages {
    /// Check that there is at least one stage and that all ramp the same
    /// thing (rates and connections cannot be mixed).
    pub fn new(stages: Vec<Stage>) -> Result<Stages, String> {
        let Some(first) = stages.first() else {
            return Err("give at least one stage".into());
        };
        let rate = matches!(first.target, StageTarget::Rate(_));
        if stages
            .iter()
            .any(|s| matches!(s.target, StageTarget::Rate(_)) != rate)
        {
            return Err(
                "stages ramp either a rate (30s:200) or connections (30s:c=100), not both".into(),
            );
        }
        Ok(Stages(stages))
    }

    /// The stages a load spec holds, typed: of connections with
    /// `executor = "ramping-vus"`, else of rates (`None`: no stages). A
    /// rate is finite and 0 or more, connections a whole number 0 or more.
    pub fn of_spec(
        specs: &[StageSpec],
        executor: Option<Executor>,
    ) -> Result<Option<Stages>, SpecTargetError> {
        let connections = executor == Some(Executor::RampingVus);
        let typed = specs.iter().map(|s| {
            let t = s.target;
            let target = if connections {
                let whole =
                    t.is_finite() && t >= 0.0 && t.fract() == 0.0 && t <= f64::from(u32::MAX);
                StageTarget::Connections(t as u32).with(whole, SpecTargetError::Connections(t))
            } else {
                StageTarget::Rate(t).with(t.is_finite() && t >= 0.0, SpecTargetError::Rate(t))
            };
            target.map(|target| Stage {
                duration: s.duration.0,
                target,
            })
        });
        let stages = typed.collect::<Result<Vec<_>, _>>()?;
        Ok(Stages::new(stages).ok())
    }

    /// The stages as a load spec holds them, and the executor their kind
    /// needs (`ramping-vus` for connections; none for rates, the default).
    pub fn to_spec(&self) -> (Vec<StageSpec>, Option<Executor>) {
        let specs = self
            .0
            .iter()
            .map(|s| StageSpec {
                duration: HumanDuration(s.duration),
                target: s.target.value(),
            })
            .collect();
        (specs, (!self.is_rate()).then_some(Executor::RampingVus))
    }

    /// The stages in order.
    pub fn stages(&self) -> &[Stage] {
        &self.0
    }

    /// Whether the stages ramp the arrival rate (open model).
    pub fn is_rate(&self) -> bool {
        matches!(self.0[0].target, StageTarget::Rate(_))
    }

    /// The whole schedule's length.
    pub fn total(&self) -> Duration {
        self.0.iter().map(|s| s.duration).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stages(s: &[&str]) -> Stages {
        Stages::new(s.iter().map(|s| s.parse().unwrap()).collect()).unwrap()
    }

    #[test]
    fn a_ramp_up_hold_and_down() {
        let s = stages(&["30s:200", "2m:200", "30s:0"]);
        assert!(s.is_rate());
        assert_eq!(s.total(), Duration::from_secs(180));
        let c = stages(&["10s:c=100"]);
        assert!(!c.is_rate());
        // The spec's form and back: the same stages, the kind in the executor.
        for typed in [s, c] {
            let (specs, executor) = typed.to_spec();
            assert_eq!(Stages::of_spec(&specs, executor), Ok(Some(typed)));
        }
        let half = |t| StageSpec {
            duration: HumanDuration(Duration::from_secs(1)),
            target: t,
        };
        let vus = Some(Executor::RampingVus);
        assert_eq!(
            Stages::of_spec(&[half(1.5)], vus),
            Err(SpecTargetError::Connections(1.5))
        );
        assert_eq!(
            Stages::of_spec(&[half(-1.0)], None),
            Err(SpecTargetError::Rate(-1.0))
        );
        assert_eq!(Stages::of_spec(&[], None), Ok(None));
    }

    #[test]
    fn a_plan_writes_stages_as_tables_and_k6_executor_names() {
        #[derive(Deserialize)]
        struct Http {
            stages: Vec<StageSpec>,
            executor: Executor,
        }
        let h: Http = toml::from_str(
            r#"executor = "ramping-arrival-rate"
stages = [{ duration = "30s", target = 200 }, { duration = "2m", target = 200 }]"#,
        )
        .unwrap();
        assert_eq!(h.executor, Executor::RampingArrivalRate);
        assert_eq!(h.executor.name(), "ramping-arrival-rate");
        assert_eq!(h.stages[1].duration.0, Duration::from_secs(120));
        assert_eq!(h.stages[0].target, 200.0);
    }

    #[test]
    fn bad_stages_name_the_token() {
        let e = |s: &str| s.parse::<Stage>().unwrap_err().to_string();
        assert!(e("30s").contains("no ':'"));
        assert!(e("soon:200").contains("soon"));
        assert!(e("30s:fast").contains("'fast'"));
        assert!(e("30s:c=1.5").contains("whole number"));
        let mixed: Vec<Stage> = vec!["1s:10".parse().unwrap(), "1s:c=3".parse().unwrap()];
        assert!(Stages::new(mixed).unwrap_err().contains("not both"));
        assert!(Stages::new(vec![]).is_err());
    }
}
