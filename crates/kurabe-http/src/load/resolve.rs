//! A [`LoadSpec`] checked and resolved into the configuration the workers
//! run: every rule that ties the settings together (`concurrency` against
//! `requests`, pipelining needs keep-alive, streams need HTTP/2, TLS
//! options need https://, a proxy speaks HTTP/1.1) and every default the
//! spec leaves open (threads, timeout, the method a body implies). The
//! rules that need no target of a request set ([`early`]) are checked
//! before the set is read, which can take long (a large file's scan,
//! standard input until its producer ends); the rest once it is. A
//! replay's own settings (`crate::source::replay::read`) are checked with them, before
//! its log is read; the log's requests and times then become the run's
//! requests and its [`Arrival`], the one shape every kind of arrival
//! (closed, a rate, rate or connection stages, a recording) resolves to.
//!
//! Owns those rules and their messages, one line naming the setting as
//! the user wrote it ([`Names`]: the flag, or the plan key) and the fix,
//! never repeating an `auth` or `proxy_auth` password. Must not know
//! where a spec came from beyond those names.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use kurabe_model::load::LoadSpec;
use kurabe_model::replay::ReplaySpec;
use kurabe_model::stage::{SpecTargetError, Stages};

use super::error::SpecError;
use crate::client::{
    self, Arrival, Load, Proxy, Ramp, Requests, Setup, StopCondition, TlsOptions, TlsProtocol,
};
use crate::request::{Names, RequestSpec, DEFAULT_TIMEOUT};
use crate::tags::{LabelError, Labels};
use crate::target::Target;

/// `Err(SpecError::Invalid(…))` with a formatted message.
macro_rules! invalid {
    ($($t:tt)*) => { return Err(SpecError::Invalid(format!($($t)*))) };
}

/// The most requests per second one client process (`kurabe http`, or
/// each `kurabe worker` of a fleet) is asked to send: a rate or a stage's
/// target above it is refused before any request. No machine sends 10⁸
/// requests a second from one process (a send costs a few µs of CPU),
/// and a schedule far beyond reach only makes the run's own accounting
/// of what it could not send the work.
pub const MAX_RATE_PER_CLIENT: f64 = 1e8;

/// The most requests pipelined in one write per connection: each
/// connection holds that many copies of the request (4e9 of them asked
/// for 320 GB and aborted).
pub const MAX_PIPELINE: u32 = 1024;

/// Check `spec` and resolve it into a load on a machine with `ncpus` CPUs
/// (the default thread count leaves a loopback server half of them),
/// shared by `clients` client processes (a fleet's workers; 1 here);
/// errors call each setting what `names` says. Once `stop` is set, the
/// reading of a set or a log gives up within a block or a batch of lines
/// ([`SpecError::Stopped`]).
pub(crate) fn resolve(
    spec: &LoadSpec,
    n: &Names,
    (ncpus, clients): (u32, u32),
    stop: &Arc<AtomicBool>,
) -> Result<Load, SpecError> {
    let stopped = |e| match stop.load(Ordering::Relaxed) {
        true => SpecError::Stopped,
        false => e,
    };
    within_reach(spec, n, clients)?;
    let mut cfg = match &spec.replay {
        Some(r) => resolve_replay(spec, r, n, (ncpus, stop)),
        None => resolve_load(spec, n, (ncpus, stop)),
    }
    .map_err(stopped)?;
    // Once the names are known: a set's, a replay's, the one URL's (the
    // text was parsed before, in `early`).
    cfg.thresholds = super::gate::thresholds(spec, n, &cfg.labels)?;
    Ok(cfg)
}

/// Every check of `spec` that needs neither its set nor its replay's
/// log, made before either is read ([`early`], [`crate::source::replay::read::early`]).
pub(crate) fn check_early(spec: &LoadSpec, n: &Names, clients: u32) -> Result<(), SpecError> {
    within_reach(spec, n, clients)?;
    if let Some(r) = &spec.replay {
        crate::source::replay::read::early(spec, r, n)?;
    }
    early(spec, n).map(drop)
}

/// The rate and every rate stage's target within what `clients` client
/// processes could ever send ([`MAX_RATE_PER_CLIENT`] each).
fn within_reach(spec: &LoadSpec, n: &Names, clients: u32) -> Result<(), SpecError> {
    use kurabe_model::stage::Executor;
    let most = MAX_RATE_PER_CLIENT * f64::from(clients.max(1));
    let rates = spec.executor != Some(Executor::RampingVus);
    let mut stage_targets = spec.stages.iter().filter(|_| rates).map(|s| s.target);
    let over = |r: &f64| *r > most;
    let (what, r) = match (spec.rate.filter(over), stage_targets.find(over)) {
        (Some(r), _) => (n.rate.to_owned(), r),
        (None, Some(r)) => (format!("{} target", n.stages), r),
        (None, None) => return Ok(()),
    };
    let per = match clients {
        0 | 1 => "one client process sends at most 1e8 requests/s".to_owned(),
        k => format!("{k} workers send at most {most:e} requests/s, 1e8 each"),
    };
    invalid!("{what} {r:e}: more than a run can ever send ({per}); lower it, or spread the load over more client processes (--workers)")
}

