//! kurabe's HTTP load generator and built-in target server.
//!
//! `client` owns the load generator: one epoll loop per thread driving many
//! non-blocking connections, an incremental HTTP/1.1 response parser, an
//! HTTP/2 engine on the same kind of loop (`client::engine::h2`, which says why it
//! is not the `h2` crate), HDR histograms merged at the end, and the
//! failure taxonomy. `serve` owns the
//! small tunable target server used by demos, examples and tests. `auth`
//! encodes HTTP Basic credentials and `header` checks request headers, for
//! both the binary and plans. `load` is the engine's one entry: a
//! [`kurabe_model::load::LoadSpec`] checked (the same rules for flags,
//! plans and fleet specs), run with a stop handle and an observer;
//! `source` holds every way a run's requests are produced (request sets
//! and their targets files, and `source::replay`, access logs and HAR
//! files read into timed requests for `kurabe replay`); `sent_head` gives the head a load sends (ab's `-v`),
//! `outcome` says whether a run as a whole failed, `tags` names each
//! request for the per-request breakdown and `response_check` judges
//! responses (`--check`); `flags` reads the load flags whose texts carry
//! a grammar of the load's (`-H`, `--stage`, `--http-version`).
//! [`raise_fd_limit`] is the one process-wide setting both sides need.
//! The engine itself (`client`) is private: callers see [`load`] (the
//! entry, its observer, taps and errors) and [`Target`].
//!
//! Nothing here prints or parses command lines: callers hand in a
//! [`kurabe_model::load::LoadSpec`] and get an [`kurabe_model::http::HttpReport`] back.
//! Per-request failures are counted data, never `Err`; only setup problems
//! (bad URL, unresolvable host, unreadable body file) are errors.

pub mod auth;
mod client;
pub mod flags;
pub mod header;
pub mod load;
pub mod outcome;
pub mod request;
pub mod response_check;
pub mod sent_head;
pub mod serve;
pub mod source;
pub mod tags;
mod target;

/// A parsed `http://` or `https://` URL, and why one does not parse: the
/// public face of the engine's targets (its internals stay in `client`).
pub use client::is_loopback;
pub use target::{Target, UrlError};

/// Raise the soft open-files limit to the hard limit: thousands of
/// connections, client or server side, need descriptors (a soft limit of
/// 1024 is common). Best effort: with the old limit a run is still correct,
/// just smaller.
pub fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read/write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

#[cfg(test)]
mod tests {
    fn limit() -> libc::rlimit {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct we pass.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        lim
    }

    #[test]
    fn fd_limit_is_raised_to_the_hard_limit() {
        // One below the hard limit first, so the raise has work to do
        // (other tests in this process may hold many descriptors).
        let mut lim = limit();
        lim.rlim_cur = lim.rlim_max - 1;
        // SAFETY: setrlimit only reads the struct we pass.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
        assert_ne!(limit().rlim_cur, limit().rlim_max);
        super::raise_fd_limit();
        assert_eq!(limit().rlim_cur, limit().rlim_max);
    }
}
