//! What a distributed run asks of the fleet ([`RunSpec`], stored as JSON in
//! `fleet_runs.spec`) and how it is divided among the workers ([`Share`],
//! stored in `fleet_assignments.share`). Pure data and arithmetic, no I/O.

use std::time::Duration;

use kurabe_http::client::{Engine, LoadConfig, StopCondition, Target};
use serde::{Deserialize, Serialize};

use crate::FleetError;

/// One load test as the coordinator was asked to run it, in total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Target URL.
    pub url: String,
    /// Request method.
    pub method: String,
    /// Extra request headers, in order.
    pub headers: Vec<(String, String)>,
    /// Request body, if any.
    pub body: Option<Vec<u8>>,
    /// Total concurrent connections over all workers (`-c`).
    pub concurrency: u32,
    /// Total requests over all workers (`-n`), if the run is bounded by a count.
    pub requests: Option<u64>,
    /// Measured duration (`-t`), milliseconds, if the run is bounded by time.
    pub duration_ms: Option<u64>,
    /// Total open-model arrival rate over all workers (`--rate`), requests/s.
    pub rate: Option<f64>,
    /// Warm-up before measuring, milliseconds.
    pub warmup_ms: Option<u64>,
    /// Per-request timeout, milliseconds.
    pub timeout_ms: u64,
    /// HTTP keep-alive.
    pub keep_alive: bool,
    /// Requests in flight per connection.
    pub pipeline: u32,
    /// Speak HTTP/2 (h2c or ALPN h2).
    #[serde(default)]
    pub http2: bool,
    /// HTTP/2 streams per connection.
    #[serde(default = "one")]
    pub streams: u32,
    /// Count responses of differing length as failures (ab without `-l`).
    pub check_length: bool,
    /// Skip TLS certificate verification.
    pub insecure: bool,
    /// The client I/O engine every worker uses (`--engine`: `auto`, `epoll`
    /// or `io_uring`); runs stored before it existed used `auto`.
    #[serde(default = "auto")]
    pub engine: String,
}

fn one() -> u32 {
    1
}

fn auto() -> String {
    Engine::Auto.name().to_owned()
}

pub use kurabe_model::fleet::Share;

/// `total` split in `n` parts that differ by at most one and add up to `total`.
fn split_count(total: u64, n: u32, i: u32) -> u64 {
    total / u64::from(n) + u64::from(u64::from(i) < total % u64::from(n))
}

impl RunSpec {
    /// A single client's load as the fleet's run: everything but what only
    /// one host can do (stop every host at the first failure, set up this
    /// host's sockets, proxy or TLS client certificate).
    pub fn from_load(load: &LoadConfig) -> Result<RunSpec, FleetError> {
        if load.abort_on_error {
            return Err(FleetError::Invalid(
                "--abort-on-error cannot stop other hosts; leave it out with --workers".into(),
            ));
        }
        let s = &load.setup;
        if s.socket_buffer.is_some()
            || s.bind.is_some()
            || s.proxy.is_some()
            || s.tls != Default::default()
        {
            return Err(FleetError::Invalid(
                "-b, -B, -X, -E, -f and -Z set up this host's connections; leave them out with --workers".into(),
            ));
        }
        let (requests, duration) = load.stop.limits();
        let ms = |d: Duration| d.as_millis() as u64;
        Ok(RunSpec {
            url: load.target.url(),
            method: load.method.clone(),
            headers: load.headers.clone(),
            body: load.body.clone(),
            concurrency: load.concurrency,
            requests,
            duration_ms: duration.map(ms),
            rate: load.rate,
            warmup_ms: load.warmup.map(ms),
            timeout_ms: ms(load.timeout),
            keep_alive: load.keep_alive,
            pipeline: load.pipeline,
            http2: load.http2,
            streams: load.streams,
            check_length: load.check_length,
            insecure: load.insecure,
            engine: load.engine.name().to_owned(),
        })
    }

    /// Divide the run among `workers` workers: connections and requests as
    /// evenly as integers allow (the parts add up exactly), the rate in equal parts.
    pub fn split(&self, workers: u32) -> Result<Vec<Share>, FleetError> {
        if workers == 0 {
            return Err(FleetError::Invalid(
                "--workers 0: give at least 1 worker".into(),
            ));
        }
        if self.concurrency < workers {
            return Err(FleetError::Invalid(format!(
                "-c {} is less than --workers {workers}: every worker needs at least one connection; raise -c",
                self.concurrency
            )));
        }
        if let Some(n) = self.requests {
            if n < u64::from(self.concurrency) {
                return Err(FleetError::Invalid(format!(
                    "-n {n} is less than -c {}: raise -n",
                    self.concurrency
                )));
            }
        }
        Ok((0..workers)
            .map(|slot| Share {
                slot,
                concurrency: split_count(u64::from(self.concurrency), workers, slot) as u32,
                requests: self.requests.map(|n| split_count(n, workers, slot)),
                rate: self.rate.map(|r| r / f64::from(workers)),
            })
            .collect())
    }

