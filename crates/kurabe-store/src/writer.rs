//! Who writes a running experiment: host, process id and process start, so
//! that an experiment left `running` by a killed kurabe can be told apart
//! from one still in progress.
//!
//! A pid alone is not enough: pids are reused, and a machine reboots. The
//! process start is this boot's id (`/proc/sys/kernel/random/boot_id`) and
//! the process's start time in clock ticks since boot (`/proc/PID/stat`
//! field 22), which together name one process for good. Only a writer on
//! this same host can be checked; one on another host is never called gone.

use serde::{Deserialize, Serialize};

/// The process that writes an experiment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Writer {
    /// Host name of the machine the writer ran on.
    pub hostname: String,
    /// Its process id there.
    pub pid: u32,
    /// `BOOT_ID:START_TICKS`, naming the process beyond pid reuse; empty
    /// when /proc could not be read.
    pub process_start: String,
}

impl Writer {
    /// This process on this machine.
    pub fn current() -> Writer {
        let pid = std::process::id();
        Writer {
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|s| s.trim().to_owned())
                .unwrap_or_default(),
            pid,
            process_start: process_start(pid).unwrap_or_default(),
        }
    }

    /// True when this writer ran on `here`'s host and is no longer running
    /// there (its pid is free, or now belongs to another process).
    pub fn is_gone(&self, here: &Writer) -> bool {
        if self.hostname != here.hostname || self.hostname.is_empty() {
            return false;
        }
        if self.pid == here.pid && self.process_start == here.process_start {
            return false;
        }
        let boot = |s: &str| s.split(':').next().unwrap_or("").to_owned();
        if !self.process_start.is_empty() && boot(&self.process_start) != boot(&here.process_start)
        {
            // Written during another boot of this machine: long gone.
            return true;
        }
        match process_start(self.pid) {
            None => true,
            Some(now) => !self.process_start.is_empty() && now != self.process_start,
        }
    }
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
        let here = Writer::current();
        assert!(!here.is_gone(&here));
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
        assert!(dead.is_gone(&here));
        // Another host is never judged from here.
        let foreign = Writer {
            hostname: format!("{}-elsewhere", here.hostname),
            ..dead.clone()
        };
        assert!(!foreign.is_gone(&here));
        // Our parent (cargo's test harness) is alive.
        let parent = Writer {
            pid: std::os::unix::process::parent_id(),
            process_start: process_start(std::os::unix::process::parent_id()).unwrap(),
            ..here.clone()
        };
        assert!(!parent.is_gone(&here));
    }
}
