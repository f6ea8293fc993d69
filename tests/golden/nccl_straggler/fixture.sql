-- SPDX-License-Identifier: Apache-2.0
-- Three ranks (pids 7000-7002) of one job all-reduce every 20 ms. rank0 and rank1 arrive at
-- +1 ms and +1.2 ms; rank2 is preempted by data_prep (pid 7777) for 4.5 ms first and arrives at
-- +6 ms; the all-reduce completes for everyone at +7 ms, then each rank syncs its stream.
-- Planted answer: nccl_straggler, culprit rank2 (pid 7002), rank0 waits 5 ms of every 20 (25%);
-- cpu_contention on rank2 by data_prep (pid 7777).
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-7', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0,
       t0 + 10000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns)
SELECT 7000 + r, t0, 'rank' || r, t0 FROM fx, (SELECT 0 AS r UNION ALL SELECT 1 UNION ALL SELECT 2);
INSERT INTO threads(pid, tid, comm, first_seen_ns)
SELECT 7000 + r, 7000 + r, 'rank' || r, t0 FROM fx, (SELECT 0 AS r UNION ALL SELECT 1 UNION ALL SELECT 2);
INSERT INTO strings(id, s) VALUES (1, 'data_prep');

CREATE TEMP TABLE ranks AS
SELECT 7000 AS pid, 1000 AS arrive_us UNION ALL SELECT 7001, 1200 UNION ALL SELECT 7002, 6000;
CREATE TEMP TABLE steps AS
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 499)
SELECT t0 + i * 20 * ms AS t FROM fx, s;

WITH RECURSIVE k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 2)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t + j * 50000, 5000, pid, pid, 1, 1, 0, 0 FROM steps, ranks, k;
-- ncclAllReduce (api 200) of 64 MiB: from each rank's arrival to +7 ms.
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream, bytes, op, addr)
SELECT t + arrive_us * 1000, 7000000 - arrive_us * 1000, pid, pid, 200, 2, 0, 0, 67108864, 0,
       pid * 4096 FROM steps, ranks;
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t + 7010000, 500000, pid, pid, 22, 1, 0, 0 FROM steps, ranks;
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, next_pid, next_tid, next_comm)
SELECT t + 1200000, 4500000, 4500000, 7002, 7002, 5, 1, 0, 7777, 7777, 1 FROM steps;
