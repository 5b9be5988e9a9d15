//! The io_uring side of a worker: one ring per thread, a provided-buffer ring
//! for multishot receives, and batched submission.
//!
//! Owns the ring's setup and the unsafe parts of using it (buffers the kernel
//! writes into, the memory it reads sends from). Must not decide anything
//! about requests: the worker turns completions into the same calls its epoll
//! path makes.
//!
//! Why these flags: `DEFER_TASKRUN` + `SINGLE_ISSUER` keep all completion work
//! in the worker's own `io_uring_enter`, so the kernel wakes the thread once
//! per batch rather than once per arriving segment, and a multishot receive
//! costs no system call at all; `R_DISABLED` lets the ring be built on the
//! thread that sets up the run and enabled on the worker thread that uses it.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::{opcode, squeue, types, IoUring};

/// Buffer group of the receive buffers (one group per ring).
const BGID: u16 = 0;
/// Size of one receive buffer: a few small responses, or a slice of a large body.
pub(crate) const RECV_BUF: usize = 4096;

/// Test-only: make [`Uring::probe`] fail on this thread, as a kernel
/// refusing the ring would (the run resolves its engine on the calling thread).
#[cfg(test)]
pub(crate) mod refuse {
    use std::cell::Cell;

    thread_local! {
        static ERRNO: Cell<Option<i32>> = const { Cell::new(None) };
    }

    /// Refuse rings on this thread with `errno` (None: stop refusing).
    pub fn set(errno: Option<i32>) {
        ERRNO.with(|e| e.set(errno));
    }

    pub(super) fn errno() -> Option<i32> {
        ERRNO.with(|e| e.get())
    }
}

/// One completion, copied out of the ring so the worker can act on it freely.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cqe {
    pub user_data: u64,
    pub result: i32,
    pub flags: u32,
}

/// A worker's ring and its receive buffers.
pub(crate) struct Uring {
    // Field order is drop order: the ring goes before the buffers it writes into.
    ring: IoUring,
    bufs: BufRing,
    /// The kernel honours a minimum wait (Linux ≥ 6.12), so batched waits are safe.
    min_timeout: bool,
}

impl Uring {
    /// A ring for `conns` connections, built disabled (see [`Uring::enable`]).
    pub fn new(conns: usize) -> io::Result<Uring> {
        // Per connection at most a send, a receive, a poll and a cancel are queued per turn.
        let sq = (conns * 4 + 16).next_power_of_two().min(4096) as u32;
        let cq = (conns * 8 + 64).next_power_of_two().min(1 << 16) as u32;
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_r_disabled()
            .setup_cqsize(cq)
            .build(sq)?;
        let entries = (conns * 2).next_power_of_two().clamp(64, 2048);
        let bufs = BufRing::new(&ring, entries as u16)?;
        let min_timeout = ring.params().is_feature_min_timeout();
        Ok(Uring {
            ring,
            bufs,
            min_timeout,
        })
    }

    /// Whether a worker of `conns` connections can have its ring here, with
    /// everything the engine uses (checked before a run, so a refusal is a
    /// setup error or, for `--engine auto`, a reason to use epoll).
    pub fn probe(conns: usize) -> io::Result<()> {
        #[cfg(test)]
        if let Some(errno) = refuse::errno() {
            return Err(io::Error::from_raw_os_error(errno));
        }
        let u = Uring::new(conns)?;
        if !u.ring.params().is_feature_ext_arg() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(())
    }

    /// Make the calling thread the ring's only submitter.
    pub fn enable(&self) -> io::Result<()> {
        self.ring.submitter().register_enable_rings()
    }

