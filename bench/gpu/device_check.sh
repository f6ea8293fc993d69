#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The checks a session with a GPU machine runs first, as root there, from the repository root,
# with GPUWHY= the static binary (default .devrun/gpuwhy: strip build/gpuwhy into an ignored
# .devrun/ and carry it): the host check; real PyTorch training, a data-loader stall and a
# launch-bound loop traced from their first instruction and explained; one NCCL rank; then
# bench/gpu.sh (RUNS, CONFIGS, BENCH_S from the environment). Every step is time-boxed and
# independent; everything goes to $OUT/log.txt, the traces to $OUT/traces.tgz. First run
# 2026-11-28 on an H200: 3 minutes (investigations/pytorch-h200, docs/performance.md §10).
# ONLY_BENCH=1 skips the traced PyTorch, loader and NCCL steps (the host check and the overhead
# bench still run): for a second visit whose probes have not changed since the first.
set -u
R=$PWD; GW=${GPUWHY:-$R/.devrun/gpuwhy}; O=${OUT:-/tmp/out}; mkdir -p "$O"; T=/tmp/gwdev; mkdir -p $T
exec > >(tee "$O/log.txt") 2>&1
step() { echo; echo "=== $(date +%T) $*"; }
q() { "$GW" query --db "$1" "$2" 2>&1 | head -${3:-25}; }
step env
uname -a; id -u; nproc; grep MemTotal /proc/meminfo
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
ls -la /sys/kernel/btf/vmlinux; mount | grep -E 'tracefs|debugfs|bpf' ; ls /sys/kernel/tracing 2>&1 | head -3
command -v python3; python3 -c 'import sys,torch; print(sys.version.split()[0], sys.executable, torch.__version__, torch.version.cuda, torch.cuda.is_available())'
readlink -f "$(command -v python3)"
"$GW" --version
step check
timeout 60 "$GW" check; echo "check rc=$?"
if [ "${ONLY_BENCH:-0}" != 1 ]; then
step "train traced (defaults)"
timeout 150 "$GW" trace -q -o $T/train.db -- python3 bench/gpu/torch_workload.py train --steps 20 --warmup 5; echo "rc=$?"
q $T/train.db "SELECT family, name, count(*) calls, sum(dur)/1e6 ms FROM v_calls GROUP BY 1,2 ORDER BY 3 DESC" 40
q $T/train.db "SELECT * FROM libraries" 20
q $T/train.db "SELECT name, file, line, function, calls, dur_ns/1e6 ms FROM v_python_sites ORDER BY dur_ns DESC LIMIT 12"
q $T/train.db "SELECT * FROM python_processes"
q $T/train.db "SELECT * FROM v_losses"
q $T/train.db "SELECT * FROM startup_gaps"
timeout 60 "$GW" explain --db $T/train.db; echo "explain rc=$?"
step "stalls: loader process slower than the GPU step"
timeout 150 "$GW" trace -q -o $T/stalls.db -- python3 bench/gpu/loader_stall.py 60 25; echo "rc=$?"
timeout 60 "$GW" explain --db $T/stalls.db; echo "explain rc=$?"
timeout 60 "$GW" explain --db $T/stalls.db --json > $T/stalls.json; echo "json rc=$?"
q $T/stalls.db "SELECT name, file, line, function, calls, dur_ns/1e6 ms FROM v_python_sites ORDER BY dur_ns DESC LIMIT 8"
step "nccl one rank"
timeout 120 "$GW" trace -q -o $T/nccl.db -- python3 bench/gpu/nccl_one_rank.py; echo "rc=$?"
q $T/nccl.db "SELECT family, name, count(*), sum(dur)/1e6 ms, min(peer), max(nranks) FROM v_calls WHERE family LIKE '%nccl%' OR category IN ('collective','init','group') GROUP BY 1,2 ORDER BY 3 DESC" 30
timeout 60 "$GW" explain --db $T/nccl.db | head -60
step "launch loop traced"
timeout 90 "$GW" trace -q -o $T/launch.db -- python3 bench/gpu/torch_workload.py launch --launches 20000; echo "rc=$?"
q $T/launch.db "SELECT family, name, count(*) FROM v_calls GROUP BY 1,2 ORDER BY 3 DESC" 12
timeout 60 "$GW" explain --db $T/launch.db | head -50
(cd $T && ls -la && tar czf "$O/traces.tgz" train.db stalls.db nccl.db launch.db stalls.json 2>&1; ls -la "$O")
fi
step "overhead bench"
GPUWHY="$GW" GW_BENCH_OUT=$T/bench RUNS=${RUNS:-3} STEPS=${STEPS:-20} LAUNCHES=${LAUNCHES:-20000} CONFIGS="${CONFIGS:-none gw}" timeout ${BENCH_S:-200} bash bench/gpu.sh; echo "bench rc=$?"
cp $T/bench/gpu.tsv $T/bench/gpu.md "$O/" 2>/dev/null
step done
