//! Whether naps pay, measured on the run itself: a worker alternates short
//! epochs with and without naps and keeps whichever cost less CPU per
//! answered request, re-checking every cycle.
//!
//! Why measure rather than decide from the configuration: what a nap saves
//! depends on who else wants the CPUs. Against a server with CPU to spare
//! (nginx `worker_processes 1` on loopback, the client alone on the other
//! CPU), a worker that waits for each event wakes once per response, and a
//! wake-up costs more than the response's `recv` and the next `send`: naps
//! save ~6 % of the client's CPU and raise throughput ~15 % (the server gets
//! its requests in batches too). Against a server that keeps every CPU busy
//! (nginx `auto` on the same 2 CPUs), batches form by themselves, and a
//! nap's timer and the idle server it leaves behind cost ~13 % more CPU per
//! request and ~8 % of throughput (`bench/http-peers.sh`, quiet machine,
//! 2026-12-01; figures in the `pace` module). Neither rule is right for a
//! remote server, whose network decides; the trial is.
//!
//! A cycle is [`CYCLE`] epochs of [`EPOCH_NS`]: four trial epochs in the
//! order nap, plain, plain, nap (a linear drift hits both arms alike), then
//! the cheaper arm until the cycle ends. Naps win only when they cost less
//! CPU per request *and* keep at least [`KEEP_THROUGHPUT`] of the plain
//! arm's throughput: a client must not slow the server down to save its own
//! CPU. The epoch in which the worker starts (connections opening) is not
//! counted.
//!
//! Owns the trial's bookkeeping. Must not read the clock or the CPU time
//! itself: the worker passes them in, so tests drive it with made-up figures.

/// Length of one epoch.
pub(crate) const EPOCH_NS: u64 = 50_000_000;
/// Epochs per cycle: 4 trial epochs, then 20 with the winner (~1 s).
const CYCLE: u32 = 24;
/// Naps must keep this share of the plain arm's requests per second.
const KEEP_THROUGHPUT: f64 = 0.97;

/// What one arm cost over its trial epochs.
#[derive(Default, Clone, Copy)]
struct Tally {
    cpu_ns: u64,
    answered: u64,
    wall_ns: u64,
}

impl Tally {
    fn add(&mut self, cpu_ns: u64, answered: u64, wall_ns: u64) {
        self.cpu_ns += cpu_ns;
        self.answered += answered;
        self.wall_ns += wall_ns;
    }

    /// CPU per request, infinite when nothing was answered.
    fn cpu_per_request(&self) -> f64 {
        if self.answered == 0 {
            return f64::INFINITY;
        }
        self.cpu_ns as f64 / self.answered as f64
    }

    fn throughput(&self) -> f64 {
        self.answered as f64 / self.wall_ns.max(1) as f64
    }
}

/// The nap trial of one worker.
pub(crate) struct Trial {
    /// Epoch within the cycle; None before the first epoch ends (not counted).
    pos: Option<u32>,
    epoch_end: u64,
    /// CPU time, requests answered and clock when the epoch began.
    start: (u64, u64, u64),
    /// Trial tallies: [plain, naps].
    arms: [Tally; 2],
    /// The winner of the last trial.
    best: bool,
}

impl Trial {
    /// A trial whose first epoch begins at the first wake-up: naps until
    /// the first trial is decided.
    pub fn new() -> Trial {
        Trial {
            pos: None,
            epoch_end: 0,
            start: (0, 0, 0),
            arms: [Tally::default(); 2],
            best: true,
        }
    }

    /// Whether the current epoch naps.
    pub fn naps(&self) -> bool {
        match self.pos {
            None => true,
            Some(p) => arm_of(p).unwrap_or(self.best),
        }
    }

    /// A wake-up ended at `now` with `answered` requests answered so far;
    /// `cpu_ns()` reads the worker thread's CPU time, called only when an
    /// epoch ends.
    pub fn wake_ended(&mut self, now: u64, answered: u64, cpu_ns: impl FnOnce() -> u64) {
        if self.epoch_end == 0 {
            self.begin(now, answered, cpu_ns());
            return;
        }
        if now < self.epoch_end {
            return;
        }
        let cpu = cpu_ns();
        if let Some(p) = self.pos {
            if let Some(naps) = arm_of(p) {
                let (c0, a0, t0) = self.start;
                self.arms[usize::from(naps)].add(cpu - c0, answered - a0, now - t0);
            }
            if p == 3 {
                self.decide();
            }
        }
        self.pos = Some(self.pos.map_or(0, |p| (p + 1) % CYCLE));
        self.begin(now, answered, cpu);
    }

