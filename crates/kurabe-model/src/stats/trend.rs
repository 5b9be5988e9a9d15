//! Memory growth over work done: is the floor rising (a leak) or flat?
//!
//! A soak run yields samples of (requests served, Σ PSS bytes). Garbage
//! collectors and allocators make the raw series a sawtooth, so the leak
//! signal is the *floor*: the minimum of each window of consecutive samples
//! (what is left after a collection). This module fits a line through the
//! floors twice, by ordinary least squares and by Theil–Sen (median of
//! pairwise slopes, robust to a few odd windows), each with a 95 %
//! interval, and calls the series **growing** only when the robust slope's
//! interval lies above zero, the growth is larger than the noise band of
//! the level, and the last half of the series is still growing (a cache
//! that fills up and then plateaus is not a leak).
//!
//! Across variants the per-run slopes are compared by their *difference*
//! (candidate − baseline, bytes/request, Welch interval, verdict against an
//! absolute band), not by the ratio of geometric means the other metrics
//! get: a flat slope is ~0 or negative, where a ratio does not exist. See
//! [`super::difference`] for the reasoning and [`difference_scale`] for the
//! metrics and their default bands. When every run on both sides grows by
//! more than the band (two leaks), the ratio is given as well.
//!
//! Pure: no I/O, no clock; the same samples always give the same answer.

use serde::{Deserialize, Serialize};

use super::student_t;

/// A metric compared on the difference scale, with its default band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DifferenceScale {
    /// Metric name.
    pub metric: &'static str,
    /// Unit text for phrases (`B/request`).
    pub unit: &'static str,
    /// Default noise band ±δ in that unit.
    pub band: f64,
}

/// Default band of the slope comparison: ±16 bytes/request. A leak of one
/// heap object per request costs at least glibc's smallest chunk, 32 bytes
/// on 64-bit, so any such leak clears it, while the per-run slopes of a
/// server that does not leak scatter by ±2 B/request (10 runs of
/// `kurabe serve`: −1.6 to +2.6); 16 leaves room for allocator
/// bookkeeping that differs between two non-leaking builds.
pub const SLOPE_BAND_BYTES_PER_REQUEST: f64 = 16.0;

/// Default band of the growth-rate comparison: ±10 MB/hour (240 MB a day,
/// about what makes a small VPS need a restart every few days).
pub const GROWTH_BAND_MB_PER_HOUR: f64 = 10.0;

const DIFFERENCE_METRICS: &[DifferenceScale] = &[
    DifferenceScale {
        metric: "pss_slope_bytes_per_request",
        unit: "B/request",
        band: SLOPE_BAND_BYTES_PER_REQUEST,
    },
    DifferenceScale {
        metric: "pss_growth_mb_per_hour",
        unit: "MB/hour",
        band: GROWTH_BAND_MB_PER_HOUR,
    },
];

/// The difference scale of `metric` if it is compared by difference of
/// means (its values may be zero or negative), `None` for ratio metrics.
pub fn difference_scale(metric: &str) -> Option<&'static DifferenceScale> {
    DIFFERENCE_METRICS.iter().find(|d| d.metric == metric)
}

/// One sample of a soak run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Work done so far (requests served), the x axis.
    pub x: f64,
    /// Memory at that moment (Σ PSS bytes), the y axis.
    pub y: f64,
}

/// A fitted line `y = intercept + slope·x` with a 95 % interval on the slope.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LineFit {
    /// Slope (bytes per request for a soak run).
    pub slope: f64,
    /// Value of the line at x = 0.
    pub intercept: f64,
    /// Lower end of the 95 % interval of the slope.
    pub slope_low: f64,
    /// Upper end of the 95 % interval of the slope.
    pub slope_high: f64,
    /// Points the fit used.
    pub points: usize,
}

/// Whether memory keeps growing with work done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrendVerdict {
    /// The floor rises, and still rises in the last half: a leak.
    Growing,
    /// No growth beyond noise, or growth that stopped (a plateau).
    Flat,
    /// Too few samples to tell.
    Unknown,
}

