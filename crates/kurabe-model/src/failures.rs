//! The failure taxonomy of an HTTP load, written out once: every way a
//! request can fail ([`FailureKind`]) and the counts by kind ([`Failures`]).
//!
//! Owns the list of kinds, each kind's name (the [`Failures`] field, the
//! report's and the JSON's key, the Prometheus `bucket` label) and its
//! meaning. Everything that counts, merges, renders or exports failures
//! iterates [`FailureKind::ALL`] or [`Failures::by_kind`]: adding a kind is
//! one entry of the `kinds!` list below, and every merge, renderer and
//! exporter carries it. Must not do I/O or know how a kind is printed
//! beyond its name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares [`FailureKind`] and [`Failures`] from one list: per kind its
/// doc (the field's and the variant's), its serde attributes (the field's:
/// how records written before it read), its variant, its field (= its
/// name) and what to say when a failure site had nothing more specific.
macro_rules! kinds {
    ($(
        $(#[doc = $doc:literal])*
        $(#[serde($($serde:tt)*)])?
        $variant:ident $field:ident => $meaning:literal;
    )*) => {
        /// One way a request can fail: a bucket of [`Failures`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum FailureKind {
            $($(#[doc = $doc])* $variant,)*
        }

        impl FailureKind {
            /// Every kind, in [`Failures`] field order (the order reports
            /// list them in).
            pub const ALL: &'static [FailureKind] = &[$(FailureKind::$variant),*];

            /// The kind's name: its [`Failures`] field, its key in JSON and
            /// its report name (`connect`, `exceptions`, …).
            pub fn name(self) -> &'static str {
                match self {
                    $(FailureKind::$variant => stringify!($field),)*
                }
            }

            /// What a failure of this kind means, in a few words (its first
            /// error when the failure site had nothing more specific).
            pub fn meaning(self) -> &'static str {
                match self {
                    $(FailureKind::$variant => $meaning,)*
                }
            }
        }

        /// Failure counts by kind, as ab splits them, plus timeouts.
        ///
        /// Every request the engine issued ends as exactly one of: complete, one
        /// failure below, or in flight at the end. When a connection fails, every
        /// request written on it and not yet answered (more than one only with
        /// `--pipeline`) counts in the same bucket.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        pub struct Failures {
            $(
                $(#[doc = $doc])*
                $(#[serde($($serde)*)])?
                pub $field: u64,
            )*
        }

        impl Failures {
            /// The count of `kind`.
            pub fn get(&self, kind: FailureKind) -> u64 {
                match kind {
                    $(FailureKind::$variant => self.$field,)*
                }
            }

            /// The count of `kind`, to change.
            pub fn get_mut(&mut self, kind: FailureKind) -> &mut u64 {
                match kind {
                    $(FailureKind::$variant => &mut self.$field,)*
                }
            }
        }
    };
}

kinds! {
    /// Could not connect: refused, unreachable, no answer to the connect
    /// within the timeout, or the TLS handshake failed (e.g. untrusted certificate).
    Connect connect => "could not connect";
    /// The connection was reset, or closed before a complete response head
    /// arrived. (A reused keep-alive connection that the server closed before
    /// starting an answer is not a failure: the request is resent on a new
    /// connection, as browsers do, and counted once.)
    Receive receive => "the connection broke before a complete response";
    /// Body length differed from the first response's (ab's "Length"; off with `-l`),
    /// or the server closed the connection before the body announced by
    /// Content-Length or chunking was complete (ab counts that as Length too).
    Length length => "the body length differed from the first response's";
    /// Unparseable response (garbage status line, bad headers, bad chunking,
    /// a head over 64 KiB).
    Exception exceptions => "the response could not be parsed";
    /// The request could not be written: the send failed (reset, broken
    /// pipe) part-way through the head or the body (ab's "Write errors").
    /// (Absent from records written before it, which counted these in `exceptions`.)
    #[serde(default)]
    Write write => "the request could not be written";
    /// No complete response within the request timeout (`-s`), counted from
    /// the connect (new connection) or the write (reused connection).
    Timeout timeout => "no complete response within the timeout (-s)";
    /// The client itself failed: kurabe ran out of file descriptors
    /// (EMFILE/ENFILE) opening a connection. Not the server's fault: raise
    /// `ulimit -n` or lower `-c`. (Absent from records written before it.)
    #[serde(default)]
    Client client => "the client ran out of resources";
    /// The response arrived but failed a response check (`--check`,
    /// `# @check`). (Absent when zero, and from records written before it.)
    #[serde(default, skip_serializing_if = "is_zero")]
    Check check => "the response failed a check";
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl FailureKind {
    /// Every kind's name, in order (the JSON schema's list of bucket kinds).
    pub fn names() -> Vec<&'static str> {
        FailureKind::ALL.iter().map(|k| k.name()).collect()
    }

    /// The kind named `name` (a [`FailureKind::name`]).
    pub fn parse(name: &str) -> Option<FailureKind> {
        FailureKind::ALL.iter().copied().find(|k| k.name() == name)
    }
}

impl Failures {
    /// Sum of all kinds.
    pub fn total(&self) -> u64 {
        self.by_kind().map(|(_, n)| n).sum()
    }

    /// Every kind with its count (zeros included), in [`FailureKind::ALL`] order.
    pub fn by_kind(&self) -> impl Iterator<Item = (FailureKind, u64)> + '_ {
        FailureKind::ALL.iter().map(|&k| (k, self.get(k)))
    }

    /// The kinds that counted any failure, with their counts, in order.
    pub fn seen(&self) -> impl Iterator<Item = (FailureKind, u64)> + '_ {
        self.by_kind().filter(|&(_, n)| n > 0)
    }

    /// Count `n` more failures of `kind`.
    #[inline]
    pub fn add(&mut self, kind: FailureKind, n: u64) {
        *self.get_mut(kind) += n;
    }

    /// Add every count of `o` into `self`.
    pub fn merge(&mut self, o: &Failures) {
        for (kind, n) in o.by_kind() {
            self.add(kind, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Failures with count `i + 1` for the `i`-th kind.
    fn one_of_each() -> Failures {
        let mut f = Failures::default();
        for (i, &k) in FailureKind::ALL.iter().enumerate() {
            f.add(k, i as u64 + 1);
        }
        f
    }

    #[test]
    fn every_kind_is_a_field_of_its_own_named_as_in_json() {
        let f = one_of_each();
        let n = FailureKind::ALL.len() as u64;
        assert_eq!(f.total(), n * (n + 1) / 2);
        let json = serde_json::to_value(f).unwrap();
        let fields = json.as_object().unwrap();
        assert_eq!(fields.len(), FailureKind::ALL.len());
        for (kind, count) in f.by_kind() {
            assert_eq!(json[kind.name()], count, "{kind:?}");
            assert_eq!(FailureKind::parse(kind.name()), Some(kind));
            assert!(!kind.meaning().is_empty());
        }
        assert_eq!(serde_json::from_value::<Failures>(json).unwrap(), f);
    }

    #[test]
    fn merge_adds_every_kind_and_seen_skips_zeros() {
        let mut a = one_of_each();
        a.merge(&one_of_each());
        for (i, (_, n)) in a.by_kind().enumerate() {
            assert_eq!(n, 2 * (i as u64 + 1));
        }
        let mut b = Failures::default();
        b.add(FailureKind::Check, 3);
        let seen: Vec<_> = b.seen().collect();
        assert_eq!(seen, [(FailureKind::Check, 3)]);
        // A zero check count is left out, as in records before it.
        let json = serde_json::to_value(Failures::default()).unwrap();
        assert!(json.get("check").is_none());
    }

    #[test]
    fn the_error_bucket_schema_lists_every_kind() {
        let schema = schemars::schema_for!(crate::http::ErrorBucket);
        let kind = &schema.as_value()["properties"]["kind"];
        let names = FailureKind::names();
        assert_eq!(kind["enum"], serde_json::json!(names));
        let text = kind["description"].as_str().unwrap();
        let listed = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>();
        assert!(text.ends_with(&format!("{}.", listed.join(", "))), "{text}");
    }
}
