#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# explain and query at growing trace sizes (issue 18's 10 M, 100 M and 1 B events): runs
# bench/analysis.sh once per size, in one go on one machine, and gathers the tables into
# $GW_BENCH_OUT/analysis_scale.md. explain analyses a big window in batches of whole processes
# (docs/explain.md, "Traces bigger than memory"), so its memory follows the largest batch: the
# traces have PROCESSES processes (default 16, a busy 8-GPU host's trainers and their helpers),
# and one process bigger than a batch is a batch of its own. A size whose largest process would
# not fit in 80% of MemAvailable (about 46 bytes per event, twice for the batch read ahead) is
# still generated and queried; its explain is left out and the table says why.
#
# usage: bench/analysis_scale.sh   (env: SIZES="10000000 100000000 1000000000" PROCESSES=16 RUNS=3
#                                  REUSE=1 KEEP=1: measure the traces a previous run kept)
#        needs about 8.4 bytes of disk per event under $GW_BENCH_OUT (8.4 GB at 1 B events)
source "$(dirname "$0")/lib/common.sh"
need_file "$GPUWHY" "$GEN_TRACE"
SIZES=${SIZES:-"10000000 100000000 1000000000"}
export PROCESSES=${PROCESSES:-16}
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
  need=$((n / PROCESSES * 2 * BYTES_PER_EVENT_IN_MEMORY / 1024))
  disk_kib=$(df -Pk "$GW_BENCH_OUT" | awk 'NR == 2 {print $4}')
  reused=0
  [ "${REUSE:-0}" = 1 ] && [ -s "$GW_BENCH_OUT/analysis-$n.db" ] && reused=1
  if [ "$reused" = 0 ] && [ $((n * 9 / 1024)) -gt "$disk_kib" ]; then
    echo "- $n events: not run, needs about $((n * 9 / 1024 / 1024)) MiB of disk under $GW_BENCH_OUT" >>"$OUT"
    continue
  fi
  if [ "$need" -gt $((avail_kib * 8 / 10)) ]; then
    log "$n events: explain left out (needs ~$((need / 1024)) MiB, $((avail_kib / 1024)) MiB available)"
    EVENTS=$n SKIP_EXPLAIN=1 "$BENCH_DIR/analysis.sh" >/dev/null
    echo "- $n events: explain **not run**: about $((need / 1024)) MiB for its largest process and the batch read ahead, $((avail_kib / 1024)) MiB available" >>"$OUT"
  else
    EVENTS=$n "$BENCH_DIR/analysis.sh" >/dev/null
  fi
  cat "$GW_BENCH_OUT/analysis.md" >>"$OUT"
  echo >>"$OUT"
done
log "wrote $OUT"
cat "$OUT"
