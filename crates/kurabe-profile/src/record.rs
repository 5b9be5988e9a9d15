//! The perf ring's records this crate asks for, decoded from their bytes:
//! samples (IP, TID, callchain), MMAP2, COMM, FORK, EXIT and LOST.
//!
//! Owns the byte layouts of `perf_event_open(2)`'s "MMAP layout" section
//! for the sample type `sys.rs` opens with. Must not keep state.

/// `PERF_RECORD_*` types read here.
const MMAP2: u32 = 10;
const LOST: u32 = 2;
const COMM: u32 = 3;
const EXIT: u32 = 4;
const FORK: u32 = 7;
const SAMPLE: u32 = 9;

/// `PERF_RECORD_MISC_COMM_EXEC`: the COMM record of an exec.
const MISC_COMM_EXEC: u16 = 1 << 13;

/// Callchain entries at or above this are context markers (`PERF_CONTEXT_MAX`).
const CONTEXT_MAX: u64 = (-4095i64) as u64;
/// `PERF_CONTEXT_KERNEL`: the frames that follow are the kernel's.
const CONTEXT_KERNEL: u64 = (-128i64) as u64;
/// `PERF_CONTEXT_USER`: the frames that follow are user space's.
const CONTEXT_USER: u64 = (-512i64) as u64;

/// One decoded record.
#[derive(Debug, PartialEq)]
pub(crate) enum Record<'a> {
    /// A sample: the process and thread, and the callchain, leaf first.
    Sample {
        pid: u32,
        tid: u32,
        chain: Chain<'a>,
    },
    /// An executable mapping of `path` at `start..start+len` from file offset `pgoff`.
    Mmap {
        pid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: &'a str,
    },
    /// A process (or thread) was named `comm`; `exec` when an exec did it.
    Comm { pid: u32, comm: &'a str, exec: bool },
    /// `pid` (thread `tid`) was forked from `ppid`.
    Fork { pid: u32, ppid: u32, tid: u32 },
    /// Thread `tid` of `pid` exited.
    Exit { pid: u32, tid: u32 },
    /// The kernel dropped `lost` records: the ring was full.
    Lost { lost: u64 },
    /// A record this crate does not read.
    Other,
}

/// A raw callchain: context markers and addresses, leaf first.
#[derive(Debug, PartialEq, Clone, Copy)]
pub(crate) struct Chain<'a>(&'a [u8]);

/// One callchain entry.
#[derive(Debug, PartialEq, Clone, Copy)]
pub(crate) enum Entry {
    /// A kernel address.
    Kernel(u64),
    /// A user-space address.
    User(u64),
}

impl<'a> Chain<'a> {
    /// The entries, leaf first, each tagged by the context before it.
    pub(crate) fn entries(self) -> impl Iterator<Item = Entry> + Clone + 'a {
        let mut kernel = false;
        self.0.chunks_exact(8).filter_map(move |c| {
            let a = u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
            if a >= CONTEXT_MAX {
                kernel = a == CONTEXT_KERNEL || (kernel && a != CONTEXT_USER);
                return None;
            }
            Some(if kernel {
                Entry::Kernel(a)
            } else {
                Entry::User(a)
            })
        })
    }
}

/// Little reader over a record's bytes.
struct Bytes<'a>(&'a [u8], usize);