/// [`resolve`] of a load that is not a replay: [`early`] first, then the
/// set read (given up once `stop` is set) and what needs it.
fn resolve_load(
    spec: &LoadSpec,
    n: &Names,
    (ncpus, stop): (u32, &Arc<AtomicBool>),
) -> Result<Load, SpecError> {
    let Early {
        mut labels,
        staging,
    } = early(spec, n)?;
    let request = request_spec(spec, n)?.build(n)?;
    let set = crate::source::set::read::read(spec, n, (&request.headers, stop), &mut labels)?;
    let (target, requests) = match set {
        Some(set) => (set.set().expect("a set").origin(), set),
        None => {
            let target = Target::parse(&url(spec, n)?)?;
            let none: &[&str] = &[];
            let tag = labels.tag(&request.method, &target.url(), None, none);
            debug_assert_eq!(tag, Ok(Default::default()), "the one URL's tag is 0, 0");
            (target, one(request))
        }
    };
    // A set without `requests` or `duration` is sent once (a streamed
    // one: until its feeder's one pass ends).
    let once = match &requests {
        Requests::Set(s) => Some(s.targets.len() as u64),
        Requests::Streamed(..) => Some(crate::source::set::STREAM_ONCE),
        Requests::One { .. } | Requests::Replay(_) => None,
    };
    let timed = timed(spec, &staging);
    let stop = checked_stop(&timed, n, once)?;
    let parts = Parts {
        requests,
        labels,
        target,
        stop,
        concurrency: timed.concurrency,
        arrival: staging.arrival,
    };
    let mut cfg = config(spec, n, ncpus, parts)?;
    // Targets differ in length: ab's rule is one document's.
    cfg.check_length &= once.is_none();
    Ok(cfg)
}

/// [`resolve`] of a replay: its own checks and [`early`], then the log
/// read, each recorded request tagged by the run's names, sent at its
/// recorded times (the whole recording, every loop, within `duration`)
/// on kept-alive connections, no more of them than its sends, responses
/// of any length; the log's reading given up once `stop` is set.
fn resolve_replay(
    spec: &LoadSpec,
    r: &ReplaySpec,
    n: &Names,
    (ncpus, stop): (u32, &Arc<AtomicBool>),
) -> Result<Load, SpecError> {
    let (edits, reader) = crate::source::replay::read::early(spec, r, n)?;
    let Early { mut labels, .. } = early(spec, n)?;
    let replay = crate::source::replay::read::read_with(r, &edits, reader, stop)?;
    let replay = crate::source::replay::read::tagged(replay, &mut labels, n)?;
    let total = replay.total();
    let replay = Arc::new(replay);
    let parts = Parts {
        requests: Requests::Replay(Arc::clone(&replay)),
        labels,
        target: Target::parse(&url(spec, n)?)?,
        stop: match spec.duration {
            None => StopCondition::Requests(total),
            Some(d) => StopCondition::RequestsOrDuration(total, d.0),
        },
        concurrency: spec
            .concurrency
            .min(u32::try_from(total).unwrap_or(u32::MAX)),
        arrival: Arrival::Replay(replay),
    };
    let mut cfg = config(spec, n, ncpus, parts)?;
    (cfg.protocol, cfg.check_length) = (cfg.protocol.kept_alive(), false);
    Ok(cfg)
}

/// What a load's kind decides of its config; the rest is the spec's.
struct Parts {
    requests: Requests,
    labels: Labels,
    target: Target,
    stop: StopCondition,
    concurrency: u32,
    arrival: Arrival,
}

/// The one request of a load that is neither a set nor a replay.
fn one(request: crate::request::Request) -> Requests {
    Requests::One {
        method: request.method,
        headers: request.headers,
        body: request.body.map(crate::request::Body::from),
    }
}

/// The load of `parts` and `spec`'s settings, with the defaults the spec
/// leaves open (threads, timeout).
fn config(spec: &LoadSpec, n: &Names, ncpus: u32, p: Parts) -> Result<Load, SpecError> {
    let loopback = client::is_loopback(&p.target.host);
    let threads = spec
        .threads
        .unwrap_or_else(|| client::default_threads(ncpus, p.concurrency, loopback));
    Ok(Load {
        setup: setup(spec, n, Some(p.target.tls))?,
        target: p.target,
        requests: p.requests,
        concurrency: p.concurrency,
        threads: threads.min(p.concurrency),
        protocol: client::Protocol::of_spec(spec),
        stop: p.stop,
        arrival: p.arrival,
        warmup: spec.warmup.map(|d| d.0).filter(|d| !d.is_zero()),
        timeout: spec.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0),
        abort_on_error: spec.abort_on_error,
        check_length: !spec.variable_length,
        insecure: spec.insecure,
        // An observer's tap, set by the entry.
        gnuplot_file: None,
        engine: spec.engine,
        labels: p.labels,
        thresholds: Vec::new(),
    })
}

/// What [`early`] makes of a spec, for the rest of [`resolve_load`] (and
/// of [`resolve_replay`]).
pub(crate) struct Early {
    /// The run's names and checks, before any request is tagged.
    labels: Labels,
    /// The stages checked.
    staging: Staging,
}

/// Everything [`resolve_load`] checks that needs no request of the set
/// (which can be a long read: a large file scanned, standard input until
/// its producer ends), so a bad setting is refused before the set is
/// read, and a caller that reads the set itself can check first: the
/// connections, the request settings (a body file opened and checked,
/// not read), the names and checks, the set's
/// own settings, the URL, the stages, the stop (a set's size taken as
/// unknown: `-c` against the set's targets waits for them), the
/// connection setup (the TLS options against the scheme only when it is
/// known without the set: the URL's, or the one given with the set) and
/// the thresholds' text (their names wait for the set's).
pub(crate) fn early(spec: &LoadSpec, n: &Names) -> Result<Early, SpecError> {
    check_connections(spec, n)?;
    request_fields(spec, unread_body(spec, n)?).build(n)?;
    let labels = labels(spec, n)?;
    let set = spec.targets.is_some() || spec.targets_text.is_some();
    let origin = crate::source::set::read::check(spec, n)?;
    let https = match set {
        true => origin.map(|t| t.tls),
        false => Some(Target::parse(&url(spec, n)?)?.tls),
    };
    let staging = stages(spec, n)?;
    // A set's or a recording's size is not known yet.
    let unknown = set || spec.replay.is_some();
    checked_stop(&timed(spec, &staging), n, unknown.then_some(u64::MAX))?;
    setup(spec, n, https)?;
    super::gate::parsed(spec, n)?;
    Ok(Early { labels, staging })
}

