//! `kurabe http`'s command line: ab's flags plus kurabe's, and the one
//! [`early`] step that maps them onto a [`LoadSpec`] (checked by
//! `kurabe_http::load` with errors naming the flags) and the report's
//! settings (ab's layout flags, checked by `kurabe_report::AbLayout`).
//!
//! Owns the flags and their mapping, and when a set on standard input is
//! read: once, after every check that needs none of it (its producer may
//! not have written yet, or never end). Must not run anything, nor show
//! the `-P` or `-A` password anywhere.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use kurabe_http::flags;
use kurabe_http::load::{check_spec, Checked, CheckedSpec, Loaded, Names};
use kurabe_http::outcome::check_max_error_rate;
use kurabe_lab::http_load::ServerChoice;
use kurabe_model::load::{Engine, LoadSpec, Order, TargetsFormat};
use kurabe_model::plan::HumanDuration;
use kurabe_report::{AbLayout, AbLayoutFlags, Format};

use crate::flags::{format, parse_duration};

/// Arguments of `kurabe http` (ab's flags keep ab's letters and meaning).
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Differences from ab: keep-alive uses HTTP/1.1; -t without -n runs for the whole time \
(ab silently stops at 50000 requests); failed requests are counted and the run goes on \
(ab's -r is the default, --abort-on-error restores ab's behaviour); latencies have \
microsecond resolution. Ctrl-C stops the run and prints the partial report, marked \
interrupted (exit status 130; 143 after SIGTERM, 129 after SIGHUP); a second Ctrl-C exits at \
once without waiting for requests in flight. --abort-on-error stopping at a failure exits 1. \
Exit status 1 also when no request got a complete response, or when the failed fraction \
exceeds --max-error-rate; the report says why requests failed (first error of each kind). \
Limits: a response head of at most 64 KiB and 256 headers (more counts as an exception, \
named); -c N needs about N open files (the soft limit is raised to the hard one; a run that \
still does not fit is refused before any request).")]
pub struct Args {
    /// URL to load-test: http://host[:port]/path or https://…; IPv6 literals in brackets. With --targets or --urls-from-file: scheme://host:port only, which every target of the set is sent to (its own path kept).
    #[arg(required_unless_present_any = ["targets", "urls_from_file"])]
    pub url: Option<String>,
    /// More URLs: compare them all under the same flags in interleaved rounds (--rounds), with ratios, 95 % intervals and verdicts against the first URL.
    #[arg(value_name = "URL_B")]
    pub more_urls: Vec<String>,
    /// With two or more URLs: rounds, each running every URL once with -n/-t, in a shuffled order [default: 5].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub rounds: Option<u32>,
    /// Send a request set instead of one URL: a targets file in vegeta's formats (see --targets-format; '# @name NAME' and '# @weight N' before a target name and weigh it), '-' for standard input. All targets share one scheme, host and port (or are sent to the URL's, and with URL_B … compared on each URL); -H, -C and -A apply to each. Without -n or -t the set is sent once.
    #[arg(long, value_name = "FILE", conflicts_with = "urls_from_file")]
    pub targets: Option<PathBuf>,
    /// Format of --targets: http (vegeta's: METHOD URL, header lines, @body-file, a blank line between targets) or json (one object a line: method, url, header, base64 body, name, weight) [default: http].
    #[arg(long, value_name = "FORMAT", requires = "targets", value_parser = PossibleValuesParser::new(["http", "json"]).map(|f| TargetsFormat::parse(&f).unwrap_or_default()))]
    pub targets_format: Option<TargetsFormat>,
    /// Send a request set given as one URL a line, GET (oha's --urls-from-file), '-' for standard input.
    #[arg(long, value_name = "FILE")]
    pub urls_from_file: Option<PathBuf>,
    /// Which target of the set each request sends: round-robin (the set in order, again and again; each client thread starts at its own place), sequential (in order over all connections), random, or weighted (by '# @weight') [default: weighted when a target carries a weight, else round-robin].
    #[arg(long, value_parser = PossibleValuesParser::new(["weighted", "round-robin", "random", "sequential"]).map(|o| Order::parse(&o).unwrap_or_default()))]
    pub order: Option<Order>,
    /// Seed of --order random and weighted, so a run's draws can be repeated [default: drawn, and recorded in the result].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Number of requests to perform [default: 1, or unlimited with -t].
    #[arg(short = 'n', value_name = "REQUESTS")]
    pub requests: Option<u64>,
    /// Number of requests to perform at a time (concurrent connections) [default: 1; with --find-rate 64, the open model's connections].
    #[arg(short = 'c', value_name = "CONCURRENCY")]
    pub concurrency: Option<u32>,
    /// Time limit ("10", "10s", "500ms", "2m"). Without -n the run lasts the whole time: no hidden 50000-request cap as in ab.
    #[arg(short = 't', value_name = "TIMELIMIT", value_parser = parse_duration)]
    pub time_limit: Option<Duration>,
    /// Timeout per request: connect, send and full response ("30", "1s", "500ms").
    #[arg(short = 's', value_name = "TIMEOUT", value_parser = parse_duration, default_value = "30")]
    pub timeout: Duration,
    /// Use HTTP keep-alive: reuse connections (without it every request opens a new connection, as in ab).
    #[arg(short = 'k')]
    pub keep_alive: bool,
    /// Add a request header, "Name: value" (repeatable); a Host header replaces the URL's.
    #[arg(short = 'H', value_name = "HEADER")]
    pub headers: Vec<String>,
    /// HTTP method (overrides -i, -p and -u).
    #[arg(short = 'm', value_name = "METHOD")]
    pub method: Option<String>,
    /// Send HEAD requests instead of GET.
    #[arg(short = 'i', conflicts_with_all = ["post_file", "put_file"])]
    pub head: bool,
    /// File with the body to POST (set its type with -T).
    #[arg(short = 'p', value_name = "POSTFILE", conflicts_with = "put_file")]
    pub post_file: Option<PathBuf>,
    /// File with the body to PUT (set its type with -T).
    #[arg(short = 'u', value_name = "PUTFILE")]
    pub put_file: Option<PathBuf>,
    /// Content-Type of the -p/-u body [default with a body: text/plain, as ab].
    #[arg(short = 'T', value_name = "CONTENT-TYPE")]
    pub content_type: Option<String>,
    /// Add a cookie, "name=value" (repeatable; sent as one Cookie header).
    #[arg(short = 'C', value_name = "ATTRIBUTE")]
    pub cookies: Vec<String>,
    /// Basic authentication, "user:password".
    #[arg(short = 'A', value_name = "AUTH")]
    pub auth: Option<String>,
    /// Quiet: no progress line on stderr.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Accepted for ab compatibility and ignored: kurabe never stops on a failed request unless --abort-on-error.
    #[arg(short = 'r')]
    pub no_abort: bool,
    /// Accept variable document length: responses whose length differs from the first are not counted as Length failures.
    #[arg(short = 'l')]
    pub variable_length: bool,
    /// Write ab's CSV of "percentage served, time in ms" to this file: 101 rows, 0 to 100 %.
    #[arg(short = 'e', value_name = "CSVFILE")]
    pub percentiles_csv: Option<PathBuf>,
    /// Write the per-second series to this CSV file: one row per second of the measured phase (start_s, duration_s, sent, completed, failed, dropped, achieved_per_s, target_per_s, latency_p50/p90/p99/max_us, target_connections); the JSON record carries the same rows as `series`.
    #[arg(long, value_name = "FILE")]
    pub series_csv: Option<PathBuf>,
    /// Do not show the "percentage of the requests served" table (as ab -d).
    #[arg(short = 'd')]
    pub no_percentiles: bool,
    /// Do not show the median and standard deviation columns nor ab's reliability warnings: min, avg, max only (as ab -S).
    #[arg(short = 'S')]
    pub no_confidence: bool,
    /// Print ab's HTML table instead of the text report (as ab -w).
    #[arg(short = 'w')]
    pub html: bool,
    /// Attributes for the HTML <table> (implies -w, as in ab), e.g. 'border=1'.
    #[arg(short = 'x', value_name = "ATTRIBUTES")]
    pub table_attrs: Option<String>,
    /// Attributes for every HTML <tr> (implies -w).
    #[arg(short = 'y', value_name = "ATTRIBUTES")]
    pub tr_attrs: Option<String>,
    /// Attributes for every HTML <td> and <th> (implies -w) [default: bgcolor=white].
    #[arg(short = 'z', value_name = "ATTRIBUTES")]
    pub td_attrs: Option<String>,
    /// Size of every connection's TCP send and receive buffer, bytes (as ab -b).
    #[arg(short = 'b', value_name = "WINDOWSIZE")]
    pub socket_buffer: Option<u32>,
    /// Local IP address to bind when connecting (as ab -B), e.g. 127.0.0.2.
    #[arg(short = 'B', value_name = "ADDRESS")]
    pub bind: Option<String>,
    /// Send the requests through this HTTP proxy, HOST:PORT (as ab -X; http:// URLs only).
    #[arg(short = 'X', value_name = "PROXY:PORT")]
    pub proxy: Option<String>,
    /// Basic credentials for the proxy, "user:password" (as ab -P; needs -X). Never shown in output.
    #[arg(short = 'P', value_name = "USER:PASSWORD")]
    pub proxy_auth: Option<String>,
    /// PEM file with the TLS client certificate chain and its private key (as ab -E).
    #[arg(short = 'E', value_name = "CERTFILE")]
    pub client_cert: Option<PathBuf>,
    /// TLS protocol, as ab -f: TLS1.2, TLS1.3 or ALL (rustls does not implement SSL3, TLS1, TLS1.1).
    #[arg(short = 'f', value_name = "PROTOCOL")]
    pub tls_protocol: Option<String>,
    /// TLS cipher suites, OpenSSL names separated by ':' (as ab -Z), e.g. ECDHE-RSA-AES128-GCM-SHA256:TLS_AES_128_GCM_SHA256.
    #[arg(short = 'Z', value_name = "CIPHERSUITE")]
    pub ciphers: Option<String>,
    /// Write ab's gnuplot TSV (one line per request, streamed) to this file.
    #[arg(short = 'g', value_name = "GNUPLOTFILE")]
    pub gnuplot: Option<PathBuf>,
    /// Verbosity, as ab: 2 or more prints the request header before the run (credentials masked); on stdout with the text report, else on stderr.
    #[arg(short = 'v', value_name = "VERBOSITY", default_value_t = 0)]
    pub verbosity: u8,
    /// Client threads [default: for a loopback URL max(1, CPUs/2), so a local server keeps half the cores; otherwise the number of CPUs; never more than -c].
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
    /// Open model: send R requests per second in total, on a fixed schedule; latency counts from the intended send time (coordinated-omission corrected; the uncorrected figure is reported too). At most 1e8 (per worker with --workers); sends the machine could not make by the end are reported as dropped.
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// Shape the load over time (repeatable, in order): DURATION:RATE ramps the arrival rate linearly to RATE requests/s over DURATION, from 0 or the previous stage's RATE (open model, k6's ramping-arrival-rate), e.g. --stage 30s:200 --stage 2m:200 --stage 30s:0; latency counts from each send's intended time on the ramp, give -c enough connections for the peak. DURATION:c=N ramps the open connections to N the same way instead (closed model, k6's ramping-vus; the peak N is the connections the run opens, so -c is refused), e.g. --stage 30s:c=100 --stage 10s:c=0. The run lasts the stages' total.
    #[arg(long = "stage", value_name = "DURATION:RATE")]
    pub stages: Vec<String>,
    /// Put load on the server for this long first without counting it ("5s", "500ms", "2m").
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Report format: text (ab's layout plus kurabe's additions), json (the versioned kurabe-model record, pretty-printed), md (one Markdown table row of headline figures) or csv (a header and one row of headline figures).
    #[arg(long, value_parser = format(&["text", "json", "md", "csv"]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub out: crate::flags::OutputArg,
    /// HTTP/1.1 pipelining: N requests per connection in one write, the next N once all are answered, as wrk does (needs -k).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub pipeline: u32,
    /// Client I/O engine: epoll, or io_uring (batched submission, multishot receive) where the kernel offers it; `auto` picks the one measured cheaper per request (io_uring where the kernel offers it; always epoll for https:// and --http2). The report names the engine that ran.
    #[arg(long, value_parser = PossibleValuesParser::new(["auto", "epoll", "io_uring"]).map(|e| Engine::parse(&e).unwrap_or_default()), default_value = "auto")]
    pub engine: Engine,
    /// Speak HTTP/2: ALPN h2 for https://, prior knowledge (h2c) for http://. Connections are always reused (-k is implied).
    #[arg(long)]
    pub http2: bool,
    /// Speak HTTP/3: QUIC v1 with TLS 1.3 and ALPN h3, https:// only, a UDP socket per connection (-B binds it). Connections are always reused (-k is implied).
    #[arg(long)]
    pub http3: bool,
    /// The HTTP version, as oha spells it: 1.1, 2 (--http2) or 3 (--http3). With URL_B …, give it once per URL (in the URLs' order) to compare versions, e.g. one server's HTTP/2 against its HTTP/3: --http-version 2 --http-version 3 URL URL (each named "URL (HTTP/3)" in the report).
    #[arg(long, value_name = "VERSION", value_parser = PossibleValuesParser::new(["1.1", "2", "3"]))]
    pub http_version: Vec<String>,
    /// With --http2 or --http3: concurrent streams per connection (h2load's -m) [default: 1].
    #[arg(long, value_name = "N")]
    pub streams: Option<u32>,
    /// Do not verify the server's TLS certificate (https:// only).
    #[arg(long)]
    pub insecure: bool,
    /// Trust the CA certificates in this PEM file instead of the system store's (https://, any HTTP version), e.g. a local CA's root.crt.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Stop at the first failed request, as ab does without -r.
    #[arg(long)]
    pub abort_on_error: bool,
    /// Check every response (repeatable; all must pass): status==200, status in 200..399 (inclusive), size>=1000 (body bytes), body~REGEX (the first 64 KiB), header:Content-Type~json; operators == != < <= > >=, ~ and !~. A response that fails a check counts as a `check` failure, and the report shows the first such response.
    #[arg(long = "check", value_name = "CHECK")]
    pub checks: Vec<String>,
    /// Fold request names in the per-request breakdown, REGEX=NAME (repeatable; the first whose REGEX matches a request's URL names it, $1 … are its groups), e.g. '/item/\d+=/item/:id'.
    #[arg(long = "group", value_name = "REGEX=NAME")]
    pub groups: Vec<String>,
    /// Fail the run unless THRESHOLD holds (repeatable; k6's notation): p(95)<200ms, p(99.9)<1s, avg/min/max/med<DURATION, failed<1%, rate>=1000 (requests/s), checks>99% (with --check); scoped to one request name with p(95){name:checkout}<300ms. Add ,abort to end the run as soon as it fails and ,after=10s to judge it for that only after 10 s of measuring. Each prints PASS or FAIL with its measured value; any FAIL exits 99.
    #[arg(long = "threshold", value_name = "THRESHOLD")]
    pub thresholds: Vec<String>,
    /// Exit 1 when more than this fraction of the requests failed (0 to 1, e.g. 0.01) [default: report only; exit 1 only when none succeeded].
    #[arg(long, value_name = "FRACTION")]
    pub max_error_rate: Option<f64>,
    /// Do not measure the server. By default, for a loopback URL, kurabe finds the local process listening on the port and reports its CPU ms/request, CPU % and Σ PSS (whole process tree) next to the client's numbers.
    #[arg(long, conflicts_with = "server_pid")]
    pub no_server_metrics: bool,
    /// Measure this process (and its descendants) as the server instead of the listener found on the URL's port.
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    #[command(flatten)]
    pub profile: crate::flags::ProfileArg,
    /// Distributed load: split the run over N `kurabe worker` processes that meet in the PostgreSQL store given by --store (needs -n or -t). Every load flag reaches every worker (-E is read from each worker's own disk; -g cannot be split); the report merges their histograms exactly.
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,
    /// With --workers: the experiment name the distributed run is filed under in the store.
    #[arg(long, value_name = "NAME", requires = "workers")]
    pub experiment: Option<String>,
    /// With --workers: how long to wait for the workers to take their shares ("60s", "2m").
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub wait_workers: Duration,
    #[command(flatten)]
    pub save: crate::flags::SaveArgs,
    #[command(flatten)]
    pub live: crate::live::LiveArgs,
    #[command(flatten)]
    pub find_rate: FindRateArgs,
}

