#!/usr/bin/env bash
# bench/history-accuracy.sh — how well does `kurabe history` find a step, and
# how rarely does it cry wolf? Issue 14's accuracy targets, measured through
# the real store: TRIALS (200) synthetic histories of 60 experiments × 5
# runs, run-to-run CV 2 %, one +5 % step at a random position (5..55), and
# TRIALS flat ones, written with the store's import and read back as
# `kurabe history` reads them. Prints, for E-divisive means (kurabe's
# detector) and the sliding-window t-test (Perfherder's, windows of 12,
# t > 7) side by side:
#   step found ±2     — a change within ±2 experiments of the step (≥ 95 %)
#   exactly one       — that change and no other
#   false change      — any change in a flat history (≤ 5 %)
# Pure computation, no load sent; the machine's load does not change the
# figures (the series are seeded), only the time it takes.
#
# Env: TRIALS. Prints the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
TRIALS=${TRIALS:-200} cargo test -q -p kurabe --test tests -- \
  --ignored --exact history::accuracy_of_change_points_through_the_store --nocapture 2>&1 |
  grep -E "step found|panicked|FAILED|assert"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
