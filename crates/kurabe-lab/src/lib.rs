//! kurabe's experiment layer.
//!
//! Owns turning a plan file into a validated [`kurabe_model::plan::Plan`]
//! ([`plan::load_plan`]), with errors that name the file, line and field.
//! The runner (schedule → start target → workload → probes → store) will
//! live here too; it is not built yet.
//!
//! It must not print, and it must not define plan types (they live in
//! `kurabe-model` so the store and reports share them).

pub mod plan;

pub use plan::{load_plan, load_plan_with_text, parse_plan, PlanError};
