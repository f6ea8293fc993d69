#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a traced call costs when the agent falls behind. The BPF side submits records without a
# wake-up, except when the ring holds more than wakeup_bytes (a quarter of it): from then on EVERY
# record forces one (bpf/gpuwhy.bpf.h, gw_submit_event). This runs the null-runtime loop three ways
# with gpuwhy tracing it (agent on CPU $AGENT_CPU, loop on CPU $WORK_CPU):
#   running     the agent drains the ring as usual (32 MiB ring)
#   stalled     the agent is SIGSTOPped (as when its writer waits on the disk and the reader waits
#               on the writer), 32 MiB ring: a prefill of $PREFILL calls passes the quarter mark,
#               then $CALLS calls are timed, every one of them with a forced wake-up
#   stalled_big the same with a 1 GiB ring (the quarter mark is never reached): no wake-ups
# The ring never fills (no loss); the agent is resumed before it is stopped.
#
# usage: bench/wakeup.sh   (env: RUNS=5 CALLS=100000 PREFILL=70000 AGENT_CPU=0 WORK_CPU=1)
source "$(dirname "$0")/lib/common.sh"
need_root
need_file "$GPUWHY" "$NULL_CUDART" "$CALL_LOOP"

CALLS=${CALLS:-100000}
PREFILL=${PREFILL:-70000}
AGENT_CPU=${AGENT_CPU:-0}
WORK_CPU=${WORK_CPU:-1}
TSV=$GW_BENCH_OUT/wakeup.tsv
echo -e "round\tconfig\tns_per_call\tlost" >"$TSV"
loop() { taskset -c "$WORK_CPU" "$CALL_LOOP" "$NULL_CUDART" cudaLaunchKernel "$1" | jfield ns_per_call; }

CONFIGS=(running stalled stalled_big)
for ((r = 1; r <= RUNS; r++)); do
  for ((k = 0; k < ${#CONFIGS[@]}; k++)); do
    c=${CONFIGS[$(((k + r) % ${#CONFIGS[@]}))]}
    ring=32
    [ "$c" = stalled_big ] && ring=1024
    TRACER_PREFIX="taskset -c $AGENT_CPU" start_gpuwhy "wakeup" --no-host-libs --ring-mb "$ring" --lib "$NULL_CUDART"
    [ "$c" = running ] || kill -STOP "$GW_PID"
    loop "$PREFILL" >/dev/null
    v=$(loop "$CALLS")
    kill -CONT "$GW_PID"
    stop_gpuwhy
    lost=$(grep -q "0 events lost" "$GW_LOG" && echo 0 || sed -n 's/.*LOST \([0-9,]*\) events.*/\1/p' "$GW_LOG")
    echo -e "$r\t$c\t$v\t$lost" >>"$TSV"
    log "round $r $c: $v ns/call, lost $lost"
  done
done
rm -f "$GW_BENCH_OUT"/wakeup.db*

{
  echo "### Cost per call when the agent falls behind (forced ring wake-ups)"
  echo
  echo "$(machine_line). RUNS=$RUNS rounds interleaved; null libcudart loop, $CALLS timed calls" \
       "after $PREFILL prefill calls."
  echo
  echo "| config | ring | ns/call median [min..max] | events lost |"
  echo "| --- | --- | --- | --- |"
  for c in "${CONFIGS[@]}"; do
    read -r m lo hi _ < <(awk -F'\t' -v c="$c" '$2 == c {print $3}' "$TSV" | stats)
    echo "| $c | $([ "$c" = stalled_big ] && echo 1 GiB || echo 32 MiB) | $m [$lo..$hi] | $(awk -F'\t' -v c="$c" '$2 == c {printf "%s ", $4}' "$TSV")|"
  done
} | tee "$GW_BENCH_OUT/wakeup.md"
