//! RFC 3339 UTC timestamps for the store's `created_at` / `finished_at`:
//! the one formatter in `kurabe_model::time`, re-exported so the store's
//! callers (and `kurabe_store::rfc3339` users) need not know where it lives.

pub use kurabe_model::time::rfc3339;
