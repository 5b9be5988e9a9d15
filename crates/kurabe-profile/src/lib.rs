//! kurabe-profile: where a process tree spends its CPU, sampled.
//!
//! Owns sampling the on-CPU stacks of a process and everything it starts
//! ([`Sampler`]: `perf_event_open` with the software `cpu-clock` event,
//! ~1 kHz, `inherit`, user and kernel frames where
//! `perf_event_paranoid` allows, one mmap ring per CPU read as it fills),
//! folding them as they come (bounded: [`fold::MAX_STACKS`]), and naming
//! the frames ([`Symbols`]: ELF `.symtab`/`.dynsym`, `/proc/kallsyms`).
//!
//! The stacks are the kernel's frame-pointer walk: code built without
//! frame pointers (most distributions' `-O2` C libraries, Rust release
//! builds by default) loses its callers — the leaf, which decides the
//! differential profile's "own CPU", is always right.
//!
//! Must not: print, compare (kurabe-model's [`kurabe_model::profile`]
//! does), or keep a child alive. Linux only.
//!
//! ```no_run
//! let sampler = kurabe_profile::Sampler::attach(4242, kurabe_profile::DEFAULT_HZ)?;
//! // ... the process 4242 works ...
//! let samples = sampler.finish();
//! let profile = samples.run_profile(|_| true, 1, &mut kurabe_profile::Symbols::new());
//! # Ok::<(), kurabe_model::profile::ProfileOff>(())
//! ```

pub mod fold;
mod record;
mod sampler;
mod symbols;
mod sys;

use std::collections::HashMap;

use kurabe_model::notice::Notice;
use kurabe_model::profile::{FoldedStack, ProfileOff, Profiling, RunProfile};

pub use fold::{Folded, Frame};
pub use sampler::{Kernel, Sampler, Samples, DEFAULT_HZ};
pub use symbols::Symbols;

/// Whether this process may sample another of its user's processes here,
/// and with which frames; why not when it may not. Opens one event on
/// itself and closes it.
pub fn available() -> Result<Kernel, ProfileOff> {
    sampler::probe(0)
}

/// Whether this process may sample the running process `pid` (another
/// user's needs root or CAP_PERFMON), and with which frames; why not.
pub fn available_for(pid: u32) -> Result<Kernel, ProfileOff> {
    sampler::probe(pid)
}

/// `kernel.perf_event_paranoid`, when readable.
pub fn paranoid() -> Option<i32> {
    sys::paranoid()
}

/// Whether the runs asked to be profiled are sampled here, and what the
/// user should know about it (user frames only; no sampling at all);
/// `Err` when they cannot be sampled and it is `required`.
pub fn choose(required: bool) -> Result<(Profiling, Option<Notice>), ProfileOff> {
    decide(available(), required)
}

/// What `--profile[=required]` asks (`when`: `None` when not given), as
/// `choose` decides it, with the notice to tell: with `quiet`, only that
/// nothing is sampled (user frames only is no news then).
pub fn asked(
    when: Option<&str>,
    quiet: bool,
    choose: impl Fn(bool) -> Result<(Profiling, Option<Notice>), ProfileOff>,
) -> Result<(Profiling, Option<Notice>), ProfileOff> {
    let Some(when) = when else {
        return Ok((Profiling::Off, None));
    };
    let (profiling, notice) = choose(when == "required")?;
    let notice = notice.filter(|n| !quiet || matches!(n, Notice::ProfileOff { .. }));
    Ok((profiling, notice))
}

/// [`choose`] for a running server `server` (none found: nothing to
/// sample): another user's process cannot be sampled without root.
pub fn choose_for(
    server: Option<u32>,
    required: bool,
) -> Result<(Profiling, Option<Notice>), ProfileOff> {
    let open = server.map_or(Err(ProfileOff::NoServer), available_for);
    decide(open, required)
}

/// What `open` (a probe's result) means for the runs.
fn decide(
    open: Result<Kernel, ProfileOff>,
    required: bool,
) -> Result<(Profiling, Option<Notice>), ProfileOff> {
    let sampled = Profiling::Sampled { hz: DEFAULT_HZ };
    match open {
        Ok(Kernel::Sampled) => Ok((sampled, None)),
        Ok(Kernel::NotAllowed) => {
            let paranoid = paranoid();
            Ok((sampled, Some(Notice::ProfileUserOnly { paranoid })))
        }
        Err(why) if required => Err(why),
        Err(why) => Ok((Profiling::Off, Some(Notice::ProfileOff { why }))),
    }
}

impl Samples {
    /// The samples of the executions `keep` accepts (by the pid of the
    /// attached process's child they descend from; the attached process
    /// itself is its own), named and folded, per `divisor` executions.
    pub fn run_profile(
        &self,
        keep: impl Fn(u32) -> bool,
        divisor: u64,
        symbols: &mut Symbols,
    ) -> RunProfile {
        let f = &self.folded;
        let mut by_stack: HashMap<u32, u64> = HashMap::new();
        // Counts are per (execution, stack): a block's many executions
        // share few stacks.
        for ((root, stack), n) in &f.counts {
            if keep(*root) {
                *by_stack.entry(*stack).or_insert(0) += n;
            }
        }
        let mut names: HashMap<Frame, String> = HashMap::new();
        let mut folded: HashMap<String, u64> = HashMap::new();
        for (stack, n) in by_stack {
            let text = self.stack_text(stack, &mut names, symbols);
            *folded.entry(text).or_insert(0) += n;
        }
        let mut stacks: Vec<FoldedStack> = folded
            .into_iter()
            .map(|(stack, samples)| FoldedStack { stack, samples })
            .collect();
        stacks.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.stack.cmp(&b.stack)));
        RunProfile {
            sample_period_ns: self.period_ns,
            divisor,
            kernel_frames: self.kernel == Kernel::Sampled,
            lost_records: f.lost,
            dropped_samples: f.dropped,
            stacks,
        }
    }

    /// Stack `id`'s frames named, root first, `;`-joined.
    fn stack_text(
        &self,
        id: u32,
        names: &mut HashMap<Frame, String>,
        symbols: &mut Symbols,
    ) -> String {
        let f = &self.folded;
        let frames = &f.stacks[id as usize];
        let mut out = String::new();
        for (i, frame) in frames.iter().enumerate() {
            if i > 0 {
                out.push(';');
            }
            let name = names.entry(*frame).or_insert_with(|| match frame {
                Frame::Comm(c) => f.comms[*c as usize].clone(),
                Frame::Object { object, offset } => {
                    symbols.object(&f.objects[*object as usize], *offset)
                }
                Frame::Kernel(a) => symbols.kernel(*a),
                Frame::Unmapped(a) => format!("[unknown]+{a:#x}"),
            });
            // `;` separates frames: a name may not hold one (C++ templates can).
            out.extend(name.chars().map(|c| if c == ';' { ':' } else { c }));
        }
        out
    }
}