/// `--find-rate`: the highest open-model rate the server sustains within the SLOs.
#[derive(Debug, Default, clap::Args)]
#[command(next_help_heading = "Capacity under an SLO (--find-rate)")]
pub struct FindRateArgs {
    /// Search the highest arrival rate (requests per second, open model) the server sustains within every --slo: a ramp doubling from --start-rate brackets the knee, then bisection of steady steps, searched again until the answer's 95 % interval is within --precision. A step passes when every SLO holds and at least 95 % of its rate is answered. Prints the answer with its interval and the latency curve; exit 1 when even the lowest rate breaks an SLO.
    #[arg(long)]
    pub find_rate: bool,
    /// A service-level objective in k6's threshold notation, e.g. 'p(99)<50ms', 'avg<20ms', 'failed<0.1%' (repeatable; all must hold).
    #[arg(long, value_name = "EXPR")]
    pub slo: Vec<String>,
    /// With --find-rate: measured length of each step ("5s", "500ms") [default: 5s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub step: Option<Duration>,
    /// With --find-rate: load at the step's rate before measuring it, not counted [default: 1s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub step_warmup: Option<Duration>,
    /// With --find-rate: the lowest and first rate searched, requests per second [default: 10].
    #[arg(long, value_name = "R")]
    pub start_rate: Option<f64>,
    /// With --find-rate: the highest rate searched, requests per second [default: 100000].
    #[arg(long, value_name = "R")]
    pub max_rate: Option<f64>,
    /// With --find-rate: most searches before giving up on --precision (at least 3) [default: 8].
    #[arg(long, value_name = "N")]
    pub max_searches: Option<u32>,
    /// With --find-rate: half-width of the 95 % interval to reach, a fraction [default: 0.05, ±5 %].
    #[arg(long, value_name = "FRACTION")]
    pub precision: Option<f64>,
}

