-- SPDX-License-Identifier: Apache-2.0
-- trainer (pid 1000) runs a 10 ms training step for 10 s: five kernel launches 50 us apart, then
-- a cudaStreamSynchronize while the GPU works (5.6 ms). cpu_hog (pid 4242) shares its CPU and
-- takes it for 4.05 ms right after every sync, so each step starts late.
-- Planted answer: HIGH cpu_contention, culprit cpu_hog (pid 4242), about 40% of the time lost.
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, last_commit_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-1', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace --duration 10s',
       t0, t0 + 10000 * ms, t0 + 10000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, ppid, comm, exe, cmdline, first_seen_ns)
SELECT 1000, t0 - 60000 * ms, 1, 'trainer', '/usr/bin/python3', 'python3 train.py', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 1000, 1000, 'trainer', t0 FROM fx;
INSERT INTO strings(id, s) VALUES (1, 'cpu_hog');

-- 1000 steps x 5 launches (cudaLaunchKernel = api 1), 5 us each.
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999),
               k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 4)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10 * ms + j * 50000, 5000, 1000, 1000, 1, 1, 0, 0 FROM fx, step, k;
-- One cudaStreamSynchronize (api 22) per step at +0.3 ms, 5.6 ms long.
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10 * ms + 300000, 5600000, 1000, 1000, 22, 1, 0, 0 FROM fx, step;
-- The preemptions: runnable, cpu_hog on the CPU, 4.05 ms after each sync.
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, next_pid, next_tid, next_comm)
SELECT t0 + i * 10 * ms + 5900000, 4050000, 4050000, 1000, 1000, 3, 1, 0, 4242, 4242, 1
FROM fx, step;
