#!/bin/sh
# Runs every example: its setup.sh, then `kurabe run` on its plan, and
# (unixbench-compare) its steps. Not run by CI: it installs Debian/npm
# packages and takes minutes. Each example's output goes to
# examples/<name>/last-run.txt (and report.html when `kurabe report` exists).
#
#   examples/run-all.sh [NAME ...]        (default: all)
#
# Environment:
#   KURABE             kurabe binary (default: kurabe on PATH, else target/debug/kurabe)
#   KURABE_QUICK=1     shorter runs: 3 rounds, durations cut (figures less precise)
#   KURABE_STORE       results store (default: a temp file, removed at the end)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ -z "${KURABE:-}" ]; then
    if command -v kurabe >/dev/null 2>&1; then KURABE=$(command -v kurabe)
    else KURABE="${CARGO_TARGET_DIR:-$root/target}/debug/kurabe"; fi
fi
[ -x "$KURABE" ] || { echo "run-all: no kurabe binary at $KURABE (cargo build -p kurabe, or set KURABE)" >&2; exit 2; }
export KURABE
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kurabe-examples.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
: "${KURABE_STORE:=$tmp/results.db}"
export KURABE_STORE

# A plan with durations cut and 3 rounds, written next to the original
# (relative paths in it stay valid); removed again afterwards.
quick_plan() {
    sed -e 's/^repeat = [0-9]*/repeat = 3/' \
        -e 's/duration = "[0-9]*s"/duration = "3s"/g' \
        -e 's/requests = 1000,/requests = 300,/' \
        -e 's/warmup = "10s"/warmup = "6s"/' -e 's/soak = "30s"/soak = "10s"/' \
        "$1/plan.toml" > "$1/.plan.quick.toml"
    echo "$1/.plan.quick.toml"
}

run_plan() {
    dir=$1
    plan=$dir/plan.toml
    [ "${KURABE_QUICK:-0}" = 1 ] && plan=$(quick_plan "$dir")
    # Plans name their files relative to the example directory.
    (cd "$dir" && "$KURABE" run "$plan" --format md) > "$dir/last-run.txt"
    rc=$?
    rm -f "$dir/.plan.quick.toml"
    cat "$dir/last-run.txt"
    # The HTML report of the experiment just run (newest first in the list),
    # when this kurabe has `kurabe report`.
    if "$KURABE" report --help >/dev/null 2>&1; then
        id=$("$KURABE" results list | grep -o '\<e[0-9][0-9]*\>' | head -n 1)
        [ -n "$id" ] && "$KURABE" report "$id" --format html -o "$dir/report.html" \
            && echo "HTML report: $dir/report.html"
    fi
    return $rc
}

names=${*:-"ruby-gc nginx-workers word-size animation-fps unixbench-compare soak-leak"}
failed=""
for name in $names; do
    dir=$here/$name
    echo "=== $name ($(uname -srm), $(nproc) CPUs, $(date -u +%FT%TZ))"
    if ! sh "$dir/setup.sh"; then
        echo "=== $name: setup failed"; failed="$failed $name"; continue
    fi
    if [ -x "$dir/steps.sh" ]; then
        (cd "$dir" && sh steps.sh) || failed="$failed $name"
    else
        run_plan "$dir" || failed="$failed $name"
    fi
done
if [ -n "$failed" ]; then
    echo "=== failed or checks failed:$failed"
    exit 1
fi
echo "=== all examples ran"
