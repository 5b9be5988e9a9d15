//! [`SpecError`]: why a load spec cannot run, one line naming the
//! setting as the user wrote it and the fix.
//!
//! Owns the error's kinds and how it reads as a [`client::LoadError`].
//! Must not check anything: the checks are `resolve`'s, `set`'s and
//! `replay`'s, which all return it.

use crate::client::{self, TlsOptionError};
use crate::request::RequestError;
use crate::target::UrlError;

/// A setting, or a combination of settings, that cannot be run; one line
/// naming the setting and the fix.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The URL does not parse.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// A value or combination the load generator cannot run.
    #[error("{0}")]
    Invalid(String),
    /// A request setting that cannot be sent.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// A TLS protocol or cipher suite rustls cannot honour.
    #[error(transparent)]
    Tls(#[from] TlsOptionError),
    /// A file named by a setting cannot be read, is not a regular file,
    /// or is larger than its limit.
    #[error(transparent)]
    Input(#[from] kurabe_input::InputError),
    /// The stop came while the set or the log was read: the reading was
    /// given up (a run reports it as [`client::LoadError::Interrupted`]).
    #[error("stopped while the load's inputs were read")]
    Stopped,
}

impl From<SpecError> for client::LoadError {
    /// The message and its causes on one line, as `{:#}` prints a chain.
    fn from(e: SpecError) -> Self {
        if let SpecError::Stopped = e {
            return client::LoadError::Interrupted;
        }
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            text = format!("{text}: {c}");
            cause = c.source();
        }
        client::LoadError::Spec(text)
    }
}
