//! Drive the load generator without the CLI (for benchmarks and debugging):
//! `load URL [-c N] [-n N | -t SECS] [-k] [--threads N] [--rate R] [--pipeline N] [-s SECS]`.
//! Prints the report as JSON on stdout.

use std::time::Duration;

use kurabe_http::client::{run, LoadConfig, RunControl, StopCondition, Target};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut url = None;
    let (mut c, mut n, mut t, mut k, mut threads, mut rate, mut pipe, mut s) =
        (1u32, None, None, false, 1u32, None, 1u32, 30.0f64);
    let mut i = 0;
    while i < args.len() {
        let v = || args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "-c" => c = v().parse().expect("-c N"),
            "-n" => n = Some(v().parse::<u64>().expect("-n N")),
            "-t" => t = Some(v().parse::<f64>().expect("-t SECS")),
            "-s" => s = v().parse().expect("-s SECS"),
            "--threads" => threads = v().parse().expect("--threads N"),
            "--rate" => rate = Some(v().parse::<f64>().expect("--rate R")),
            "--pipeline" => pipe = v().parse().expect("--pipeline N"),
            "-k" => {
                k = true;
                i += 1;
                continue;
            }
            u => {
                url = Some(u.to_string());
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    let target = Target::parse(&url.expect("URL")).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let stop = match (n, t) {
        (Some(n), None) => StopCondition::Requests(n),
        (None, Some(t)) => StopCondition::Duration(Duration::from_secs_f64(t)),
        (Some(n), Some(t)) => StopCondition::RequestsOrDuration(n, Duration::from_secs_f64(t)),
        (None, None) => StopCondition::Requests(1),
    };
    let cfg = LoadConfig {
        target,
        method: "GET".into(),
        headers: vec![],
        body: None,
        concurrency: c,
        threads,
        keep_alive: k,
        pipeline: pipe,
        stop,
        rate,
        warmup: None,
        timeout: Duration::from_secs_f64(s),
        abort_on_error: false,
        check_length: true,
        insecure: true,
        gnuplot_file: None,
    };
    match run(&cfg, &RunControl::default()) {
        Ok(r) => println!(
            "{}",
            serde_json::to_string_pretty(&r).expect("report serializes")
        ),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
    }
}