    /// Queue one entry, submitting first if the queue is full.
    fn push(&mut self, e: squeue::Entry) {
        // SAFETY: every entry built here points at memory that outlives the
        // operation (see the callers); the queue is only touched by this thread.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            let _ = self.ring.submit();
        }
    }

    /// Arm a multishot receive on `fd` into the provided buffers.
    pub fn recv(&mut self, fd: RawFd, user_data: u64) {
        let e = opcode::RecvMulti::new(types::Fd(fd), BGID)
            .build()
            .user_data(user_data);
        self.push(e);
    }

    /// Send `buf`. The caller guarantees `buf` stays valid until the
    /// completion arrives (the worker sends from the run's shared request bytes).
    pub fn send(&mut self, fd: RawFd, buf: &[u8], user_data: u64) {
        let e = opcode::Send::new(types::Fd(fd), buf.as_ptr(), buf.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data);
        self.push(e);
    }

    /// One-shot readiness poll (`flags` as in poll(2)); `multi` re-arms itself.
    pub fn poll(&mut self, fd: RawFd, flags: u32, multi: bool, user_data: u64) {
        let e = opcode::PollAdd::new(types::Fd(fd), flags)
            .multi(multi)
            .build()
            .user_data(user_data);
        self.push(e);
    }

    /// Cancel the operation queued with `target`; its own completion carries `user_data`.
    pub fn cancel(&mut self, target: u64, user_data: u64) {
        let e = opcode::AsyncCancel::new(target)
            .build()
            .user_data(user_data);
        self.push(e);
    }

    /// Submit everything queued, wait for at least one completion (at most
    /// `timeout_ns`; None: no limit), and copy the completions into `out`.
    ///
    /// `nap` = `(ns, want)` (only without a timeout, on kernels that honour a
    /// minimum wait, Linux ≥ 6.12): wait `ns` unless `want` completions come
    /// sooner, then return as soon as there is one: the worker's nap (see
    /// `worker/pace.rs`) in the same system call as the submission.
    pub fn wait(&mut self, timeout_ns: Option<u64>, nap: Option<(u64, usize)>, out: &mut Vec<Cqe>) {
        let r = match (timeout_ns, nap) {
            (None, Some((ns, want))) if self.min_timeout => {
                let us = ns.div_ceil(1000).min(u64::from(u32::MAX)) as u32;
                let args = types::SubmitArgs::new().min_wait_usec(us);
                let want = want.clamp(1, self.ring.params().cq_entries() as usize);
                self.ring.submitter().submit_with_args(want, &args)
            }
            (None, _) => self.ring.submit_and_wait(1),
            (Some(t), _) => {
                let ts = types::Timespec::new()
                    .sec(t / 1_000_000_000)
                    .nsec((t % 1_000_000_000) as u32);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
        };
        // ETIME (the timeout), EINTR, EBUSY: reap what is there; the loop re-checks its clocks.
        let _ = r;
        out.clear();
        out.extend(self.ring.completion().map(|c| Cqe {
            user_data: c.user_data(),
            result: c.result(),
            flags: c.flags(),
        }));
    }

    /// The bytes the kernel put in the buffer a receive completion names.
    pub fn buffer(&self, flags: u32, len: usize) -> Option<&[u8]> {
        let bid = io_uring::cqueue::buffer_select(flags)?;
        Some(self.bufs.get(bid, len))
    }

    /// Give the buffer a receive completion used back to the kernel.
    pub fn recycle(&mut self, flags: u32) {
        if let Some(bid) = io_uring::cqueue::buffer_select(flags) {
            self.bufs.recycle(bid);
        }
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // No receive still armed may pick a buffer once the slab is freed.
        let _ = self.ring.submitter().unregister_buf_ring(BGID);
    }
}

/// Whether a receive completion's operation stays armed.
pub(crate) fn more(flags: u32) -> bool {
    io_uring::cqueue::more(flags)
}

/// A provided-buffer ring: `entries` buffers of [`RECV_BUF`] bytes the kernel
/// picks from for each multishot receive completion.
struct BufRing {
    /// The shared ring of buffer descriptors (page-aligned, mmap'd).
    ring: *mut types::BufRingEntry,
    ring_bytes: usize,
    /// The buffers themselves; never resized, so the addresses given to the kernel stay valid.
    slab: Box<[u8]>,
    mask: u16,
    /// Our producer position (published to the kernel's view of the tail).
    tail: u16,
}

// SAFETY: the mapping is owned by this value alone and moves with it; the
// ring is used by one thread at a time (built on the setup thread, then
// moved to and used only by its worker).
unsafe impl Send for BufRing {}

impl BufRing {
    fn new(ring: &IoUring, entries: u16) -> io::Result<BufRing> {
        let ring_bytes = usize::from(entries) * std::mem::size_of::<types::BufRingEntry>();
        // SAFETY: an anonymous private mapping; the result is checked before use.
        let mem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if mem == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut b = BufRing {
            ring: mem.cast(),
            ring_bytes,
            slab: vec![0u8; usize::from(entries) * RECV_BUF].into_boxed_slice(),
            mask: entries - 1,
            tail: 0,
        };
        // SAFETY: the descriptor ring and the slab live as long as `b`, which
        // the worker drops only after the ring itself (field order in `Uring`).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(mem as u64, entries, BGID, 0)?;
        }
        for bid in 0..entries {
            b.recycle(bid);
        }
        Ok(b)
    }

    fn get(&self, bid: u16, len: usize) -> &[u8] {
        let start = usize::from(bid) * RECV_BUF;
        &self.slab[start..start + len.min(RECV_BUF)]
    }

    /// Publish buffer `bid` at the tail.
    fn recycle(&mut self, bid: u16) {
        let addr = self.slab[usize::from(bid) * RECV_BUF..].as_ptr() as u64;
        // SAFETY: `tail & mask` indexes within the mapping; the kernel only
        // reads entries between its head and the tail we publish below.
        unsafe {
            let e = &mut *self.ring.add(usize::from(self.tail & self.mask));
            e.set_addr(addr);
            e.set_len(RECV_BUF as u32);
            e.set_bid(bid);
            self.tail = self.tail.wrapping_add(1);
            let tail = types::BufRingEntry::tail(self.ring).cast::<AtomicU16>();
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `new` with this length and is not used after.
        unsafe { libc::munmap(self.ring.cast(), self.ring_bytes) };
    }
}
