#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Probe placement: the cost of a uprobe on `endbr64` (single-stepped out of line) against the same
# function probed 4 bytes in, on `push %rbp` (emulated), which is where gpuwhy places it
# (src/discover/probe_sites.cpp; recorded per API in lib_probes.skipped_bytes). bpftrace does the
# probing with an empty entry program, so the difference is the kernel's, not a tracer's.
#
#   none        no probe
#   at_entry    uprobe:LIB:gwb_cet              (on endbr64)
#   past_endbr  uprobe:LIB:gwb_cet_past_endbr   (gwb_cet + 4, on push %rbp)
#   plain       uprobe:LIB:gwb_plain            (a function that starts with push %rbp: control)
#
# usage: bench/placement.sh   (env: RUNS=5 CALLS=1000000 STEP_CALLS=100000 AGENT_CPU=0 WORK_CPU=1)
source "$(dirname "$0")/lib/common.sh"
need_root
need_file "$CET_LIB" "$CALL_LOOP"

CALLS=${CALLS:-1000000}
STEP_CALLS=${STEP_CALLS:-100000}  # single-stepping is ~15x dearer: fewer calls, same wall time
AGENT_CPU=${AGENT_CPU:-0}
WORK_CPU=${WORK_CPU:-1}
W="taskset -c $WORK_CPU"
TSV=$GW_BENCH_OUT/placement.tsv
echo -e "round\tconfig\tns_per_call" >"$TSV"

# The premise: gwb_cet starts with endbr64, and 4 bytes in there is push %rbp.
dis=$(objdump -d --no-show-raw-insn "$CET_LIB" | awk '/<gwb_cet>:/ {f = 1; next} f && /^ +[0-9a-f]+:/ {print; if (++n == 2) exit}')
echo "$dis" | head -1 | grep -q endbr64 || die "gwb_cet does not start with endbr64: $dis"
echo "$dis" | tail -1 | grep -q "push.*%rbp" || die "gwb_cet+4 is not push %rbp: $dis"
off_cet=$(nm -D "$CET_LIB" | awk '$3 == "gwb_cet" {print $1}')
off_past=$(nm -D "$CET_LIB" | awk '$3 == "gwb_cet_past_endbr" {print $1}')
[ $((16#$off_past - 16#$off_cet)) = 4 ] || die "gwb_cet_past_endbr is not gwb_cet + 4"

CONFIGS=(none at_entry past_endbr plain)
loop() { $W "$CALL_LOOP" "$CET_LIB" "$1" "$2" | jfield ns_per_call; }
for ((r = 1; r <= RUNS; r++)); do
  for ((k = 0; k < ${#CONFIGS[@]}; k++)); do
    c=${CONFIGS[$(((k + r) % ${#CONFIGS[@]}))]}
    case $c in
      none) v=$(loop gwb_cet "$CALLS") ;;
      at_entry) TRACER_PREFIX="taskset -c $AGENT_CPU" start_bpftrace "$c" "uprobe:$CET_LIB:gwb_cet {}"
                v=$(loop gwb_cet "$STEP_CALLS"); stop_bpftrace ;;
      past_endbr) TRACER_PREFIX="taskset -c $AGENT_CPU" start_bpftrace "$c" "uprobe:$CET_LIB:gwb_cet_past_endbr {}"
                  v=$(loop gwb_cet "$CALLS"); stop_bpftrace ;;
      plain) TRACER_PREFIX="taskset -c $AGENT_CPU" start_bpftrace "$c" "uprobe:$CET_LIB:gwb_plain {}"
             v=$(loop gwb_plain "$CALLS"); stop_bpftrace ;;
    esac
    echo -e "$r\t$c\t$v" >>"$TSV"
    log "round $r $c: $v ns/call"
  done
done

col() { awk -F'\t' -v c="$1" '$2 == c {print $1, $3}' "$TSV" | sort -n | cut -d' ' -f2; }
{
  echo "### Probe placement (endbr64)"
  echo
  echo "$(machine_line). RUNS=$RUNS rounds interleaved; empty bpftrace uprobe; loop on CPU $WORK_CPU;" \
       "$CALLS calls ($STEP_CALLS when single-stepping). gwb_cet: $(echo "$dis" | awk '{$1 = ""; print}' | paste -sd';')."
  echo
  echo "| probe at | ns/call median [min..max] | added ns/call |"
  echo "| --- | --- | --- |"
  for c in "${CONFIGS[@]}"; do
    read -r m lo hi _ < <(col "$c" | stats)
    a=$(paste <(col "$c") <(col none) | awk '{printf "%.1f\n", $1 - $2}' | median)
    echo "| $c | $m [$lo..$hi] | $([ "$c" = none ] && echo - || echo "$a") |"
  done
  ratio=$(paste <(col at_entry) <(col past_endbr) <(col none) | awk '{printf "%.2f\n", ($1 - $3) / ($2 - $3)}' | stats)
  echo
  echo "Probing endbr64 costs ${ratio%% *}x the probe past it (per-round ratio of added cost, [$(echo "$ratio" | awk '{print $2".."$3}')])."
} | tee "$GW_BENCH_OUT/placement.md"