    fn begin(&mut self, now: u64, answered: u64, cpu: u64) {
        self.start = (cpu, answered, now);
        self.epoch_end = now + EPOCH_NS;
    }

    /// The trial's four epochs are in: keep the cheaper arm.
    fn decide(&mut self) {
        let [plain, naps] = self.arms;
        self.best = naps.cpu_per_request() < plain.cpu_per_request()
            && naps.throughput() >= KEEP_THROUGHPUT * plain.throughput();
        self.arms = [Tally::default(); 2];
    }
}

/// The arm a trial epoch measures (`Some(true)`: naps), None after the trial.
fn arm_of(pos: u32) -> Option<bool> {
    match pos {
        0 | 3 => Some(true),
        1 | 2 => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a trial through whole epochs in which each arm answers
    /// `per_epoch(naps).0` requests for `.1` ns of CPU.
    struct Run {
        trial: Trial,
        now: u64,
        answered: u64,
        cpu: u64,
    }

    impl Run {
        fn new() -> Run {
            let mut trial = Trial::new();
            trial.wake_ended(1, 0, || 0);
            Run {
                trial,
                now: 1,
                answered: 0,
                cpu: 0,
            }
        }

        /// One epoch; returns whether it napped.
        fn epoch(&mut self, per_epoch: impl Fn(bool) -> (u64, u64)) -> bool {
            let naps = self.trial.naps();
            let (answered, cpu) = per_epoch(naps);
            self.now += EPOCH_NS;
            self.answered += answered;
            self.cpu += cpu;
            let c = self.cpu;
            self.trial.wake_ended(self.now, self.answered, || c);
            naps
        }
    }

    #[test]
    fn naps_until_the_first_trial_is_in() {
        let mut r = Run::new();
        // The start-up epoch, then the trial: nap, plain, plain, nap.
        let arms: Vec<bool> = (0..5).map(|_| r.epoch(|_| (1000, 1_000_000))).collect();
        assert_eq!(arms, [true, true, false, false, true]);
    }

    #[test]
    fn naps_that_cost_more_cpu_per_request_are_dropped_until_the_next_trial() {
        let mut r = Run::new();
        let cost = |naps: bool| {
            if naps {
                (1000, 3_000_000)
            } else {
                (1000, 2_500_000)
            }
        };
        let arms: Vec<bool> = (0..=CYCLE + 4).map(|_| r.epoch(cost)).collect();
        assert!(arms[5..=CYCLE as usize].iter().all(|n| !n), "{arms:?}");
        // The next cycle tries naps again.
        assert!(arms[CYCLE as usize + 1]);
    }

    #[test]
    fn naps_that_save_cpu_are_kept() {
        let mut r = Run::new();
        let cost = |naps: bool| {
            if naps {
                (1000, 2_000_000)
            } else {
                (1000, 2_500_000)
            }
        };
        let arms: Vec<bool> = (0..=CYCLE).map(|_| r.epoch(cost)).collect();
        assert!(arms[5..].iter().all(|n| *n), "{arms:?}");
    }

    #[test]
    fn naps_that_slow_the_server_down_are_dropped_even_when_cheaper() {
        let mut r = Run::new();
        // 5 % fewer requests for 10 % less CPU per request.
        let cost = |naps: bool| {
            if naps {
                (950, 1_710_000)
            } else {
                (1000, 2_000_000)
            }
        };
        let arms: Vec<bool> = (0..=CYCLE).map(|_| r.epoch(cost)).collect();
        assert!(arms[5..].iter().all(|n| !n), "{arms:?}");
    }

    #[test]
    fn an_arm_that_answered_nothing_loses() {
        let mut r = Run::new();
        let cost = |naps: bool| {
            if naps {
                (0, 1_000_000)
            } else {
                (10, 5_000_000)
            }
        };
        let arms: Vec<bool> = (0..=CYCLE).map(|_| r.epoch(cost)).collect();
        assert!(arms[5..].iter().all(|n| !n), "{arms:?}");
    }

    #[test]
    fn the_cpu_time_is_read_only_when_an_epoch_ends() {
        let mut t = Trial::new();
        t.wake_ended(10, 0, || 0);
        t.wake_ended(10 + EPOCH_NS / 2, 5, || panic!("read mid-epoch"));
        let mut read = false;
        t.wake_ended(10 + EPOCH_NS, 9, || {
            read = true;
            7
        });
        assert!(read);
    }
}
