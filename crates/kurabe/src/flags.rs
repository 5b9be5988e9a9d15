//! Flag-value grammars shared by several commands (`http`, `demo`, `run`,
//! `worker`), so each flag reads its value the same way.
//!
//! Owns parsing a flag's text into a typed value with an error that says
//! what to write instead. Must not know which command uses it.

/// The one duration grammar of flags and plans ("2", "2s", "500ms",
/// "1m30s"; a bare number is seconds), defined in `kurabe-model`.
pub(crate) use kurabe_model::plan::parse_duration;

/// The one size grammar of flags and plans ("512M" = 512 × 2²⁰, "500MB" =
/// 500 × 10⁶), defined in `kurabe-model`.
pub(crate) use kurabe_model::plan::parse_size;
