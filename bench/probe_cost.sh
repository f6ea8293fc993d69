#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Probe cost per call: a tight loop of cudaLaunchKernel, untraced and under each tracer, measured
# in the same run. Rounds interleave the configurations (order rotated each round) so that drift on
# a shared machine hits all of them alike; the added cost is taken per round against that round's
# untraced run, then the median over rounds is reported.
#
# Workloads, all run under every tracer session, pinned to CPU $WORK_CPU (tracers on $AGENT_CPU,
# so the agent's reader and writer threads do not compete with the workload for its CPU):
#   sim   launch_storm --calls $SIM_CALLS on the simulated libcudart (a real runtime-like call:
#         mutex, queue, GPU-thread wake-ups with futex syscalls)
#   null  call_loop on bench's null libcudart.so.13 (cudaLaunchKernel returns at once, ~2 ns:
#         the added cost is the probe alone)
#   sys   call_loop - getppid: an UNTRACED process making system calls (what a tracer's
#         system-wide syscall tracepoints cost every process on the host)
#
# Configurations:
#   none       untraced
#   bt_entry   bpftrace: empty uprobe                                  (entry floor)
#   bt_pair    bpftrace: empty uprobe + empty uretprobe                 (entry+return floor)
#   bt_work    bpftrace: entry stores nsecs in a map keyed by tid; return looks it up, adds the
#              duration to a histogram, deletes the entry             (comparable work, aggregated)
#   bt_emit    bpftrace: the same pairing, the return printf()s tid and duration (one record per
#              call through bpftrace's perf buffer; output to a file)
#   bt_stack   bpftrace: entry only, counts calls per user stack (@[ustack] = count(): a stack id
#              and a map update per call)
#   gw         gpuwhy trace --no-host-libs --lib SIM --lib NULL         (entry+return paired in task
#              storage, one ring record per call, plus its scheduler tracepoints; the default has
#              no syscall tracepoints)
#   gw_stacks  the same with --stacks
#   gw_sys     the same with --with syscalls (raw syscall tracepoints: the uretprobe syscall each
#              traced call returns through, and every host syscall, take the kernel's slow path)
#   gw_entry   the same as gw with --entry-only launch (launches recorded by the entry probe alone,
#              no return probe): compared with bt_entry, the entry-only floor
#   gw_entry_stacks  --entry-only launch --stacks: compared with bt_stack
#
# Then, with kernel.bpf_stats_enabled=1 (restored afterwards), the run time of every BPF program of
# gpuwhy, bt_pair and bt_work during one null loop (a breakdown, not a timing of the above).
#
# usage: bench/probe_cost.sh   (env: RUNS=5 SIM_CALLS=200000 NULL_CALLS=500000 SYS_CALLS=1000000
#                                AGENT_CPU=0 WORK_CPU=1 BPF_STATS=1
#                                GPUWHY_BASE=another gpuwhy binary, run as config gw_base with
#                                gw's flags: a before/after comparison in the same rounds)
source "$(dirname "$0")/lib/common.sh"
need_root
need_file "$GPUWHY" "$SIM_CUDART" "$LAUNCH_STORM" "$NULL_CUDART" "$CALL_LOOP"

SIM_CALLS=${SIM_CALLS:-200000}
NULL_CALLS=${NULL_CALLS:-500000}
SYS_CALLS=${SYS_CALLS:-1000000}
AGENT_CPU=${AGENT_CPU:-0}
WORK_CPU=${WORK_CPU:-1}
BPF_STATS=${BPF_STATS:-1}
CONFIGS=(none bt_entry bt_pair bt_work bt_emit bt_stack gw gw_sys gw_entry gw_stacks
         gw_entry_stacks)
GW_CONFIGS=(gw gw_sys)
if [ -n "${GPUWHY_BASE:-}" ]; then
  need_file "$GPUWHY_BASE"
  CONFIGS+=(gw_base)
  GW_CONFIGS+=(gw_base)
fi
WORKLOADS=(sim null sys)
TSV=$GW_BENCH_OUT/probe_cost.tsv
echo -e "round\tconfig\tworkload\tns_per_call\tlost" >"$TSV"
A="taskset -c $AGENT_CPU"
W="taskset -c $WORK_CPU"

bt_prog() {  # config [libs...]: the bpftrace program, probing each lib (default: sim and null)
  local p="" c=$1; shift
  [ $# -gt 0 ] || set -- "$SIM_CUDART" "$NULL_CUDART"
  for lib in "$@"; do
    case $c in
      bt_entry) p+="uprobe:$lib:cudaLaunchKernel {} " ;;
      bt_pair) p+="uprobe:$lib:cudaLaunchKernel {} uretprobe:$lib:cudaLaunchKernel {} " ;;
      bt_work) p+="uprobe:$lib:cudaLaunchKernel { @start[tid] = nsecs; }
        uretprobe:$lib:cudaLaunchKernel /@start[tid]/ {
          @ns = hist(nsecs - @start[tid]); delete(@start[tid]); } " ;;
      bt_emit) p+="uprobe:$lib:cudaLaunchKernel { @start[tid] = nsecs; }
        uretprobe:$lib:cudaLaunchKernel /@start[tid]/ {
          printf(\"%d %d\\n\", tid, nsecs - @start[tid]); delete(@start[tid]); } " ;;
      bt_stack) p+="uprobe:$lib:cudaLaunchKernel { @[ustack] = count(); } " ;;
    esac
  done
  echo "$p"
}

