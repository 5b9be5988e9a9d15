//! `kurabe replay LOG URL`: recorded traffic (an access log or a HAR
//! file) sent again against a base URL at the recorded times.
//!
//! Owns the flags and their mapping onto a [`LoadSpec`] with a
//! [`ReplaySpec`] (open model: each request is scheduled at its recorded
//! offset divided by `--speed`, and its latency counts from that time),
//! and the terminal edge (`--dry-run`'s summary, the live views of
//! `crate::live`, the report, exit codes).
//! Must not read the log itself (`kurabe_http::source::replay` does, when
//! the spec is checked) nor render (`kurabe-report` does).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use kurabe_http::load::{check_spec, Loaded, Names};
use kurabe_http::outcome::ending;
use kurabe_lab::http_load::ServerChoice;
use kurabe_model::load::LoadSpec;
use kurabe_model::replay::{parse_speed, ReplaySpec};
use kurabe_report::write::{check_outputs, write_output};
use kurabe_report::{http_renderer, to_string, AbLayoutFlags, Format};

use crate::flags::{format, parse_duration};

/// Arguments of `kurabe replay`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Formats: nginx/Apache `combined` and `common` (the default tries each line as combined, then \
common), any nginx log_format given as its text, e.g. --log-format '$msec \"$request\" \
$status $request_time' ($msec gives millisecond times; $time_local only whole seconds, so \
requests of one second leave together; $request_time is subtracted, nginx logs a request \
when it ends), and HAR 1.2 (.har, or --log-format har: headers and bodies too). A POST, PUT or \
PATCH whose body the log does not hold ($request_body), a CONNECT, a malformed request line \
or a line in another format is counted and listed, never guessed. Only URL's host is \
contacted: a log's absolute URLs keep their path and query. Exit status 2 when nothing can be \
replayed, 1 when no request got a response.")]
pub struct Args {
    /// The access log or HAR file to replay.
    pub log: PathBuf,
    /// Base URL: every request goes to its scheme, host and port, its path prefixed to the recorded path and query.
    pub url: String,
    /// The log's format: combined, common, har, or an nginx log_format text [default: har for .har files, else combined or common per line].
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Pace against the recording: 200% or 2x is twice as fast, 50% or 0.5x half (a bare number is refused: 2 could mean either).
    #[arg(long, value_name = "SPEED", default_value = "100%")]
    pub speed: String,
    /// Play the recording N times, each loop one mean gap after the last request of the previous.
    #[arg(long = "loop", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub loops: u32,
    /// Edit each path and query, REGEX:REPLACEMENT (repeatable, applied in turn; $1 in REPLACEMENT; \: for a ':' in REGEX), e.g. '^/v1/(.*):/v2/$1'.
    #[arg(long, value_name = "REGEX:REPLACEMENT")]
    pub rewrite: Vec<String>,
    /// Send this header on every request, "Name: value" (repeatable; replaces a recorded header of that name).
    #[arg(long, value_name = "HEADER")]
    pub set_header: Vec<String>,
    /// Replay only requests whose recorded path and query match REGEX (repeatable: any one).
    #[arg(long, value_name = "REGEX")]
    pub allow_url: Vec<String>,
    /// Do not replay requests whose recorded path and query match REGEX (repeatable).
    #[arg(long, value_name = "REGEX")]
    pub deny_url: Vec<String>,
    /// Read the log and print what would be replayed and skipped; send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Connections (kept alive) the requests are spread over: a request waits for a free one when all are busy, and its latency counts that wait.
    #[arg(short = 'c', value_name = "CONNECTIONS", default_value_t = 20)]
    pub concurrency: u32,
    /// Timeout per request ("30", "1s", "500ms").
    #[arg(short = 's', value_name = "TIMEOUT", value_parser = parse_duration, default_value = "30")]
    pub timeout: Duration,
    /// Client threads [default: as kurabe http].
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
    /// Speak HTTP/2: ALPN h2 for https://, prior knowledge (h2c) for http://; the recorded times are kept as over HTTP/1.1.
    #[arg(long)]
    pub http2: bool,
    /// Speak HTTP/3 (QUIC, https:// only); the recorded times are kept as over HTTP/1.1.
    #[arg(long)]
    pub http3: bool,
    /// With --http2 or --http3: concurrent streams per connection [default: 1, a request per connection at a time].
    #[arg(long, value_name = "N")]
    pub streams: Option<u32>,
    /// Do not verify the server's TLS certificate (https:// only).
    #[arg(long)]
    pub insecure: bool,
    /// Fold request names in the per-request breakdown, REGEX=NAME (repeatable), e.g. '/item/\d+=/item/:id'.
    #[arg(long = "group", value_name = "REGEX=NAME")]
    pub groups: Vec<String>,
    /// Check every response (repeatable), as kurabe http --check: status==200, body~REGEX, …
    #[arg(long = "check", value_name = "CHECK")]
    pub checks: Vec<String>,
    /// Report format: text, json (the kurabe-model record with its `replay` summary), md or csv.
    #[arg(long, value_parser = format(&["text", "json", "md", "csv"]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub out: crate::flags::OutputArg,
    /// Quiet: accepted as kurabe http takes it (replay shows no progress line yet).
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Exit 1 when more than this fraction of the requests failed (0 to 1).
    #[arg(long, value_name = "FRACTION")]
    pub max_error_rate: Option<f64>,
    /// Do not measure the server (by default, for a loopback URL, the listener's process tree).
    #[arg(long)]
    pub no_server_metrics: bool,
    #[command(flatten)]
    pub live: crate::live::LiveArgs,
}

