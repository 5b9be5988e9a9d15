//! How a command's work ended, as its exit status tells it: the library
//! that did the work decides which, and what to tell beside the report;
//! the binary maps each to its number (0, 1, 99, 128 + the signal) and
//! tells the notice.
//!
//! Owns the kinds. Must not pick the numbers nor word the notices.

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

impl Ending {
    /// Stopped by a signal when `signalled`, else done: the work of a
    /// command that fails only by its error.
    pub fn done_unless(signalled: bool) -> Ending {
        match signalled {
            true => Ending::Signalled(None),
            false => Ending::Done,
        }
    }
}
