//! The sampled tree's state, fed record by record in time order: each
//! process's executable mappings (seeded from `/proc`, then MMAP2, exec
//! and fork), its name, the execution it belongs to, and the samples
//! folded into counts per (execution, stack) as they arrive.
//!
//! Owns turning addresses into (file, offset) frames *when they are
//! sampled* — a later exec reuses the addresses — and the memory bound
//! ([`MAX_STACKS`]). Must not read ELF files or print.

use std::collections::HashMap;
use std::sync::Arc;

use crate::record::{Entry, Record};

/// Most distinct stacks kept; samples of further new stacks are counted
/// in [`Folded::dropped`], so a 10-minute run stays bounded in memory
/// (about 50 MB at the deepest stacks).
pub const MAX_STACKS: usize = 200_000;

/// One frame as sampled, not yet named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Frame {
    /// The process's name at the time (the stack's first frame).
    Comm(u32),
    /// A file offset in mapped object `object` (an index of [`Folded::objects`]).
    Object {
        /// The object's index.
        object: u32,
        /// The offset in its file.
        offset: u64,
    },
    /// A kernel address.
    Kernel(u64),
    /// A user address in no known mapping.
    Unmapped(u64),
}

/// One executable mapping of a process.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    start: u64,
    end: u64,
    pgoff: u64,
    object: u32,
}

/// What is known of one process.
#[derive(Debug, Clone, Default)]
struct Process {
    maps: Vec<Mapping>,
    comm: u32,
    /// The execution (a child of the attached process) it descends from.
    root: u32,
}

/// Samples folded by (execution, stack), with the names they need.
#[derive(Debug, Default)]
pub struct Folded {
    /// The attached process: its children are the executions.
    pub(crate) attached: u32,
    procs: HashMap<u32, Process>,
    /// Processes whose exit was seen in the current and the previous drain.
    exited: [Vec<u32>; 2],
    /// Paths of the mapped objects, by index.
    pub objects: Vec<String>,
    object_ids: HashMap<String, u32>,
    /// Process names, by index.
    pub comms: Vec<String>,
    comm_ids: HashMap<String, u32>,
    stack_ids: HashMap<Arc<[Frame]>, u32>,
    /// Each distinct stack, root first, by index.
    pub stacks: Vec<Arc<[Frame]>>,
    /// Samples per (execution pid, stack index).
    pub counts: HashMap<(u32, u32), u64>,
    /// Samples of new stacks beyond [`MAX_STACKS`].
    pub dropped: u64,
    /// Records the kernel lost because the ring was full.
    pub lost: u64,
    /// Samples read.
    pub samples: u64,
    frames: Vec<Frame>,
}

impl Folded {
    /// An empty fold for the tree under `attached`.
    pub(crate) fn new(attached: u32) -> Folded {
        Folded {
            attached,
            ..Folded::default()
        }
    }

    /// Take in one record.
    pub(crate) fn record(&mut self, r: Record<'_>) {
        match r {
            Record::Sample { pid, chain, .. } => self.sample(pid, chain.entries()),
            Record::Mmap {
                pid,
                start,
                len,
                pgoff,
                path,
            } => self.map(pid, start, start.saturating_add(len), pgoff, path),
            Record::Comm { pid, comm, exec } => self.comm(pid, comm, exec),
            Record::Fork { pid, ppid, tid } if pid == tid && pid != ppid => self.fork(pid, ppid),
            Record::Exit { pid, tid } if pid == tid => self.exited[0].push(pid),
            Record::Lost { lost } => self.lost += lost,
            _ => {}
        }
    }

    /// One drain of every ring is done: forget processes that exited
    /// before the previous one (their samples have all been read).
    pub(crate) fn drained(&mut self) {
        for pid in std::mem::take(&mut self.exited[1]) {
            self.procs.remove(&pid);
        }
        self.exited.swap(0, 1);
    }

    /// Seed process `pid` (alive before the events were opened) from `/proc`.
    pub(crate) fn seed(&mut self, pid: u32, comm: &str, maps: &[(u64, u64, u64, String)]) {
        let comm = self.comm_id(comm);
        let root = pid;
        self.procs.insert(
            pid,
            Process {
                comm,
                root,
                maps: Vec::new(),
            },
        );
        for (start, end, pgoff, path) in maps {
            self.map(pid, *start, *end, *pgoff, path);
        }
    }

    fn process(&mut self, pid: u32) -> &mut Process {
        self.procs.entry(pid).or_insert_with(|| Process {
            root: pid,
            ..Process::default()
        })
    }

    fn map(&mut self, pid: u32, start: u64, end: u64, pgoff: u64, path: &str) {
        let object = intern(&mut self.objects, &mut self.object_ids, path);
        let m = Mapping {
            start,
            end,
            pgoff,
            object,
        };
        let p = self.process(pid);
        p.maps.retain(|o| o.end <= start || o.start >= end);
        p.maps.push(m);
    }

