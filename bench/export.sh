#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Export speed on a large trace: bench/gen_trace writes a realistic $EVENTS-event trace, then each
# `gpuwhy export` format is timed $RUNS times (wall clock around the process, peak RSS from GNU
# time) with the size of what it wrote; the Perfetto export takes a 10 s window (--since 10s, the
# way a timeline is looked at: the whole trace is over the UI's limit and refused).
#
# usage: bench/export.sh   (env: EVENTS=10000000 RUNS=3 KEEP=0)
source "$(dirname "$0")/lib/common.sh"
need_file "$GPUWHY" "$GEN_TRACE"
[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time, package 'time') is needed"

EVENTS=${EVENTS:-10000000}
RUNS=${RUNS:-3}
DB=$GW_BENCH_OUT/export-$EVENTS.db
OUT=$GW_BENCH_OUT/export-out
TSV=$GW_BENCH_OUT/export.tsv
echo -e "format\trun\tseconds\tmax_rss_kib\tbytes" >"$TSV"

log "gen_trace: $EVENTS events -> $DB"
GEN=$("$GEN_TRACE" --out "$DB" --events "$EVENTS")
log "$GEN"
TRACE_BYTES=$(stat -c %s "$DB")

declare -A CMD
NAMES=(sqlite nsight csv jsonl perfetto_10s html)
CMD[sqlite]="$GPUWHY export --force --db $DB --format sqlite -o $OUT/plain.db"
CMD[nsight]="$GPUWHY export --force --db $DB --format nsight -o $OUT/nsys.sqlite"
CMD[csv]="$GPUWHY export --force --db $DB --format csv -o $OUT/csv"
CMD[jsonl]="$GPUWHY export --force --db $DB --format jsonl -o $OUT/jsonl"
CMD[perfetto_10s]="$GPUWHY export --force --db $DB --format perfetto --since 10s -o $OUT/t.pftrace"
CMD[html]="$GPUWHY explain --db $DB --html $OUT/report.html"
declare -A WHAT=([sqlite]=$OUT/plain.db [nsight]=$OUT/nsys.sqlite [csv]=$OUT/csv [jsonl]=$OUT/jsonl
                 [perfetto_10s]=$OUT/t.pftrace [html]=$OUT/report.html)

for ((r = 1; r <= RUNS; r++)); do
  for name in "${NAMES[@]}"; do
    rm -rf "$OUT"; mkdir -p "$OUT"
    t0=$(date +%s%N)
    rss=$(eval "/usr/bin/time -f '%M' ${CMD[$name]}" 2>&1 >/dev/null | tail -1)
    secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
    bytes=$(du -sb "${WHAT[$name]}" | cut -f1)
    echo -e "$name\t$r\t$secs\t$rss\t$bytes" >>"$TSV"
    log "$name run $r: $secs s, $rss KiB, $bytes bytes"
  done
done
rm -rf "$OUT"
[ "${KEEP:-0}" = 1 ] || rm -f "$DB"*

{
  echo "### Export of a ${EVENTS}-event trace ($((TRACE_BYTES / 1048576)) MiB)"
  echo
  echo "$(machine_line). gen_trace: $GEN"
  echo
  echo "| command | seconds median [min..max] | peak RSS MiB | output MiB |"
  echo "| --- | --- | --- | --- |"
  for name in "${NAMES[@]}"; do
    read -r m lo hi _ < <(awk -F'\t' -v c="$name" '$1 == c {print $3}' "$TSV" | stats)
    rss=$(awk -F'\t' -v c="$name" '$1 == c {print $4 / 1024}' "$TSV" | median)
    mib=$(awk -F'\t' -v c="$name" '$1 == c {print $5 / 1048576}' "$TSV" | median)
    echo "| \`${CMD[$name]//$DB/DB}\` | $m [$lo..$hi] | $(printf %.0f "$rss") | $(printf %.1f "$mib") |"
  done
} | sed -e "s|$GPUWHY|gpuwhy|g" -e "s|$OUT/||g" | tee "$GW_BENCH_OUT/export.md"
