//! Renderers: turn result records into text for people and files for tools.
//!
//! Each report kind has one module tree with one file per format behind one
//! trait writing to any `Write`. Renderers never measure, never detect a TTY
//! and never choose colours: that stays at the command's edge.

pub mod http;
