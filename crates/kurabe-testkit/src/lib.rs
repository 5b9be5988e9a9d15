//! Test-only helpers shared by kurabe's crates, used as a dev-dependency.
//!
//! It owns what several crates' tests would otherwise each copy: the JSON
//! Schema checker ([`schema`]) that validates real output against the schema
//! files committed under `schema/`, and a tag-balance check for the HTML and
//! SVG kurabe writes ([`html`]). It must never become a dependency
//! of product code (it panics on purpose) and is not published.

pub mod html;
pub mod schema;