/// `spec` as the stages time it: they give the run's length (a duration
/// of their own is refused) and, of connections, the connections (the
/// peak stage's).
fn timed<'a>(spec: &'a LoadSpec, staging: &Staging) -> std::borrow::Cow<'a, LoadSpec> {
    let Some(total) = staging.length else {
        return std::borrow::Cow::Borrowed(spec);
    };
    std::borrow::Cow::Owned(LoadSpec {
        duration: Some(kurabe_model::plan::HumanDuration(total)),
        concurrency: staging.peak.unwrap_or(spec.concurrency),
        ..spec.clone()
    })
}

/// What the arrival settings make of a run.
struct Staging {
    /// When its requests go out (of a replay: its times come with the log).
    arrival: Arrival,
    /// The stages' total length, the run's (`None`: no stages).
    length: Option<Duration>,
    /// Connection stages: the peak target, the connections the run opens.
    peak: Option<u32>,
}

/// The rate or the stages checked and what they make of the run; the
/// executor's name checked against the keys given.
fn stages(spec: &LoadSpec, n: &Names) -> Result<Staging, SpecError> {
    check_executor(spec, n)?;
    if spec.stages.is_empty() {
        return Ok(Staging {
            arrival: spec.rate.map_or(Arrival::Closed, Arrival::Constant),
            length: None,
            peak: None,
        });
    }
    let clash = [
        (spec.rate.is_some(), n.rate),
        (spec.duration.is_some(), n.duration),
        (spec.warmup.is_some(), n.warmup),
        (spec.find_rate.is_some(), "--find-rate"),
    ];
    if let Some((_, what)) = clash.iter().find(|(given, _)| *given) {
        invalid!("{what} with {}: the stages give the load and the run's length; make the first stage the warm-up, or drop {what}", n.stages);
    }
    let typed = match Stages::of_spec(&spec.stages, spec.executor) {
        Ok(typed) => typed.expect("stages were given"),
        Err(SpecTargetError::Rate(t)) => invalid!(
            "{} target {t}: a rate is requests per second, 0 or more",
            n.stages
        ),
        Err(SpecTargetError::Connections(t)) => invalid!(
            "{} target {t}: connections are a whole number, 0 or more",
            n.stages
        ),
    };
    let length = Some(typed.total());
    if !typed.is_rate() {
        let peak = connection_peak(spec, &typed, n)?;
        return Ok(Staging {
            arrival: Arrival::Connections(Arc::new(Ramp::new(&typed))),
            length,
            peak: Some(peak),
        });
    }
    Ok(Staging {
        arrival: Arrival::Ramp(rate_ramp(&typed, n)?),
        length,
        peak: None,
    })
}

/// Rate stages that send something: their ramp.
fn rate_ramp(stages: &Stages, n: &Names) -> Result<Arc<Ramp>, SpecError> {
    let total = stages.total();
    let ramp = Ramp::new(stages);
    if total.is_zero() || ramp.mean() * total.as_secs_f64() < 1.0 {
        invalid!(
            "{}: these stages send nothing; give a stage a duration and a target above 0",
            n.stages
        );
    }
    Ok(Arc::new(ramp))
}

/// Connection stages (`ramping-vus`): one target above 0 for a while, no
/// `concurrency` of their own, HTTP/1.1; the peak target.
fn connection_peak(spec: &LoadSpec, stages: &Stages, n: &Names) -> Result<u32, SpecError> {
    if spec.concurrency != 1 {
        invalid!("{} {} with connection stages: the stages give the connections; drop {} (the peak stage is the connections used)", n.concurrency, spec.concurrency, n.concurrency);
    }
    if spec.http2 || spec.http3 {
        let (h, v) = match spec.http3 {
            true => (n.http3, "HTTP/3"),
            false => (n.http2, "HTTP/2"),
        };
        invalid!("{h} with connection stages: {v} runs a fixed number of connections; drop {h} or stage the rate (30s:200) with {}", n.concurrency);
    }
    let peak = (stages.stages().iter())
        .map(|s| s.target.value())
        .fold(0.0, f64::max);
    if peak < 1.0 || stages.total().is_zero() {
        invalid!(
            "{}: these stages open no connection; give a stage a duration and a target above 0",
            n.stages
        );
    }
    Ok(peak as u32)
}

/// k6's executor names, where kurabe runs what they mean.
fn check_executor(spec: &LoadSpec, n: &Names) -> Result<(), SpecError> {
    use kurabe_model::stage::Executor;
    let Some(e) = spec.executor else {
        return Ok(());
    };
    // A replay is sent at its recorded rate.
    let rated = spec.rate.is_some() || spec.replay.is_some();
    let (staged, rated) = (!spec.stages.is_empty(), rated);
    let wrong = match e {
        Executor::ConstantArrivalRate => (!rated || staged).then_some(n.rate),
        Executor::RampingArrivalRate => (!staged || rated).then_some(n.stages),
        Executor::ConstantVus => (staged || rated).then_some(n.concurrency),
        // `rate` with stages is refused with the stages (see `stages`).
        Executor::RampingVus => (!staged).then_some(n.stages),
    };
    if let Some(key) = wrong {
        invalid!(
            "{} {} runs with {key} alone of {}, {} and {}",
            n.executor,
            e.name(),
            n.rate,
            n.stages,
            n.concurrency
        );
    }
    Ok(())
}

/// The run's names and checks (`group`, `checks`), before any request is tagged.
fn labels(spec: &LoadSpec, n: &Names) -> Result<Labels, SpecError> {
    Labels::new(&spec.group, &spec.checks).map_err(|e| match e {
        LabelError::Group(e) => SpecError::Invalid(format!("{} {e}", n.group)),
        LabelError::Check(e) => SpecError::Invalid(format!("{} {e}", n.checks)),
    })
}

