#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start-up: from launching `gpuwhy trace` to its probes being attached, as the agent reports it
# (-v: "probes attached in N ms", measured from the start of run()) and as a script sees it
# (the --ready-file appearing, measured here from fork to file, polling every 5 ms), plus the
# time from Ctrl-C to exit for the (empty) trace. Two configurations:
#   lib    --no-host-libs --lib <sim libcudart>: one library, 30 functions
#   host   default discovery: every GPU runtime installed on the host plus every process's
#          mapped libraries (what a user gets from `sudo gpuwhy trace`)
#
# usage: bench/startup.sh   (env: RUNS=5)
source "$(dirname "$0")/lib/common.sh"
need_root
need_file "$GPUWHY" "$SIM_CUDART"

TSV=$GW_BENCH_OUT/startup.tsv
echo -e "config\trun\tattached_ms\tready_ms\tstop_ms\tfunctions" >"$TSV"
now_ms() { date +%s%3N; }

one() {  # config args...
  local cfg=$1; shift
  local db=$GW_BENCH_OUT/startup.db ready=$GW_BENCH_OUT/startup.ready logf=$GW_BENCH_OUT/startup.log
  rm -f "$db"* "$ready"
  local t0 t1 t2 pid
  t0=$(now_ms)
  "$GPUWHY" -v trace -q -o "$db" --ready-file "$ready" "$@" >"$logf" 2>&1 &
  pid=$!
  while [ ! -s "$ready" ]; do
    kill -0 "$pid" 2>/dev/null || { cat "$logf" >&2; die "gpuwhy exited"; }
    sleep 0.005
  done
  t1=$(now_ms)
  kill -INT "$pid"
  wait "$pid" || true
  t2=$(now_ms)
  local att fns
  att=$(sed -n 's/.*probes attached in \([0-9]*\) ms.*/\1/p' "$logf" | head -1)
  fns=$(sed -n 's/.* \([0-9]*\) functions probed.*/\1/p' "$logf" | head -1)
  echo -e "$cfg\t$R\t$att\t$((t1 - t0))\t$((t2 - t1))\t$fns" >>"$TSV"
  log "startup $cfg run $R: attached $att ms, ready-file after $((t1 - t0)) ms, stop $((t2 - t1)) ms, $fns functions"
}

for ((R = 1; R <= RUNS; R++)); do
  one lib --no-host-libs --lib "$SIM_CUDART"
  one host
done
rm -f "$GW_BENCH_OUT"/startup.db*

{
  echo "### Start-up"
  echo
  echo "$(machine_line). RUNS=$RUNS."
  echo
  echo "| config | functions probed | probes attached (agent, ms) | --ready-file seen (ms) | Ctrl-C to exit (ms) |"
  echo "| --- | --- | --- | --- | --- |"
  for cfg in lib host; do
    f=$(awk -F'\t' -v c="$cfg" '$1 == c {print $6}' "$TSV" | median)
    cells=""
    for col in 3 4 5; do
      read -r m lo hi _ < <(awk -F'\t' -v c="$cfg" -v k="$col" '$1 == c {print $k}' "$TSV" | stats)
      cells+=" $m [$lo..$hi] |"
    done
    echo "| $cfg | $f |$cells"
  done
} | tee "$GW_BENCH_OUT/startup.md"
