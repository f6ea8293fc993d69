#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A launch-bound loop (issue 33): what a traced launch costs when launches are all a thread does.
# Rounds interleave the configurations (order rotated each round); the added cost is taken per
# round against that round's untraced run, then the median [min..max] over rounds is reported, as
# in probe_cost.sh. The load average is printed with the results: on a shared machine it is part
# of the figure.
#
# Workloads, each run under every configuration, pinned to CPU $WORK_CPU (the agent on $AGENT_CPU):
#   real<N>  launch_storm on the simulated libcudart with --launch-ns N (each of LAUNCH_NS, default
#            "7500 2500"): a launch that burns N ns of host CPU, as PyTorch's eager launch costs
#            5-10 us, made through the simulated libcuda (GWSIM_CUDART_VIA_DRIVER=1) as NVIDIA's
#            libcudart launches through libcuda's cuLaunchKernel; kernels of 0 ns.
#   null     call_loop on bench/nulldrv's libcudart (cudaLaunchKernel -> cuLaunchKernel, both
#            empty): the probes' own cost per launch, at the highest rate there is
#
# Configurations (gpuwhy --no-host-libs, every library above given with --lib):
#   none     untraced
#   default  `gpuwhy trace`: adaptive launches (a thread above the rate records its launches at
#            entry only; docs/cli.md `--full`)
#   full     `gpuwhy trace --full`: every launch with its return probe and duration
#   entry    `gpuwhy trace --entry-only launch`: every launch at entry only
#   base     with GPUWHY_BASE=another gpuwhy binary: that build with its default flags
#
# usage: bench/launch_bound.sh  (env: RUNS=5 LAUNCH_NS="7500 2500" REAL_S=0.4 NULL_CALLS=300000
#                                AGENT_CPU=0 WORK_CPU=1 GPUWHY_BASE= CONFIGS="none default full entry")
source "$(dirname "$0")/lib/common.sh"
need_root
SIM_CUDA=$GW_BUILD/tests/sim/libcuda.so.1
NULLDRV_CUDART=$GW_BUILD/bench/nulldrv/libcudart.so.13
NULLDRV_CUDA=$GW_BUILD/bench/nulldrv/libcuda.so.1
need_file "$GPUWHY" "$SIM_CUDART" "$SIM_CUDA" "$LAUNCH_STORM" "$CALL_LOOP" "$NULLDRV_CUDART" \
  "$NULLDRV_CUDA"

read -r -a LAUNCH_NS <<<"${LAUNCH_NS:-7500 2500}"
REAL_S=${REAL_S:-0.4}
NULL_CALLS=${NULL_CALLS:-300000}
AGENT_CPU=${AGENT_CPU:-0}
WORK_CPU=${WORK_CPU:-1}
read -r -a CONFIGS <<<"${CONFIGS:-none default full entry}"
if [ -n "${GPUWHY_BASE:-}" ]; then
  need_file "$GPUWHY_BASE"
  CONFIGS+=(base)
fi
WORKLOADS=()
for ns in "${LAUNCH_NS[@]}"; do WORKLOADS+=("real$ns"); done
WORKLOADS+=(null)
TSV=$GW_BENCH_OUT/launch_bound.tsv
echo -e "round\tconfig\tworkload\tns_per_call\tlost\tentry_only_launches" >"$TSV"
A="taskset -c $AGENT_CPU"
W="taskset -c $WORK_CPU"
LIBS=(--lib "$SIM_CUDART" --lib "$SIM_CUDA" --lib "$NULLDRV_CUDART" --lib "$NULLDRV_CUDA")
calls_of() {  # launch ns -> calls for about REAL_S seconds untraced
  awk -v ns="$1" -v s="$REAL_S" 'BEGIN { printf "%d", s * 1e9 / (ns + 300) }'
}

run_workloads() {  # sets NS[workload]
  local ns calls
  for ns in "${LAUNCH_NS[@]}"; do
    calls=$(calls_of "$ns")
    NS[real$ns]=$(GWSIM_CUDART_VIA_DRIVER=1 $W "$LAUNCH_STORM" --launch-ns "$ns" --calls "$calls" |
                  per_call "$calls")
  done
  NS[null]=$($W "$CALL_LOOP" "$NULLDRV_CUDART" cudaLaunchKernel "$NULL_CALLS" | per_call "$NULL_CALLS")
}
entry_only_of() {  # launches the trace recorded without a duration (flags bit 2)
  "$GPUWHY" query --db "$1" --format csv \
    "SELECT count(*) FROM v_calls WHERE category = 'launch' AND dur IS NULL" 2>/dev/null |
    tail -1
}

