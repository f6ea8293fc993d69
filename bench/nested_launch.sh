#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The cost of a runtime launch that launches through the driver, as NVIDIA's libcudart does
# (cudaLaunchKernel -> cuLaunchKernel), with both libraries probed. Rounds interleave the
# configurations (order rotated each round); the added cost is taken per round against that
# round's untraced run, then the median over rounds is reported, as in probe_cost.sh.
#
# Workloads, each run under every configuration, pinned to CPU $WORK_CPU (the agent on $AGENT_CPU):
#   sim          launch_storm --calls $SIM_CALLS on the simulated libcudart with
#                GWSIM_CUDART_VIA_DRIVER=1: each launch calls the simulated libcuda's cuLaunchKernel
#   sim_direct   the same without it: the runtime launch alone (one probed call per launch)
#   null         call_loop on bench/nulldrv's libcudart, whose cudaLaunchKernel only calls the null
#                libcuda's cuLaunchKernel: the probes' cost and nothing else
#   null_direct  call_loop on bench/nullrt's libcudart (no driver call): one probed call's cost
#
# Configurations (gpuwhy --no-host-libs, every library above given with --lib):
#   none        untraced
#   no_session  --no-uprobe-session: the nested driver launch has its entry and return probes and a
#               record, as on kernels before 6.13
#   session     the default: the nested driver launch's session entry sees the open runtime launch,
#               returns 1 (the kernel skips the return probe) and records nothing
#   entry_only  --entry-only launch (both launches recorded at entry; no session)
#   base        with GPUWHY_BASE=another gpuwhy binary: that build with the default flags (a build
#               from before sessions: the before/after comparison, the runtime launch's own probe
#               included)
#
# Then, with kernel.bpf_stats_enabled=1 (restored afterwards), the run time of every API program
# during one null loop under no_session, session (and base), $STATS_ROUNDS (3) times: invocations,
# ns each, ns per launch.
#
# usage: bench/nested_launch.sh  (env: RUNS=5 SIM_CALLS=100000 NULL_CALLS=300000 AGENT_CPU=0 WORK_CPU=1
#                                 GPUWHY_BASE= BPF_STATS=1)
source "$(dirname "$0")/lib/common.sh"
need_root
SIM_CUDA=$GW_BUILD/tests/sim/libcuda.so.1
NULLDRV_CUDART=$GW_BUILD/bench/nulldrv/libcudart.so.13
NULLDRV_CUDA=$GW_BUILD/bench/nulldrv/libcuda.so.1
need_file "$GPUWHY" "$SIM_CUDART" "$SIM_CUDA" "$LAUNCH_STORM" "$CALL_LOOP" "$NULL_CUDART" \
  "$NULLDRV_CUDART" "$NULLDRV_CUDA"

SIM_CALLS=${SIM_CALLS:-100000}
NULL_CALLS=${NULL_CALLS:-300000}
AGENT_CPU=${AGENT_CPU:-0}
WORK_CPU=${WORK_CPU:-1}
CONFIGS=(none no_session session entry_only)
if [ -n "${GPUWHY_BASE:-}" ]; then
  need_file "$GPUWHY_BASE"
  CONFIGS+=(base)
fi
WORKLOADS=(sim sim_direct null null_direct)
TSV=$GW_BENCH_OUT/nested_launch.tsv
echo -e "round\tconfig\tworkload\tns_per_call\tlost\tnested_skipped" >"$TSV"
A="taskset -c $AGENT_CPU"
W="taskset -c $WORK_CPU"
LIBS=(--lib "$SIM_CUDART" --lib "$SIM_CUDA" --lib "$NULLDRV_CUDART" --lib "$NULLDRV_CUDA"
      --lib "$NULL_CUDART")

run_workloads() {  # sets NS[workload]
  NS[sim]=$(GWSIM_CUDART_VIA_DRIVER=1 $W "$LAUNCH_STORM" --calls "$SIM_CALLS" | per_call "$SIM_CALLS")
  NS[sim_direct]=$($W "$LAUNCH_STORM" --calls "$SIM_CALLS" | per_call "$SIM_CALLS")
  NS[null]=$($W "$CALL_LOOP" "$NULLDRV_CUDART" cudaLaunchKernel "$NULL_CALLS" | per_call "$NULL_CALLS")
  NS[null_direct]=$($W "$CALL_LOOP" "$NULL_CUDART" cudaLaunchKernel "$NULL_CALLS" | per_call "$NULL_CALLS")
}
skipped_of_log() {  # the summary's "N driver launches made inside runtime launches" (0: none)
  local n
  n=$(sed -n 's/.*gpuwhy: \([0-9,]*\) driver launches made inside.*/\1/p' "$1" | tr -d , | head -1)
  echo "${n:-0}"
}

declare -A NS
log "nested_launch: $RUNS rounds x ${#CONFIGS[@]} configs; sim $SIM_CALLS, null $NULL_CALLS calls"
for ((r = 1; r <= RUNS; r++)); do
  n=${#CONFIGS[@]}
  for ((k = 0; k < n; k++)); do
    c=${CONFIGS[$(((k + r) % n))]}
    lost=- skipped=-
    case $c in
      none) ;;
      no_session) TRACER_PREFIX=$A start_gpuwhy nested_$c --no-host-libs --no-uprobe-session "${LIBS[@]}" ;;
      session) TRACER_PREFIX=$A start_gpuwhy nested_$c --no-host-libs "${LIBS[@]}" ;;
      entry_only) TRACER_PREFIX=$A start_gpuwhy nested_$c --no-host-libs --entry-only launch "${LIBS[@]}" ;;
      base) GPUWHY=$GPUWHY_BASE TRACER_PREFIX=$A start_gpuwhy nested_$c --no-host-libs "${LIBS[@]}" ;;
    esac
    run_workloads
    if [ "$c" != none ]; then
      stop_gpuwhy
      lost=$(lost_of_log "$GW_LOG")
      skipped=$(skipped_of_log "$GW_LOG")
    fi
    for w in "${WORKLOADS[@]}"; do echo -e "$r\t$c\t$w\t${NS[$w]}\t$lost\t$skipped" >>"$TSV"; done
    log "round $r $c: sim ${NS[sim]}, sim_direct ${NS[sim_direct]}, null ${NS[null]}, null_direct ${NS[null_direct]} ns/call; lost $lost; nested skipped $skipped"
  done
