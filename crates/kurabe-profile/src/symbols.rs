//! Names for sampled frames: the ELF symbols (`.symtab`, then `.dynsym`)
//! of each mapped file, `/proc/kallsyms` for the kernel's.
//!
//! Owns reading those tables once per file and the lookup. A frame in no
//! symbol (a stripped binary's static function, a JIT's code) is shown as
//! `file+0xADDRESS`, never as the nearest symbol before it: a symbol's
//! size bounds it. DWARF (inlined frames, `.debug` files) is not read:
//! see docs/profile.md. Must not sample or print.

use std::collections::HashMap;
use std::path::Path;

use object::read::elf::{ElfFile64, ProgramHeader};
use object::{Object, ObjectSymbol, SymbolKind};

/// One object file's symbols and how its file offsets map to addresses.
#[derive(Debug, Default)]
struct Table {
    /// (file offset, size in the file, virtual address) of each PT_LOAD.
    segments: Vec<(u64, u64, u64)>,
    /// (address, size, name), sorted by address.
    symbols: Vec<(u64, u64, String)>,
}

/// Symbol tables, read on first use.
#[derive(Debug, Default)]
pub struct Symbols {
    tables: HashMap<String, Option<Table>>,
    kernel: Option<Vec<(u64, String)>>,
}

impl Symbols {
    /// An empty cache.
    pub fn new() -> Symbols {
        Symbols::default()
    }

    /// The name of the code at file offset `offset` of `path`.
    pub fn object(&mut self, path: &str, offset: u64) -> String {
        let table = self
            .tables
            .entry(path.to_owned())
            .or_insert_with(|| Table::read(Path::new(path)));
        let base = path.rsplit('/').next().unwrap_or(path);
        let Some(t) = table else {
            return format!("{base}+{offset:#x}");
        };
        let addr = t.address(offset);
        match t.lookup(addr) {
            Some(name) => name.to_owned(),
            None => format!("{base}+{addr:#x}"),
        }
    }

    /// The name of kernel address `addr`, marked `_[k]` as
    /// `stackcollapse-perf --kernel` marks them.
    pub fn kernel(&mut self, addr: u64) -> String {
        let table = self.kernel.get_or_insert_with(read_kallsyms);
        let i = table.partition_point(|(a, _)| *a <= addr);
        match i.checked_sub(1).map(|i| &table[i]) {
            Some((_, name)) => format!("{name}_[k]"),
            None => "[kernel]_[k]".to_owned(),
        }
    }
}

impl Table {
    /// The table of the ELF file at `path`; `None` when it cannot be read.
    fn read(path: &Path) -> Option<Table> {
        let data = std::fs::read(path).ok()?;
        let elf = ElfFile64::<object::Endianness>::parse(&*data).ok()?;
        let endian = elf.endian();
        let segments = elf
            .elf_program_headers()
            .iter()
            .filter(|p| p.p_type(endian) == object::elf::PT_LOAD)
            .map(|p| {
                let off = p.p_offset(endian);
                (off, p.p_filesz(endian), p.p_vaddr(endian))
            })
            .collect();
        let mut symbols = functions(&elf);
        if let Some(debug) = elf.build_id().ok().flatten().and_then(debug_file) {
            symbols.extend(debug_symbols(&debug));
        }
        symbols.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        symbols.dedup_by_key(|s| s.0);
        Some(Table { segments, symbols })
    }

    /// The virtual address of file offset `offset` (itself outside every segment).
    fn address(&self, offset: u64) -> u64 {
        self.segments
            .iter()
            .find(|(off, size, _)| *off <= offset && offset < off + size)
            .map_or(offset, |(off, _, vaddr)| offset - off + vaddr)
    }

    /// The symbol whose [address, address + size) holds `addr`.
    fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.symbols.partition_point(|s| s.0 <= addr);
        let candidates = self.symbols[..i].iter().rev().take(8);
        candidates
            .filter(|(a, size, _)| addr < a + size)
            .map(|(_, _, name)| name.as_str())
            .next()
    }
}

/// The function symbols of `elf` (`.symtab` and `.dynsym`): address, size, name.
fn functions(elf: &ElfFile64<'_, object::Endianness>) -> Vec<(u64, u64, String)> {
    elf.symbols()
        .chain(elf.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.address() > 0)
        .filter_map(|s| Some((s.address(), s.size(), demangle(s.name().ok()?))))
        .collect()
}

/// The separate debug file of build id `id`, where the distribution's
/// `-dbg`/`-dbgsym` package puts it (`/usr/lib/debug/.build-id/ab/cdef.debug`).
fn debug_file(id: &[u8]) -> Option<std::path::PathBuf> {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let (dir, rest) = (hex.get(..2)?, hex.get(2..)?);
    let path = Path::new("/usr/lib/debug/.build-id")
        .join(dir)
        .join(format!("{rest}.debug"));
    path.is_file().then_some(path)
}

/// The function symbols of a separate debug file (its `.symtab`: the
/// static functions a stripped library lost); none when unreadable.
fn debug_symbols(path: &Path) -> Vec<(u64, u64, String)> {
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    ElfFile64::<object::Endianness>::parse(&*data)
        .map(|elf| functions(&elf))
        .unwrap_or_default()
}

/// A Rust symbol demangled without its hash; others as they are.
fn demangle(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

/// The kernel's text symbols by address (empty when hidden: kptr_restrict).
fn read_kallsyms() -> Vec<(u64, String)> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let mut table: Vec<(u64, String)> = text.lines().filter_map(kallsyms_line).collect();
    table.sort_unstable_by_key(|s| s.0);
    table
}

/// `ffffffff81000000 T _stext [module]` → (address, name), text symbols only.
fn kallsyms_line(line: &str) -> Option<(u64, String)> {
    let mut f = line.split_whitespace();
    let addr = u64::from_str_radix(f.next()?, 16).ok()?;
    let kind = f.next()?;
    let name = f.next()?;
    let text = matches!(kind, "t" | "T" | "w" | "W");
    (text && addr != 0).then(|| (addr, name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_keeps_text_symbols_with_addresses() {
        let l = kallsyms_line("ffffffff81000000 T _stext");
        assert_eq!(l, Some((0xffffffff81000000, "_stext".into())));
        assert_eq!(kallsyms_line("ffffffff82000000 D some_data"), None);
        assert_eq!(kallsyms_line("0000000000000000 T hidden"), None);
    }

    #[test]
    fn an_address_past_a_symbols_size_is_not_named_after_it() {
        let t = Table {
            segments: vec![(0x1000, 0x1000, 0x401000)],
            symbols: vec![(0x401000, 0x10, "a".into()), (0x401100, 0x10, "b".into())],
        };
        assert_eq!(t.address(0x1008), 0x401008);
        assert_eq!(t.lookup(0x401008), Some("a"));
        assert_eq!(t.lookup(0x401080), None);
        assert_eq!(t.lookup(0x40110f), Some("b"));
    }

    #[test]
    fn this_test_binarys_own_functions_are_named() {
        let exe = std::env::current_exe().unwrap();
        let t = Table::read(&exe).expect("an ELF file");
        assert!(t
            .symbols
            .iter()
            .any(|s| s.2.contains("this_test_binarys_own_functions_are_named")));
    }
}
