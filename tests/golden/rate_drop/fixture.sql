-- SPDX-License-Identifier: Apache-2.0
-- trainer (pid 6000) runs a 5 ms step (five launches, a 4.65 ms sync) for 6 s. At +6 s a
-- backup job (backup, pid 6666) starts on the same CPUs and takes 5 ms of every step: steps
-- now take 10 ms and the launch rate halves.
-- Planted answer: rate_drop at +6 s (-50%) attributed to backup (pid 6666), and the matching
-- cpu_contention chain. --from 0 --to 6 is clean; --from 6 shows the contention alone.
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-6', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0,
       t0 + 10000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 6000, t0, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 6000, 6000, 'trainer', t0 FROM fx;
INSERT INTO strings(id, s) VALUES (1, 'backup');

-- Step start times: every 5 ms before +6 s, every 10 ms after.
CREATE TEMP TABLE steps AS
WITH RECURSIVE a(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM a WHERE i < 1199),
               b(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM b WHERE i < 399)
SELECT t0 + i * 5 * ms AS t, 0 AS contended FROM fx, a
UNION ALL SELECT t0 + 6000 * ms + i * 10 * ms, 1 FROM fx, b;

WITH RECURSIVE k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 4)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t + j * 50000, 5000, 6000, 6000, 1, 1, 0, 0 FROM steps, k;
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t + 300000, 4650000, 6000, 6000, 22, 1, 0, 0 FROM steps;
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, next_pid, next_tid, next_comm)
SELECT t + 4950000, 5000000, 5000000, 6000, 6000, 2, 1, 0, 6666, 6666, 1 FROM steps
WHERE contended;