/// Run `kurabe replay`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let speed = parse_speed(&args.speed).map_err(|e| anyhow::anyhow!("--speed {e}"))?;
    let spec = load_spec(&args, speed);
    if args.dry_run {
        return dry_run(&args, &spec);
    }
    let checked = check_spec(spec, &Names::FLAGS, 1)?;
    kurabe_http::outcome::check_max_error_rate(args.max_error_rate)?;
    args.live.check(None)?;
    check_outputs(&[("-o", args.out.path())])?;
    let layout = AbLayoutFlags::default().resolve(args.format)?;
    // Every check made: the log is read.
    let Loaded { spec, load } = checked.read()?;
    let server = ServerChoice::from_flags(args.no_server_metrics, None, load.target());
    // No progress bar yet: the bar counts toward the spec's -n/-t, and a
    // replay's length is the recording's.
    let (report, signalled) = (args.live).run_here(
        (&spec, load),
        (server, None, "kurabe replay"),
        (false, <_>::default()),
    )?;
    let rendered = to_string(&*http_renderer(args.format, &layout), &report);
    write_output(args.out.path(), &rendered)?;
    Ok(crate::exit(ending(&report, args.max_error_rate, signalled)))
}

/// `--dry-run`: the same check as a run's, then the log read; what the
/// run would send and skip.
fn dry_run(args: &Args, spec: &LoadSpec) -> anyhow::Result<ExitCode> {
    let checked = kurabe_http::load::check(spec, &Names::FLAGS)?;
    let summary = checked.replay_summary().expect("a replay's spec");
    write_output(args.out.path(), &kurabe_report::replay_text(summary))?;
    Ok(ExitCode::SUCCESS)
}

/// The flags as the load spec: the open model over kept-alive connections,
/// driven by the recording.
fn load_spec(args: &Args, speed: f64) -> LoadSpec {
    LoadSpec {
        concurrency: args.concurrency,
        threads: args.threads,
        keep_alive: true,
        timeout: kurabe_http::flags::timeout(args.timeout),
        insecure: args.insecure,
        http2: args.http2,
        http3: args.http3,
        streams: args.streams,
        group: args.groups.clone(),
        checks: args.checks.clone(),
        replay: Some(ReplaySpec {
            log: args.log.clone(),
            log_format: args.log_format.clone(),
            speed,
            loops: args.loops,
            rewrite: args.rewrite.clone(),
            set_header: args.set_header.clone(),
            allow_url: args.allow_url.clone(),
            deny_url: args.deny_url.clone(),
        }),
        ..LoadSpec::for_url(&args.url)
    }
}
