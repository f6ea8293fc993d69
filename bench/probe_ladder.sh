#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where a traced call's cost goes: the null-runtime call loop (bench/probe_cost.sh's "null") under
# each rung of bench/ladder (gpuwhy's API probe work, one piece added per rung, attached as gpuwhy
# attaches: uprobe_multi entry + return at the same offset), under bpftrace's empty entry+return
# pair (the floor probe_cost.sh uses) and under gpuwhy itself, interleaved in rounds with the order
# rotated. The step between rungs is what that piece costs per call.
#
# usage: bench/probe_ladder.sh   (env: RUNS=5 NULL_CALLS=500000 AGENT_CPU=0 WORK_CPU=1
#                                 ONLY="rungs/configs" to run only those besides none and bt_pair)
source "$(dirname "$0")/lib/common.sh"
need_root
LADDER=$GW_BUILD/bench/probe_ladder
need_file "$GPUWHY" "$NULL_CUDART" "$CALL_LOOP" "$LADDER"

NULL_CALLS=${NULL_CALLS:-500000}
AGENT_CPU=${AGENT_CPU:-0}
WORK_CPU=${WORK_CPU:-1}
RUNGS=(empty storage clock ring regs args args_s batch compact)
# Entry only, against bpftrace's empty entry program (bt_entry) and gpuwhy --entry-only launch.
ENTRY_RUNGS=(eempty eclock ecompact ecpu ering)
CONFIGS=(none bt_pair "${RUNGS[@]}" gw_sys gw bt_entry "${ENTRY_RUNGS[@]}" gw_entry)
[ -z "${ONLY:-}" ] || read -r -a CONFIGS <<<"none bt_pair $ONLY"  # e.g. ONLY="regs gw_sys"
TSV=$GW_BENCH_OUT/probe_ladder.tsv
echo -e "round\tconfig\tns_per_call" >"$TSV"
A="taskset -c $AGENT_CPU"
W="taskset -c $WORK_CPU"

loop_ns() {
  $W "$CALL_LOOP" "$NULL_CUDART" cudaLaunchKernel "$NULL_CALLS" | jfield elapsed_ns |
    awk -v n="$NULL_CALLS" '{printf "%.1f", $1 / n}'
}
start_ladder() {  # rung
  local logf=$GW_BENCH_OUT/ladder-$1.log
  rm -f "$logf"  # a previous run's "ready" must not count: the child truncates it only later
  $A "$LADDER" "$NULL_CUDART" cudaLaunchKernel "$1" >"$logf" 2>&1 &
  LD_PID=$!
  wait_for_line "probe_ladder $1" "$LD_PID" "$logf" '^ready'
}
stop_ladder() { kill -INT "$LD_PID" 2>/dev/null || true; wait "$LD_PID" 2>/dev/null || true; }

log "probe_ladder: $RUNS rounds x ${#CONFIGS[@]} configs, $NULL_CALLS null-runtime calls each"
for ((r = 1; r <= RUNS; r++)); do
  n=${#CONFIGS[@]}
  for ((k = 0; k < n; k++)); do
    c=${CONFIGS[$(((k + r) % n))]}
    case $c in
      none) ns=$(loop_ns) ;;
      bt_pair) TRACER_PREFIX=$A start_bpftrace bt_pair \
                 "uprobe:$NULL_CUDART:cudaLaunchKernel {} uretprobe:$NULL_CUDART:cudaLaunchKernel {}"
               ns=$(loop_ns); stop_bpftrace ;;
      bt_entry) TRACER_PREFIX=$A start_bpftrace bt_entry "uprobe:$NULL_CUDART:cudaLaunchKernel {}"
                ns=$(loop_ns); stop_bpftrace ;;
      gw) TRACER_PREFIX=$A start_gpuwhy ladder_gw --no-host-libs --lib "$NULL_CUDART"
          ns=$(loop_ns); stop_gpuwhy ;;
      gw_entry) TRACER_PREFIX=$A start_gpuwhy ladder_gw --no-host-libs --entry-only launch \
                  --lib "$NULL_CUDART"
                ns=$(loop_ns); stop_gpuwhy ;;
      gw_sys) TRACER_PREFIX=$A start_gpuwhy ladder_gw --no-host-libs --with syscalls \
                  --lib "$NULL_CUDART"
                ns=$(loop_ns); stop_gpuwhy ;;
      *) start_ladder "$c"; ns=$(loop_ns); stop_ladder ;;
    esac
    echo -e "$r\t$c\t$ns" >>"$TSV"
    log "round $r $c: $ns ns/call"
  done
done
rm -f "$GW_BENCH_OUT"/ladder_gw.db*

col() { awk -F'\t' -v c="$1" '$2 == c {print $1, $3}' "$TSV" | sort -n | cut -d' ' -f2; }
added() { paste <(col "$1") <(col none) | awk '{printf "%.1f\n", $1 - $2}'; }
{
  echo "### Probe-cost ladder (null runtime, $NULL_CALLS calls)"
  echo
  echo "$(machine_line). RUNS=$RUNS rounds, configurations interleaved; workload on CPU $WORK_CPU," \
       "tracers on CPU $AGENT_CPU. Added = per-round difference to that round's untraced loop;" \
       "÷ floor = added ÷ the same round's bpftrace empty pair (entry-only configs: bpftrace's" \
       "empty entry program, bt_entry; and eempty for the own-attachment floor)."
  echo
  echo "| config | ns/call | added ns/call | ÷ bpftrace floor | ÷ empty uprobe_multi program(s) |"
  echo "| --- | --- | --- | --- | --- |"
  for c in "${CONFIGS[@]}"; do
    read -r m lo hi _ < <(col "$c" | stats)
    if [ "$c" = none ]; then echo "| $c | $m [$lo..$hi] | | | |"; continue; fi
    floor=bt_pair own=empty
    if [[ " bt_entry ${ENTRY_RUNGS[*]} gw_entry " == *" $c "* ]]; then floor=bt_entry own=eempty; fi
    read -r am alo ahi _ < <(added "$c" | stats)
    fb=-
    if [[ " ${CONFIGS[*]} " == *" $floor "* ]]; then
      read -r fb _ < <(paste <(added "$c") <(added $floor) | awk '{printf "%.3f\n", $1 / $2}' | stats)
      fb="${fb}×"
    fi
    fe=-
    if [[ " ${CONFIGS[*]} " == *" $own "* ]]; then
      read -r fe _ < <(paste <(added "$c") <(added $own) | awk '{printf "%.3f\n", $1 / $2}' | stats)
      fe="${fe}×"
    fi
    echo "| $c | $m [$lo..$hi] | $am [$alo..$ahi] | $fb | $fe |"
  done
} | tee "$GW_BENCH_OUT/probe_ladder.md"