/// The URL, with `path` (a plan's path on its target) in place of the URL's own.
fn url(spec: &LoadSpec, n: &Names) -> Result<String, SpecError> {
    let Some(url) = &spec.url else {
        invalid!(
            "{}: give the URL to load-test, http://host[:port]/path",
            n.url
        );
    };
    Ok(match &spec.path {
        None => url.clone(),
        Some(p) => {
            let base = Target::parse(url)?;
            let scheme = if base.tls { "https" } else { "http" };
            let slash = if p.starts_with('/') { "" } else { "/" };
            format!("{scheme}://{}{slash}{p}", base.host_header())
        }
    })
}

/// `concurrency`, then `requests`/`duration` → when to stop, with no more
/// connections than requests; `once`: the requests when neither is given
/// (a set's size), else ab's one.
fn checked_stop(spec: &LoadSpec, n: &Names, once: Option<u64>) -> Result<StopCondition, SpecError> {
    if spec.concurrency == 0 {
        invalid!("{} 0: the concurrency must be at least 1", n.concurrency);
    }
    if spec.requests == Some(0) {
        invalid!(
            "{} 0: give at least 1 request (or use {} alone to run for a time)",
            n.requests,
            n.duration
        );
    }
    if spec.duration.is_some_and(|t| t.0.is_zero()) {
        invalid!("{} 0: the time limit must be positive", n.duration);
    }
    let stop = match (once, spec.requests, spec.duration) {
        (Some(size), None, None) => StopCondition::Requests(size),
        _ => spec.stop(),
    };
    if let StopCondition::Requests(r) | StopCondition::RequestsOrDuration(r, _) = stop {
        if u64::from(spec.concurrency) > r {
            invalid!(
                "{c} {} is more than {} {r}: lower {c} or raise {} (ab refuses this too)",
                spec.concurrency,
                n.requests,
                n.requests,
                c = n.concurrency,
            );
        }
    }
    Ok(stop)
}

/// How the connections are used: pipelining, HTTP/2, rate, threads, timeout.
fn check_connections(spec: &LoadSpec, n: &Names) -> Result<(), SpecError> {
    if spec.pipeline == 0 {
        invalid!("{} 0: use 1 (no pipelining) or more", n.pipeline);
    }
    if spec.pipeline > MAX_PIPELINE {
        invalid!(
            "{} {}: at most {MAX_PIPELINE} requests in one write per connection (wrk's scripts use 16)",
            n.pipeline,
            spec.pipeline
        );
    }
    check_http2(spec, n)?;
    if spec.pipeline > 1 && !spec.keep_alive {
        invalid!(
            "{} {} needs keep-alive: add {}",
            n.pipeline,
            spec.pipeline,
            n.keep_alive
        );
    }
    if let Some(r) = spec.rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
        invalid!(
            "{} {r}: give a positive number of requests per second",
            n.rate
        );
    }
    if spec.threads == Some(0) {
        invalid!(
            "{} 0: use at least 1 (or leave it out for the default)",
            n.threads
        );
    }
    if spec.timeout.is_some_and(|t| t.0.is_zero()) {
        invalid!("{} 0: the request timeout must be positive", n.timeout);
    }
    Ok(())
}

/// `http2`, `http3` and `streams`: one protocol, streams need HTTP/2 or
/// HTTP/3, pipelining and proxies are HTTP/1.1's; HTTP/3's own rules
/// ([`check_http3`]).
fn check_http2(spec: &LoadSpec, n: &Names) -> Result<(), SpecError> {
    if spec.http2 && spec.http3 {
        invalid!("{} and {}: give one protocol", n.http2, n.http3);
    }
    let h = if spec.http3 { n.http3 } else { n.http2 };
    if spec.streams == Some(0) {
        invalid!("{} 0: use at least 1 stream per connection", n.streams);
    }
    if spec.streams.is_some() && !spec.http2 && !spec.http3 {
        invalid!(
            "{} sets HTTP/2 or HTTP/3 streams per connection: add {} or {}",
            n.streams,
            n.http2,
            n.http3
        );
    }
    if (spec.http2 || spec.http3) && spec.proxy.is_some() {
        invalid!(
            "{p} sends HTTP/1.1 requests to a proxy; drop {h} or {p}",
            p = n.proxy
        );
    }
    if (spec.http2 || spec.http3) && spec.pipeline > 1 {
        invalid!(
            "{} is HTTP/1.1 pipelining; with {h} use {} N for requests in flight per connection",
            n.pipeline,
            n.streams
        );
    }
    check_http3(spec, n)
}

/// HTTP/3's settings that cannot mean anything: io_uring (the HTTP/3
/// worker drives its UDP sockets with epoll), TLS 1.2 (QUIC is TLS 1.3).
/// The scheme is checked with the URL ([`check_http3_url`]).
fn check_http3(spec: &LoadSpec, n: &Names) -> Result<(), SpecError> {
    if !spec.http3 {
        return Ok(());
    }
    if spec.engine == kurabe_model::load::Engine::IoUring {
        invalid!(
            "{} io_uring does not drive {}: use {} epoll or auto",
            n.engine,
            n.http3,
            n.engine
        );
    }
    if spec
        .tls_protocol
        .as_deref()
        .is_some_and(|f| f.eq_ignore_ascii_case("TLS1.2"))
    {
        invalid!(
            "{} TLS1.2 with {}: QUIC is TLS 1.3 only; drop {} or use TLS1.3",
            n.tls_protocol,
            n.http3,
            n.tls_protocol
        );
    }
    Ok(())
}

/// HTTP/3 runs over QUIC, which is always TLS: an `http://` URL cannot be
/// loaded with it (`https`: the scheme, `None` while unknown).
fn check_http3_url(spec: &LoadSpec, n: &Names, https: Option<bool>) -> Result<(), SpecError> {
    if spec.http3 && https == Some(false) {
        invalid!(
            "{} needs an https:// URL: QUIC is always encrypted (use https://, or drop {} for HTTP/1.1 or --http2 for h2c)",
            n.http3,
            n.http3
        );
    }
    Ok(())
}

