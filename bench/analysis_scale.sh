#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# explain and query at growing trace sizes (issue 18's 10 M, 100 M and 1 B events): runs
# bench/analysis.sh once per size, in one go on one machine, and gathers the tables into
# $GW_BENCH_OUT/analysis_scale.md. A size whose explain would not fit in this machine's memory is
# still generated and queried; its explain is left out and the table says why. The rule for "would
# not fit": explain holds about 46 bytes per event today (4.6 GB measured at 100 M events), so a
# size over 80% of MemAvailable at that rate is skipped rather than left to the OOM killer.
#
# usage: bench/analysis_scale.sh   (env: SIZES="10000000 100000000 1000000000" RUNS=3)
#        needs about 8.4 bytes of disk per event under $GW_BENCH_OUT (8.4 GB at 1 B events)
source "$(dirname "$0")/lib/common.sh"
need_file "$GPUWHY" "$GEN_TRACE"
SIZES=${SIZES:-"10000000 100000000 1000000000"}
BYTES_PER_EVENT_IN_MEMORY=46
OUT=$GW_BENCH_OUT/analysis_scale.md
avail_kib=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
{
  echo "## explain and query by trace size"
  echo
  echo "$(machine_line)"
  echo
} >"$OUT"
for n in $SIZES; do
  need=$((n * BYTES_PER_EVENT_IN_MEMORY / 1024))
  disk_kib=$(df -Pk "$GW_BENCH_OUT" | awk 'NR == 2 {print $4}')
  if [ $((n * 9 / 1024)) -gt "$disk_kib" ]; then
    echo "- $n events: not run, needs about $((n * 9 / 1024 / 1024)) MiB of disk under $GW_BENCH_OUT" >>"$OUT"
    continue
  fi
  if [ "$need" -gt $((avail_kib * 8 / 10)) ]; then
    log "$n events: explain left out (needs ~$((need / 1024)) MiB, $((avail_kib / 1024)) MiB available)"
    EVENTS=$n SKIP_EXPLAIN=1 "$BENCH_DIR/analysis.sh" >/dev/null
    echo "- $n events: explain **not run**: about $((need / 1024)) MiB at today's bytes per event, $((avail_kib / 1024)) MiB available (explain in bounded memory is not built yet)" >>"$OUT"
  else
    EVENTS=$n "$BENCH_DIR/analysis.sh" >/dev/null
  fi
  cat "$GW_BENCH_OUT/analysis.md" >>"$OUT"
  echo >>"$OUT"
done
log "wrote $OUT"
cat "$OUT"