run_workloads() {  # sets NS[sim|null|sys]
  NS[sim]=$($W "$LAUNCH_STORM" --calls "$SIM_CALLS" | per_call "$SIM_CALLS")
  NS[null]=$($W "$CALL_LOOP" "$NULL_CUDART" cudaLaunchKernel "$NULL_CALLS" | per_call "$NULL_CALLS")
  NS[sys]=$($W "$CALL_LOOP" - getppid "$SYS_CALLS" | per_call "$SYS_CALLS")
}

declare -A NS
log "probe_cost: $RUNS rounds x ${#CONFIGS[@]} configs; sim $SIM_CALLS, null $NULL_CALLS, sys $SYS_CALLS calls"
for ((r = 1; r <= RUNS; r++)); do
  n=${#CONFIGS[@]}
  for ((k = 0; k < n; k++)); do
    c=${CONFIGS[$(((k + r) % n))]}
    lost=-
    case $c in
      none) run_workloads ;;
      bt_*) TRACER_PREFIX=$A start_bpftrace "$c" "$(bt_prog "$c")"; run_workloads; stop_bpftrace ;;
      gw) TRACER_PREFIX=$A start_gpuwhy probe_gw --no-host-libs --lib "$SIM_CUDART" --lib "$NULL_CUDART"
          run_workloads; stop_gpuwhy; lost=$(lost_of_log "$GW_LOG") ;;
      gw_base) GPUWHY=$GPUWHY_BASE TRACER_PREFIX=$A start_gpuwhy probe_gw_base --no-host-libs \
                 --lib "$SIM_CUDART" --lib "$NULL_CUDART"
          run_workloads; stop_gpuwhy; lost=$(lost_of_log "$GW_LOG") ;;
      gw_sys) TRACER_PREFIX=$A start_gpuwhy probe_gw_sys --no-host-libs --with syscalls \
                  --lib "$SIM_CUDART" --lib "$NULL_CUDART"
          run_workloads; stop_gpuwhy; lost=$(lost_of_log "$GW_LOG") ;;
      gw_entry) TRACER_PREFIX=$A start_gpuwhy probe_gw_entry --no-host-libs --entry-only launch \
                  --lib "$SIM_CUDART" --lib "$NULL_CUDART"
          run_workloads; stop_gpuwhy; lost=$(lost_of_log "$GW_LOG") ;;
      gw_entry_stacks) TRACER_PREFIX=$A start_gpuwhy probe_gw_entry_stacks --no-host-libs \
                         --entry-only launch --stacks --lib "$SIM_CUDART" --lib "$NULL_CUDART"
          run_workloads; stop_gpuwhy; lost=$(lost_of_log "$GW_LOG") ;;
      gw_stacks) TRACER_PREFIX=$A start_gpuwhy probe_gw_stacks --no-host-libs --stacks \
                   --lib "$SIM_CUDART" --lib "$NULL_CUDART"
          run_workloads; stop_gpuwhy; lost=$(lost_of_log "$GW_LOG") ;;
    esac
    for w in "${WORKLOADS[@]}"; do echo -e "$r\t$c\t$w\t${NS[$w]}\t$lost" >>"$TSV"; done
    log "round $r $c: sim ${NS[sim]}, null ${NS[null]}, sys ${NS[sys]} ns/call; lost $lost"
  done
done
rm -f "$GW_BENCH_OUT"/probe_gw*.db* "$GW_BENCH_OUT"/bt-bt_emit.log

