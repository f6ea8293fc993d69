-- SPDX-License-Identifier: Apache-2.0
-- trainer (pid 2000) launches five kernels every 10 ms and syncs (5 ms, asleep until the CUDA
-- runtime's event thread wakes it: normal). Between steps it then waits 4.6 ms on a futex that
-- its sibling thread ckpt_writer (tid 2005) releases after a 4.5 ms write().
-- Planted answer: HIGH lock_wait, culprit ckpt_writer (tid 2005), about 46% of the time lost.
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-2', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0,
       t0 + 10000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, exe, first_seen_ns)
SELECT 2000, t0, 'trainer', '/usr/bin/python3', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 2000, 2000, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 2000, 2005, 'ckpt_writer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 2000, 2007, 'cuda-EvtHandlr', t0 FROM fx;
INSERT INTO strings(id, s) VALUES (1, 'ckpt_writer'), (2, 'cuda-EvtHandlr');

WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999),
               k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 4)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10 * ms + j * 50000, 5000, 2000, 2000, 1, 1, 0, 0 FROM fx, step, k;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10 * ms + 300000, 5000000, 2000, 2000, 22, 1, 0, 0 FROM fx, step;

-- Asleep inside each sync; the runtime's event thread wakes it (expected, never blamed).
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, waker_pid, waker_tid, waker_comm)
SELECT t0 + i * 10 * ms + 400000, 4800000, 30000, 2000, 2000, 1, 0, 1, 2000, 2007, 2 FROM fx, step;
-- The lock: asleep 4.6 ms after each step until ckpt_writer wakes it, in a futex (nr 202).
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, waker_pid, waker_tid, waker_comm)
SELECT t0 + i * 10 * ms + 5350000, 4600000, 20000, 2000, 2000, 1, 0, 1, 2000, 2005, 1 FROM fx, step;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO syscalls(ts, dur, pid, tid, nr, ret)
SELECT t0 + i * 10 * ms + 5350000, 4600000, 2000, 2000, 202, 0 FROM fx, step;
-- What ckpt_writer does while holding it: a 4.5 ms write() (nr 1).
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO syscalls(ts, dur, pid, tid, nr, ret)
SELECT t0 + i * 10 * ms + 5300000, 4500000, 2000, 2005, 1, 1048576 FROM fx, step;
