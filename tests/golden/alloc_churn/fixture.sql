-- SPDX-License-Identifier: Apache-2.0
-- trainer (pid 5000) allocates a 64 MiB scratch buffer with cudaMalloc at the start of every
-- 10 ms step (2 ms), launches, syncs (6.7 ms) and frees the buffer with cudaFree at the end
-- (1 ms, synchronising the device); the next step starts 50 us later.
-- Planted answer: HIGH alloc_churn, about 30% of the time in the allocator.
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-5', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0,
       t0 + 10000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 5000, t0, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 5000, 5000, 'trainer', t0 FROM fx;

-- cudaMalloc (api 17) 64 MiB -> 0x7000000000; five launches; sync (api 22); cudaFree (api 20).
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, bytes, addr)
SELECT t0 + i * 10 * ms, 2 * ms, 5000, 5000, 17, 1, 0, 67108864, 481036337152 FROM fx, step;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999),
               k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 4)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10 * ms + 2000000 + j * 50000, 5000, 5000, 5000, 1, 1, 0, 0 FROM fx, step, k;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10 * ms + 2250000, 6700000, 5000, 5000, 22, 1, 0, 0 FROM fx, step;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, addr)
SELECT t0 + i * 10 * ms + 8950000, 1 * ms, 5000, 5000, 20, 1, 0, 481036337152 FROM fx, step;