    /// The load generator's configuration for one share, with `threads`
    /// client threads (at most the share's connections).
    pub fn load_config(&self, share: &Share, threads: u32) -> Result<LoadConfig, FleetError> {
        let target = Target::parse(&self.url).map_err(|e| FleetError::Invalid(e.to_string()))?;
        let duration = self.duration_ms.map(Duration::from_millis);
        let stop = match (share.requests, duration) {
            (Some(n), Some(d)) => StopCondition::RequestsOrDuration(n, d),
            (Some(n), None) => StopCondition::Requests(n),
            (None, Some(d)) => StopCondition::Duration(d),
            (None, None) => {
                return Err(FleetError::Invalid(
                    "a distributed run needs -n or -t".into(),
                ))
            }
        };
        Ok(LoadConfig {
            target,
            method: self.method.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            concurrency: share.concurrency,
            threads: threads.clamp(1, share.concurrency.max(1)),
            keep_alive: self.keep_alive,
            pipeline: self.pipeline,
            http2: self.http2,
            streams: self.streams,
            stop,
            rate: share.rate,
            warmup: self.warmup_ms.map(Duration::from_millis),
            timeout: Duration::from_millis(self.timeout_ms),
            abort_on_error: false,
            check_length: self.check_length,
            insecure: self.insecure,
            gnuplot_file: None,
            setup: Default::default(),
            engine: Engine::parse(&self.engine).ok_or_else(|| {
                FleetError::Invalid(format!(
                    "engine '{}': this worker knows auto, epoll and io_uring; upgrade it",
                    self.engine
                ))
            })?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec() -> RunSpec {
        RunSpec {
            url: "http://10.77.0.2:8080/".into(),
            method: "GET".into(),
            headers: vec![],
            body: None,
            concurrency: 10,
            requests: Some(1001),
            duration_ms: None,
            rate: Some(300.0),
            warmup_ms: None,
            timeout_ms: 30_000,
            keep_alive: true,
            pipeline: 1,
            http2: false,
            streams: 1,
            check_length: true,
            insecure: false,
            engine: "io_uring".into(),
        }
    }

    #[test]
    fn shares_add_up_exactly() {
        let shares = spec().split(3).unwrap();
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
    fn impossible_splits_name_the_flag() {
        let e = spec().split(11).unwrap_err().to_string();
        assert!(e.contains("raise -c"), "{e}");
        assert!(spec()
            .split(0)
            .unwrap_err()
            .to_string()
            .contains("--workers 0"));
    }

    #[test]
    fn load_config_follows_the_share() {
        let s = spec();
        let share = s.split(3).unwrap()[1];
        let cfg = s.load_config(&share, 8).unwrap();
        assert_eq!(cfg.concurrency, 3);
        assert_eq!(cfg.threads, 3);
        assert_eq!(cfg.stop, StopCondition::Requests(334));
        assert_eq!(cfg.rate, Some(100.0));
        assert!(!cfg.http2);
        assert_eq!(cfg.engine, Engine::IoUring);
    }

    #[test]
    fn a_single_client_load_becomes_the_same_spec_and_old_specs_read_as_auto() {
        let s = spec();
        let cfg = s.load_config(&s.split(1).unwrap()[0], 1).unwrap();
        assert_eq!(RunSpec::from_load(&cfg).unwrap(), s);
        let mut old = serde_json::to_value(spec()).unwrap();
        old.as_object_mut().unwrap().remove("engine");
        let old: RunSpec = serde_json::from_value(old).unwrap();
        assert_eq!(old.engine, "auto");
        let mut abort = cfg;
        abort.abort_on_error = true;
        let e = RunSpec::from_load(&abort).unwrap_err().to_string();
        assert!(e.contains("--abort-on-error"), "{e}");
    }

    #[test]
    fn http2_and_streams_reach_every_share_and_old_specs_read_as_http11() {
        let mut s = spec();
        s.http2 = true;
        s.streams = 10;
        let share = s.split(2).unwrap()[0];
        let cfg = s.load_config(&share, 1).unwrap();
        assert!(cfg.http2);
        assert_eq!(cfg.streams, 10);
        let mut old = serde_json::to_value(spec()).unwrap();
        old.as_object_mut().unwrap().remove("http2");
        old.as_object_mut().unwrap().remove("streams");
        let back: RunSpec = serde_json::from_value(old).unwrap();
        assert!(!back.http2);
        assert_eq!(back.streams, 1);
    }
}
