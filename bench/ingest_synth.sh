#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ingest capacity of the agent alone (ring -> reader -> decoder -> store): the highest event rate
# `gpuwhy trace` takes with ZERO loss for LONG_S seconds, agent CPU per event, peak RSS.
#
# No traced process on a 2-core machine makes 1 M probed calls/s (each costs a uprobe trap, ~1 us;
# bench/ingest.sh measures that path). So the producer here is bench/synth/synth_ingest: a BPF
# program, run with BPF_PROG_TEST_RUN in a paced loop on CPU $WORK_CPU, that writes API-call
# records of the real layout into the agent's own event ring with the real wake-up rule. The agent
# (its reader and writer threads) is pinned to CPU $AGENT_CPU and writes the trace to DB_DIR.
#
# Ladder: TRIAL_S seconds at each rate of RATES (events/s) until one loses events; then LONG_S
# seconds at the highest rate that lost nothing (one rung lower while the long run loses). Loss is
# checked three ways: records the ring refused (the producer's count), the agent's own summary
# line, and rows in api_calls vs written.
# Agent CPU: utime+stime over the producer's run, divided by the events written.
#
# usage: bench/ingest_synth.sh   (env: TRIAL_S=10 LONG_S=60 RATES="1000000 2000000 3000000 4000000
#                                 6000000" AGENT_CPU=0 WORK_CPU=1 DB_DIR=$GW_BENCH_OUT)
source "$(dirname "$0")/lib/common.sh"
need_root
SYNTH=$GW_BUILD/bench/synth_ingest
need_file "$GPUWHY" "$SYNTH"

TRIAL_S=${TRIAL_S:-10}
LONG_S=${LONG_S:-60}
read -ra RATES <<<"${RATES:-1000000 2000000 3000000 4000000 6000000}"
AGENT_CPU=${AGENT_CPU:-0}
WORK_CPU=${WORK_CPU:-1}
DB_DIR=${DB_DIR:-$GW_BENCH_OUT}
TSV=$GW_BENCH_OUT/ingest_synth.tsv
echo -e "phase\ttarget_per_s\tseconds\twritten\tachieved_per_s\tring_refused\tagent_lost\tstored\tcpu_ns_per_event\tagent_cpu_pct\thwm_mib\tbytes_per_event" >"$TSV"

# run_rate PHASE RATE SECONDS: one agent session fed at RATE; appends a TSV row, echoes "lost".
run_rate() {
  local phase=$1 rate=$2 secs=$3 out c0 c1 hwm lost stored bytes
  GW_BENCH_OUT=$DB_DIR TRACER_PREFIX="taskset -c $AGENT_CPU" start_gpuwhy "synth_$phase" --no-host-libs
  c0=$(proc_cpu_ticks "$GW_PID")
  out=$(taskset -c "$WORK_CPU" "$SYNTH" --rate "$rate" --seconds "$secs")
  c1=$(proc_cpu_ticks "$GW_PID")
  hwm=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$GW_PID/status")
  stop_gpuwhy
  local written refused achieved took
  written=$(jfield written <<<"$out")
  refused=$(jfield dropped <<<"$out")
  achieved=$(jfield rate <<<"$out")
  took=$(jfield seconds <<<"$out")
  lost=$(lost_of_log "$GW_LOG")
  stored=$("$GPUWHY" query --db "$GW_DB" --format csv "SELECT count(*) FROM api_calls" | tail -1 | tr -d "\r")
  bytes=$(stat -c %s "$GW_DB")
  local tick_ns=$((1000000000 / $(getconf CLK_TCK)))
  echo -e "$phase\t$rate\t$took\t$written\t$achieved\t$refused\t$lost\t$stored\t$(awk -v t=$((c1 - c0)) -v n="$written" -v k=$tick_ns 'BEGIN {printf "%.0f", t * k / n}')\t$(awk -v t=$((c1 - c0)) -v s="$took" -v k=$tick_ns 'BEGIN {printf "%.0f", 100 * t * k / 1e9 / s}')\t$hwm\t$(awk -v b="$bytes" -v n="$stored" 'BEGIN {printf "%.1f", b / n}')" >>"$TSV"
  log "$phase $rate/s for ${took}s: wrote $written, ring refused $refused, agent lost $lost, stored $stored"
  rm -f "$GW_DB" "$GW_DB".old* "$GW_DB"-*
  [ "$refused" = 0 ] && [ "$lost" = 0 ] && [ "$stored" = "$written" ] && echo 0 || echo 1
}

passed=()
for r in "${RATES[@]}"; do
  if [ "$(run_rate trial "$r" "$TRIAL_S")" = 0 ]; then passed+=("$r"); else break; fi
done
[ ${#passed[@]} -gt 0 ] || die "even ${RATES[0]} events/s lost events"
# The long run at the highest rate that passed its trial; one rung lower each time it loses.
for ((i = ${#passed[@]} - 1; i >= 0; i--)); do
  [ "$(run_rate long "${passed[$i]}" "$LONG_S")" = 0 ] && break
done

{
  echo "### Ingest capacity (synthetic producer)"
  echo
  echo "$(machine_line). Agent on CPU $AGENT_CPU, synth_ingest on CPU $WORK_CPU, trace in $DB_DIR."
  echo
  echo "| phase | target events/s | achieved | seconds | written | ring refused | agent lost | stored | agent CPU ns/event | agent CPU % | VmHWM MiB | bytes/event |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  tail -n +2 "$TSV" | awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $5, $3, $4, $6, $7, $8, $9, $10, $11, $12}'
} | tee "$GW_BENCH_OUT/ingest_synth.md"