declare -A NS
log "launch_bound: $RUNS rounds x ${#CONFIGS[@]} configs; launch ns ${LAUNCH_NS[*]}; null $NULL_CALLS calls"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= RUNS; r++)); do
  n=${#CONFIGS[@]}
  for ((k = 0; k < n; k++)); do
    c=${CONFIGS[$(((k + r) % n))]}
    lost=- eo=-
    case $c in
      none) ;;
      default) TRACER_PREFIX=$A start_gpuwhy lb_$c --no-host-libs "${LIBS[@]}" ;;
      full) TRACER_PREFIX=$A start_gpuwhy lb_$c --no-host-libs --full "${LIBS[@]}" ;;
      entry) TRACER_PREFIX=$A start_gpuwhy lb_$c --no-host-libs --entry-only launch "${LIBS[@]}" ;;
      base) GPUWHY=$GPUWHY_BASE TRACER_PREFIX=$A start_gpuwhy lb_$c --no-host-libs "${LIBS[@]}" ;;
    esac
    run_workloads
    if [ "$c" != none ]; then
      stop_gpuwhy
      lost=$(lost_of_log "$GW_LOG")
      eo=$(entry_only_of "$GW_DB")
    fi
    for w in "${WORKLOADS[@]}"; do echo -e "$r\t$c\t$w\t${NS[$w]}\t$lost\t$eo" >>"$TSV"; done
    log "round $r $c: $(for w in "${WORKLOADS[@]}"; do printf '%s %s ' "$w" "${NS[$w]}"; done)ns/launch; lost $lost; entry-only $eo"
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
rm -f "$GW_BENCH_OUT"/lb_*.db*

col() { awk -F'\t' -v c="$1" -v w="$2" '$2 == c && $3 == w {print $1, $4}' "$TSV" | sort -n | cut -d' ' -f2; }
added() { paste <(col "$1" "$2") <(col none "$2") | awk '{printf "%.1f\n", $1 - $2}'; }
pct() { paste <(col "$1" "$2") <(col none "$2") | awk '{printf "%.2f\n", 100 * ($1 - $2) / $2}'; }
{
  echo "### A launch-bound loop (\`bench/launch_bound.sh\`)"
  echo
  echo "$(machine_line). RUNS=$RUNS rounds, configurations interleaved; workloads on CPU $WORK_CPU," \
       "gpuwhy on CPU $AGENT_CPU; load average before $LOAD_BEFORE, after $LOAD_AFTER." \
       "realN = launch_storm --launch-ns N through the simulated libcuda (about ${REAL_S} s each);" \
       "null = call_loop on bench/nulldrv, $NULL_CALLS calls. Median [min..max] over rounds;" \
       "added = per-round difference to that round's untraced run."
  echo
  echo "| config | workload | ns per launch | added ns | added % |"
  echo "| --- | --- | --- | --- | --- |"
  for w in "${WORKLOADS[@]}"; do
    for c in "${CONFIGS[@]}"; do
      read -r m lo hi _ < <(col "$c" "$w" | stats)
      if [ "$c" = none ]; then
        echo "| $c | $w | $m [$lo..$hi] | - | - |"
      else
        read -r am alo ahi _ < <(added "$c" "$w" | stats)
        read -r pm plo phi _ < <(pct "$c" "$w" | stats)
        echo "| $c | $w | $m [$lo..$hi] | $am [$alo..$ahi] | $pm% [$plo..$phi] |"
      fi
    done
  done
  echo
  echo "Events lost per run: $(awk -F'\t' -v w="${WORKLOADS[0]}" '$3 == w && $2 != "none" {printf "%s %s; ", $2, $5}' "$TSV")"
  echo "Launches without a duration per run: $(awk -F'\t' -v w="${WORKLOADS[0]}" '$3 == w && $2 != "none" {printf "%s %s; ", $2, $6}' "$TSV")"
} | tee "$GW_BENCH_OUT/launch_bound.md"