impl FindRateArgs {
    /// The search the flags ask for (`None` without --find-rate).
    pub fn spec(&self) -> Option<kurabe_model::capacity::FindRate> {
        self.find_rate.then(|| kurabe_model::capacity::FindRate {
            slo: self.slo.clone(),
            step: self.step.map(HumanDuration),
            step_warmup: self.step_warmup.map(HumanDuration),
            start_rate: self.start_rate,
            max_rate: self.max_rate,
            max_searches: self.max_searches,
            precision: self.precision,
        })
    }
}

/// What a run needs besides the flags themselves: the load, the
/// report's layout and the server to measure, resolved and checked.
#[derive(Debug)]
pub struct Resolved {
    /// The load test, as the flags describe it (checked).
    pub spec: LoadSpec,
    /// The same load resolved (defaults filled in, body read): what `-v`
    /// shows and the URL's target.
    pub load: Checked,
    /// ab's layout flags (`-d`, `-S`, `-w`, `-x`, `-y`, `-z`).
    pub layout: AbLayout,
    /// The server process to measure.
    pub server: ServerChoice,
}

/// The command line checked whole, no input read yet (a set on
/// standard input may wait on its producer, or never end): a caller's
/// own checks go between this and [`Early::finish`].
#[derive(Debug)]
pub struct Early {
    /// The load, checked, its inputs unread.
    checked: CheckedSpec,
    /// ab's layout flags, resolved.
    layout: AbLayout,
}