/// The request settings as the request spec: the method given, else POST
/// when there is a body (GET otherwise).
fn request_spec(spec: &LoadSpec, n: &Names) -> Result<RequestSpec, SpecError> {
    Ok(request_fields(spec, body(spec, n)?))
}

/// The request settings with `body` as the body.
fn request_fields(spec: &LoadSpec, body: Option<Vec<u8>>) -> RequestSpec {
    RequestSpec {
        method: spec.method.clone(),
        implied_method: body.is_some().then_some("POST"),
        headers: spec
            .headers
            .iter()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect(),
        cookies: spec.cookies.clone(),
        auth: spec.auth.clone(),
        content_type: spec.content_type.clone(),
        body,
    }
}

/// [`body`] as far as it can be checked without reading a file: a body
/// file opened and checked (a regular file within its limit) stands as
/// an empty body.
fn unread_body(spec: &LoadSpec, n: &Names) -> Result<Option<Vec<u8>>, SpecError> {
    match (&spec.body_file, &spec.body_base64) {
        (Some(path), None) => {
            super::files::check_body(path, n)?;
            Ok(Some(Vec::new()))
        }
        _ => body(spec, n),
    }
}

/// The body: the `body_file`'s contents or the decoded `body_base64`.
fn body(spec: &LoadSpec, n: &Names) -> Result<Option<Vec<u8>>, SpecError> {
    match (&spec.body_file, &spec.body_base64) {
        (Some(_), Some(_)) => invalid!(
            "{} and {} are both a body: give one",
            n.body_file,
            n.body_base64
        ),
        (Some(path), None) => Ok(Some(super::files::read_body(path, n)?)),
        (None, Some(b64)) => match STANDARD.decode(b64) {
            Ok(b) => Ok(Some(b)),
            Err(e) => invalid!("{}: not valid base64 ({e})", n.body_base64),
        },
        (None, None) => Ok(None),
    }
}

/// Socket buffer, bind address, proxy and TLS → connection setup (no `-v`
/// tap); `https`: the target's scheme, `None` when not known yet.
fn setup(spec: &LoadSpec, n: &Names, https: Option<bool>) -> Result<Setup, SpecError> {
    check_http3_url(spec, n, https)?;
    if spec.socket_buffer == Some(0) {
        invalid!(
            "{b} 0: give the socket buffer size in bytes, e.g. {b} 65536",
            b = n.socket_buffer
        );
    }
    let bind = match &spec.bind {
        Some(b) => Some(b.parse::<IpAddr>().map_err(|_| {
            SpecError::Invalid(format!(
                "{} '{b}': give a local IP address to bind, e.g. 127.0.0.2 or ::1",
                n.bind
            ))
        })?),
        None => None,
    };
    let proxy = match &spec.proxy {
        Some(p) => Some(proxy(p, spec.proxy_auth.as_deref(), n)?),
        None if spec.proxy_auth.is_some() => invalid!(
            "{} sets the proxy's credentials: add {} PROXY:PORT",
            n.proxy_auth,
            n.proxy
        ),
        None => None,
    };
    Ok(Setup {
        socket_buffer: spec.socket_buffer,
        bind,
        proxy,
        tls: tls(spec, n, https)?,
        trace: None,
    })
}

/// Client certificate, protocol and ciphers → TLS options; they need an
/// https:// URL (checked when `https` is known).
fn tls(spec: &LoadSpec, n: &Names, https: Option<bool>) -> Result<TlsOptions, SpecError> {
    let given = spec.client_cert.is_some() || spec.tls_protocol.is_some() || spec.ciphers.is_some();
    if given && https == Some(false) {
        invalid!(
            "{}, {} and {} apply to https:// URLs: drop them or use https://",
            n.client_cert,
            n.tls_protocol,
            n.ciphers
        );
    }
    if spec.ca_file.is_some() && https == Some(false) {
        invalid!(
            "{} names the CA certificates to trust for https:// URLs: drop it or use https://",
            n.ca_file
        );
    }
    if spec.ca_file.is_some() && spec.insecure {
        invalid!(
            "{} with --insecure: nothing is verified, so no CA is trusted; drop one of them",
            n.ca_file
        );
    }
    if let Some(path) = &spec.client_cert {
        super::files::check_cert(path, n.client_cert)?;
    }
    if let Some(path) = &spec.ca_file {
        super::files::check_cert(path, n.ca_file)?;
    }
    Ok(TlsOptions {
        client_cert: spec.client_cert.clone(),
        ca_file: spec.ca_file.clone(),
        protocol: match &spec.tls_protocol {
            Some(f) => TlsProtocol::from_ab(f)?,
            None => TlsProtocol::All,
        },
        ciphers: match &spec.ciphers {
            Some(z) => client::parse_ciphers(z)?,
            None => Vec::new(),
        },
    })
}