# ---- BPF program run time (diagnostic) -----------------------------------------------------------
# kernel.bpf_stats_enabled=1 makes the kernel time every program run (adding its own two clock
# reads: ~50 ns here, all that an empty program shows). For each tracer, the counters are read
# before and after one null-runtime loop of $NULL_CALLS calls: invocations of every program during
# the loop, ns per invocation, and ns per traced call.
STATS_MD=""
prog_snapshot() {  # "name run_cnt run_time_ns" of the programs whose name matches $1, sorted
  bpftool prog show | awk -v re="$1" '
    /^[0-9]+: / { name = ""; rt = cnt = 0
                  for (i = 1; i <= NF; i++) { if ($i == "name") name = $(i + 1)
                    if ($i == "run_time_ns") rt = $(i + 1); if ($i == "run_cnt") cnt = $(i + 1) }
                  if (name ~ re) print $1 name, cnt, rt }' | sort
}
prog_delta() {  # label regexp: runs the null loop, prints table rows
  local before after
  before=$(prog_snapshot "$2")
  $W "$CALL_LOOP" "$NULL_CUDART" cudaLaunchKernel "$NULL_CALLS" >/dev/null
  after=$(prog_snapshot "$2")
  join <(echo "$before") <(echo "$after") | awk -v label="$1" -v calls="$NULL_CALLS" '
    $4 > $2 { n = $4 - $2; t = $5 - $3; sub(/^[0-9]+:/, "", $1)
              printf "| %s | %s | %d | %.0f | %.0f |\n", label, $1, n, t / n, t / calls }'
}
if [ "$BPF_STATS" = 1 ] && command -v bpftool >/dev/null; then
  prev=$(sysctl -n kernel.bpf_stats_enabled)
  sysctl -qw kernel.bpf_stats_enabled=1
  TRACER_PREFIX=$A start_gpuwhy probe_gw_stats --no-host-libs --lib "$NULL_CUDART"
  STATS_MD+=$(prog_delta gw "^gw_")$'\n'
  stop_gpuwhy
  for c in bt_pair bt_work; do
    TRACER_PREFIX=$A start_bpftrace "$c" "$(bt_prog "$c" "$NULL_CUDART")"
    STATS_MD+=$(prog_delta "$c (entry, return)" "^cudaLaunch")$'\n'
    stop_bpftrace
  done
  sysctl -qw kernel.bpf_stats_enabled="$prev"
  rm -f "$GW_BENCH_OUT"/probe_gw_stats.db*
fi

# ---- summary ------------------------------------------------------------------------------------
col() {  # config workload -> values, one per line (round order)
  awk -F'\t' -v c="$1" -v w="$2" '$2 == c && $3 == w {print $1, $4}' "$TSV" | sort -n | cut -d' ' -f2
}
added() {  # config workload -> per-round (config - none)
  paste <(col "$1" "$2") <(col none "$2") | awk '{printf "%.1f\n", $1 - $2}'
}
{
  echo "### Probe cost per call"
  echo
  echo "$(machine_line). RUNS=$RUNS rounds, configurations interleaved; workloads on CPU $WORK_CPU," \
       "tracers on CPU $AGENT_CPU. sim = launch_storm --calls $SIM_CALLS; null = call_loop on the" \
       "null libcudart, $NULL_CALLS calls; sys = untraced getppid loop, $SYS_CALLS calls." \
       "Median [min..max] over rounds; added = per-round difference to that round's untraced run."
  for w in "${WORKLOADS[@]}"; do
    echo
    echo "| $w: config | ns/call | added ns/call | slowdown vs untraced |"
    echo "| --- | --- | --- | --- |"
    base=$(col none "$w" | median)
    for c in "${CONFIGS[@]}"; do
      read -r m lo hi _ < <(col "$c" "$w" | stats)
      if [ "$c" = none ]; then
        echo "| $c | $m [$lo..$hi] | - | - |"
      else
        read -r am alo ahi _ < <(added "$c" "$w" | stats)
        echo "| $c | $m [$lo..$hi] | $am [$alo..$ahi] | $(awk -v a="$am" -v b="$base" 'BEGIN {printf "%.0f%%", 100 * a / b}') |"
      fi
    done
    if [ "$w" != sys ]; then
      echo
      for g in "${GW_CONFIGS[@]}"; do
        for ref in bt_pair bt_work bt_emit; do
          read -r rm rlo rhi _ < <(paste <(added "$g" "$w") <(added "$ref" "$w") | awk '{printf "%.3f\n", $1 / $2}' | stats)
          echo "- $w: $g / $ref, added cost per round: median ${rm}x [$rlo..$rhi]"
        done
      done
      read -r rm rlo rhi _ < <(paste <(added gw_entry "$w") <(added bt_entry "$w") | awk '{printf "%.3f\n", $1 / $2}' | stats)
      echo "- $w: gw_entry / bt_entry (entry-only floor), added cost per round: median ${rm}x [$rlo..$rhi]"
      for pair in "gw_entry_stacks bt_entry" "gw_entry_stacks bt_stack" "gw_stacks bt_pair"; do
        read -r g ref <<<"$pair"
        read -r rm rlo rhi _ < <(paste <(added "$g" "$w") <(added "$ref" "$w") | awk '{printf "%.3f\n", $1 / $2}' | stats)
        echo "- $w: $g / $ref, added cost per round: median ${rm}x [$rlo..$rhi]"
      done
    fi
  done
  echo
  echo "gpuwhy events lost per run (every gw configuration): $(awk -F'\t' '$2 ~ /^gw/ && $3 == "sim" {printf "%s ", $5}' "$TSV")"
  if [ -n "$STATS_MD" ]; then
    echo
    echo "BPF programs during one null-runtime loop of $NULL_CALLS traced calls (kernel.bpf_stats_enabled;"
    echo "times include the stats' own clock reads, which is all an empty program shows):"
    echo
    echo "| tracer | program | invocations | ns per invocation | ns per traced call |"
    echo "| --- | --- | --- | --- | --- |"
    printf "%s" "$STATS_MD"
  fi
} | tee "$GW_BENCH_OUT/probe_cost.md"
