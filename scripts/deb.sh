#!/usr/bin/env bash
# Build kurabe's Debian package: target/debian/kurabe_VERSION-1_ARCH.deb.
#
#   scripts/deb.sh              # cargo build --release, then package that binary
#   scripts/deb.sh --no-build   # package the target/release/kurabe already built
#
# The package holds /usr/bin/kurabe, a man page for kurabe and each of its
# subcommands (gzipped, /usr/share/man/man1) and completions for bash, zsh
# and fish. Pages and completions are generated here by the binary being
# packaged (`kurabe man --out-dir`, `kurabe completions`), from the same clap
# definition that parses its command line: nothing generated is committed.
# Depends: the packages owning the shared libraries the binary links
# (libc6 at least the newest glibc symbol version it uses, libgcc-s1).
# Needs only what a Debian system with Rust has (dpkg-deb, gzip, objdump).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != --no-build ]; then
  cargo build --release --locked -p kurabe
fi
bin=target/release/kurabe
[ -x "$bin" ] || { echo "deb.sh: no $bin: run without --no-build" >&2; exit 2; }

version=$("$bin" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
out=target/debian
mkdir -p "$out"
root=$(mktemp -d "$out/root.XXXXXX")
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"

install -D -m 0755 "$bin" "$root/usr/bin/kurabe"
man1=$root/usr/share/man/man1
"$root/usr/bin/kurabe" man --out-dir "$man1" >&2
gzip -9n "$man1"/*.1
gen() { # gen SHELL PATH: the completion script for SHELL at PATH
  install -d "$(dirname "$root/$2")"
  "$root/usr/bin/kurabe" completions "$1" >"$root/$2"
}
gen bash usr/share/bash-completion/completions/kurabe
gen zsh usr/share/zsh/vendor-completions/_kurabe
gen fish usr/share/fish/vendor_completions.d/kurabe.fish
install -d "$root/usr/share/doc/kurabe"
cat >"$root/usr/share/doc/kurabe/copyright" <<'TEXT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: kurabe

Files: *
Copyright: kurabe developers
License: MIT or Apache-2.0
 kurabe and the Rust crates built into it are licensed under the MIT license
 or the Apache License, Version 2.0, at your option; the bundled SQLite is in
 the public domain.
TEXT
chmod -R u=rwX,go=rX "$root/usr/share"

# The packages whose libraries the binary links, as dpkg-shlibdeps would say.
depends=()
glibc=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
for lib in $(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}'); do
  # awk reads to the end (no `exit`): under pipefail an early exit would
  # kill ldconfig with SIGPIPE once its cache outgrows the pipe buffer.
  path=$(ldconfig -p | awk -v lib="$lib" '$1 == lib && !found {print $NF; found = 1}')
  pkg=$(dpkg -S "$(realpath "$path")" 2>/dev/null || dpkg -S "$path")
  pkg=${pkg%%:*}
  case "$pkg" in
    libc6) dep="libc6 (>= $glibc)" ;;
    *) dep=$pkg ;;
  esac
  depends+=("$dep")
done
depends_line=$(printf '%s\n' "${depends[@]}" | awk '!seen[$0]++' | paste -sd, | sed 's/,/, /g')

mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<TEXT
Package: kurabe
Version: $version-1
Architecture: $arch
Maintainer: kurabe developers <kurabe@example.invalid>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends_line
Section: utils
Priority: optional
Homepage: https://example.invalid/kurabe
Description: is A faster, leaner or cheaper than B? Benchmarks with verdicts
 Load tests (ab-compatible), process and system probes (CPU, PSS), command
 benchmarks (hyperfine's options), UnixBench-style system index, experiment
 plans with interleaved rounds, a results store with history and change
 points, and a CI gate: every comparison with a ratio, a 95 % interval and a
 verdict.
TEXT

deb=$out/kurabe_${version}-1_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
