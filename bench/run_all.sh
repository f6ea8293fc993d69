#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every benchmark, one after the other (about 20 minutes on 2 idle cores), then all
# their tables in $GW_BENCH_OUT/results.md. Build first: cmake --build $GW_BUILD --target gw_bench.
# The machine should be otherwise idle; on a shared one, read medians and spreads, and rerun.
#
# usage: sudo bench/run_all.sh   (env as for each script; RUNS=5 by default)
source "$(dirname "$0")/lib/common.sh"
need_root
start=$(date +%s)
for b in probe_cost probe_ladder placement wakeup ingest ingest_synth analysis export startup; do
  log "=== $b"
  "$BENCH_DIR/$b.sh"
done
{
  echo "# gpuwhy benchmarks: $(machine_line)"
  echo
  echo "gpuwhy $("$GPUWHY" --version 2>/dev/null | head -1), commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$REPO" diff --quiet 2>/dev/null || echo ' (with local changes)')."
  for b in probe_cost probe_ladder placement wakeup ingest ingest_synth analysis export startup; do
    echo
    cat "$GW_BENCH_OUT/$b.md"
  done
} >"$GW_BENCH_OUT/results.md"
log "all done in $(($(date +%s) - start)) s: $GW_BENCH_OUT/results.md"
