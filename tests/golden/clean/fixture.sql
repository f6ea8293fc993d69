-- SPDX-License-Identifier: Apache-2.0
-- A healthy, GPU-bound trainer (pid 8000): five launches every 10 ms, a sync that returns 50 us
-- before the next step, asleep inside each sync until the runtime's event thread wakes it, and
-- the odd 100 us preemption by a kworker.
-- Planted answer: CLEAN, no chain.
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-8', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0,
       t0 + 10000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 8000, t0, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 8000, 8000, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 8000, 8003, 'cuda-EvtHandlr', t0 FROM fx;
INSERT INTO strings(id, s) VALUES (1, 'cuda-EvtHandlr'), (2, 'kworker/3:1');

CREATE TEMP TABLE steps AS
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 999)
SELECT i, t0 + i * 10 * ms AS t FROM fx, s;
WITH RECURSIVE k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 4)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t + j * 50000, 5000, 8000, 8000, 1, 1, 0, 0 FROM steps, k;
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t + 300000, 9650000, 8000, 8000, 22, 1, 0, 0 FROM steps;
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, waker_pid, waker_tid, waker_comm)
SELECT t + 400000, 9500000, 20000, 8000, 8000, 0, 0, 1, 8000, 8003, 1 FROM steps;
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, next_pid, next_tid, next_comm)
SELECT t + 120000, 100000, 100000, 8000, 8000, 0, 1, 0, 77, 77, 2 FROM steps WHERE i % 50 = 0;
