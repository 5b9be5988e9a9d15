//! Test-only helpers shared by kurabe's crates, used as a dev-dependency.
//!
//! It owns what several crates' tests would otherwise each copy: for now the
//! JSON Schema checker ([`schema`]) that validates real output against the
//! schema files committed under `schema/`. It must never become a dependency
//! of product code (it panics on purpose) and is not published.

pub mod schema;
