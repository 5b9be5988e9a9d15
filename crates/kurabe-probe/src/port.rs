//! TCP port → the process listening on it.
//!
//! LISTEN sockets (state `0A`) of `/proc/net/tcp` and `/proc/net/tcp6` give
//! socket inodes; `/proc/*/fd/*` links named `socket:[inode]` give the PIDs
//! holding them. A pre-forking server (nginx master + workers) has every
//! process holding the socket: the server is the root of the holders' tree,
//! the holder whose parent does not hold it. Only this network namespace is
//! visible, and another user's `/proc/PID/fd` only to root.

use std::collections::HashSet;

use crate::error::{ProbeError, Result};
use crate::procfs;

/// Inodes of LISTEN sockets on `port` in one `/proc/net/tcp{,6}` text.
pub fn parse_listen_inodes(text: &str, port: u16) -> Vec<u64> {
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 || f[3] != "0A" {
            continue;
        }
        let Some((_, port_hex)) = f[1].rsplit_once(':') else {
            continue;
        };
        if u16::from_str_radix(port_hex, 16).ok() != Some(port) {
            continue;
        }
        if let Ok(inode) = f[9].parse::<u64>() {
            if inode != 0 {
                out.push(inode);
            }
        }
    }
    out
}

/// Every PID holding a LISTEN socket on `port` (IPv4 or IPv6), sorted.
///
/// `Ok(empty)` when nothing listens; [`ProbeError::ListenerHidden`] when a
/// socket listens but no readable process holds it.
pub fn listener_pids(port: u16) -> Result<Vec<u32>> {
    let mut inodes = HashSet::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = procfs::read(file) {
            inodes.extend(parse_listen_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return Ok(Vec::new());
    }
    let mut pids: Vec<u32> = procfs::pids()
        .unwrap_or_default()
        .into_iter()
        .filter(|&pid| holds_socket(pid, &inodes))
        .collect();
    if pids.is_empty() {
        return Err(ProbeError::ListenerHidden(port));
    }
    pids.sort_unstable();
    Ok(pids)
}

/// True when process `pid` has a descriptor on one of the socket `inodes`.
fn holds_socket(pid: u32, inodes: &HashSet<u64>) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).ok().is_some_and(|link| {
            link.to_str()
                .and_then(|l| l.strip_prefix("socket:["))
                .and_then(|l| l.strip_suffix(']'))
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| inodes.contains(&n))
        })
    })
}

/// Root of a set of holder PIDs: the lowest holder whose parent is not a holder.
pub fn root_of(holders: &[u32], ppid_of: impl Fn(u32) -> Option<u32>) -> Option<u32> {
    let set: HashSet<u32> = holders.iter().copied().collect();
    holders
        .iter()
        .copied()
        .filter(|p| ppid_of(*p).is_none_or(|pp| !set.contains(&pp)))
        .min()
}

/// The server process behind a TCP port: the root of the tree of processes
/// holding its listening socket. `Ok(None)` when nothing listens on it.
pub fn find_listener(port: u16) -> Result<Option<u32>> {
    let holders = listener_pids(port)?;
    Ok(root_of(&holders, |pid| {
        procfs::read(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| procfs::parse_stat(&t))
            .map(|s| s.ppid)
    }))
}

/// Like [`find_listener`], but no listener is an error ([`ProbeError::NoListener`]).
pub fn require_listener(port: u16) -> Result<u32> {
    find_listener(port)?.ok_or(ProbeError::NoListener(port))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 22222 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn listen_inodes_only_for_listening_state_and_port() {
        assert_eq!(parse_listen_inodes(TCP, 8080), vec![12345]);
        assert_eq!(parse_listen_inodes(TCP, 80), vec![777]);
        assert!(parse_listen_inodes(TCP, 81).is_empty());
        assert_eq!(parse_listen_inodes(TCP6, 8080), vec![999]);
    }

    #[test]
    fn root_is_holder_without_holding_parent() {
        // nginx: master 10 (parent 1), workers 11, 12 (parent 10).
        let ppid = |p| match p {
            10 => Some(1),
            11 | 12 => Some(10),
            _ => None,
        };
        assert_eq!(root_of(&[11, 10, 12], ppid), Some(10));
        assert_eq!(root_of(&[], ppid), None);
    }
}
