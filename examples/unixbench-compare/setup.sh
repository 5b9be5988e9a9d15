#!/bin/sh
# unixbench-compare needs nothing from Debian: kurabe runs the tests
# itself. The UnixBench report to compare with is a text file: the one in
# reference/ (UnixBench 6.0.0 on the VM the README names), or your own —
# build UnixBench yourself (github.com/kdlucas/byte-unixbench, `make`,
# `./Run -c 1`) and pass results/<host>-<date>-NN to steps.sh. Checks
# that this kurabe has `kurabe system import`. Safe to re-run.
set -eu
cd "$(dirname "$0")"
KURABE=${KURABE:-kurabe}
if ! "$KURABE" system import --help >/dev/null 2>&1; then
    echo "setup: $KURABE has no 'kurabe system import' (needs the system subcommand)" >&2
    exit 1
fi
ls reference/
