//! kurabe-system (not built yet).