impl TrendVerdict {
    /// Lowercase word for tables and the run record.
    pub fn as_str(self) -> &'static str {
        match self {
            TrendVerdict::Growing => "growing",
            TrendVerdict::Flat => "flat",
            TrendVerdict::Unknown => "unknown",
        }
    }
}

/// Knobs of [`analyse`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrendConfig {
    /// Number of windows the series is cut into for the floor (default 20).
    pub windows: usize,
    /// Growth over the whole series smaller than this fraction of the
    /// level is noise, whatever the interval says (default 2 %).
    pub noise_band: f64,
    /// Growth smaller than this many bytes is noise too (default 256 KiB:
    /// page-granular PSS moves in such steps for reasons unrelated to leaks).
    pub min_growth_bytes: f64,
}

impl Default for TrendConfig {
    fn default() -> Self {
        TrendConfig {
            windows: 20,
            noise_band: 0.02,
            min_growth_bytes: 256.0 * 1024.0,
        }
    }
}

/// What [`analyse`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// The per-window floors the fits use.
    pub floor: Vec<Point>,
    /// Least-squares fit of the floor.
    pub least_squares: LineFit,
    /// Theil–Sen fit of the floor (the one the verdict uses).
    pub theil_sen: LineFit,
    /// Theil–Sen fit of the last half of the floor (the plateau check).
    pub last_half: Option<LineFit>,
    /// Growing or flat.
    pub verdict: TrendVerdict,
}

impl Trend {
    /// Robust slope: bytes per unit of x (bytes/request).
    pub fn bytes_per_request(&self) -> f64 {
        self.theil_sen.slope
    }

    /// Growth per hour at `x_per_second` units of x per second (requests/s), in MB (10⁶ bytes).
    pub fn mb_per_hour(&self, x_per_second: f64) -> f64 {
        self.theil_sen.slope * x_per_second * 3600.0 / 1e6
    }
}

/// Minimum of each of `windows` consecutive, equally long runs of points,
/// placed at the x of that minimum. Fewer points than windows: every point.
pub fn window_floor(points: &[Point], windows: usize) -> Vec<Point> {
    let windows = windows.max(1);
    if points.len() <= windows {
        return points.to_vec();
    }
    let n = points.len();
    (0..windows)
        .filter_map(|w| {
            let chunk = &points[w * n / windows..(w + 1) * n / windows];
            chunk.iter().copied().min_by(|a, b| a.y.total_cmp(&b.y))
        })
        .collect()
}