    fn comm(&mut self, pid: u32, comm: &str, exec: bool) {
        let id = self.comm_id(comm);
        let p = self.process(pid);
        p.comm = id;
        if exec {
            p.maps.clear();
        }
    }

    fn fork(&mut self, pid: u32, ppid: u32) {
        let attached = self.attached;
        let parent = self.process(ppid).clone();
        let root = if ppid == attached { pid } else { parent.root };
        self.procs.insert(pid, Process { root, ..parent });
    }

    fn comm_id(&mut self, comm: &str) -> u32 {
        intern(&mut self.comms, &mut self.comm_ids, comm)
    }

    fn sample(&mut self, pid: u32, entries: impl Iterator<Item = Entry> + Clone) {
        self.samples += 1;
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        let p = self.process(pid);
        let root = p.root;
        frames.push(Frame::Comm(p.comm));
        let leaf_first: Vec<Entry> = entries.collect();
        let leaf = leaf_first.iter().position(|e| matches!(e, Entry::User(_)));
        let named = leaf_first.iter().enumerate().rev();
        frames.extend(named.map(|(i, e)| frame_of(&p.maps, *e, Some(i) == leaf)));
        match self.stack_id(&frames) {
            Some(id) => *self.counts.entry((root, id)).or_insert(0) += 1,
            None => self.dropped += 1,
        }
        self.frames = frames;
    }

    fn stack_id(&mut self, frames: &[Frame]) -> Option<u32> {
        if let Some(id) = self.stack_ids.get(frames) {
            return Some(*id);
        }
        if self.stacks.len() >= MAX_STACKS {
            return None;
        }
        let id = self.stacks.len() as u32;
        let stack: Arc<[Frame]> = frames.into();
        self.stacks.push(stack.clone());
        self.stack_ids.insert(stack, id);
        Some(id)
    }
}

/// `e` as a frame of a process with mappings `maps` (the latest mapping
/// wins); `leaf` when it is the user-space IP itself.
fn frame_of(maps: &[Mapping], e: Entry, leaf: bool) -> Frame {
    let a = match e {
        Entry::Kernel(a) => return Frame::Kernel(a),
        Entry::User(a) => a,
    };
    // A return address points after its call, possibly past the end of
    // the caller (a call to a function that never returns): look up the
    // call instruction itself, as perf does. The leaf is the IP.
    let probe = if leaf { a } else { a.saturating_sub(1) };
    match maps
        .iter()
        .rev()
        .find(|m| m.start <= probe && probe < m.end)
    {
        Some(m) => Frame::Object {
            object: m.object,
            offset: probe - m.start + m.pgoff,
        },
        None => Frame::Unmapped(a),
    }
}

/// The index of `name` in `names`, added when new.
fn intern(names: &mut Vec<String>, ids: &mut HashMap<String, u32>, name: &str) -> u32 {
    if let Some(id) = ids.get(name) {
        return *id;
    }
    let id = names.len() as u32;
    names.push(name.to_owned());
    ids.insert(name.to_owned(), id);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exec_forgets_the_old_mappings_and_a_fork_keeps_its_execution() {
        let mut f = Folded::new(1);
        f.record(Record::Fork {
            pid: 2,
            ppid: 1,
            tid: 2,
        });
        f.record(Record::Fork {
            pid: 3,
            ppid: 2,
            tid: 3,
        });
        f.record(Record::Comm {
            pid: 3,
            comm: "gzip",
            exec: true,
        });
        f.record(Record::Mmap {
            pid: 3,
            start: 0x1000,
            len: 0x1000,
            pgoff: 0x200,
            path: "/bin/gzip",
        });
        let chain = [0x1010u64];
        f.sample(3, chain.iter().map(|a| Entry::User(*a)));
        let ((root, id), n) = f.counts.iter().next().map(|(k, v)| (*k, *v)).unwrap();
        assert_eq!((root, n), (2, 1));
        let object = f.object_ids["/bin/gzip"];
        let comm = f.comm_ids["gzip"];
        let want = [
            Frame::Comm(comm),
            Frame::Object {
                object,
                offset: 0x210,
            },
        ];
        assert_eq!(&*f.stacks[id as usize], &want);
    }

    #[test]
    fn exited_processes_are_forgotten_one_drain_later() {
        let mut f = Folded::new(1);
        f.record(Record::Comm {
            pid: 5,
            comm: "x",
            exec: false,
        });
        f.record(Record::Exit { pid: 5, tid: 5 });
        f.drained();
        assert!(f.procs.contains_key(&5));
        f.drained();
        assert!(!f.procs.contains_key(&5));
    }
}
