#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Analysis on a large trace: bench/gen_trace writes a realistic $EVENTS-event trace (api_calls and
# offcpu rows of $PROCESSES training processes (default 4), 3 threads each, through store::TraceWriter, the agent's
# own write path), reporting the writer's rows/s, the final index build and bytes per event; then
# each command below is timed $RUNS times (wall clock around the process, peak RSS from GNU time;
# first run included, the file is in the page cache after gen_trace wrote it).
#
# usage: bench/analysis.sh   (env: EVENTS=10000000 PROCESSES=4 RUNS=5 KEEP=0 SKIP_EXPLAIN=0 REUSE=0)
# REUSE=1: a trace this script wrote before and kept (KEEP=1: $DB and $DB.gen.json) is measured
# again instead of being written anew (1 B events take gen_trace ~25 min on 2 cores); it is kept.
source "$(dirname "$0")/lib/common.sh"
need_file "$GPUWHY" "$GEN_TRACE"
[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time, package 'time') is needed"

EVENTS=${EVENTS:-10000000}
PROCESSES=${PROCESSES:-4}
DB=$GW_BENCH_OUT/analysis-$EVENTS.db
TSV=$GW_BENCH_OUT/analysis.tsv
echo -e "command\trun\tseconds\tmax_rss_kib" >"$TSV"

if [ "${REUSE:-0}" = 1 ] && [ -s "$DB" ] && [ -s "$DB.gen.json" ]; then
  GEN=$(cat "$DB.gen.json")
  KEEP=1
  log "reusing $DB (REUSE=1): $GEN"
  # Read once first, as gen_trace's writing leaves a new file: the runs then measure explain and
  # query, not the disk (a kept file may have been paged out meanwhile: this VM's DAMON pages
  # out cold memory, page cache included).
  cat "$DB" >/dev/null
else
  log "gen_trace: $EVENTS events -> $DB"
  GEN=$("$GEN_TRACE" --out "$DB" --events "$EVENTS" --processes "$PROCESSES")
  echo "$GEN" >"$DB.gen.json"
  log "$GEN"
fi
echo "$GEN" >"$GW_BENCH_OUT/gen_trace.json"

# A thread and a one-second window in the middle of the trace, for the indexed query.
TID=$(sqlite3 "$DB" "SELECT tid FROM threads WHERE comm = 'trainer' ORDER BY tid LIMIT 1")
MID=$(sqlite3 "$DB" "SELECT (min(ts_min) + max(end_max)) / 2 FROM api_calls_chunks")

declare -A CMD
NAMES=(explain explain_since_1m q_thread_offcpu q_calls_by_api q_thread_window q_op_totals
       q_throughput)
CMD[explain]="$GPUWHY explain --db $DB"
CMD[explain_since_1m]="$GPUWHY explain --db $DB --since 1m"
CMD[q_thread_offcpu]="$GPUWHY query --db $DB \"SELECT * FROM v_thread_offcpu ORDER BY offcpu_ns DESC LIMIT 5\""
# A full scan: no time bound (query's default --timeout of 60 s stops it at 1 B events).
CMD[q_calls_by_api]="$GPUWHY query --db $DB --timeout 0 \"SELECT name, count(*), sum(dur) FROM v_calls GROUP BY name ORDER BY 3 DESC\""
CMD[q_thread_window]="$GPUWHY query --db $DB \"SELECT count(*), sum(dur) FROM api_calls WHERE tid = $TID AND ts BETWEEN $MID AND $MID + 1000000000\""
# q_calls_by_api's question from the per-second rollups (q_calls_by_api stays as the reference).
CMD[q_op_totals]="$GPUWHY query --db $DB \"SELECT name, sum(calls), sum(dur_ns) FROM v_op_totals GROUP BY name ORDER BY 3 DESC\""
CMD[q_throughput]="$GPUWHY query --db $DB \"SELECT count(*), sum(calls), sum(busy_ns) FROM v_throughput\""

# SKIP_EXPLAIN=1 (bench/analysis_scale.sh, a size whose explain would not fit in memory): queries only.
if [ "${SKIP_EXPLAIN:-0}" = 1 ]; then
  NAMES=("${NAMES[@]:2}")
fi
for ((r = 1; r <= RUNS; r++)); do
  for name in "${NAMES[@]}"; do
    t0=$(date +%s%N)
    rss=$(eval "/usr/bin/time -f '%M' ${CMD[$name]}" 2>&1 >"$GW_BENCH_OUT/analysis-$name.out" | tail -1)
    secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
    echo -e "$name\t$r\t$secs\t$rss" >>"$TSV"
    log "$name run $r: $secs s, $rss KiB"
  done
done
[ "${KEEP:-0}" = 1 ] || rm -f "$DB"*

{
  echo "### Analysis on a ${EVENTS}-event trace"
  echo
  echo "$(machine_line). gen_trace: $GEN"
  echo
  echo "| command | seconds median [min..max] | peak RSS MiB (median) |"
  echo "| --- | --- | --- |"
  for name in "${NAMES[@]}"; do
    read -r m lo hi _ < <(awk -F'\t' -v c="$name" '$1 == c {print $3}' "$TSV" | stats)
    rss=$(awk -F'\t' -v c="$name" '$1 == c {print $4 / 1024}' "$TSV" | median)
    echo "| \`${CMD[$name]//$DB/DB}\` | $m [$lo..$hi] | $(printf %.0f "$rss") |"
  done
} | sed "s|$GPUWHY|gpuwhy|g" | tee "$GW_BENCH_OUT/analysis.md"
