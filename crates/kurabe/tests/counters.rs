//! The kernel's counters of a measured tree (issue 36), against
//! independent references on real processes: `dd`'s known write calls,
//! `/usr/bin/time`'s faults and context switches of the same command,
//! the server's own `/proc` files around a `kurabe http` run, and
//! `perf stat` on whether this machine counts instructions.

use std::path::Path;
use std::process::Command;

use kurabe_model::bench::CmdExport;
use kurabe_model::tree_counters::{Counter, Counts, HardwareOff};
use serde_json::Value;

use crate::http::http_json;
use crate::serve::ServeChild;
use crate::util::kurabe;

/// `kurabe cmd -N --no-save -q ARGS --export-json out.json`, its stdout and export.
fn cmd_export(dir: &Path, args: &[&str]) -> (String, CmdExport) {
    let o = kurabe()
        .args(["cmd", "-N", "--no-save", "--export-json", "out.json"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(dir.join("out.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    kurabe_testkit::schema::assert_valid("cmd-export.schema.json", &v);
    (stdout, serde_json::from_value(v).unwrap())
}

fn counted(c: &Counts, k: Counter) -> f64 {
    c.get(k)
        .unwrap_or_else(|| panic!("{} not counted in {c:?}", k.key()))
}

/// Means over `runs` of `/usr/bin/time -f FORMAT ARGV`'s numbers, one per format field.
fn time_means(format: &str, argv: &[&str], runs: usize) -> Vec<f64> {
    let mut sums: Vec<f64> = Vec::new();
    for _ in 0..runs {
        let o = Command::new("/usr/bin/time")
            .args(["-f", format])
            .args(argv)
            .output()
            .expect("/usr/bin/time (Debian's time package)");
        let err = String::from_utf8_lossy(&o.stderr);
        let last = err.lines().last().unwrap_or_default();
        let v: Vec<f64> = last
            .split_whitespace()
            .map(|x| x.parse().unwrap_or_else(|_| panic!("{err}")))
            .collect();
        sums.resize(v.len(), 0.0);
        for (s, x) in sums.iter_mut().zip(v) {
            *s += x;
        }
    }
    sums.into_iter().map(|s| s / runs as f64).collect()
}

#[test]
fn dd_writes_are_counted_call_by_call_and_byte_by_byte() {
    let dir = tempfile::tempdir().unwrap();
    let dd = "dd if=/dev/zero of=/dev/null bs=4096 count=1000 status=none";
    let (out, export) = cmd_export(dir.path(), &["-r", "5", dd]);
    let c = &export.results[0].counters;
    let calls = counted(c, Counter::WriteSyscalls);
    let bytes = counted(c, Counter::WriteBytes);
    // 1000 writes of 4096 bytes, and dd's few others (none with status=none
    // but the loader's): at least that, and not much more.
    assert!((1000.0..1100.0).contains(&calls), "{calls} write calls");
    assert!(
        (4_096_000.0..4_200_000.0).contains(&bytes),
        "{bytes} bytes written"
    );
    assert!(counted(c, Counter::ReadSyscalls) >= 1000.0, "{c:?}");
    assert!(counted(c, Counter::ReadBytes) >= 4_096_000.0, "{c:?}");
    assert!(out.contains("Counters (mean):"), "{out}");
    // Against twice the writes, the counters get verdicts too.
    let twice = "dd if=/dev/zero of=/dev/null bs=4096 count=2000 status=none";
    let (out, _) = cmd_export(dir.path(), &["-r", "3", dd, twice]);
    let verdicts = &out[out.find("Against").unwrap_or_else(|| panic!("{out}"))..];
    assert!(verdicts.contains("write calls"), "{out}");
}

#[test]
fn page_faults_and_switches_agree_with_usr_bin_time() {
    let dir = tempfile::tempdir().unwrap();
    // dd touches its 32 MiB buffer: about 8200 minor faults, as the kernel
    // counts them for /usr/bin/time too.
    let argv = [
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=32M",
        "count=1",
        "status=none",
    ];
    let (_, export) = cmd_export(dir.path(), &["-r", "5", &argv.join(" ")]);
    let c = &export.results[0].counters;
    let ours = counted(c, Counter::MinorFaults);
    let theirs = time_means("%R", &argv, 5)[0];
    assert!(theirs > 8000.0, "{theirs}");
    let diff = (ours - theirs).abs() / theirs;
    assert!(
        diff < 0.05,
        "kurabe {ours:.0} minor faults, /usr/bin/time {theirs:.0}"
    );
    assert!(c.get(Counter::MajorFaults).is_some());
    // Ten sleeps of 5 ms from a shell: a voluntary switch for each sleep and
    // each wait of the shell, however loaded the machine is.
    let sh = [
        "sh",
        "-c",
        "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.005; done",
    ];
    let line = format!("sh -c '{}'", sh[2]);
    let (_, export) = cmd_export(dir.path(), &["-r", "5", &line]);
    let c = &export.results[0].counters;
    let ours = counted(c, Counter::VoluntarySwitches);
    let theirs = time_means("%w %c", &sh, 5);
    assert!(theirs[0] >= 20.0, "{theirs:?}");
    let diff = (ours - theirs[0]).abs() / theirs[0];
    assert!(
        diff < 0.25,
        "kurabe {ours:.1} voluntary switches, /usr/bin/time {:.1}",
        theirs[0]
    );
    // Involuntary ones depend on the machine's load: counted, of the same order.
    let invol = counted(c, Counter::InvoluntarySwitches);
    assert!(invol <= theirs[1] * 10.0 + 20.0, "{invol} vs {}", theirs[1]);
}

/// Σ over the process's threads of `/proc/PID/task/TID/status`'s
/// voluntary switches, `/proc/PID/io`'s syscr and syscw, and `stat`'s minflt.
fn server_files(pid: u32) -> [f64; 4] {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    let io_field = |k: &str| -> f64 {
        io.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix(':')?.trim().parse().ok())
            .unwrap()
    };
    let mut vol = 0.0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let status = std::fs::read_to_string(t.unwrap().path().join("status")).unwrap_or_default();
        vol += status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .map_or(0.0, |v| v.trim().parse::<f64>().unwrap());
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    let minflt: f64 = fields[7].parse().unwrap();
    [vol, io_field("syscr"), io_field("syscw"), minflt]
}

#[test]
fn the_servers_counters_per_request_agree_with_its_own_proc_files() {
    let server = ServeChild::start(&[]);
    let before = server_files(server.pid());
    let r = http_json(&["-n", "3000", "-c", "1", "-k", &server.url]);
    let after = server_files(server.pid());
    let s = r.server.expect("a loopback server is measured by default");
    let per = |i: usize| (after[i] - before[i]) / 3000.0;
    let c = &s.counters_per_request;
    // /proc/PID/io counts read(2)/write(2) and their kin, not a socket's
    // recv/send: what the server's own file says, kurabe says.
    for (k, i) in [(Counter::ReadSyscalls, 1), (Counter::WriteSyscalls, 2)] {
        let (ours, theirs) = (counted(c, k), per(i));
        assert!(
            // The sampler's window is the load's; the files' is a little
            // wider (the first sample races the first requests).
            (ours - theirs).abs() <= 0.15 * theirs + 0.01,
            "{}: kurabe {ours:.3}/req, /proc {theirs:.3}/req",
            k.key()
        );
    }
    let (ours, theirs) = (counted(c, Counter::VoluntarySwitches), per(0));
    assert!(
        (ours - theirs).abs() <= 0.25 * theirs + 0.05,
        "voluntary switches: kurabe {ours:.3}/req, /proc status {theirs:.3}/req"
    );
    let (ours, theirs) = (counted(c, Counter::MinorFaults), per(3));
    assert!(
        ours <= theirs + 0.05,
        "minor faults: kurabe {ours:.3}/req, /proc {theirs:.3}/req"
    );
    assert!(c.get(Counter::CpuMigrations).is_some(), "{c:?}");
}

/// What `perf stat -e instructions true` says: `Some(false)` for
/// "<not supported>", `Some(true)` for a count, `None` without perf.
fn perf_counts_instructions() -> Option<bool> {
    let o = Command::new("perf")
        .args(["stat", "-x,", "-e", "instructions", "true"])
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err.lines().find(|l| l.contains("instructions"))?;
    Some(!line.contains("not supported") && !line.contains("not counted"))
}

#[test]
fn no_pmu_is_said_in_one_line_and_no_hardware_counter_reads_zero() {
    let Some(pmu) = perf_counts_instructions() else {
        eprintln!("perf is not installed: nothing to compare with");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (out, export) = cmd_export(dir.path(), &["-r", "3", "true"]);
    let c = &export.results[0].counters;
    let line = "no hardware PMU: instructions not counted";
    if pmu {
        assert!(counted(c, Counter::Instructions) > 0.0, "{c:?}");
        assert!(!out.contains(line), "{out}");
    } else {
        assert_eq!(out.matches(line).count(), 1, "{out}");
        for k in Counter::HARDWARE {
            assert_eq!(c.get(k), None, "{} not counted, yet {c:?}", k.key());
        }
        let json = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
        assert!(!json.contains("hw_"), "{json}");
        assert_eq!(export.hardware_off, Some(HardwareOff::NoPmu), "{json}");
        // The software counters stay.
        assert!(c.get(Counter::MinorFaults).is_some(), "{c:?}");
    }
}