/// `HOST:PORT` (IPv6 in brackets) with the `user:password` credentials.
fn proxy(spec: &str, credentials: Option<&str>, n: &Names) -> Result<Proxy, SpecError> {
    let x = n.proxy;
    let how = format!("give the proxy as HOST:PORT, e.g. {x} 127.0.0.1:3128 or {x} [::1]:3128");
    let Some((host, port)) = spec.rsplit_once(':') else {
        invalid!("{x} '{spec}': {how}");
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = port.parse::<u16>().ok().filter(|p| *p != 0);
    let (false, Some(port)) = (host.is_empty(), port) else {
        invalid!("{x} '{spec}': {how}");
    };
    // The value is a password: name the setting, never echo it.
    if credentials.is_some_and(|c| !c.contains(':')) {
        invalid!(
            "{}: proxy credentials are user:password (the value given has no ':')",
            n.proxy_auth
        );
    }
    Ok(Proxy::new(host, port, credentials))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::load::Header;
    use kurabe_model::plan::HumanDuration;
    use std::time::Duration;

    fn spec(url: &str) -> LoadSpec {
        LoadSpec::for_url(url)
    }

    fn resolve(s: LoadSpec) -> Result<Load, SpecError> {
        super::resolve(&s, &Names::FLAGS, (4, 1), &Default::default())
    }

    fn err(s: LoadSpec) -> String {
        resolve(s).unwrap_err().to_string()
    }

    /// A load's one request: its method, headers and body.
    type One<'a> = (&'a str, &'a [(String, String)], Option<&'a [u8]>);

    /// The method, headers and body of a load of one request.
    fn one(c: &Load) -> One<'_> {
        match &c.requests {
            Requests::One {
                method,
                headers,
                body,
            } => (method, headers, body.as_deref()),
            other => panic!("not one request: {other:?}"),
        }
    }

    #[test]
    fn stages_give_the_rate_and_the_length_and_executors_are_checked() {
        use kurabe_model::stage::{Executor, StageSpec};
        let st = |secs, target| StageSpec {
            duration: HumanDuration(Duration::from_secs(secs)),
            target,
        };
        let staged = || LoadSpec {
            stages: vec![st(10, 100.0), st(10, 100.0), st(10, 0.0)],
            concurrency: 8,
            ..spec("http://h/")
        };
        let c = resolve(staged()).unwrap();
        assert_eq!(c.stop, StopCondition::Duration(Duration::from_secs(30)));
        assert!(
            (c.arrival.rate().unwrap() - 2000.0 / 30.0).abs() < 1e-9,
            "2000 sends over 30 s"
        );
        assert_eq!(c.arrival.sends(), Some(2000));
        let with = |f: &dyn Fn(&mut LoadSpec)| {
            let mut s = staged();
            f(&mut s);
            err(s)
        };
        assert!(with(&|s| s.rate = Some(5.0)).starts_with("--rate with --stage"));
        assert!(
            with(&|s| s.duration = Some(HumanDuration(Duration::from_secs(1))))
                .starts_with("-t with --stage")
        );
        assert!(with(&|s| s.stages = vec![st(10, 0.0)]).contains("send nothing"));
        assert!(with(&|s| s.stages[0].target = -1.0).contains("0 or more"));
        assert!(resolve(LoadSpec {
            executor: Some(Executor::RampingArrivalRate),
            ..staged()
        })
        .is_ok());
        assert!(with(&|s| s.executor = Some(Executor::ConstantArrivalRate))
            .contains("constant-arrival-rate runs with --rate"));
        let vus = |f: &dyn Fn(&mut LoadSpec)| {
            let mut s = staged();
            (s.executor, s.concurrency) = (Some(Executor::RampingVus), 1);
            f(&mut s);
            resolve(s)
        };
        let c = vus(&|_| {}).unwrap();
        assert_eq!((c.concurrency, c.arrival.rate()), (100, None));
        assert!(c.arrival.connections().is_some());
        assert_eq!(c.stop, StopCondition::Duration(Duration::from_secs(30)));
        let e = |f: &dyn Fn(&mut LoadSpec)| vus(f).unwrap_err().to_string();
        assert!(e(&|s| s.stages[0].target = 1.5).contains("whole number"));
        assert!(e(&|s| s.concurrency = 8).starts_with("-c 8 with connection stages"));
        assert!(e(&|s| s.http2 = true).contains("--http2 with connection stages"));
        assert!(e(&|s| s.rate = Some(5.0)).starts_with("--rate with --stage"));
        assert!(e(&|s| s.stages = vec![st(10, 0.0)]).contains("open no connection"));
        let closed = LoadSpec {
            executor: Some(Executor::ConstantVus),
            ..spec("http://h/")
        };
        assert!(resolve(closed).is_ok());
    }

    /// Rate stages of 1 s to 100/s.
    fn staged_spec() -> LoadSpec {
        LoadSpec {
            stages: vec![kurabe_model::stage::StageSpec {
                duration: HumanDuration(Duration::from_secs(1)),
                target: 100.0,
            }],
            ..spec("http://h/")
        }
    }

    #[test]
    fn rates_no_client_could_send_are_refused_whatever_the_shape() {
        use kurabe_model::stage::StageSpec;
        let timed = || LoadSpec {
            duration: Some(HumanDuration(Duration::from_secs(1))),
            ..spec("http://h/")
        };
        let rated = |r| LoadSpec {
            rate: Some(r),
            ..timed()
        };
        assert!(resolve(rated(1e8)).is_ok());
        assert_eq!(
            err(rated(1e300)),
            "--rate 1e300: more than a run can ever send (one client process sends at most 1e8 requests/s); lower it, or spread the load over more client processes (--workers)"
        );
        let staged = LoadSpec {
            stages: vec![StageSpec {
                duration: HumanDuration(Duration::from_secs(1)),
                target: 2e8,
            }],
            ..spec("http://h/")
        };
        assert!(err(staged.clone()).starts_with("--stage target 2e8: more than"));
        // Shared by two client processes (a fleet), each sends half.
        assert!(super::resolve(&staged, &Names::FLAGS, (4, 2), &Default::default()).is_ok());
        let e = super::check_early(&rated(3e8), &Names::PLAN, 2).unwrap_err();
        assert!(e.to_string().starts_with("http.rate 3e8: more than a run can ever send (2 workers send at most 2e8 requests/s"), "{e}");
    }

    #[test]
    fn a_replays_settings_are_refused_before_its_log_is_opened() {
        let spec = |edit: fn(&mut LoadSpec)| {
            let mut s = LoadSpec {
                replay: Some(kurabe_model::replay::ReplaySpec::of("/nonexistent/x.log")),
                keep_alive: true,
                concurrency: 20,
                ..LoadSpec::for_url("http://127.0.0.1:9/")
            };
            edit(&mut s);
            err(s)
        };
        assert!(
            spec(|_| {}).starts_with("cannot read the log '/nonexistent/x.log': check the path")
        );
        assert_eq!(
            spec(|s| s.concurrency = 0),
            "-c 0: the concurrency must be at least 1"
        );
        assert!(spec(|s| s.checks = vec!["zz".into()]).starts_with("--check 'zz'"));
        assert!(spec(|s| s.url = Some("ftp://h/".into())).starts_with("invalid URL 'ftp://h/'"));
        assert!(spec(|s| s.thresholds = vec!["p95<1s".into()]).starts_with("--threshold 'p95<1s'"));
        assert!(spec(|s| s.requests = Some(5)).starts_with("-n with a replay"));
        assert!(spec(|s| s.stages = staged_spec().stages).starts_with("--stage with a replay"));
    }

    #[test]
    fn ab_defaults() {
        let c = resolve(spec("http://127.0.0.1:8080/x")).unwrap();
        assert_eq!(one(&c).0, "GET");
        assert_eq!(c.stop, StopCondition::Requests(1));
        assert_eq!(c.timeout, Duration::from_secs(30));
        assert!(!c.protocol.reuses_connections() && c.check_length && !c.abort_on_error);
        assert_eq!((c.concurrency, c.threads), (1, 1));
    }

    #[test]
    fn stop_conditions_have_no_hidden_cap() {
        let stop = |n, t: Option<Duration>| {
            let s = LoadSpec {
                requests: n,
                duration: t.map(HumanDuration),
                concurrency: 500,
                ..spec("http://h/")
            };
            resolve(s).map(|c| c.stop)
        };
        let five = Duration::from_secs(5);
        // A duration alone allows any concurrency: there is no request count to exceed.
        assert_eq!(
            stop(None, Some(five)).unwrap(),
            StopCondition::Duration(five)
        );
        assert_eq!(
            stop(Some(600), Some(five)).unwrap(),
            StopCondition::RequestsOrDuration(600, five)
        );
        assert!(stop(Some(10), None).is_err());
    }

    #[test]
    fn http3_refuses_what_cannot_mean_anything_in_one_line() {
        let h3 = |url: &str, edit: fn(&mut LoadSpec)| {
            let mut s = spec(url);
            s.http3 = true;
            edit(&mut s);
            resolve(s).map(|c| c.protocol).map_err(|e| e.to_string())
        };
        let ok = h3("https://h/", |s| s.streams = Some(4));
        assert_eq!(ok, Ok(client::Protocol::H3 { streams: 4 }));
        let refused = [
            (
                "http://h/",
                (|_| {}) as fn(&mut LoadSpec),
                "--http3 needs an https:// URL",
            ),
            (
                "https://h/",
                |s| s.http2 = true,
                "--http2 and --http3: give one",
            ),
            (
                "https://h/",
                |s| s.pipeline = 2,
                "--pipeline is HTTP/1.1 pipelining; with --http3",
            ),
            (
                "https://h/",
                |s| s.proxy = Some("127.0.0.1:3128".into()),
                "-X sends HTTP/1.1",
            ),
            (
                "https://h/",
                |s| s.engine = kurabe_model::load::Engine::IoUring,
                "--engine io_uring does not drive --http3",
            ),
            (
                "https://h/",
                |s| s.tls_protocol = Some("TLS1.2".into()),
                "QUIC is TLS 1.3 only",
            ),
        ];
        for (url, edit, want) in refused {
            let e = h3(url, edit).unwrap_err();
            assert!(e.contains(want) && !e.contains('\n'), "{e}");
        }
        let mut streams = spec("https://h/");
        streams.streams = Some(2);
        assert!(err(streams).contains("add --http2 or --http3"));
    }

    #[test]
    fn a_ca_file_is_for_https_and_verification() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "").unwrap();
        let mut s = spec("https://h/");
        s.ca_file = Some(ca.clone());
        assert_eq!(
            resolve(s.clone()).unwrap().setup.tls.ca_file,
            Some(ca.clone())
        );
        s.insecure = true;
        assert!(err(s).contains("--cacert with --insecure"));
        let mut plain = spec("http://h/");
        plain.ca_file = Some(ca);
        assert!(err(plain).contains("--cacert names the CA certificates to trust for https://"));
    }

    #[test]
    fn invalid_input_names_the_flag_and_the_fix() {
        let with = |edit: fn(&mut LoadSpec)| {
            let mut s = spec("http://h/");
            s.requests = Some(5);
            edit(&mut s);
            err(s)
        };
        assert!(with(|s| s.concurrency = 0).contains("-c 0"));
        assert!(with(|s| s.concurrency = 10).contains("lower -c or raise -n"));
        assert!(with(|s| s.pipeline = 4).contains("add -k"));
        assert!(with(|s| {
            s.keep_alive = true;
            s.pipeline = 4_000_000_000;
        })
        .contains("--pipeline 4000000000: at most 1024"));
        assert!(with(|s| s.rate = Some(0.0)).contains("--rate"));
        assert!(with(|s| s.threads = Some(0)).contains("--threads"));
        assert!(with(|s| s.requests = Some(0)).contains("-n 0"));
        assert!(with(|s| {
            s.http2 = true;
            s.streams = Some(0)
        })
        .contains("--streams 0"));
        assert!(
            with(|s| s.body_file = Some("/nonexistent/kurabe-body".into()))
                .contains("cannot read the -p file")
        );
        assert!(with(|s| s.url = Some("ftp://h/".into())).contains("invalid URL"));
        assert!(with(|s| s.auth = Some("nopass".into())).contains("user:password"));
        assert!(with(|s| s.method = Some("GE T".into())).contains("-m"));
        assert!(with(|s| s.bind = Some("nowhere".into())).contains("-B 'nowhere'"));
        assert!(with(|s| s.ciphers = Some("X".into())).contains("https://"));
        assert!(with(|s| s.body_base64 = Some("!!".into())).contains("base64"));
    }

    #[test]
    fn settings_the_set_is_not_needed_for_are_refused_before_it_is_read() {
        use kurabe_model::stage::StageSpec;
        // A set that cannot be read: what is refused before reading it
        // says so, and not that the file is missing.
        let unread = || LoadSpec {
            targets: Some("/nonexistent/kurabe-set.txt".into()),
            url: None,
            ..spec("http://h/")
        };
        let with = |edit: fn(&mut LoadSpec)| {
            let mut s = unread();
            edit(&mut s);
            err(s)
        };
        assert!(with(|_| {}).starts_with("cannot read the --targets file"));
        assert_eq!(
            with(|s| (s.concurrency, s.requests) = (10, Some(1))),
            "-c 10 is more than -n 1: lower -c or raise -n (ab refuses this too)"
        );
        assert_eq!(
            with(|s| s.duration = Some(HumanDuration(Duration::ZERO))),
            "-t 0: the time limit must be positive"
        );
        assert!(with(|s| s.stages = vec![StageSpec {
            duration: HumanDuration(Duration::from_secs(1)),
            target: -1.0
        }])
        .contains("0 or more"));
        assert!(with(|s| s.thresholds = vec!["p95<1s".into()])
            .starts_with("--threshold 'p95<1s': unknown metric 'p'"));
        assert!(with(|s| s.bind = Some("nowhere".into())).contains("-B 'nowhere'"));
        assert!(with(|s| s.tls_protocol = Some("XX".into())).contains("XX"));
        // The scheme is the URL's given with the set: known before it.
        assert!(with(|s| {
            s.url = Some("http://h:81".into());
            s.ciphers = Some("X".into());
        })
        .contains("apply to https:// URLs"));
        // What needs the set is checked once it is read: `-c` against
        // its size, names and checks of thresholds.
        let set = |edit: fn(&mut LoadSpec)| {
            let mut s = LoadSpec {
                targets_text: Some("GET http://h/\n".into()),
                url: None,
                ..spec("http://h/")
            };
            edit(&mut s);
            err(s)
        };
        assert!(set(|s| s.concurrency = 2).starts_with("-c 2 is more than -n 1"));
        assert!(set(|s| s.thresholds = vec!["p(99){name:x}<1s".into()])
            .contains("no request named 'x'"));
        assert!(set(|s| s.thresholds = vec!["checks>99%".into()]).contains("add --check"));
        // A TLS option wrong under any scheme is refused before the set,
        // a right one on the set's http:// after it.
        assert!(set(|s| s.ciphers = Some("X".into())).contains("'X'"));
        assert!(set(|s| s.tls_protocol = Some("TLS1.2".into())).contains("apply to https:// URLs"));
    }

    #[test]
    fn a_plan_key_names_the_setting() {
        let s = LoadSpec {
            concurrency: 0,
            ..spec("http://h/")
        };
        let e = super::resolve(&s, &Names::PLAN, (4, 1), &Default::default())
            .unwrap_err()
            .to_string();
        assert_eq!(e, "http.concurrency 0: the concurrency must be at least 1");
    }

    #[test]
    fn body_file_method_and_content_type() {
        let dir = std::env::temp_dir().join(format!("kurabe-load-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = dir.join("body.json");
        std::fs::write(&body, b"{\"a\":1}").unwrap();
        let mut s = spec("http://h/");
        s.body_file = Some(body.clone());
        s.content_type = Some("application/json".into());
        let c = resolve(s.clone()).unwrap();
        assert_eq!(one(&c).0, "POST");
        assert_eq!(one(&c).2, Some(&b"{\"a\":1}"[..]));
        assert!(one(&c)
            .1
            .contains(&("Content-Type".into(), "application/json".into())));
        s.content_type = None;
        s.method = Some("PUT".into());
        let c = resolve(s.clone()).unwrap();
        assert_eq!(one(&c).0, "PUT");
        assert!(one(&c)
            .1
            .contains(&("Content-Type".into(), "text/plain".into())));
        s.body_file = None;
        s.body_base64 = Some(crate::auth::base64(b"{\"a\":1}"));
        assert_eq!(one(&resolve(s.clone()).unwrap()).2, Some(&b"{\"a\":1}"[..]));
        s.method = Some("delete".into());
        assert_eq!(one(&resolve(s).unwrap()).0, "DELETE");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn headers_cookies_and_auth() {
        let mut s = spec("http://h/");
        s.headers = vec![Header::new("X-A", "1"), Header::new("Host", "example.test")];
        s.cookies = vec!["a=1".into(), "b=2".into()];
        s.auth = Some("Aladdin:open sesame".into());
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            one(&resolve(s).unwrap()).1,
            pairs(&[
                ("X-A", "1"),
                ("Host", "example.test"),
                ("Cookie", "a=1; b=2"),
                ("Authorization", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
            ])
        );
    }

    #[test]
    fn a_path_replaces_the_urls_own() {
        let mut s = spec("http://127.0.0.1:81");
        s.path = Some("/p?q".into());
        assert_eq!(resolve(s).unwrap().target.url(), "http://127.0.0.1:81/p?q");
    }

    #[test]
    fn thread_rule_leaves_cores_to_a_local_server() {
        let mut s = spec("http://[::1]:9/");
        (s.concurrency, s.requests) = (50, Some(100));
        assert_eq!(resolve(s).unwrap().threads, 2);
        let mut s = spec("http://h/");
        (s.concurrency, s.requests, s.threads) = (3, Some(100), Some(8));
        assert_eq!(
            resolve(s).unwrap().threads,
            3,
            "never more threads than connections"
        );
    }

    #[test]
    fn proxy_settings_never_echo_the_password() {
        let n = &Names::FLAGS;
        let e = proxy("127.0.0.1:3128", Some("s3cret"), n)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("-P:") && !e.contains("s3cret"), "{e}");
        assert!(proxy("127.0.0.1", None, n).is_err());
        assert!(proxy("[::1]:3128", Some("u:p"), n).is_ok());
        assert!(proxy(":3128", None, n).is_err());
    }
}
