//! kurabe-probe (not built yet).
