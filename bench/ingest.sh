#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ingest: the highest launch rate `gpuwhy trace` records with ZERO loss, then a long run at that
# rate; agent CPU per event and peak RSS; and the finished file's storage cost (bytes per event
# including indexes, per table from SQLite's dbstat).
#
# The workload is launch_storm on the simulated libcudart, pinned with its GPU thread to CPU
# $WORK_CPU; the agent is pinned to CPU $AGENT_CPU (2 cores: the workload takes one). Its rate is
# set with --launch-ns (host CPU burnt per launch), walking down LADDER until a TRIAL_S-second run
# loses nothing; then LONG_S seconds at that rate (one step lower if the long run loses). Each
# launch also yields off-CPU events (the launching thread yields to the simulated GPU thread), so
# events/s is higher than launches/s.
#
# Agent CPU: utime+stime of the agent (/proc/PID/stat) from "probes attached" until every launch
# of the run is in the trace file (polled with max(rowid)), divided by the events recorded;
# the final index build and checkpoint after Ctrl-C are reported separately as stop time. Peak
# RSS: VmHWM at that same moment.
#
# DB_DIR (default $GW_BENCH_OUT, on disk) is where the trace goes. With TMPFS_TOO=1 (default) the
# top rung is also run three more ways: "disk_busy" (BUSY_S seconds), with a dd loop writing
# 512 MiB + fdatasync to the same file system meanwhile (a training job's checkpoint); the same
# with the agent's fsync/fdatasync made no-ops (bench/nofsync, LD_PRELOAD); and with the trace on
# /dev/shm (no disk at all, TRIAL_S seconds).
# While the workload runs, the agent's threads are sampled every 0.25 s (/proc/PID/task/*/stat
# and wchan): the share of samples with the writer in D state (waiting for the disk) and with the
# reader waiting on a futex (the batch queue to the writer is full).
#
# Last, "null_loop": call_loop on bench's null libcudart for TRIAL_S seconds, the highest call rate
# one core can make under tracing (launch_storm is bounded by the simulator's own work).
#
# usage: bench/ingest.sh   (env: TRIAL_S=10 LONG_S=60 LADDER="0 2000 4000 8000 16000"
#                            BUSY_S=20 AGENT_CPU=0 WORK_CPU=1 DB_DIR=... TMPFS_TOO=1)
source "$(dirname "$0")/lib/common.sh"
need_root
need_file "$GPUWHY" "$SIM_CUDART" "$LAUNCH_STORM" "$NOFSYNC" "$NULL_CUDART" "$CALL_LOOP"

TRIAL_S=${TRIAL_S:-10}
LONG_S=${LONG_S:-60}
BUSY_S=${BUSY_S:-20}
read -ra LADDER <<<"${LADDER:-0 2000 4000 8000 16000}"
AGENT_CPU=${AGENT_CPU:-0}
WORK_CPU=${WORK_CPU:-1}
DB_DIR=${DB_DIR:-$GW_BENCH_OUT}
TMPFS_TOO=${TMPFS_TOO:-1}
TSV=$GW_BENCH_OUT/ingest.tsv
echo -e "phase\tdb_dir\tlaunch_ns\tseconds\tcalibrated_per_s\tlaunches_per_s\tevents\tevents_per_s\tlost\tcpu_ns_per_event\thwm_mib\tstop_s\tfile_bytes\tbytes_per_event\twriter_disk_wait_pct\treader_queue_wait_pct\tagent_cpu_pct" >"$TSV"

# sample_threads PID FILE: every 0.25 s, one line per sample: NAME=STATE:WCHAN of each thread of
# PID (the agent names them gpuwhy-reader, gpuwhy-writer, gpuwhy-ckpt; D = uninterruptible, i.e.
# waiting for the disk; futex_* = waiting on a lock/queue).
sample_threads() {
  while kill -0 "$1" 2>/dev/null; do
    for t in $(ls /proc/"$1"/task | sort -n); do
      printf "%s=%s:%s " "$(cat /proc/"$1"/task/"$t"/comm 2>/dev/null)" \
        "$(awk '{print $3}' /proc/"$1"/task/"$t"/stat 2>/dev/null)" \
        "$(cat /proc/"$1"/task/"$t"/wchan 2>/dev/null)"
    done
    echo
    sleep 0.25
  done >"$2"
}

storm() {  # launch_ns calls -> JSON line; WORKLOAD=null: the null-runtime loop instead
  if [ "${WORKLOAD:-sim}" = null ]; then
    taskset -c "$WORK_CPU" "$CALL_LOOP" "$NULL_CUDART" cudaLaunchKernel "$2" |
      sed 's/"ns_per_call":\([0-9.]*\)/&,"calls_per_s":CPS/' |
      awk '{ match($0, /"ns_per_call":[0-9.]+/); v = substr($0, RSTART + 14, RLENGTH - 14)
             sub(/CPS/, sprintf("%.0f", 1e9 / v)); print }'
  else
    taskset -c "$WORK_CPU" "$LAUNCH_STORM" --launch-ns "$1" --calls "$2"
  fi
}

