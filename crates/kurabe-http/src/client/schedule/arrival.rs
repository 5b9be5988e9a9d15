//! When a run's requests go out: its one [`Arrival`], resolved from the
//! spec before the run. The closed model sends on each connection as its
//! last answer arrives (`-c`, or connection stages that ramp how many
//! connections are open); the open model sends each request at its
//! intended time, from a constant rate (`--rate`), a ramp of rates
//! (`--stage 30s:200`: [`Ramp`], linear within each stage, so request `i`
//! is due where the integral of the rate reaches `i`) or a recording's
//! times (`kurabe replay`: request `i` is recorded request `i mod n` of
//! loop `i / n`).
//!
//! Owns each kind's arithmetic, in one match per question ([`Arrival::at`],
//! the rate the run asked for, each second's target). Must not read the
//! clock or claim requests: the workers' schedules (`crate::client::schedule`) do.

use std::sync::Arc;
use std::time::Duration;

use kurabe_model::stage::Stages;

use crate::source::replay::Replay;

/// When a run's requests go out.
#[derive(Debug, Clone)]
pub(crate) enum Arrival {
    /// Closed model: each connection sends when its last answer is in.
    Closed,
    /// Open model at a constant rate, requests per second.
    Constant(f64),
    /// Open model, the rate ramped through stages.
    Ramp(Arc<Ramp>),
    /// Closed model, the open connections ramped through stages: connection
    /// `i` of the run is open while the ramp's level is above `i`.
    Connections(Arc<Ramp>),
    /// Open model at a recording's times (its requests too: request `i`
    /// sends recorded request `i mod n`).
    Replay(Arc<Replay>),
}

impl Arrival {
    /// Whether requests go out at intended times (the open model).
    #[inline]
    pub fn is_open(&self) -> bool {
        matches!(
            self,
            Arrival::Constant(_) | Arrival::Ramp(_) | Arrival::Replay(_)
        )
    }

    /// ns after the schedule's start at which request `i` is intended
    /// (never, in the closed model).
    #[inline]
    pub fn at(&self, i: u64) -> u64 {
        match self {
            Arrival::Constant(rate) => (i as f64 * 1e9 / rate) as u64,
            Arrival::Ramp(r) => r.at(i),
            Arrival::Replay(r) => r.at(i).unwrap_or(u64::MAX),
            Arrival::Closed | Arrival::Connections(_) => u64::MAX,
        }
    }

    /// How many requests the schedule holds in all (`None`: as many as
    /// the run's length allows).
    pub fn sends(&self) -> Option<u64> {
        match self {
            Arrival::Ramp(r) => Some(r.sends()),
            Arrival::Replay(r) => Some(r.total()),
            Arrival::Closed | Arrival::Constant(_) | Arrival::Connections(_) => None,
        }
    }

    /// The rate the run asks for, requests per second, as the report
    /// states it: a ramp's mean over its stages, a recording's mean over
    /// its span (`None`: the closed model).
    pub fn rate(&self) -> Option<f64> {
        match self {
            Arrival::Constant(r) => Some(*r),
            Arrival::Ramp(r) => Some(r.mean()),
            Arrival::Replay(r) => Some(replay_rate(r)),
            Arrival::Closed | Arrival::Connections(_) => None,
        }
    }

    /// The rate meant over `len` seconds from `start` seconds into the
    /// measured phase (a ramp's mean there; `None` for an empty interval of a ramp).
    pub fn target_per_s(&self, start: f64, len: f64) -> Option<f64> {
        match self {
            Arrival::Ramp(r) if len > 0.0 => {
                Some((r.sends_by(start + len) - r.sends_by(start)) / len)
            }
            Arrival::Ramp(_) => None,
            _ => self.rate(),
        }
    }

    /// Connection stages' ramp of open connections.
    pub fn connections(&self) -> Option<&Ramp> {
        match self {
            Arrival::Connections(r) => Some(r),
            _ => None,
        }
    }

    /// A replay's recording.
    pub fn replay(&self) -> Option<&Arc<Replay>> {
        match self {
            Arrival::Replay(r) => Some(r),
            _ => None,
        }
    }
}

/// A recording's mean rate: its requests over its span at the replay's
/// speed (all of them in one second when the span is nothing).
fn replay_rate(r: &Replay) -> f64 {
    let (total, secs) = (r.total() as f64, r.summary.scheduled_duration_s);
    if secs > 0.0 {
        total / secs
    } else {
        total
    }
}

/// One stage of a ramp: the rate goes linearly from `from` to `to`
/// (requests/s) over `len_s` seconds starting `start_s` into the run,
/// after `before` sends.
#[derive(Debug, Clone, Copy)]
struct Leg {
    start_s: f64,
    len_s: f64,
    from: f64,
    to: f64,
    before: f64,
}

impl Leg {
    /// Sends in this stage.
    fn sends(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.len_s
    }

    /// Seconds into the stage at which `x` of its sends have been due:
    /// the root of `from·τ + (to − from)/(2·len)·τ² = x`, in the form that
    /// stays exact when the rate is flat or starts at 0.
    fn time_of(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        let a = (self.to - self.from) / (2.0 * self.len_s);
        let disc = (self.from * self.from + 4.0 * a * x).max(0.0);
        (2.0 * x / (self.from + disc.sqrt())).min(self.len_s)
    }

    /// Sends due `t` seconds into the stage.
    fn sends_by(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, self.len_s);
        self.from * t + (self.to - self.from) / (2.0 * self.len_s) * t * t
    }
}

