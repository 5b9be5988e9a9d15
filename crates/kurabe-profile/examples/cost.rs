//! What sampling costs the sampled process, and what naming costs:
//! `cargo run --release -p kurabe-profile --example cost -- WORK ARGS...`
//! runs `WORK ARGS` 2×N times (N = $RUNS, default 20), alternately with
//! and without a sampler attached, and prints each side's mean CPU
//! (user + system, from the child's rusage) and their ratio with its 95 %
//! interval; then, with $SYMBOLS naming a binary, the time to read its
//! symbol table and name 10 000 addresses in it.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

use kurabe_model::stats::{compare, Direction};
use kurabe_profile::{Sampler, Symbols, DEFAULT_HZ};

/// CPU seconds the waited children have used so far.
fn children_cpu() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

/// One run of the workload behind a gate, sampled or not; its CPU seconds.
fn run(work: &[String], sampled: bool) -> f64 {
    let line = work.join(" ");
    let mut sh = Command::new("sh")
        .args(["-c", &format!("read x; exec {line}")])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let sampler = sampled.then(|| Sampler::attach(sh.id(), DEFAULT_HZ).unwrap());
    let before = children_cpu();
    sh.stdin.take().unwrap().write_all(b"go\n").unwrap();
    sh.wait().unwrap();
    let cpu = children_cpu() - before;
    if let Some(s) = sampler {
        let samples = s.finish();
        assert!(samples.folded.samples > 0);
    }
    cpu
}

fn main() {
    let work: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for i in 0..n {
        // Alternate which goes first, so drift hits both alike.
        let first = i % 2 == 0;
        let a = run(&work, first);
        let b = run(&work, !first);
        let (s, u) = if first { (a, b) } else { (b, a) };
        on.push(s);
        off.push(u);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let c = compare(&off, &on, Direction::LowerIsBetter, 0.02);
    println!(
        "CPU per run: {:.4} s without, {:.4} s sampled at {DEFAULT_HZ} Hz; ratio {:.4} [{:.4}, {:.4}], {}",
        mean(&off),
        mean(&on),
        c.ratio.unwrap_or(f64::NAN),
        c.ratio_low.unwrap_or(f64::NAN),
        c.ratio_high.unwrap_or(f64::NAN),
        c.verdict
    );
    if let Ok(path) = std::env::var("SYMBOLS") {
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let t = Instant::now();
        let mut symbols = Symbols::new();
        let mut named = 0;
        for i in 0..10_000u64 {
            let name = symbols.object(&path, 0x1000 + i * 997);
            named += usize::from(!name.contains("+0x"));
        }
        println!(
            "symbols of {path} ({size} bytes): read and 10 000 addresses named ({named} in a symbol) in {:.3} s",
            t.elapsed().as_secs_f64()
        );
    }
}
