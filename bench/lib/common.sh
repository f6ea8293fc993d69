# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034
# Shared helpers of the bench scripts: paths, statistics, starting and stopping tracers.
# Sourced, not run. Every script honours:
#   GW_BUILD  build directory with gpuwhy, tests/sim, tests/workloads and bench/ built
#             (default: <repo>/build-bench; build with `cmake --build $GW_BUILD --target gw_bench`)
#   GW_BENCH_OUT  where traces, logs and result files go (default: /tmp/gw-bench)
#   RUNS      repetitions of every measurement (default 5)

set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
GW_BUILD=${GW_BUILD:-$REPO/build-bench}
GW_BENCH_OUT=${GW_BENCH_OUT:-/tmp/gw-bench}
RUNS=${RUNS:-5}
GPUWHY=${GPUWHY:-$GW_BUILD/gpuwhy}  # another binary (the static build on a GPU machine) with GPUWHY=
SIM_CUDART=$GW_BUILD/tests/sim/libcudart.so.13
LAUNCH_STORM=$GW_BUILD/tests/workloads/launch_storm
NULL_CUDART=$GW_BUILD/bench/nullrt/libcudart.so.13
CALL_LOOP=$GW_BUILD/bench/call_loop
CET_LIB=$GW_BUILD/bench/libgwbench_cet.so
GEN_TRACE=$GW_BUILD/bench/gen_trace
NOFSYNC=$GW_BUILD/bench/libgwbench_nofsync.so
mkdir -p "$GW_BENCH_OUT"

die() { echo "bench: $*" >&2; exit 1; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

need_root() { [ "$(id -u)" = 0 ] || die "needs root (uprobes)"; }
need_file() { for f; do [ -e "$f" ] || die "$f is missing: cmake --build $GW_BUILD --target gw_bench"; done; }

# jfield KEY < json-line: the value of a top-level numeric/string field of a one-line JSON object.
jfield() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" | head -1; }
# per_call N < a workload's JSON line: its elapsed_ns over N calls, in ns per call.
per_call() { jfield elapsed_ns | awk -v n="$1" '{printf "%.1f", $1 / n}'; }

# stats < numbers (one per line): "median min max n" (median of an even count: mean of the two
# middle values). Spread is reported as min..max.
stats() {
  sort -g | awk '{v[NR]=$1} END {
    if (NR == 0) { print "nan nan nan 0"; exit }
    m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
    printf "%.6g %.6g %.6g %d\n", m, v[1], v[NR], NR }'
}
median() { stats | awk '{print $1}'; }

# The machine, for the results header.
machine_line() {
  local cpu
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  echo "$(nproc) CPUs ($cpu), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
       "kernel $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)"
}

# ---- tracers -----------------------------------------------------------------------------------
# TRACER_PREFIX (e.g. "taskset -c 0"), when set, is put in front of the tracer's command line.
#
# start_bpftrace NAME PROGRAM: runs bpftrace in the background, waits until its probes are
# attached (its BEGIN probe runs after the others are attached). Sets BT_PID.
start_bpftrace() {
  local name=$1 prog=$2 logf=$GW_BENCH_OUT/bt-$1.log
  rm -f "$logf"  # not truncated by the redirection below: that happens in the child, maybe late
  ${TRACER_PREFIX:-} bpftrace -e "BEGIN { printf(\"gw-bench-ready\\n\"); } $prog" >"$logf" 2>&1 &
  BT_PID=$!
  wait_for_line "bpftrace ($name)" "$BT_PID" "$logf" gw-bench-ready
}

# wait_for_line WHAT PID LOG PATTERN: waits up to 30 s until LOG has a line matching PATTERN (the
# tracer PID has attached); dies, showing LOG, if PID exits first.
wait_for_line() {
  local what=$1 pid=$2 logf=$3 pattern=$4
  for _ in $(seq 1 600); do
    grep -q "$pattern" "$logf" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$logf" >&2; die "$what exited"; }
    sleep 0.05
  done
  die "$what did not attach in 30 s"
}
# bpftrace 0.17 now and then misses a SIGINT that arrives soon after it started: repeat it.
stop_bpftrace() {
  local i state
  for i in $(seq 1 100); do
    state=$(awk '{print $3}' "/proc/$BT_PID/stat" 2>/dev/null || echo gone)
    [ "$state" = Z ] || [ "$state" = gone ] && break
    if [ $((i % 20)) = 1 ]; then kill -INT "$BT_PID" 2>/dev/null || true; fi
    sleep 0.1
  done
  kill -0 "$BT_PID" 2>/dev/null && [ "$state" != Z ] && kill -KILL "$BT_PID" 2>/dev/null
  wait "$BT_PID" 2>/dev/null || true
}

# start_gpuwhy NAME ARGS...: `gpuwhy trace ARGS -o $GW_BENCH_OUT/NAME.db --ready-file ...` in the
# background; returns when the probes are attached. Sets GW_PID, GW_DB, GW_LOG.
start_gpuwhy() {
  local name=$1; shift
  GW_DB=$GW_BENCH_OUT/$name.db
  GW_LOG=$GW_BENCH_OUT/$name.log
  local ready=$GW_BENCH_OUT/$name.ready
  rm -f "$GW_DB" "$GW_DB".old* "$GW_DB"-* "$ready"
  ${TRACER_PREFIX:-} "$GPUWHY" -v trace -q -o "$GW_DB" --ready-file "$ready" "$@" >"$GW_LOG" 2>&1 &
  GW_PID=$!
  for _ in $(seq 1 600); do
    [ -s "$ready" ] && return 0
    kill -0 "$GW_PID" 2>/dev/null || { cat "$GW_LOG" >&2; die "gpuwhy ($name) exited"; }
    sleep 0.05
  done
  die "gpuwhy ($name) did not attach in 30 s"
}
lost_of_log() {  # the agent's summary line: "0 events lost" or "LOST N events (...)"
  if grep -q "0 events lost" "$1"; then echo 0
  else sed -n 's/.*LOST \([0-9,]*\) events.*/\1/p' "$1" | tr -d , | head -1; fi
}
stop_gpuwhy() {
  kill -INT "$GW_PID" 2>/dev/null || true
  wait "$GW_PID" 2>/dev/null || true
}

# A script that stops half way (set -e) must not leave a tracer attached: stop the ones it
# started (only those: by the pids it recorded).
cleanup_tracers() {
  for p in "${GW_PID:-}" "${BT_PID:-}"; do
    if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill -INT "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; fi
  done
}
trap cleanup_tracers EXIT

# Agent CPU time (utime + stime, all threads) in clock ticks, and peak RSS in KiB.
proc_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
proc_hwm_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
CLK_TCK=$(getconf CLK_TCK)
