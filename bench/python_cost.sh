#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cost of the Python frames at a GPU call: a Python loop of cudaLaunchKernel through ctypes on
# bench's null libcudart (returns at once), at Python stack depth $DEPTH, per configuration:
#   none        untraced
#   gw_nopy_all gpuwhy trace --no-python --launch-arg-sampling 1 (every launch a recorded call)
#   gw_py_all   gpuwhy trace --launch-arg-sampling 1             (every launch walks the frames)
#   gw_nopy     gpuwhy trace --no-python (default sampling: 63 launches in 64 batched)
#   gw_py       gpuwhy trace              (the same: sampled-out launches never walk frames)
# Rounds interleave the configurations; the script prints the median ns per call and the
# [min..max] over rounds (every round's value goes to $GW_BENCH_OUT/python_cost/python_cost.raw). gw_py_all - gw_nopy_all is the Python walk on a recorded call;
# gw_py - gw_nopy is what unsampled launches pay for it (expected: nothing).
# usage: bench/python_cost.sh  (env: RUNS=5 CALLS=200000 DEPTH=10 PYTHON=python3 WORK_CPU=1
#                                AGENT_CPU=0)
source "$(dirname "$0")/lib/common.sh"
need_root
need_file "$GPUWHY" "$NULL_CUDART"
CALLS=${CALLS:-200000}
DEPTH=${DEPTH:-10}
PYTHON=${PYTHON:-python3}
AGENT_CPU=${AGENT_CPU:-0}
WORK_CPU=${WORK_CPU:-1}
OUT=${GW_BENCH_OUT:-/tmp/gw-bench}/python_cost
mkdir -p "$OUT"
rm -f "$OUT/python_cost.raw"
CONFIGS=(none gw_nopy_all gw_py_all gw_nopy gw_py)

flags_of() {
  case $1 in
    gw_nopy_all) echo "--no-python --launch-arg-sampling 1" ;;
    gw_py_all) echo "--launch-arg-sampling 1" ;;
    gw_nopy) echo "--no-python" ;;
    gw_py) echo "" ;;
  esac
}

run_one() {  # config -> ns per call
  local cfg=$1 agent=""
  if [ "$cfg" != none ]; then
    rm -f "$OUT/ready" "$OUT/$cfg.db"
    # shellcheck disable=SC2046
    taskset -c "$AGENT_CPU" "$GPUWHY" trace -q --no-host-libs --lib "$NULL_CUDART" \
      $(flags_of "$cfg") -o "$OUT/$cfg.db" --ready-file "$OUT/ready" 2>"$OUT/$cfg.log" &
    agent=$!
    for _ in $(seq 200); do [ -e "$OUT/ready" ] && break; sleep 0.05; done
  fi
  taskset -c "$WORK_CPU" "$PYTHON" "$(dirname "$0")/python_calls.py" "$NULL_CUDART" "$CALLS" "$DEPTH"
  if [ -n "$agent" ]; then kill -INT "$agent"; wait "$agent" || true; fi
}

declare -A results
for r in $(seq "$RUNS"); do
  for i in "${!CONFIGS[@]}"; do
    cfg=${CONFIGS[$(( (i + r) % ${#CONFIGS[@]} ))]}
    v=$(run_one "$cfg")
    results[$cfg]+="$v "
    echo "$r $cfg $v" >>"$OUT/python_cost.raw"  # every round's value: runs can be pooled
  done
done
printf '| config | ns per call, median [min..max] over %s rounds (depth %s) |\n| --- | --- |\n' "$RUNS" "$DEPTH"
for cfg in "${CONFIGS[@]}"; do
  # shellcheck disable=SC2086
  printf '| %s | %s |\n' "$cfg" "$(printf '%s\n' ${results[$cfg]} | sort -g |
    awk '{v[NR]=$1} END {printf "%.0f [%.0f..%.0f]", v[int((NR+1)/2)], v[1], v[NR]}')"
done | tee "$OUT/python_cost.md"
