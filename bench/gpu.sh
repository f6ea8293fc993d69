#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a machine with an NVIDIA GPU and PyTorch: what tracing costs a real training step and a
# launch-bound loop (bench/gpu/torch_workload.py), untraced and under gpuwhy, measured in the same
# run: configurations interleaved in rounds, order rotated each round, the slowdown taken per
# round against that round's untraced run, median [min..max] over rounds.
#
# Configurations:
#   none      untraced
#   gw        gpuwhy trace (default: host discovery, so PyTorch's own libcudart/libcuda/libnccl
#             are found when the workload loads them; entry+return probes, launch batches)
#   gw_full   the same with --full (every launch timed; the default times 1 in 64 of a thread
#             above 10,000 launches/s and records the others at entry only: issue 33)
#   gw_entry  the same with --entry-only launch
#   gw_stacks the same with --stacks
#   gw_base   default `trace` of another build (GPUWHY_BASE=/path/to/gpuwhy): a change measured
#             against the build before it, in the same rounds
# After each traced run the trace is checked: the workload's launches must be in api_calls (a
# tracer that missed its probes would look free) and the agent must report 0 events lost.
#
# Needs only the gpuwhy binary (the static build is enough: GPUWHY=/path/to/gpuwhy) and a python3
# that imports torch with CUDA. Run on an H200 on 2026-11-28 (docs/performance.md §10), through
# bench/gpu/device_check.sh.
#
# usage: bench/gpu.sh   (env: RUNS=7 STEPS=40 LAUNCHES=50000 PYTHON=python3 GPUWHY=... CONFIGS=...
#                       WORKLOADS="train launch" GPUWHY_BASE=...)
source "$(dirname "$0")/lib/common.sh"
need_root
PYTHON=${PYTHON:-python3}
STEPS=${STEPS:-40}
LAUNCHES=${LAUNCHES:-50000}
RUNS=${RUNS:-7}
WORKLOAD=$BENCH_DIR/gpu/torch_workload.py
need_file "$GPUWHY" "$WORKLOAD"
"$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
  die "$PYTHON cannot use a CUDA device through torch"

# CONFIGS="none gw" (env) measures a subset when device time is short.
read -r -a CONFIGS <<<"${CONFIGS:-none gw gw_full gw_entry gw_stacks}"
read -r -a WORKLOADS <<<"${WORKLOADS:-train launch}"
for c in "${CONFIGS[@]}"; do
  [ "$c" != gw_base ] || need_file "${GPUWHY_BASE:-}"
done
TSV=$GW_BENCH_OUT/gpu.tsv
echo -e "round\tconfig\tworkload\tvalue\tlost\tcalls" >"$TSV"

# run_workload MODE: the workload's figure (ms per step, or us per launch).
run_workload() {
  local out
  if [ "$1" = train ]; then
    out=$("$PYTHON" "$WORKLOAD" train --steps "$STEPS") || die "train workload failed"
    echo "$out" | jfield step_ms_median
  else
    out=$("$PYTHON" "$WORKLOAD" launch --launches "$LAUNCHES") || die "launch workload failed"
    echo "$out" | jfield us_per_launch
  fi
}

gw_flags() {
  case $1 in
    gw) echo "" ;;
    gw_full) echo "--full" ;;
    gw_entry) echo "--entry-only launch" ;;
    gw_stacks) echo "--stacks" ;;
    *) echo "" ;;
  esac
}

log "gpu: $RUNS rounds x ${#CONFIGS[@]} configs; train $STEPS steps, launch $LAUNCHES launches"
for ((r = 1; r <= RUNS; r++)); do
  n=${#CONFIGS[@]}
  for ((k = 0; k < n; k++)); do
    c=${CONFIGS[$(((k + r) % n))]}
    for w in "${WORKLOADS[@]}"; do
      lost=- calls=-
      if [ "$c" = none ]; then
        v=$(run_workload "$w")
      else
        bin=$GPUWHY
        [ "$c" != gw_base ] || bin=$GPUWHY_BASE
        # shellcheck disable=SC2046
        GPUWHY=$bin start_gpuwhy "gpu_$c" $(gw_flags "$c")
        v=$(run_workload "$w")
        stop_gpuwhy
        lost=$(lost_of_log "$GW_LOG")
        calls=$("$GPUWHY" query --db "$GW_DB" --format csv \
                  "SELECT count(*) FROM api_calls WHERE category = 'launch'" 2>/dev/null |
                  tail -1)
      fi
      log "round $r $c $w: $v (lost $lost, launches recorded $calls)"
      echo -e "$r\t$c\t$w\t$v\t$lost\t$calls" >>"$TSV"
    done
  done
done

{
  echo "### GPU workloads, untraced and traced"
  echo
  echo "$(machine_line); $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)."
  echo "RUNS=$RUNS rounds, configurations interleaved. train: median step (ms) of $STEPS steps;"
  echo "launch: host µs per launch over $LAUNCHES launches. Slowdown per round against that round's"
  echo "untraced run, median [min..max] over rounds."
  echo
  echo "| workload | config | value | slowdown | events lost | launches recorded |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for w in "${WORKLOADS[@]}"; do
    for c in "${CONFIGS[@]}"; do
      v=$(awk -F'\t' -v c="$c" -v w="$w" '$2 == c && $3 == w {print $4}' "$TSV" | stats)
      s=$(awk -F'\t' -v c="$c" -v w="$w" '
            $3 == w && $2 == "none" {base[$1] = $4}
            $3 == w && $2 == c {val[$1] = $4}
            END {for (r in val) if (base[r] > 0) printf "%.4f\n", (val[r] / base[r] - 1) * 100}' \
            "$TSV" | stats)
      lost=$(awk -F'\t' -v c="$c" -v w="$w" '$2 == c && $3 == w {printf "%s ", $5}' "$TSV")
      calls=$(awk -F'\t' -v c="$c" -v w="$w" '$2 == c && $3 == w {print $6}' "$TSV" | stats)
      read -r vm vmin vmax _ <<<"$v"
      read -r sm smin smax _ <<<"$s"
      if [ "$c" = none ]; then
        echo "| $w | $c | $vm [$vmin..$vmax] | - | - | - |"
      else
        echo "| $w | $c | $vm [$vmin..$vmax] | ${sm}% [${smin}..${smax}] | $lost | $(echo "$calls" | awk '{print $1}') |"
      fi
    done
  done
} | tee "$GW_BENCH_OUT/gpu.md"