/// Ordinary least squares with the usual t interval on the slope; `None`
/// with fewer than 3 points or no spread in x.
pub fn least_squares(points: &[Point]) -> Option<LineFit> {
    let n = points.len();
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let mx = points.iter().map(|p| p.x).sum::<f64>() / nf;
    let my = points.iter().map(|p| p.y).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|p| (p.x - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.x - mx) * (p.y - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let sse: f64 = points
        .iter()
        .map(|p| (p.y - intercept - slope * p.x).powi(2))
        .sum();
    let se = (sse / (nf - 2.0) / sxx).sqrt();
    let t = student_t::quantile(0.975, nf - 2.0);
    Some(LineFit {
        slope,
        intercept,
        slope_low: slope - t * se,
        slope_high: slope + t * se,
        points: n,
    })
}

/// Theil–Sen: the median of all pairwise slopes, with Sen's
/// distribution-free 95 % interval (ranks of the sorted slopes from
/// Kendall's S variance). `None` with fewer than 3 points or no spread in x.
pub fn theil_sen(points: &[Point]) -> Option<LineFit> {
    let n = points.len();
    if n < 3 {
        return None;
    }
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let dx = points[j].x - points[i].x;
            if dx != 0.0 {
                slopes.push((points[j].y - points[i].y) / dx);
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let slope = median_sorted(&slopes);
    let mut residuals: Vec<f64> = points.iter().map(|p| p.y - slope * p.x).collect();
    residuals.sort_by(f64::total_cmp);
    let intercept = median_sorted(&residuals);
    // Sen (1968): C = z · sqrt(Var S), Var S = n(n−1)(2n+5)/18.
    let nf = n as f64;
    let c = 1.959_964 * (nf * (nf - 1.0) * (2.0 * nf + 5.0) / 18.0).sqrt();
    let m = slopes.len() as f64;
    let lo_rank = ((m - c) / 2.0).floor().max(0.0) as usize;
    let hi_rank = (((m + c) / 2.0).ceil() as usize).min(slopes.len() - 1);
    Some(LineFit {
        slope,
        intercept,
        slope_low: slopes[lo_rank.min(slopes.len() - 1)],
        slope_high: slopes[hi_rank],
        points: n,
    })
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// True when `fit` says the floor rises by more than noise over `span` of x
/// from a level of `level` bytes.
fn rising(fit: &LineFit, span: f64, level: f64, cfg: &TrendConfig) -> bool {
    let growth = fit.slope * span;
    fit.slope_low > 0.0 && growth > (cfg.noise_band * level.abs()).max(cfg.min_growth_bytes)
}

/// Floor, both fits and the verdict of a soak series (warm-up already
/// dropped). `None` with fewer than 3 points.
pub fn analyse(points: &[Point], cfg: &TrendConfig) -> Option<Trend> {
    let floor = window_floor(points, cfg.windows);
    let least_squares = least_squares(&floor)?;
    let theil_sen = theil_sen(&floor)?;
    let half = &floor[floor.len() / 2..];
    let last_half = theil_sen_if_enough(half);
    let level = floor.iter().map(|p| p.y).sum::<f64>() / floor.len() as f64;
    let span = |f: &[Point]| f.last().map_or(0.0, |l| l.x) - f.first().map_or(0.0, |p| p.x);
    let verdict = if floor.len() < 6 {
        TrendVerdict::Unknown
    } else if !rising(&theil_sen, span(&floor), level, cfg) {
        TrendVerdict::Flat
    } else {
        // A leak keeps its rate: the last half must rise too, at a rate
        // the whole-series fit would not call noise.
        match &last_half {
            Some(h) if rising(h, span(half), level, cfg) => TrendVerdict::Growing,
            _ => TrendVerdict::Flat,
        }
    };
    Some(Trend {
        floor,
        least_squares,
        theil_sen,
        last_half,
        verdict,
    })
}

fn theil_sen_if_enough(points: &[Point]) -> Option<LineFit> {
    if points.len() >= 3 {
        theil_sen(points)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [-1, 1) (xorshift), so tests need no RNG crate.
    fn noise(seed: &mut u64) -> f64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        (*seed >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    fn series(n: usize, mut f: impl FnMut(f64) -> f64) -> Vec<Point> {
        (0..n)
            .map(|i| {
                let x = i as f64 * 100.0;
                Point { x, y: f(x) }
            })
            .collect()
    }

    const BASE: f64 = 20e6;

    #[test]
    fn linear_growth_is_growing_with_the_right_slope() {
        let mut s = 1;
        let pts = series(400, |x| BASE + 1024.0 * x + 50_000.0 * noise(&mut s));
        let t = analyse(&pts, &TrendConfig::default()).unwrap();
        assert_eq!(t.verdict, TrendVerdict::Growing);
        assert!((t.bytes_per_request() - 1024.0).abs() < 30.0, "{t:?}");
        assert!(t.theil_sen.slope_low <= 1024.0 && 1024.0 <= t.theil_sen.slope_high + 30.0);
        assert!((t.least_squares.slope - 1024.0).abs() < 30.0);
        // 1000 req/s · 3600 s · 1024 B ≈ 3686 MB/h.
        assert!((t.mb_per_hour(1000.0) - 3686.4).abs() < 120.0);
    }

    #[test]
    fn exact_line_has_exact_fits() {
        let pts = series(10, |x| 5.0 + 2.0 * x);
        let ls = least_squares(&pts).unwrap();
        let ts = theil_sen(&pts).unwrap();
        assert!((ls.slope - 2.0).abs() < 1e-12 && (ls.intercept - 5.0).abs() < 1e-6);
        assert!((ts.slope - 2.0).abs() < 1e-12 && (ts.intercept - 5.0).abs() < 1e-6);
        assert!((ls.slope_high - ls.slope_low).abs() < 1e-9);
    }

    #[test]
    fn sawtooth_with_growing_floor_is_growing_at_the_floor_rate() {
        // GC-like: every 37 samples the heap drops back to a floor that rises 200 B/req;
        // in between it climbs steeply (garbage), which the raw fit would overstate.
        let pts = series(740, |x| {
            let i = (x / 100.0) as usize;
            BASE + 200.0 * x + (i % 37) as f64 * 300_000.0
        });
        let t = analyse(&pts, &TrendConfig::default()).unwrap();
        assert_eq!(t.verdict, TrendVerdict::Growing);
        assert!((t.bytes_per_request() - 200.0).abs() < 20.0, "{t:?}");
    }

    #[test]
    fn sawtooth_with_constant_floor_is_flat() {
        let pts = series(740, |x| {
            let i = (x / 100.0) as usize;
            BASE + (i % 37) as f64 * 300_000.0
        });
        let t = analyse(&pts, &TrendConfig::default()).unwrap();
        assert_eq!(t.verdict, TrendVerdict::Flat, "{t:?}");
    }

    #[test]
    fn plateau_is_not_a_leak() {
        // A cache that fills over the first third, then stays full.
        let mut s = 7;
        let pts = series(600, |x| {
            BASE + 1000.0 * x.min(20_000.0) + 20_000.0 * noise(&mut s)
        });
        let t = analyse(&pts, &TrendConfig::default()).unwrap();
        assert!(t.theil_sen.slope > 0.0, "the whole-series fit sees growth");
        assert_eq!(t.verdict, TrendVerdict::Flat, "{t:?}");
    }

    #[test]
    fn noise_only_is_flat_for_many_seeds() {
        for seed in 1..=50u64 {
            let mut s = seed;
            let pts = series(300, |_| BASE + 400_000.0 * noise(&mut s));
            let t = analyse(&pts, &TrendConfig::default()).unwrap();
            assert_eq!(t.verdict, TrendVerdict::Flat, "seed {seed}: {t:?}");
        }
    }

    #[test]
    fn small_slope_below_noise_band_is_flat() {
        // 1 byte/request over 30 000 requests = 30 kB on 20 MB: real but negligible.
        let pts = series(300, |x| BASE + x);
        let t = analyse(&pts, &TrendConfig::default()).unwrap();
        assert!(t.theil_sen.slope_low > 0.0);
        assert_eq!(t.verdict, TrendVerdict::Flat);
    }

    #[test]
    fn slope_metrics_are_compared_by_difference() {
        let s = difference_scale("pss_slope_bytes_per_request").unwrap();
        assert_eq!((s.unit, s.band), ("B/request", 16.0));
        assert_eq!(
            difference_scale("pss_growth_mb_per_hour").unwrap().band,
            10.0
        );
        assert!(difference_scale("pss_peak_bytes").is_none());
        assert!(difference_scale("pss_growing").is_none());
    }

    #[test]
    fn too_few_points() {
        assert!(analyse(&series(2, |x| x), &TrendConfig::default()).is_none());
        let t = analyse(&series(4, |x| x * 1e6), &TrendConfig::default()).unwrap();
        assert_eq!(t.verdict, TrendVerdict::Unknown);
        assert!(theil_sen(&[Point { x: 1.0, y: 1.0 }; 5]).is_none());
        assert!(least_squares(&[Point { x: 1.0, y: 1.0 }; 5]).is_none());
    }

    #[test]
    fn floor_takes_each_window_minimum() {
        let pts = series(10, |x| {
            if (x / 100.0) as usize % 2 == 0 {
                10.0
            } else {
                1.0
            }
        });
        let f = window_floor(&pts, 5);
        assert_eq!(f.len(), 5);
        assert!(f.iter().all(|p| p.y == 1.0));
        assert_eq!(f[0].x, 100.0);
        assert_eq!(window_floor(&pts, 20).len(), 10);
    }
}
