-- SPDX-License-Identifier: Apache-2.0
-- trainer (pid 4000) copies a 64 MiB batch host-to-device every 20 ms with cudaMemcpy from a
-- pageable buffer (12 ms), then launches and syncs. It did allocate pinned memory (16 MiB with
-- cudaMallocHost at the start) but the batches do not come from it.
-- Planted answer: HIGH transfer_bound (pageable), about 60% of the time in copies.
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-4', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0,
       t0 + 10000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 4000, t0, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 4000, 4000, 'trainer', t0 FROM fx;

-- cudaMallocHost (api 18): 16 MiB pinned at 0x7f0000000000, once.
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, bytes, addr)
SELECT t0, 2 * ms, 4000, 4000, 18, 1, 0, 16777216, 139637976727552 FROM fx;
-- cudaMemcpy (api 5) host_to_device (op 1), 64 MiB from 0x7f3a00000000 (pageable).
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 498)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, bytes, op, addr, addr2)
SELECT t0 + 20 * ms + i * 20 * ms, 12 * ms, 4000, 4000, 5, 1, 0, 67108864, 1, 30000000000,
       139887084879872 FROM fx, step;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 498),
               k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 4)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + 20 * ms + i * 20 * ms + 12100000 + j * 50000, 5000, 4000, 4000, 1, 1, 0, 0
FROM fx, step, k;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 498)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + 20 * ms + i * 20 * ms + 12500000, 7450000, 4000, 4000, 22, 1, 0, 0 FROM fx, step;
