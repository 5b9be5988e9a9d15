//! Test-only helpers shared by kurabe's crates, used as a dev-dependency.
//!
//! It owns what several crates' tests would otherwise each copy: the JSON
//! Schema checker ([`schema`]) that validates real output against the schema
//! files committed under `schema/`, a tag-balance check for the HTML and SVG
//! kurabe writes ([`html`]), and the PostgreSQL server the store tests use,
//! started for the test binary when none is given ([`pg`]), a private
//! nginx on sockets bound for it ([`nginx`]), Caddy and ngtcp2's
//! server for HTTP/3 ([`caddy`]), HTTP/3 servers that misbehave on
//! purpose ([`h3bad`]), and a process under test stopped by a
//! real signal, its exit timed ([`signal`]). It must never
//! become a dependency of product code (it panics on purpose) and is not
//! published.

pub mod caddy;
pub mod h3bad;
pub mod html;
pub mod nginx;
pub mod pg;
pub mod schema;
pub mod signal;