done
rm -f "$GW_BENCH_OUT"/nested_*.db*

# ---- BPF program run time (diagnostic; the stats add their own two clock reads, ~50 ns here) ----
STATS_MD=""
prog_snapshot() {  # "id:name run_cnt run_time_ns" of gpuwhy's API programs, sorted
  bpftool prog show | awk '
    /^[0-9]+: / { name = ""; rt = cnt = 0
                  for (i = 1; i <= NF; i++) { if ($i == "name") name = $(i + 1)
                    if ($i == "run_time_ns") rt = $(i + 1); if ($i == "run_cnt") cnt = $(i + 1) }
                  if (name ~ /^gw_(api|driver|launch)/) print $1 name, cnt, rt }' | sort
}
if [ "${BPF_STATS:-1}" = 1 ] && command -v bpftool >/dev/null; then
  prev=$(sysctl -n kernel.bpf_stats_enabled)
  sysctl -qw kernel.bpf_stats_enabled=1
  for ((sr = 1; sr <= ${STATS_ROUNDS:-3}; sr++)); do
  for c in no_session session ${GPUWHY_BASE:+base}; do
    flags=(--no-host-libs --lib "$NULLDRV_CUDART" --lib "$NULLDRV_CUDA")
    [ "$c" = no_session ] && flags+=(--no-uprobe-session)
    if [ "$c" = base ]; then
      GPUWHY=$GPUWHY_BASE TRACER_PREFIX=$A start_gpuwhy nested_stats "${flags[@]}"
    else
      TRACER_PREFIX=$A start_gpuwhy nested_stats "${flags[@]}"
    fi
    before=$(prog_snapshot)
    $W "$CALL_LOOP" "$NULLDRV_CUDART" cudaLaunchKernel "$NULL_CALLS" >/dev/null
    after=$(prog_snapshot)
    stop_gpuwhy
    STATS_MD+=$(join <(echo "$before") <(echo "$after") | awk -v c="$c" -v r="$sr" -v calls="$NULL_CALLS" '
      $4 > $2 { n = $4 - $2; t = $5 - $3; sub(/^[0-9]+:/, "", $1)
                printf "| %s | %s | %s | %d | %.0f | %.0f |\n", r, c, $1, n, t / n, t / calls }')$'\n'
  done
  done
  sysctl -qw kernel.bpf_stats_enabled="$prev"
  rm -f "$GW_BENCH_OUT"/nested_stats.db*
fi

col() { awk -F'\t' -v c="$1" -v w="$2" '$2 == c && $3 == w {print $1, $4}' "$TSV" | sort -n | cut -d' ' -f2; }
added() { paste <(col "$1" "$2") <(col none "$2") | awk '{printf "%.1f\n", $1 - $2}'; }
{
  echo "### A runtime launch through the driver (\`bench/nested_launch.sh\`)"
  echo
  echo "$(machine_line). RUNS=$RUNS rounds, configurations interleaved; workloads on CPU $WORK_CPU," \
       "gpuwhy on CPU $AGENT_CPU. sim = launch_storm --calls $SIM_CALLS with GWSIM_CUDART_VIA_DRIVER=1;" \
       "sim_direct = the same without (no driver call); null = call_loop on bench/nulldrv's libcudart" \
       "(cudaLaunchKernel -> cuLaunchKernel, both empty), $NULL_CALLS calls; null_direct = bench/nullrt's." \
       "Median [min..max] over rounds; added = per-round difference to that round's untraced run."
  echo
  echo "| config | workload | ns per runtime launch | added ns |"
  echo "| --- | --- | --- | --- |"
  for c in "${CONFIGS[@]}"; do
    for w in "${WORKLOADS[@]}"; do
      read -r m lo hi _ < <(col "$c" "$w" | stats)
      if [ "$c" = none ]; then
        echo "| $c | $w | $m [$lo..$hi] | - |"
      else
        read -r am alo ahi _ < <(added "$c" "$w" | stats)
        echo "| $c | $w | $m [$lo..$hi] | $am [$alo..$ahi] |"
      fi
    done
  done
  echo
  echo "Nested driver launches skipped per run (session: sim + null workloads' nested launches):" \
       "$(awk -F'\t' '$3 == "sim" && $2 != "none" {printf "%s %s; ", $2, $6}' "$TSV")"
  echo "Events lost per run: $(awk -F'\t' '$3 == "sim" && $2 != "none" {printf "%s ", $5}' "$TSV")"
  if [ -n "$STATS_MD" ]; then
    echo
    echo "BPF programs during one null loop of $NULL_CALLS launches through the driver (kernel.bpf_stats_enabled):"
    echo
    echo "| round | config | program | invocations | ns per invocation | ns per launch |"
    echo "| --- | --- | --- | --- | --- | --- |"
    printf "%s" "$STATS_MD"
  fi
} | tee "$GW_BENCH_OUT/nested_launch.md"
