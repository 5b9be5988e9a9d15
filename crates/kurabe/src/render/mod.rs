//! Which renderer each command writes with: the format flags' values and
//! the pick. The renderers themselves live in `kurabe-report`; nothing here
//! formats text.

pub mod http;
