#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a CPU sample's native user stack costs (trace's default since issue 31) against a sample
# without one (--no-sample-stacks): the perf_event program's own time per run, from the kernel's
# BPF statistics (kernel.bpf_stats_enabled), while a native straggler-host job (4 NCCL ranks on
# the simulated runtime, each decoding its shard on the CPU) keeps the CPUs busy. Also the stack
# map's fill: distinct stacks stored (stack_frames' stacks) and stacks refused (stack_fail).
# The modes alternate round by round.
#
# usage: bench/sample_stacks.sh   (env: RUNS=5 HZ=997)
source "$(dirname "$0")/lib/common.sh"
need_root
SIM_TRAIN=$GW_BUILD/tests/workloads/sim_train
need_file "$GPUWHY" "$SIM_TRAIN"
HZ=${HZ:-997}
TSV=$GW_BENCH_OUT/sample_stacks.tsv
echo -e "round\tmode\tsamples\tns_per_sample\tstacks\tstack_fail" >"$TSV"
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats' EXIT
sysctl -qw kernel.bpf_stats_enabled=1

# The sampling program's run count and time so far (bpftool's JSON of the loaded programs).
prog_stats() {
  bpftool prog show --json | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("name", "").startswith("gw_cpu_sample"):
        print(p.get("run_cnt", 0), p.get("run_time_ns", 0)); break
else:
    print(0, 0)'
}

for ((r = 1; r <= RUNS; r++)); do
  modes=(default no-stacks)
  ((r % 2 == 0)) && modes=(no-stacks default)
  for m in "${modes[@]}"; do
    flags=(--sample-hz "$HZ")
    [ "$m" = no-stacks ] && flags+=(--no-sample-stacks)
    db=$GW_BENCH_OUT/sample-stacks-$m.db
    rm -f "$db" "$db"-*
    "$GPUWHY" trace -q -o "$db" "${flags[@]}" -- "$SIM_TRAIN" --scenario straggler-host \
      --ranks 4 --steps 40 >"$GW_BENCH_OUT/sample-stacks-$m.log" 2>&1 &
    tracer=$!
    # Read the program's statistics while it is still loaded: near the job's end.
    last="0 0"
    while kill -0 "$tracer" 2>/dev/null; do
      s=$(prog_stats)
      [ "${s%% *}" -gt 0 ] && last=$s
      sleep 0.2
    done
    wait "$tracer" || die "trace ($m) failed: $(tail -3 "$GW_BENCH_OUT/sample-stacks-$m.log")"
    read -r cnt ns <<<"$last"
    per=$(awk -v n="$cnt" -v t="$ns" 'BEGIN { printf "%.0f", n ? t / n : 0 }')
    q() { "$GPUWHY" query --db "$db" --format csv "$1" 2>/dev/null | tail -n +2 || echo "?"; }
    stacks=$(q "SELECT COUNT(DISTINCT stack_id) FROM cpu_samples WHERE stack_id IS NOT NULL")
    fail=$(q "SELECT COALESCE(SUM(count), 0) FROM event_counts WHERE source = 'stack_fail'")
    echo -e "$r\t$m\t$cnt\t$per\t$stacks\t$fail" >>"$TSV"
    log "round $r $m: $cnt samples, $per ns each, $stacks stacks, $fail refused"
  done
done
echo "# $(machine_line), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for m in default no-stacks; do
  echo "$m: ns per sample (median min max n) $(awk -F'\t' -v m="$m" '$2 == m {print $4}' "$TSV" | stats)"
done
