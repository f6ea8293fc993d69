#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python walk's cost inside the kernel: the run time per invocation of gpuwhy's API entry
# programs (kernel.bpf_stats_enabled, restored afterwards) while bench/python_calls.py calls
# cudaLaunchKernel of the null runtime at Python stack depth d, every launch recorded
# (--launch-arg-sampling 1), with Python frames and with --no-python. The end-to-end figure
# (python_cost.sh) moves with the machine's load; this one much less (it times only the program,
# which runs with preemption off), so it is the one to compare builds on a shared machine.
# With GPUWHY_BASE=/path/to/another/gpuwhy that build runs in the same rounds (before/after).
# usage: bench/python_prog_cost.sh  (env: RUNS=5 CALLS=100000 DEPTHS="1 10 30" PYTHON=python3
#                                     GPUWHY_BASE=)
source "$(dirname "$0")/lib/common.sh"
need_root
need_file "$GPUWHY" "$NULL_CUDART"
command -v bpftool >/dev/null || die "needs bpftool"
CALLS=${CALLS:-100000}
DEPTHS=${DEPTHS:-1 10 30}
PYTHON=${PYTHON:-python3}
OUT=$GW_BENCH_OUT/python_prog_cost
mkdir -p "$OUT"
RAW=$OUT/python_prog_cost.raw
rm -f "$RAW"
BUILDS=(gw)
[ -n "${GPUWHY_BASE:-}" ] && BUILDS+=(base)

entry_totals() {  # "runs ns" summed over the gw_api_entry* programs
  bpftool prog show | awk '
    /^[0-9]+: / { name = ""; rt = cnt = 0
                  for (i = 1; i <= NF; i++) { if ($i == "name") name = $(i + 1)
                    if ($i == "run_time_ns") rt = $(i + 1); if ($i == "run_cnt") cnt = $(i + 1) }
                  if (name ~ /^gw_api_entry/) { n += cnt; t += rt } }
    END { print n + 0, t + 0 }'
}

one() {  # build depth py|nopy -> ns per program run
  local bin=$GPUWHY flags=""
  [ "$1" = base ] && bin=$GPUWHY_BASE
  [ "$3" = nopy ] && flags=--no-python
  # shellcheck disable=SC2086
  GPUWHY=$bin start_gpuwhy pyprog --no-host-libs --lib "$NULL_CUDART" --launch-arg-sampling 1 $flags
  "$PYTHON" "$BENCH_DIR/python_calls.py" "$NULL_CUDART" "$CALLS" "$2" >/dev/null &
  local loop=$!
  sleep 0.3  # past the script's start-up sleep's first part: the counters cover the loop
  local before after
  before=$(entry_totals)
  wait "$loop"
  after=$(entry_totals)
  stop_gpuwhy
  echo "$before $after" | awk '{ n = $3 - $1; printf "%.0f\n", (n > 0 ? ($4 - $2) / n : 0) }'
}

prev=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$prev; cleanup_tracers' EXIT
for r in $(seq "$RUNS"); do
  for d in $DEPTHS; do
    for b in "${BUILDS[@]}"; do
      for m in py nopy; do echo "$r $b $d $m $(one "$b" "$d" "$m")" >>"$RAW"; done
    done
  done
done
printf '| build | depth | ns per entry run, Python frames | --no-python | Python walk |\n'
printf '| --- | --- | --- | --- | --- |\n'
for b in "${BUILDS[@]}"; do
  for d in $DEPTHS; do
    py=$(awk -v b="$b" -v d="$d" '$2 == b && $3 == d && $4 == "py" {print $5}' "$RAW" | median)
    no=$(awk -v b="$b" -v d="$d" '$2 == b && $3 == d && $4 == "nopy" {print $5}' "$RAW" | median)
    printf '| %s | %s | %s | %s | %s |\n' "$b" "$d" "$py" "$no" "$(echo "$py $no" | awk '{print $1 - $2}')"
  done
done | tee "$OUT/python_prog_cost.md"
