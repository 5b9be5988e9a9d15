//! What `kurabe watch` was asked to watch and how, checked before anything
//! starts: one of a PID, a port or a command; limits only for a command
//! kurabe starts, in a cgroup; sampling no faster than 10 ms.
//!
//! Owns these rules and their messages (which name the flags to change).
//! Must not parse command lines or start anything.

use std::time::Duration;

use crate::{CommandSpec, SessionConfig, WatchTarget};

/// Why a watch cannot start as asked.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// `--pss-budget` outside [0, 1].
    #[error("--pss-budget must be between 0 and 1 (a share of one core)")]
    PssBudget,
    /// Sampling faster than the sampler can measure honestly.
    #[error("{flag} {value:?}: give at least 10ms")]
    TooShort {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: Duration,
    },
    /// Limits on a process kurabe did not start.
    #[error("--cpus, --cpuset and --memory apply to a command kurabe starts: use `kurabe watch --cpus 0.5 -- CMD ARGS`")]
    LimitsNeedCommand,
    /// A memory limit no process fits in.
    #[error("--memory is too small for a process: give at least 1M")]
    MemoryTooSmall,
    /// Limits without the cgroup that enforces them.
    #[error("--cpus, --cpuset and --memory need a cgroup; drop --no-cgroup")]
    LimitsNeedCgroup,
}

/// A watch as asked: the first of `pid`, `port`, `command` that is set.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    /// Watch this process and its descendants.
    pub pid: Option<u32>,
    /// Watch the process listening on this TCP port.
    pub port: Option<u16>,
    /// Else start this command (its `limits` apply only here).
    pub command: CommandSpec,
    /// Sampling settings.
    pub config: SessionConfig,
}

impl WatchRequest {
    /// The target and sampling settings, or the first rule broken.
    pub fn check(self) -> Result<(WatchTarget, SessionConfig), RequestError> {
        let cfg = self.config;
        if !(0.0..=1.0).contains(&cfg.pss_budget) {
            return Err(RequestError::PssBudget);
        }
        at_least_10ms("--interval", cfg.interval)?;
        if let Some(d) = cfg.duration {
            at_least_10ms("--duration", d)?;
        }
        Ok((self.target()?, cfg))
    }

    fn target(self) -> Result<WatchTarget, RequestError> {
        let limited = !self.command.limits.is_empty();
        if limited && self.command.argv.is_empty() {
            return Err(RequestError::LimitsNeedCommand);
        }
        if let Some(pid) = self.pid {
            return Ok(WatchTarget::Pid(pid));
        }
        if let Some(port) = self.port {
            return Ok(WatchTarget::Port(port));
        }
        if self
            .command
            .limits
            .memory_bytes
            .is_some_and(|m| m < 1 << 20)
        {
            return Err(RequestError::MemoryTooSmall);
        }
        if !self.command.cgroup && limited {
            return Err(RequestError::LimitsNeedCgroup);
        }
        Ok(WatchTarget::Command(self.command))
    }
}

fn at_least_10ms(flag: &'static str, value: Duration) -> Result<(), RequestError> {
    if value < Duration::from_millis(10) {
        return Err(RequestError::TooShort { flag, value });
    }
    Ok(())
}