/// Every check of the flags: the load's ([`check_spec`], shared by
/// `--workers` client processes), `--max-error-rate`, the layout.
pub fn early(args: &Args) -> anyhow::Result<Early> {
    let clients = args.workers.unwrap_or(1);
    let checked = check_spec(load_spec(args)?, &names(args), clients)?;
    check_max_error_rate(args.max_error_rate)?;
    let layout = layout_flags(args).resolve(args.format)?;
    Ok(Early { checked, layout })
}

impl Early {
    /// The inputs read (standard input's set, once) and the load resolved.
    pub fn finish(self, args: &Args) -> anyhow::Result<Resolved> {
        let Loaded { spec, load } = self.checked.read()?;
        let server =
            ServerChoice::from_flags(args.no_server_metrics, args.server_pid, load.target());
        Ok(Resolved {
            spec,
            load,
            layout: self.layout,
            server,
        })
    }
}

/// The flags each setting was given under (`-u`, not `-p`, for a PUT body).
pub(super) fn names(args: &Args) -> Names {
    Names::flags_given(args.put_file.is_some(), args.urls_from_file.is_some())
}

/// The load flags as the load spec: ab's letters and kurabe's long flags
/// onto its fields, `-i` and `-u` as the method they mean (`-m` wins); a
/// set on standard input is its path `-`, unread ([`CheckedSpec::read`]
/// reads it).
pub fn load_spec(args: &Args) -> anyhow::Result<LoadSpec> {
    let switches = (args.http2, args.http3);
    flags::url_versions(&args.http_version, switches, urls(args))?;
    let version = args.http_version.first().map(String::as_str);
    let (http2, http3) = flags::http_versions(version, args.http2, args.http3)?;
    let (targets, targets_format) = flags::set_source(
        args.targets.as_deref(),
        args.targets_format,
        args.urls_from_file.as_deref(),
    );
    let stages = flags::stages(&args.stages, args.concurrency)?;
    Ok(LoadSpec {
        url: args.url.clone(),
        method: flags::method(args.method.as_deref(), args.head, args.put_file.is_some()),
        headers: flags::headers(&args.headers)?,
        body_file: args.post_file.clone().or(args.put_file.clone()),
        content_type: args.content_type.clone(),
        cookies: args.cookies.clone(),
        auth: args.auth.clone(),
        targets,
        targets_format,
        order: args.order,
        seed: args.seed,
        requests: args.requests,
        duration: args.time_limit.map(HumanDuration),
        warmup: args.warmup.map(HumanDuration),
        concurrency: args.concurrency.unwrap_or(1),
        rate: args.rate,
        stages: stages.0,
        executor: stages.1,
        find_rate: args.find_rate.spec(),
        threads: args.threads,
        keep_alive: args.keep_alive,
        pipeline: args.pipeline,
        http2,
        http3,
        streams: args.streams,
        engine: args.engine,
        timeout: flags::timeout(args.timeout),
        abort_on_error: args.abort_on_error,
        variable_length: args.variable_length,
        group: args.groups.clone(),
        checks: args.checks.clone(),
        thresholds: args.thresholds.clone(),
        insecure: args.insecure,
        tls_protocol: args.tls_protocol.clone(),
        ciphers: args.ciphers.clone(),
        client_cert: args.client_cert.clone(),
        ca_file: args.cacert.clone(),
        proxy: args.proxy.clone(),
        proxy_auth: args.proxy_auth.clone(),
        bind: args.bind.clone(),
        socket_buffer: args.socket_buffer,
        ..LoadSpec::default()
    })
}