impl<'a> Bytes<'a> {
    fn u32(&mut self) -> Option<u32> {
        let b = self.0.get(self.1..self.1 + 4)?;
        self.1 += 4;
        Some(u32::from_ne_bytes(b.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        let b = self.0.get(self.1..self.1 + 8)?;
        self.1 += 8;
        Some(u64::from_ne_bytes(b.try_into().ok()?))
    }
    fn skip(&mut self, n: usize) {
        self.1 += n;
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.0.get(self.1..self.1.checked_add(n)?)?;
        self.1 += n;
        Some(b)
    }
    /// A NUL-padded string up to the end of the record.
    fn text(&mut self) -> &'a str {
        let rest = self.0.get(self.1..).unwrap_or(&[]);
        let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        std::str::from_utf8(&rest[..end]).unwrap_or("")
    }
}

/// The time of a record (its sample's `PERF_SAMPLE_TIME`, or the
/// `sample_id_all` trailer's last word of any other record), in the
/// event's clock (CLOCK_MONOTONIC, ns); `None` when it is cut short.
pub(crate) fn time(raw: &[u8]) -> Option<u64> {
    let kind = u32::from_ne_bytes(raw.get(..4)?.try_into().ok()?);
    let at = if kind == SAMPLE {
        24
    } else {
        raw.len().checked_sub(8)?
    };
    Some(u64::from_ne_bytes(raw.get(at..at + 8)?.try_into().ok()?))
}

/// Decode one record (its 8-byte header included); `None` when it is cut short.
pub(crate) fn decode(raw: &[u8]) -> Option<Record<'_>> {
    let kind = u32::from_ne_bytes(raw.get(..4)?.try_into().ok()?);
    let misc = u16::from_ne_bytes(raw.get(4..6)?.try_into().ok()?);
    let mut b = Bytes(raw, 8);
    Some(match kind {
        SAMPLE => sample(b)?,
        MMAP2 => mmap2(b)?,
        COMM => {
            let pid = b.u32()?;
            b.skip(4);
            let exec = misc & MISC_COMM_EXEC != 0;
            Record::Comm {
                pid,
                comm: b.text(),
                exec,
            }
        }
        FORK | EXIT => {
            let (pid, ppid, tid) = (b.u32()?, b.u32()?, b.u32()?);
            match kind {
                FORK => Record::Fork { pid, ppid, tid },
                _ => Record::Exit { pid, tid },
            }
        }
        LOST => {
            b.skip(8);
            Record::Lost { lost: b.u64()? }
        }
        _ => Record::Other,
    })
}

/// A sample's body: IP, TID, TIME, CALLCHAIN (the order of `sample_type`'s bits).
fn sample(mut b: Bytes<'_>) -> Option<Record<'_>> {
    b.skip(8); // PERF_SAMPLE_IP: the callchain repeats it
    let (pid, tid) = (b.u32()?, b.u32()?);
    b.skip(8); // PERF_SAMPLE_TIME: read by `time`
    let nr = usize::try_from(b.u64()?).ok()?;
    let chain = Chain(b.take(nr.checked_mul(8)?)?);
    Some(Record::Sample { pid, tid, chain })
}

/// An MMAP2 record's body.
fn mmap2(mut b: Bytes<'_>) -> Option<Record<'_>> {
    let pid = b.u32()?;
    b.skip(4);
    let (start, len, pgoff) = (b.u64()?, b.u64()?, b.u64()?);
    b.skip(4 + 4 + 8 + 8 + 4 + 4); // maj, min, ino, generation, prot, flags
    Some(Record::Mmap {
        pid,
        start,
        len,
        pgoff,
        path: b.text(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut r = kind.to_ne_bytes().to_vec();
        r.extend(misc.to_ne_bytes());
        r.extend(((8 + body.len()) as u16).to_ne_bytes());
        r.extend(body);
        r
    }

    #[test]
    fn a_sample_splits_its_chain_into_kernel_and_user_frames() {
        let mut body = Vec::new();
        body.extend(0x1000u64.to_ne_bytes());
        body.extend(7u32.to_ne_bytes());
        body.extend(8u32.to_ne_bytes());
        body.extend(42u64.to_ne_bytes());
        let chain = [
            CONTEXT_KERNEL,
            0xffff_0001,
            0xffff_0002,
            CONTEXT_USER,
            0x1000,
            0x2000,
        ];
        body.extend((chain.len() as u64).to_ne_bytes());
        chain.iter().for_each(|a| body.extend(a.to_ne_bytes()));
        let raw = header(SAMPLE, 0, &body);
        assert_eq!(time(&raw), Some(42));
        let Some(Record::Sample { pid, tid, chain }) = decode(&raw) else {
            panic!("not a sample");
        };
        assert_eq!((pid, tid), (7, 8));
        let e: Vec<Entry> = chain.entries().collect();
        use Entry::*;
        assert_eq!(
            e,
            [
                Kernel(0xffff_0001),
                Kernel(0xffff_0002),
                User(0x1000),
                User(0x2000)
            ]
        );
    }

    #[test]
    fn a_cut_sample_is_refused_not_read_past_its_end() {
        let mut body = vec![0u8; 24];
        body.extend(1000u64.to_ne_bytes());
        assert_eq!(decode(&header(SAMPLE, 0, &body)), None);
    }

    #[test]
    fn comm_of_an_exec_is_marked() {
        let mut body = 5u32.to_ne_bytes().to_vec();
        body.extend(5u32.to_ne_bytes());
        body.extend(b"gzip\0\0\0\0");
        let raw = header(COMM, MISC_COMM_EXEC, &body);
        let r = decode(&raw);
        assert_eq!(
            r,
            Some(Record::Comm {
                pid: 5,
                comm: "gzip",
                exec: true
            })
        );
    }
}
