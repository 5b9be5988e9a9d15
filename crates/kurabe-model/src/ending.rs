//! How a command's work ended, as its exit status tells it: the library
//! that did the work decides which, and what to tell beside the report;
//! [`Ending::status`] numbers it (0, 1, 99, 128 + the signal) and the
//! binary tells the notice.
//!
//! Owns the kinds and their exit statuses, an error's too
//! ([`error_status`]). Must not word the notices.

use crate::notice::Notice;

/// How a command's work ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Done, and nothing failed.
    Done,
    /// The work as a whole failed, with what to tell when the report
    /// does not already say it.
    Failed(Option<Notice>),
    /// A threshold failed (k6's exit status), each one named.
    ThresholdsFailed(Notice),
    /// Stopped by a signal, with what to tell.
    Signalled(Option<Notice>),
}

/// The exit status of a run whose thresholds failed (k6's).
pub const THRESHOLDS_FAILED: u8 = 99;

/// The exit status of bad input or setup (clap's usage errors exit 2 too).
pub const USAGE: u8 = 2;

/// The exit status of an internal error (sysexits.h's EX_SOFTWARE): a bug
/// in kurabe, not the input nor the measured system.
pub const EX_SOFTWARE: u8 = 70;

/// The exit status of an error that ended a command: [`EX_SOFTWARE`]
/// when it is a `bug` in kurabe (a load worker's panic), else [`USAGE`].
pub fn error_status(bug: bool) -> u8 {
    match bug {
        true => EX_SOFTWARE,
        false => USAGE,
    }
}

impl Ending {
    /// The exit status, and the notice to tell beside it: 0 done, 1
    /// failed, 99 a failed threshold, `signalled` (128 + the signal that
    /// stopped the process) when a signal did.
    pub fn status(self, signalled: u8) -> (u8, Option<Notice>) {
        match self {
            Ending::Done => (0, None),
            Ending::Failed(n) => (1, n),
            Ending::ThresholdsFailed(n) => (THRESHOLDS_FAILED, Some(n)),
            Ending::Signalled(n) => (signalled, n),
        }
    }

    /// Stopped by a signal when `signalled`, else done: the work of a
    /// command that fails only by its error.
    pub fn done_unless(signalled: bool) -> Ending {
        match signalled {
            true => Ending::Signalled(None),
            false => Ending::Done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ending_has_its_status_and_notice() {
        let n = Notice::SystemInterrupted;
        assert_eq!(Ending::Done.status(130), (0, None));
        assert_eq!(Ending::Failed(None).status(130), (1, None));
        let failed = Ending::ThresholdsFailed(n.clone()).status(130);
        assert_eq!(failed, (99, Some(n.clone())));
        assert_eq!(
            Ending::Signalled(Some(n.clone())).status(143),
            (143, Some(n))
        );
        assert_eq!(Ending::done_unless(true).status(129), (129, None));
        assert_eq!((error_status(true), error_status(false)), (70, 2));
    }
}
