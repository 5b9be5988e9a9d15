//! `kurabe worker --store postgres://…`: a load host for distributed runs.
//!
//! Owns the command line and the process edge: optional `--cpus` (the worker
//! re-runs itself inside a fresh cgroup with that CPU quota, via
//! kurabe-probe's cgroup code, v1 or v2), Ctrl-C/SIGTERM (finish or give back
//! the current share, then leave) and the log lines on stderr. The protocol
//! itself is `kurabe_fleet::worker`.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kurabe_fleet::worker::{ShareWatch, WorkerEvent, WorkerFlags};
use kurabe_probe::cgroup_run::{is_rerun, rerun_with_cpus, Stops};
use kurabe_report::fleet_events;

use crate::flags::parse_duration;
use kurabe_live::views::WorkerLive;
use kurabe_model::ending::Ending;

/// Arguments of `kurabe worker`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Start one worker per load host, all with the same --store; then run \
`kurabe http URL -n/-t … --workers N --store …` anywhere. See docs/distributed.md.")]
pub struct Args {
    /// PostgreSQL store where workers and coordinators meet (postgres://user@host/db; password from PGPASSWORD or ~/.pgpass, never on the command line).
    #[arg(long, value_name = "URL", env = "KURABE_STORE", hide_env_values = true)]
    pub store: Option<std::path::PathBuf>,
    /// Name shown in reports [default: HOSTNAME-PID].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Client threads per share [default: CPUs available, or ⌈--cpus⌉].
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
    /// Limit this worker to this many CPUs (e.g. 0.5) with a cgroup CPU quota, so load hosts of a given size can be emulated.
    #[arg(long, value_name = "CPUS")]
    pub cpus: Option<f64>,
    /// Heartbeat and progress interval, at most 5s ("1s", "500ms").
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "1s")]
    pub heartbeat: Duration,
    /// Exit after one share (for scripts and tests).
    #[arg(long)]
    pub once: bool,
    /// Serve Prometheus metrics of this worker's share of each run (OpenMetrics text at http://ADDR/metrics, as kurabe http --prometheus-addr) for as long as the worker runs: ":PORT" listens on 127.0.0.1 only, "0.0.0.0:PORT" on every interface, ":0" on any free port (printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub prometheus_addr: Option<String>,
}

/// Run `kurabe worker`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let url = kurabe_store::access::postgres_url(args.store.as_deref(), "kurabe worker")?;
    if let Some(given) = &args.prometheus_addr {
        kurabe_live::addr::parse(given)?;
    }
    let flags = WorkerFlags {
        name: args.name,
        threads: args.threads,
        cpus: args.cpus,
        heartbeat: args.heartbeat,
        once: args.once,
    };
    if let Some(cpus) = flags.checked_cpus()? {
        if !is_rerun() {
            return run_in_cgroup(cpus, &url);
        }
    }
    let ncpus = kurabe_probe::procfs::online_cpus();
    let cfg = flags.resolve(ncpus, &kurabe_probe::host::host_facts().hostname)?;
    let live = args
        .prometheus_addr
        .as_deref()
        .map(|given| WorkerLive::start(given, &mut crate::live::serving))
        .transpose()?;
    // A second signal (or a first one whose share has not ended within
    // the grace: a database that does not answer) ends the worker at
    // once: it started nothing, and the coordinator counts a share whose
    // session ended as lost.
    let stop = crate::live::stop_for_load()?;
    let mut client = kurabe_store::pg::connect_migrated(&url)?;
    let mut on = |e: WorkerEvent| eprintln!("{}", fleet_events::worker_line(&cfg.name, &e));
    let watch = live.as_ref().map(|l| l as &dyn ShareWatch);
    kurabe_fleet::worker::serve(&mut client, &cfg, &stop, watch, &mut on)?;
    Ok(crate::exit(Ending::done_unless(stop.is_set())))
}

/// Re-run this worker inside a new cgroup with a CPU quota of `cpus`
/// (`kurabe_probe::cgroup_run`); relay Ctrl-C/SIGTERM to it and exit
/// with its status. A second signal kills it and ends this parent at
/// once, its cgroup removed: the coordinator counts the share lost, as
/// it does a killed worker's.
fn run_in_cgroup(cpus: f64, store_url: &str) -> anyhow::Result<ExitCode> {
    let stops = Stops {
        stop: crate::signal::install_stop()?,
        kill: crate::signal::second_signal(),
    };
    let status =
        rerun_with_cpus(cpus, store_url, &stops).context("--cpus needs a cgroup for the worker")?;
    if stops.kill.is_set() {
        crate::signal::say_forced();
    }
    Ok(ExitCode::from(status))
}
