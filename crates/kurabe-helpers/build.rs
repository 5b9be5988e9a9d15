//! Compiles the helper programs in `programs/` into small standalone
//! executables in OUT_DIR, and deflates each (`NAME.deflate`), which
//! `src/lib.rs` embeds with `include_bytes!` and inflates on first use: the
//! images are 1.3 MB as built and 0.6 MB deflated, of a release binary that
//! must stay under 15 MB (issue 27).
//!
//! Each program is one file compiled alone with the `rustc` cargo uses (no
//! crates, libc declared in the file), always optimised as the release
//! profile is (fat LTO, one codegen unit), whatever profile kurabe itself is
//! built with: what the helpers measure depends on their image (see their
//! module docs), so a debug build of kurabe must not get a debug helper.

use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAMS: &[&str] = &["execl", "rusage"];

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    for name in PROGRAMS {
        let src = Path::new("programs").join(format!("{name}.rs"));
        println!("cargo:rerun-if-changed={}", src.display());
        let image = out.join(name);
        compile(&src, name, &image);
        let bytes = std::fs::read(&image).expect("the helper rustc just built");
        let deflated = miniz_oxide::deflate::compress_to_vec(&bytes, 10);
        std::fs::write(out.join(format!("{name}.deflate")), deflated).expect("OUT_DIR is writable");
    }
}

/// `rustc` for the target cargo builds for, with the linker cargo was told
/// to use for it, if any.
fn rustc(target: &str) -> Command {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.args(["--target", target]);
    let var = format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace(['-', '.'], "_")
    );
    println!("cargo:rerun-if-env-changed={var}");
    if let Some(linker) = std::env::var_os(&var) {
        let mut arg = std::ffi::OsString::from("linker=");
        arg.push(linker);
        cmd.arg("-C").arg(arg);
    }
    cmd
}

fn compile(src: &Path, name: &str, dest: &Path) {
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let out = rustc(&target)
        .args(["--edition", "2021", "--crate-type", "bin", "--crate-name"])
        .arg(format!("kurabe_{name}_helper"))
        .args([
            "-C",
            "opt-level=3",
            "-C",
            "codegen-units=1",
            "-C",
            "lto=fat",
        ])
        .args(["-C", "strip=symbols", "-C", "debuginfo=0"])
        .args(static_if_spawning(name))
        .args(["--color", "never", "-o"])
        .arg(dest)
        .arg(src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run rustc to build the {name} helper: {e}"));
    let diagnostics = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "rustc failed to build the {name} helper from {}:\n{diagnostics}",
        src.display()
    );
    // These files are no cargo target, so neither cargo nor clippy shows
    // their warnings: pass them on.
    for line in diagnostics.lines().filter(|l| !l.trim().is_empty()) {
        println!("cargo:warning={name} helper: {line}");
    }
}

/// The rusage helper starts each measured command with `posix_spawnp`
/// (`CLONE_VM|CLONE_VFORK`: cheaper per run than `fork`). The kernel then
/// folds the helper's own peak RSS into the command's `ru_maxrss` at its
/// exec, so the helper must be smaller than any command it measures: linked
/// statically it is about 1.0 MiB for `true` (`/usr/bin/time`: 1.06), where
/// dynamically linked its ld.so and libc pages made it 1.8.
fn static_if_spawning(name: &str) -> &'static [&'static str] {
    match name {
        "rusage" => &["-C", "target-feature=+crt-static"],
        _ => &[],
    }
}
