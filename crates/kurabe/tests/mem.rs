//! `kurabe mem` against `free` from procps, read around the same snapshot.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use kurabe_model::probe::MemReport;
use serde_json::Value;

use crate::util::kurabe;

/// `free -b`'s Mem: line as (total, used).
fn free_b() -> (u64, u64) {
    let out = Command::new("free")
        .arg("-b")
        .output()
        .expect("free (procps) is installed");
    let text = String::from_utf8_lossy(&out.stdout);
    let mem = text.lines().find(|l| l.starts_with("Mem:")).unwrap();
    let f: Vec<u64> = mem
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    (f[0], f[1])
}

/// procps version of the `free` on this machine, e.g. (4, 0, 2).
fn free_version() -> (u32, u32, u32) {
    let out = Command::new("free").arg("-V").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text.split_whitespace().last().unwrap();
    let n: Vec<u32> = v.split('.').map(|x| x.parse().unwrap_or(0)).collect();
    (n[0], *n.get(1).unwrap_or(&0), *n.get(2).unwrap_or(&0))
}

/// `free -b`'s used figure, read back to back on another thread until
/// `done` is set, plus one read after: the system's used memory over the
/// time something else ran, at the resolution of one `free` run.
fn free_used_while(done: &AtomicBool) -> Vec<u64> {
    let mut used = Vec::new();
    while !done.load(Ordering::Acquire) {
        used.push(free_b().1);
    }
    used.push(free_b().1);
    used
}

#[test]
fn used_matches_free_from_the_same_moment() {
    let before = free_b();
    let done = AtomicBool::new(false);
    let (out, during) = std::thread::scope(|s| {
        let reads = s.spawn(|| free_used_while(&done));
        let out = kurabe()
            .args(["mem", "--format", "json", "--top", "5"])
            .output()
            .unwrap();
        done.store(true, Ordering::Release);
        (out, reads.join().unwrap())
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("mem-report.schema.json", &v);
    let r: MemReport = serde_json::from_value(v).unwrap();
    assert_eq!(r.total_bytes, before.0);
    // Which of kurabe's three "used" figures this free prints.
    let used = if free_version() >= (4, 0, 1) {
        r.used_bytes
    } else {
        r.used_legacy_bytes
    };
    // kurabe read /proc/meminfo at one moment while free was being read back
    // to back: its figure lies between two consecutive reads of free, give
    // or take how far the system moves within one such step. That step is
    // measured, not guessed: the largest change between consecutive reads
    // (at least 4 MiB, the kernel's per-CPU counter batching).
    let reads: Vec<u64> = std::iter::once(before.1).chain(during).collect();
    let step = reads
        .windows(2)
        .map(|w| w[0].abs_diff(w[1]))
        .max()
        .unwrap_or(0)
        .max(4 << 20);
    let (lo, hi) = (*reads.iter().min().unwrap(), *reads.iter().max().unwrap());
    assert!(
        used + step >= lo && used <= hi + step,
        "kurabe used {used}, free read {lo}..{hi} meanwhile (largest step {step})"
    );
    assert!(r.used_minus_buffers_cache_bytes <= r.total_bytes - r.free_bytes);
    assert_eq!(
        r.buff_cache_bytes,
        r.buffers_bytes + r.cached_bytes + r.sreclaimable_bytes
    );
    assert!(!r.host.is_empty() && !r.kernel.is_empty() && !r.arch.is_empty());
    assert!(r.time.ends_with('Z'));
    assert!(!r.top_processes.is_empty() && r.top_processes.len() <= 5);
    assert!(r
        .top_processes
        .windows(2)
        .all(|w| w[0].pss_bytes >= w[1].pss_bytes));
}

#[test]
fn text_layout_like_free_with_legacy_lines() {
    let out = kurabe().args(["mem", "-m", "--top", "3"]).output().unwrap();
    assert!(out.status.success());
    let t = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines[0],
        "               total        used        free      shared  buff/cache   available"
    );
    assert!(lines[1].starts_with("Mem:"));
    assert!(lines[2].starts_with("Swap:"));
    assert!(t.contains("-/+ buffers/cache"));
    assert!(t.contains("3.3.12–4.0.0"));
    assert!(t.contains("Top 3 processes by PSS"));
    let total_mib: u64 = lines[1].split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(total_mib, free_b().0 >> 20);
}

#[test]
fn human_units_and_bad_flags() {
    let out = kurabe().args(["mem", "-h", "--top", "0"]).output().unwrap();
    assert!(out.status.success());
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.lines().nth(1).unwrap().contains("i"), "{t}");
    assert!(!t.contains("Top"));
    let out = kurabe().args(["mem", "-m", "-g"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "one unit at a time");
}
