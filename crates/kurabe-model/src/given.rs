//! The flags a command line gave, each under every spelling it has: what
//! a library's check of flag combinations reads, so that it can refuse
//! one flag beside another before anything is read or run, and name it
//! as the user may have typed it.
//!
//! Owns the set and its questions. Must not know any command's flags nor
//! parse a command line (the binary fills the set from clap's matches).

use std::collections::BTreeSet;

/// The flags given on a command line (not defaults, not the
/// environment's), each by all its spellings (`-c` and `--concurrency`;
/// a positional argument by its value name, `URL_B`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given(BTreeSet<String>);

impl Given {
    /// The set of `spellings`.
    pub fn new<S: Into<String>>(spellings: impl IntoIterator<Item = S>) -> Given {
        Given(spellings.into_iter().map(Into::into).collect())
    }

    /// Whether `flag` was given.
    pub fn has(&self, flag: &str) -> bool {
        self.0.contains(flag)
    }

    /// Whether any of `flags` was given.
    pub fn any(&self, flags: &[&str]) -> bool {
        flags.iter().any(|f| self.has(f))
    }

    /// The first of `flags` given, in their order.
    pub fn first<'a>(&self, flags: &[&'a str]) -> Option<&'a str> {
        flags.iter().copied().find(|f| self.has(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_given_flag_is_named_in_the_order_asked() {
        let given = Given::new(["-c", "--concurrency", "--rate"]);
        assert!(given.has("--concurrency") && !given.has("-n"));
        assert_eq!(given.first(&["-n", "--rate", "-c"]), Some("--rate"));
        assert!(given.any(&["-t", "-c"]) && !given.any(&["-t"]));
        assert_eq!(Given::default().first(&["-c"]), None);
    }
}