# run_at PHASE LAUNCH_NS SECONDS DIR: one traced run; appends a row to $TSV; sets LOST.
run_at() {
  local phase=$1 lns=$2 secs=$3 dir=$4
  mkdir -p "$dir"
  local noise=""
  if [ "${NOISE:-0}" = 1 ]; then  # another process writing to the same disk, syncing every 512 MiB
    (while true; do dd if=/dev/zero of="$dir/noise" bs=1M count=512 conv=fdatasync status=none; done) &
    noise=$!
  fi
  GW_BENCH_OUT=$dir TRACER_PREFIX="${AGENT_WRAP:-} taskset -c $AGENT_CPU" start_gpuwhy "ingest-$phase" --no-host-libs --lib "$SIM_CUDART" \
    --lib "$NULL_CUDART"
  local cpu0 rate calls cps have stop0 stop_s hwm cpu1 events
  cpu0=$(proc_cpu_ticks "$GW_PID")
  # Calibrate the rate under tracing, then run ~1-second chunks (one process each) until $secs
  # seconds have passed.
  rate=$(storm "$lns" 20000 | jfield calls_per_s)
  local chunk total=0 total_ns=0 deadline ns procs=1 t0w t1w
  [ "${WORKLOAD:-sim}" = null ] && procs=0
  t0w=$(date +%s%N)
  chunk=$(awk -v r="$rate" 'BEGIN {printf "%d", r}')
  deadline=$(($(date +%s%N) + secs * 1000000000))
  sample_threads "$GW_PID" "$dir/ingest-$phase.wchan" &
  local sampler=$!
  while [ "$(date +%s%N)" -lt "$deadline" ]; do
    ns=$(storm "$lns" "$chunk" | jfield elapsed_ns)
    total=$((total + chunk))
    total_ns=$((total_ns + ns))
    [ "${WORKLOAD:-sim}" = null ] || procs=$((procs + 1))
  done
  calls=$total
  cps=$(awk -v c="$total" -v n="$total_ns" 'BEGIN {printf "%.0f", c * 1e9 / n}')
  # Wait until every call is in the file (the writer may still be catching up): each process
  # made its launches and one cudaStreamSynchronize. Rows reach the file in chunks (a thread's
  # partial chunk within a second); summing the chunk headers is cheap.
  local want=$((calls + 20000 + procs))
  local prev=-1 same=0
  while [ "$same" -lt 30 ]; do  # gives up after 3 s without progress (events were lost)
    have=$(sqlite3 "$GW_DB" "SELECT coalesce(sum(rows), 0) FROM api_calls_chunks" 2>/dev/null || echo 0)
    [ "${have:-0}" -ge "$want" ] && break
    if [ "$have" = "$prev" ]; then same=$((same + 1)); else same=0; prev=$have; fi
    sleep 0.1
  done
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
  if [ -n "$noise" ]; then kill "$noise" 2>/dev/null; wait "$noise" 2>/dev/null || true; rm -f "$dir/noise"; fi
  # The writer in D (disk), the reader on a futex (the batch queue to the writer is full).
  local wd rq
  wd=$(awk '{n++; for (i = 1; i <= NF; i++) if ($i ~ /^gpuwhy-writer=D/) d++} END {printf "%.0f", n ? 100 * d / n : 0}' "$dir/ingest-$phase.wchan")
  rq=$(awk '{n++; for (i = 1; i <= NF; i++) if ($i ~ /^gpuwhy-reader=.*futex/) q++} END {printf "%.0f", n ? 100 * q / n : 0}' "$dir/ingest-$phase.wchan")
  rm -f "$dir/ingest-$phase.wchan"
  cpu1=$(proc_cpu_ticks "$GW_PID")
  t1w=$(date +%s%N)
  hwm=$(proc_hwm_kb "$GW_PID")
  stop0=$(date +%s.%N)
  stop_gpuwhy
  stop_s=$(awk -v a="$stop0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
  events=$(sed -n 's/.*traced [0-9.]* s: \([0-9,]*\) events.*/\1/p' "$GW_LOG" | tr -d ,)
  if grep -q "0 events lost" "$GW_LOG"; then LOST=0
  else LOST=$(sed -n 's/.*LOST \([0-9,]*\) events.*/\1/p' "$GW_LOG" | tr -d ,); LOST=${LOST:-unknown}; fi
  [ "${have:-0}" -ge "$want" ] || [ "$LOST" != 0 ] || LOST="missing $((want - have))"
  local elapsed_s eps cpe bytes bpe
  elapsed_s=$(awk -v n="$total_ns" 'BEGIN {printf "%.1f", n / 1e9}')
  eps=$(awk -v e="$events" -v c="$calls" -v r="$cps" 'BEGIN {printf "%.0f", e * r / (c + 20000)}')
  cpe=$(awk -v t="$((cpu1 - cpu0))" -v hz="$CLK_TCK" -v e="$events" 'BEGIN {printf "%.0f", t * 1e9 / hz / e}')
  local pct
  pct=$(awk -v t="$((cpu1 - cpu0))" -v hz="$CLK_TCK" -v w="$((t1w - t0w))" 'BEGIN {printf "%.0f", 100 * t / hz / (w / 1e9)}')
  bytes=$(stat -c %s "$GW_DB")
  bpe=$(awk -v b="$bytes" -v e="$events" 'BEGIN {printf "%.1f", b / e}')
  echo -e "$phase\t$dir\t$lns\t$elapsed_s\t$rate\t$cps\t$events\t$eps\t$LOST\t$cpe\t$(awk -v k="$hwm" 'BEGIN {printf "%.1f", k / 1024}')\t$stop_s\t$bytes\t$bpe\t$wd\t$rq\t$pct" >>"$TSV"
  log "$phase launch-ns $lns: ${elapsed_s}s, $cps launches/s, $eps events/s, lost $LOST, ${cpe} ns CPU/event (${pct}% of a CPU), stop ${stop_s}s, writer in D ${wd}%, reader waiting on the queue ${rq}%"
}

log "ingest: trials of ${TRIAL_S}s down the launch-ns ladder ${LADDER[*]}; then ${LONG_S}s"
best=""
for i in "${!LADDER[@]}"; do
  run_at "trial" "${LADDER[$i]}" "$TRIAL_S" "$DB_DIR"
  rm -f "$DB_DIR"/ingest-trial.db*
  if [ "$LOST" = 0 ]; then best=$i; break; fi
done
[ -n "$best" ] || die "no rate in the ladder was recorded without loss"
run_at "long" "${LADDER[$best]}" "$LONG_S" "$DB_DIR"
if [ "$LOST" != 0 ] && [ $((best + 1)) -lt ${#LADDER[@]} ]; then
  best=$((best + 1))
  rm -f "$DB_DIR"/ingest-long.db*
  run_at "long" "${LADDER[$best]}" "$LONG_S" "$DB_DIR"
fi
LONG_DB=$DB_DIR/ingest-long.db
DBSTAT=$(sqlite3 "$LONG_DB" "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 6" 2>/dev/null || true)
ROWS=$(sqlite3 "$LONG_DB" "SELECT (SELECT sum(rows) FROM api_calls_chunks), (SELECT sum(rows) FROM offcpu_chunks)")
rm -f "$LONG_DB"*
if [ "$TMPFS_TOO" = 1 ]; then
  # The top rung again: with another process writing to the same disk (as a training job writing
  # a checkpoint does), then the same with the agent's fsyncs made no-ops (LD_PRELOAD shim), then
  # with the trace on tmpfs. Differences between these are the disk's doing.
  NOISE=1 run_at "disk_busy" "${LADDER[0]}" "$BUSY_S" "$DB_DIR"
  rm -f "$DB_DIR"/ingest-disk_busy.db*
  NOISE=1 AGENT_WRAP="env LD_PRELOAD=$NOFSYNC" run_at "disk_busy_nofsync" "${LADDER[0]}" "$BUSY_S" "$DB_DIR"
  rm -f "$DB_DIR"/ingest-disk_busy_nofsync.db*
  run_at "tmpfs" "${LADDER[0]}" "$TRIAL_S" /dev/shm/gw-bench
  rm -rf /dev/shm/gw-bench
fi
# The fastest producer this machine has: the null-runtime loop (~2 us per traced call, no off-CPU
# events), to see the agent at a higher event rate than launch_storm can make on one core.
WORKLOAD=null run_at "null_loop" - "$TRIAL_S" "$DB_DIR"
rm -f "$DB_DIR"/ingest-null_loop.db*

{
  echo "### Ingest"
  echo
  echo "$(machine_line). Agent on CPU $AGENT_CPU, launch_storm (and its simulated GPU thread) on CPU" \
       "$WORK_CPU. Trace on $DB_DIR ($(df --output=source,fstype "$DB_DIR" | tail -1 | tr -s ' '))."
  echo
  echo "| run | launch-ns | seconds | calls/s (first 20k calls) | calls/s | events | events/s | lost | agent CPU ns/event | agent CPU | VmHWM MiB | stop s | bytes/event | writer waiting on disk | reader waiting on writer |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  tail -n +2 "$TSV" | awk -F'\t' '{printf "| %s | %s | %s | %.0f | %.0f | %s | %s | %s | %s | %s%% | %s | %s | %s | %s%% | %s%% |\n", $1, $3, $4, $5, $6, $7, $8, $9, $10, $17, $11, $12, $14, $15, $16}'
  echo
  echo "Long run: api_calls, offcpu rows = $(echo "$ROWS" | tr '|' ' '); pages per table/index (dbstat, bytes):"
  echo
  echo "$DBSTAT" | awk -F'|' -v r="$ROWS" 'BEGIN {split(r, n, "|")} NF == 2 {
    rows = ($1 ~ /^api_calls/) ? n[1] : (($1 ~ /^offcpu/) ? n[2] : 0)
    printf "- %s: %d bytes%s\n", $1, $2, rows ? sprintf(" (%.1f per row)", $2 / rows) : "" }'
} | tee "$GW_BENCH_OUT/ingest.md"