/// The open model's arrival rate ramped linearly between stage targets
/// (`--stage`), starting from 0 requests/s.
#[derive(Debug, Clone)]
pub(crate) struct Ramp {
    legs: Vec<Leg>,
    /// The mean rate over the stages: their sends over their length.
    mean: f64,
}

impl Ramp {
    /// The ramp through `stages` (of rates, or of connections).
    pub fn new(stages: &Stages) -> Ramp {
        let pairs: Vec<_> = (stages.stages().iter())
            .map(|s| (s.duration, s.target.value()))
            .collect();
        let (mut legs, mut at, mut before, mut from) = (Vec::new(), 0.0, 0.0, 0.0);
        for &(d, to) in &pairs {
            let leg = Leg {
                start_s: at,
                len_s: d.as_secs_f64().max(1e-9),
                from,
                to,
                before,
            };
            before += leg.sends();
            at += leg.len_s;
            from = to;
            legs.push(leg);
        }
        Ramp {
            legs,
            mean: mean(&pairs),
        }
    }

    /// The mean level over the stages (of a rate: its sends over the
    /// stages' length; 0 for stages of no length).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// How many sends the whole ramp makes.
    pub fn sends(&self) -> u64 {
        self.legs
            .last()
            .map_or(0, |l| (l.before + l.sends()).ceil() as u64)
    }

    /// Sends due in the first `t` seconds.
    pub fn sends_by(&self, t: f64) -> f64 {
        let mut n = 0.0;
        for l in self.legs.iter().filter(|l| l.start_s < t) {
            n = l.before + l.sends_by(t - l.start_s);
        }
        n
    }

    /// The target `t` seconds in: linear within each stage, the last
    /// stage's once the ramp is over.
    pub fn level_at(&self, t: f64) -> f64 {
        match self.legs.iter().find(|l| t < l.start_s + l.len_s) {
            Some(l) => l.from + (l.to - l.from) * ((t - l.start_s).max(0.0) / l.len_s),
            None => self.legs.last().map_or(0.0, |l| l.to),
        }
    }

    /// Intended time of send `i`, ns after the start.
    pub fn at(&self, i: u64) -> u64 {
        let x = i as f64;
        let leg = self
            .legs
            .iter()
            .rev()
            .find(|l| l.before <= x && l.sends() > 0.0)
            .or(self.legs.first());
        let Some(l) = leg else { return 0 };
        ((l.start_s + l.time_of(x - l.before)) * 1e9) as u64
    }
}

/// The mean level of `(length, target)` stages ramped from 0: the area
/// under the ramp over its length.
fn mean(stages: &[(Duration, f64)]) -> f64 {
    let total: Duration = stages.iter().map(|s| s.0).sum();
    let area: f64 = stages
        .iter()
        .scan(0.0, |from, &(d, to)| {
            let n = (*from + to) / 2.0 * d.as_secs_f64();
            *from = to;
            Some(n)
        })
        .sum();
    if total.is_zero() {
        0.0
    } else {
        area / total.as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::stage::{Stage, StageTarget};

    /// The ramp through `(length, rate)` stages.
    fn ramp(stages: &[(Duration, f64)]) -> Ramp {
        let typed = stages.iter().map(|&(duration, r)| Stage {
            duration,
            target: StageTarget::Rate(r),
        });
        Ramp::new(&Stages::new(typed.collect()).unwrap())
    }

    #[test]
    fn a_ramp_sends_where_the_rates_integral_reaches_each_send() {
        let secs = std::time::Duration::from_secs;
        // 0 → 100/s over 10 s (500 sends), 100/s for 10 s (1000), 100 → 0 over 10 s (500).
        let r = ramp(&[(secs(10), 100.0), (secs(10), 100.0), (secs(10), 0.0)]);
        assert_eq!(r.sends(), 2000);
        assert_eq!(r.at(0), 0);
        // 50·t²/10 = 125 at t = 5 s; 500 at 10 s; 1000 at 15 s.
        assert!((r.at(125) as f64 - 5e9).abs() < 1e3, "{}", r.at(125));
        assert!((r.at(500) as f64 - 10e9).abs() < 1e3);
        assert!((r.at(1000) as f64 - 15e9).abs() < 1e3);
        // Ramp down: 1500 + 100·τ − 5·τ² = 1875 at τ = 5.
        assert!((r.at(1875) as f64 - 25e9).abs() < 1e3, "{}", r.at(1875));
        assert!((r.sends_by(25.0) - 1875.0).abs() < 1e-6);
        assert!((0..2000).all(|i| r.at(i) <= r.at(i + 1)), "in order");
        assert!((r.mean() - 2000.0 / 30.0).abs() < 1e-9);
        let ramped = Arrival::Ramp(Arc::new(r));
        assert_eq!(ramped.sends(), Some(2000));
        assert!((ramped.target_per_s(5.0, 1.0).unwrap() - 55.0).abs() < 1e-9);
    }

    #[test]
    fn a_ramps_level_is_linear_within_each_stage() {
        let secs = std::time::Duration::from_secs;
        let r = ramp(&[(secs(10), 100.0), (secs(10), 100.0), (secs(5), 0.0)]);
        let at = |t| r.level_at(t);
        assert_eq!(
            (at(0.0), at(5.0), at(15.0), at(22.5), at(99.0)),
            (0.0, 50.0, 100.0, 50.0, 0.0)
        );
        // Its integral over a second is that second's mean target.
        assert!((r.sends_by(6.0) - r.sends_by(5.0) - 55.0).abs() < 1e-9);
    }
}
