//! Who writes a running experiment: host, process id and process start, so
//! that an experiment left `running` by a killed kurabe can be told apart
//! from one still in progress.
//!
//! A pid alone is not enough: pids are reused, and a machine reboots. The
//! process start is this boot's id (`/proc/sys/kernel/random/boot_id`) and
//! the process's start time in clock ticks since boot (`/proc/PID/stat`
//! field 22), which together name one process for good. Only a writer on
//! this same host can be checked; one on another host is never called gone.

pub use kurabe_model::record::Writer;

/// This process on this machine.
pub(crate) fn current() -> Writer {
    let pid = std::process::id();
    Writer {
        hostname: hostname(),
        pid,
        process_start: process_start(pid).unwrap_or_default(),
    }
}

/// True when `writer` ran on `here`'s host and is no longer running there
/// (its pid is free, or now belongs to another process).
pub(crate) fn is_gone(writer: &Writer, here: &Writer) -> bool {
    if writer.hostname != here.hostname || writer.hostname.is_empty() {
        return false;
    }
    if writer.pid == here.pid && writer.process_start == here.process_start {
        return false;
    }
    let boot = |s: &str| s.split(':').next().unwrap_or("").to_owned();
    if !writer.process_start.is_empty() && boot(&writer.process_start) != boot(&here.process_start)
    {
        // Written during another boot of this machine: long gone.
        return true;
    }
    match process_start(writer.pid) {
        None => true,
        Some(now) => !writer.process_start.is_empty() && now != writer.process_start,
    }
}

/// This host's name, as `uname(2)` gives it (both read the UTS
/// namespace's node name, so it matches the name host facts record); empty
/// when unreadable, which [`is_gone`] takes as "cannot tell".
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim_end_matches('\n').to_owned())
        .unwrap_or_default()
}

/// `BOOT_ID:START_TICKS` of process `pid`, or `None` when it does not exist.
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces:
    // count fields after its closing one.
    let after = &stat[stat.rfind(')')? + 1..];
    let start = after.split_whitespace().nth(19)?;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(format!("{}:{start}", boot.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_dead_and_foreign_writers() {
        let here = current();
        assert!(!is_gone(&here, &here));
        assert!(here.process_start.contains(':'), "{}", here.process_start);
        // A child that has exited and been reaped: its pid is free (or,
        // rarely, reused by a process with another start time).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let child_pid = child.id();
        let live_start = process_start(child_pid);
        child.wait().unwrap();
        let dead = Writer {
            pid: child_pid,
            process_start: live_start.unwrap_or_else(|| here.process_start.clone()),
            ..here.clone()
        };
        assert!(is_gone(&dead, &here));
        // Another host is never judged from here.
        let foreign = Writer {
            hostname: format!("{}-elsewhere", here.hostname),
            ..dead.clone()
        };
        assert!(!is_gone(&foreign, &here));
        // Our parent (cargo's test harness) is alive.
        let parent = Writer {
            pid: std::os::unix::process::parent_id(),
            process_start: process_start(std::os::unix::process::parent_id()).unwrap(),
            ..here.clone()
        };
        assert!(!is_gone(&parent, &here));
    }
}
