//! Placement modes: passes whose rates form distinct groups.
//!
//! Owns the detection of modes among a test's pass rates. Pipe-based context
//! switching runs ~5× faster with both processes on one core than on two,
//! and copies that share a core run at half speed: averaging such passes
//! gives a number no single placement produces and an interval that says
//! little. The test here is a gap test on the sorted log rates: the largest
//! gap splits the passes in two when the two sides differ by at least
//! [`MIN_RATIO`], each side has at least [`MIN_GROUP`] passes, and the gap
//! is at least [`GAP_TO_SPREAD`] times the larger standard deviation inside
//! a side. Each side is split again the same way.
//!
//! Must not: change the score (the index keeps UnixBench's unpinned
//! behaviour, all passes); it only describes.

use kurabe_model::system::SystemMode;

/// Smallest ratio between neighbouring modes.
pub const MIN_RATIO: f64 = 1.25;
/// Fewest passes a mode may have.
pub const MIN_GROUP: usize = 2;
/// How much wider than the spread inside the groups the gap must be.
pub const GAP_TO_SPREAD: f64 = 4.0;

/// Modes among `rates` (lowest first); empty when they form one group or
/// a rate is not positive.
pub fn detect(rates: &[f64]) -> Vec<SystemMode> {
    if rates.iter().any(|r| !(*r > 0.0 && r.is_finite())) {
        return Vec::new();
    }
    let mut sorted = rates.to_vec();
    sorted.sort_by(f64::total_cmp);
    let logs: Vec<f64> = sorted.iter().map(|r| r.ln()).collect();
    let mut groups = Vec::new();
    split(&logs, &mut groups);
    if groups.len() < 2 {
        return Vec::new();
    }
    let n = logs.len() as f64;
    let mut first = 0;
    groups
        .into_iter()
        .map(|g| {
            let rates = &sorted[first..first + g.len()];
            first += g.len();
            SystemMode {
                rate: (g.iter().sum::<f64>() / g.len() as f64).exp(),
                low: rates[0],
                high: rates[rates.len() - 1],
                passes: g.len() as u32,
                share: g.len() as f64 / n,
            }
        })
        .collect()
}

/// Split sorted logs at their largest gap while the gap qualifies.
fn split<'a>(logs: &'a [f64], out: &mut Vec<&'a [f64]>) {
    match cut(logs) {
        Some(at) => {
            split(&logs[..at], out);
            split(&logs[at..], out);
        }
        None => out.push(logs),
    }
}

/// Where the largest qualifying gap is (index of the first value above it).
fn cut(logs: &[f64]) -> Option<usize> {
    if logs.len() < 2 * MIN_GROUP {
        return None;
    }
    let at = (MIN_GROUP..=logs.len() - MIN_GROUP)
        .max_by(|&a, &b| (logs[a] - logs[a - 1]).total_cmp(&(logs[b] - logs[b - 1])))?;
    let gap = logs[at] - logs[at - 1];
    let spread = sd(&logs[..at]).max(sd(&logs[at..]));
    (gap >= MIN_RATIO.ln() && gap >= GAP_TO_SPREAD * spread).then_some(at)
}

fn sd(xs: &[f64]) -> f64 {
    crate::score::mean_var(xs).1.unwrap_or(0.0).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_placements_of_context_switching_are_two_modes() {
        // The seed's 4 passes: ~19 k (one core) and ~98 k (two cores).
        let m = detect(&[98_000.0, 19_000.0, 96_500.0, 19_600.0]);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!((m[0].passes, m[1].passes), (2, 2));
        assert!((m[0].share - 0.5).abs() < 1e-12);
        assert!((m[0].rate - (19_000.0f64 * 19_600.0).sqrt()).abs() < 1e-6);
        assert_eq!((m[1].low, m[1].high), (96_500.0, 98_000.0));
    }

    #[test]
    fn ordinary_noise_is_one_mode() {
        assert!(detect(&[100.0, 104.0, 97.0, 110.0, 101.0, 93.0, 106.0]).is_empty());
        // A wide but continuous spread has no gap much wider than itself.
        assert!(detect(&[50.0, 60.0, 72.0, 86.0, 100.0, 120.0]).is_empty());
    }

    #[test]
    fn a_single_outlier_is_not_a_mode() {
        assert!(detect(&[100.0, 101.0, 99.0, 100.5, 30.0]).is_empty());
    }

    #[test]
    fn three_placements_split_recursively() {
        // Copies sharing a core, half sharing, none sharing.
        let m = detect(&[10.0, 14.0, 100.0, 10.1, 14.1, 101.0, 10.05]);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m.iter().map(|m| m.passes).collect::<Vec<_>>(), [3, 2, 2]);
        let total: f64 = m.iter().map(|m| m.share).sum();
        assert!((total - 1.0).abs() < 1e-12);
    }

    #[test]
    fn too_few_or_bad_rates_give_nothing() {
        assert!(detect(&[]).is_empty());
        assert!(detect(&[1.0, 100.0, 1.0]).is_empty());
        assert!(detect(&[1.0, 1.0, 0.0, 100.0, 100.0]).is_empty());
    }
}