/// How many URLs were given (the first and URL_B …).
fn urls(args: &Args) -> usize {
    usize::from(args.url.is_some()) + args.more_urls.len()
}

/// Each URL's HTTP version when `--http-version` is given once per URL
/// (checked by [`load_spec`]), else empty.
pub fn url_versions(args: &Args) -> anyhow::Result<Vec<kurabe_model::load::HttpVersion>> {
    let switches = (args.http2, args.http3);
    Ok(flags::url_versions(
        &args.http_version,
        switches,
        urls(args),
    )?)
}

/// ab's layout flags as the report's plain values.
fn layout_flags(args: &Args) -> AbLayoutFlags {
    AbLayoutFlags {
        no_percentiles: args.no_percentiles,
        no_confidence: args.no_confidence,
        variable_length: args.variable_length,
        html: args.html,
        table_attrs: args.table_attrs.clone(),
        tr_attrs: args.tr_attrs.clone(),
        td_attrs: args.td_attrs.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use kurabe_model::load::StopCondition;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn resolve(argv: &[&str]) -> anyhow::Result<Resolved> {
        let mut full = vec!["http"];
        full.extend_from_slice(argv);
        let args = Cli::try_parse_from(full).unwrap().args;
        early(&args)?.finish(&args)
    }

    #[test]
    fn flags_reach_the_load_config() {
        let r = resolve(&[
            "-k",
            "-c",
            "2",
            "-n",
            "9",
            "-s",
            "2",
            "-l",
            "--engine",
            "epoll",
            "http://[::1]:9/",
        ])
        .unwrap();
        let l = &r.spec;
        assert_eq!(r.load.stop(), StopCondition::Requests(9));
        assert_eq!(l.concurrency, 2);
        assert!(l.keep_alive && l.variable_length);
        assert_eq!(l.timeout, Some(HumanDuration(Duration::from_secs(2))));
        assert_eq!(l.engine, Engine::Epoll);
        assert_eq!(r.server, ServerChoice::Listener(9));
        assert!(r.layout.html.is_none() && r.layout.text.variable_length);
        assert!(resolve(&["--max-error-rate", "2", "http://h/"]).is_err());
    }
}
