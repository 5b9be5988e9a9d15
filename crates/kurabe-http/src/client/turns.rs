//! The turn loop every worker runs, whatever the protocol: read the clock,
//! start the measured phase, stop, restart connections, send what is due,
//! scan deadlines, publish progress, wait for I/O.
//!
//! Owns the order of those steps and how often the periodic ones run. Must
//! not know about sockets or protocols: each worker implements [`Turns`].

/// How often the progress counters are published.
pub(crate) const PROGRESS_NS: u64 = 50_000_000;

/// The steps of one turn, as one worker implements them.
pub(crate) trait Turns {
    /// Read the clock into the worker's notion of now and return it.
    fn read_clock(&mut self) -> u64;
    /// Period of the deadline scan.
    fn tick_ns(&self) -> u64;
    /// Start the measured phase if the warm-up is over.
    fn measure_if_due(&mut self);
    /// Ctrl-C, an abort, or the end of the run.
    fn should_stop(&self) -> bool;
    /// Open connections queued for (re)start.
    fn do_restarts(&mut self);
    /// Open model: send what the schedule says is due.
    fn dispatch(&mut self);
    /// The run is stopping: open model, sends intended before the end that a
    /// late wake-up left unsent go out now (late, and counted as late), so the
    /// achieved rate is not short by however long the thread overslept; those
    /// no free connection can take are counted late without being sent.
    fn last_sends(&mut self) {}
    /// Fail requests whose deadline passed.
    fn expire(&mut self);
    /// Publish the progress counters.
    fn publish(&mut self);
    /// A `-n` run has nothing left to do.
    fn finished(&self) -> bool;
    /// How long the next wait for I/O may last (None: until the ticker).
    fn wait_time(&self) -> Option<u64>;
}

/// Run turns until the worker stops or finishes; `wait` waits for I/O for
/// at most the given time and acts on what happened.
pub(crate) fn drive<W: Turns>(w: &mut W, mut wait: impl FnMut(&mut W, Option<u64>)) {
    let start = w.read_clock();
    let mut next_scan = start + w.tick_ns();
    let mut next_progress = start + PROGRESS_NS;
    loop {
        let now = w.read_clock();
        w.measure_if_due();
        if w.should_stop() {
            w.last_sends();
            break;
        }
        w.do_restarts();
        w.dispatch();
        if now >= next_scan {
            w.expire();
            next_scan = now + w.tick_ns();
        }
        if now >= next_progress {
            w.publish();
            next_progress = now + PROGRESS_NS;
        }
        if w.finished() {
            break;
        }
        let timeout = w.wait_time();
        wait(w, timeout);
    }
}
