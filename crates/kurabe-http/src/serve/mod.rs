//! The built-in target server (`kurabe serve`).
