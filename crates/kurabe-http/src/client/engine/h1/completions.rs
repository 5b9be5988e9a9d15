//! io_uring completions of the HTTP/1.1 worker, turned into the same calls
//! the epoll path makes.
//!
//! Owns telling a completion of the current socket from one of a closed
//! socket generation, and giving receive buffers back. Must not count
//! requests itself.

use super::*;

impl Worker<'_> {
    /// Act on one completion; those of a closed socket generation are only
    /// cleaned up (their receive buffer goes back to the kernel).
    pub(super) fn on_completion(&mut self, cqe: Cqe) {
        let Io::Uring { ring, .. } = &mut self.io else {
            return;
        };
        match cqe.user_data {
            TICK_TOKEN => {
                self.core.pace.ticker.ack();
                if !uring::more(cqe.flags) {
                    ring.poll(
                        self.core.pace.ticker.fd(),
                        libc::POLLIN as u32,
                        true,
                        TICK_TOKEN,
                    );
                }
                return;
            }
            CANCEL_TOKEN => return,
            _ => {}
        }
        let ci = ((cqe.user_data >> 2) & 0xffff_ffff) as usize;
        let op = cqe.user_data & 3;
        let current = self
            .conns
            .get(ci)
            .is_some_and(|c| cqe.user_data == tag(ci, c.gen, op));
        if !current {
            ring.recycle(cqe.flags);
            return;
        }
        match op {
            OP_CONNECT => {
                self.conns[ci].poll_armed = false;
                let flags = if cqe.result < 0 {
                    libc::EPOLLERR as u32
                } else {
                    cqe.result as u32
                };
                self.on_event(ci, flags);
            }
            OP_SEND => self.on_send(ci, cqe.result),
            _ => self.on_recv(ci, cqe),
        }
    }

    /// A multishot receive produced bytes, the end of the stream, or an error.
    pub(super) fn on_recv(&mut self, ci: usize, cqe: Cqe) {
        if !uring::more(cqe.flags) {
            self.conns[ci].recv_armed = false;
        }
        match cqe.result {
            0 => self.on_eof(ci),
            n if n > 0 => self.take_received(ci, cqe.flags, n as usize),
            e if e == -libc::ENOBUFS || e == -libc::ECANCELED => {}
            e => self.recv_failed(ci, io::Error::from_raw_os_error(-e)),
        }
        if let Io::Uring { ring, .. } = &mut self.io {
            ring.recycle(cqe.flags);
        }
        self.arm_recv(ci);
    }

    /// Copy `n` received bytes from the kernel's buffer into the connection's and parse them.
    pub(super) fn take_received(&mut self, ci: usize, flags: u32, n: usize) {
        let mut off = 0;
        while off < n && self.make_room(ci) {
            let Io::Uring { ring, .. } = &self.io else {
                return;
            };
            let Some(data) = ring.buffer(flags, n) else {
                return;
            };
            let c = &mut self.conns[ci];
            let k = (n - off).min(c.buf.len() - c.len);
            c.buf[c.len..c.len + k].copy_from_slice(&data[off..off + k]);
            off += k;
            self.absorb(ci, k);
        }
    }

    /// io_uring: keep a multishot receive armed on an open connection.
    pub(super) fn arm_recv(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if let Io::Uring { ring, .. } = &mut self.io {
            if c.state == State::Open && !c.recv_armed {
                ring.recv(c.fd, tag(ci, c.gen, OP_RECV));
                c.recv_armed = true;
            }
        }
    }

    /// io_uring: a send completed with `res` (bytes or -errno).
    pub(super) fn on_send(&mut self, ci: usize, res: i32) {
        let rl = self.core.sh.request_len;
        let c = &mut self.conns[ci];
        c.send_busy = false;
        if res < 0 {
            self.send_failed(ci, io::Error::from_raw_os_error(-res));
            return;
        }
        let before = c.unwritten(rl);
        c.w_off += res as usize;
        let at = c.send_at;
        self.mark_written(ci, before, at);
        self.flush(ci);
    }
}
