//! The slot: the board of the newest of a series of loads (a worker's
//! shares, one after another), for a view that outlives each of them (a
//! worker's Prometheus endpoint).
//!
//! Owns which board is current. Must not compute figures (the board's)
//! nor render them; between loads it holds the last one's final figures.

use std::sync::{Arc, Mutex};

use crate::board::{Board, Frame, RunInfo};

/// The current board of a series of loads.
#[derive(Debug)]
pub struct Slot(Mutex<Arc<Board>>);

impl Default for Slot {
    fn default() -> Slot {
        Slot::new()
    }
}

impl Slot {
    /// A slot holding an empty board (no load yet).
    pub fn new() -> Slot {
        Slot(Mutex::new(Arc::new(Board::new(RunInfo::default()))))
    }

    /// A new load described by `info` begins: its board, now the current one.
    pub fn begin(&self, info: RunInfo) -> Arc<Board> {
        let board = Arc::new(Board::new(info));
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&board);
        board
    }

    /// The current board's newest frame.
    pub fn frame(&self) -> Arc<Frame> {
        let board = Arc::clone(&self.0.lock().unwrap_or_else(|e| e.into_inner()));
        board.frame()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::load_stats::Snapshot;

    #[test]
    fn the_newest_load_is_shown_and_the_last_stays_until_the_next() {
        let slot = Slot::new();
        assert_eq!(slot.frame().counters.completed, 0);
        let first = slot.begin(RunInfo {
            name: "a".into(),
            ..RunInfo::default()
        });
        let mut s = Snapshot::empty();
        s.counters.completed = 7;
        s.finished = true;
        first.update(&s);
        assert_eq!(
            (slot.frame().counters.completed, slot.frame().finished),
            (7, true)
        );
        let second = slot.begin(RunInfo {
            name: "b".into(),
            ..RunInfo::default()
        });
        assert_eq!(slot.frame().info.name, "b");
        assert_eq!(slot.frame().counters.completed, 0);
        drop(second);
    }
}
