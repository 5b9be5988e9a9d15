//! A command-line front to the interim HTTP/3 load (`kurabe_http::h3::run`),
//! until `kurabe http --http3` takes it (issue 35): for measuring its
//! CPU per request against kurabe's HTTP/2 on the same server with
//! `/usr/bin/time`. Owns nothing the product uses.
//!
//! Usage: `h3load URL CONNECTIONS STREAMS REQUESTS [--insecure | --ca FILE]`
//! → prints `completed N failed N elapsed_ms N` and the first reasons.

use std::time::Duration;

use kurabe_http::h3::{run, H3Load};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, c, s, n, trust) = match &args[..] {
        [u, c, s, n, rest @ ..] => (u, c, s, n, rest),
        _ => {
            eprintln!("usage: h3load URL CONNECTIONS STREAMS REQUESTS [--insecure | --ca FILE]");
            std::process::exit(2);
        }
    };
    let number = |v: &str| {
        v.parse().unwrap_or_else(|_| {
            eprintln!("h3load: '{v}' is not a number");
            std::process::exit(2)
        })
    };
    let load = H3Load {
        url: url.clone(),
        method: "GET".into(),
        headers: Vec::new(),
        body: Vec::new(),
        connections: number(c) as usize,
        streams: number(s) as usize,
        requests: number(n),
        timeout: Duration::from_secs(30),
        insecure: trust.first().is_some_and(|a| a == "--insecure"),
        ca_file: match trust {
            [flag, file] if flag == "--ca" => Some(file.into()),
            _ => None,
        },
    };
    match run(&load) {
        Ok(r) => {
            let failed = r.stats.counters.failures.total();
            println!(
                "completed {} failed {failed} elapsed_ms {} handshakes {} packets_sent {} packets_lost {}",
                r.stats.counters.completed,
                r.elapsed.as_millis(),
                r.quic.handshakes,
                r.quic.packets_sent,
                r.quic.packets_lost
            );
            for (kind, why) in &r.reasons {
                println!("first {}: {why}", kind.name());
            }
        }
        Err(e) => {
            eprintln!("h3load: {e}");
            std::process::exit(2);
        }
    }
}
