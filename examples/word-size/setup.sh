#!/bin/sh
# Builds the word-size example: the same C program as an i386 (-m32) and
# an x86-64 (-m64) binary, in bin/. Installs Debian's gcc-multilib when
# -m32 cannot link. Safe to re-run (rebuilds only when the source changed).
set -eu
cd "$(dirname "$0")"
if ! printf 'int main(void){return 0;}\n' | gcc -m32 -x c -o /dev/null - 2>/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    # A fresh machine (or container) may have no package lists yet.
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends gcc-multilib
fi
mkdir -p bin
for bits in 32 64; do
    if [ ! -x "bin/wordsize-$bits" ] || [ wordsize.c -nt "bin/wordsize-$bits" ]; then
        gcc "-m$bits" -O2 -Wall -Wextra -o "bin/wordsize-$bits" wordsize.c
    fi
    file "bin/wordsize-$bits" | sed 's/, BuildID.*//'
done
