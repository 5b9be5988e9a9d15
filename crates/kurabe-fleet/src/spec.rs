//! How a distributed run is divided among the workers: the whole load is
//! one [`LoadSpec`] (stored as JSON in `fleet_runs.spec`, the body inline
//! as `body_base64`), each worker's part a [`Share`] (stored in
//! `fleet_assignments.share`) that [`share_spec`] turns back into the
//! `LoadSpec` the worker runs. Pure data and arithmetic, no I/O.
//!
//! Owns the split (connections, requests and rate, the parts adding up
//! exactly) and nothing else: every other field reaches every worker as
//! the user gave it, so a new load option needs no line here. The one
//! exception is `thresholds`: they are judged on the merged run by the
//! coordinator, never on a share (whose rate is a part of the whole).

use kurabe_model::load::LoadSpec;

use crate::FleetError;

pub use kurabe_model::fleet::Share;

/// `total` split in `n` parts that differ by at most one and add up to `total`.
fn split_count(total: u64, n: u32, i: u32) -> u64 {
    total / u64::from(n) + u64::from(u64::from(i) < total % u64::from(n))
}

/// Divide `spec` among `workers` workers: connections and requests as
/// evenly as integers allow (the parts add up exactly), the rate and rate
/// stages' targets in equal parts. A distributed run must know when to stop (`requests` or `duration`).
pub fn split(spec: &LoadSpec, workers: u32) -> Result<Vec<Share>, FleetError> {
    if workers == 0 {
        return Err(FleetError::Invalid(
            "--workers 0: give at least 1 worker".into(),
        ));
    }
    if spec.requests.is_none() && spec.duration.is_none() && spec.stages.is_empty() {
        return Err(FleetError::Invalid(
            "a distributed run needs -n or -t: it must know when to stop".into(),
        ));
    }
    if spec.concurrency < workers {
        return Err(FleetError::Invalid(format!(
            "-c {} is less than --workers {workers}: every worker needs at least one connection; raise -c",
            spec.concurrency
        )));
    }
    if let Some(n) = spec.requests {
        if n < u64::from(spec.concurrency) {
            return Err(FleetError::Invalid(format!(
                "-n {n} is less than -c {}: raise -n",
                spec.concurrency
            )));
        }
    }
    Ok((0..workers)
        .map(|slot| Share {
            slot,
            concurrency: split_count(u64::from(spec.concurrency), workers, slot) as u32,
            requests: spec.requests.map(|n| split_count(n, workers, slot)),
            rate: spec.rate.map(|r| r / f64::from(workers)),
            stage_part: (!spec.stages.is_empty()).then(|| 1.0 / f64::from(workers)),
        })
        .collect())
}

/// The load one worker runs for `share` of `whole`: the share's
/// connections, requests and rate (of rate stages, its part of every
/// stage's target), everything else as given. Client
/// threads are the run's `threads` when the user gave them (`--threads`),
/// else `worker_threads` (the worker's own `--threads` or its CPUs), and
/// never more than the share's connections. No thresholds: the
/// coordinator judges them on the merged histograms.
pub fn share_spec(whole: &LoadSpec, share: &Share, worker_threads: u32) -> LoadSpec {
    let threads = whole.threads.unwrap_or(worker_threads);
    LoadSpec {
        concurrency: share.concurrency,
        requests: share.requests,
        rate: share.rate,
        stages: whole
            .stages
            .iter()
            .map(|st| kurabe_model::stage::StageSpec {
                target: st.target * share.stage_part.unwrap_or(1.0),
                ..*st
            })
            .collect(),
        threads: Some(threads.clamp(1, share.concurrency.max(1))),
        thresholds: Vec::new(),
        ..whole.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::load::{Engine, Header};

    pub(crate) fn spec() -> LoadSpec {
        LoadSpec {
            concurrency: 10,
            requests: Some(1001),
            rate: Some(300.0),
            keep_alive: true,
            engine: Engine::IoUring,
            ..LoadSpec::for_url("http://10.77.0.2:8080/")
        }
    }

    #[test]
    fn shares_add_up_exactly() {
        let shares = split(&spec(), 3).unwrap();
        assert_eq!(
            shares.iter().map(|s| s.concurrency).collect::<Vec<_>>(),
            [4, 3, 3]
        );
        assert_eq!(
            shares.iter().map(|s| s.requests.unwrap()).sum::<u64>(),
            1001
        );
        assert!(shares.iter().all(|s| s.rate == Some(100.0)));
        assert_eq!(shares[2].slot, 2);
    }

    #[test]
    fn rate_stages_are_split_in_equal_parts_that_add_up_to_the_ramp() {
        use kurabe_model::plan::HumanDuration;
        use kurabe_model::stage::StageSpec;
        let stage = |s: u64, target: f64| StageSpec {
            duration: HumanDuration(std::time::Duration::from_secs(s)),
            target,
        };
        let staged = LoadSpec {
            requests: None,
            rate: None,
            stages: vec![stage(30, 300.0), stage(60, 300.0), stage(30, 0.0)],
            ..spec()
        };
        let shares = split(&staged, 3).expect("stages set the length");
        let specs: Vec<LoadSpec> = shares.iter().map(|s| share_spec(&staged, s, 1)).collect();
        for i in 0..3 {
            let sum: f64 = specs.iter().map(|w| w.stages[i].target).sum();
            assert!(
                (sum - staged.stages[i].target).abs() < 1e-9,
                "stage {i}: {sum}"
            );
            assert!(specs
                .iter()
                .all(|w| w.stages[i].duration == staged.stages[i].duration));
        }
        assert!(split(&spec(), 3)
            .unwrap()
            .iter()
            .all(|s| s.stage_part.is_none()));
    }

    #[test]
    fn impossible_splits_name_the_flag() {
        let e = split(&spec(), 11).unwrap_err().to_string();
        assert!(e.contains("raise -c"), "{e}");
        let e = split(&spec(), 0).unwrap_err().to_string();
        assert!(e.contains("--workers 0"), "{e}");
        let unbounded = LoadSpec {
            requests: None,
            ..spec()
        };
        let e = split(&unbounded, 2).unwrap_err().to_string();
        assert!(e.contains("-n or -t"), "{e}");
    }

    #[test]
    fn a_share_is_the_whole_spec_with_its_part_of_the_load() {
        let mut s = spec();
        s.headers = vec![Header::new("X-A", "1")];
        s.proxy = Some("127.0.0.1:3128".into());
        s.abort_on_error = true;
        s.thresholds = vec!["rate>=300".into()];
        let share = split(&s, 3).unwrap()[1];
        let mine = share_spec(&s, &share, 8);
        assert!(mine.thresholds.is_empty(), "a share judges no threshold");
        assert_eq!(mine.concurrency, 3);
        assert_eq!(mine.threads, Some(3));
        assert_eq!(mine.requests, Some(334));
        assert_eq!(mine.rate, Some(100.0));
        let back = LoadSpec {
            concurrency: s.concurrency,
            requests: s.requests,
            rate: s.rate,
            threads: None,
            thresholds: s.thresholds.clone(),
            ..mine
        };
        assert_eq!(back, s, "every other field reaches the worker as given");
        s.threads = Some(2);
        assert_eq!(share_spec(&s, &share, 8).threads, Some(2));
    }
}
