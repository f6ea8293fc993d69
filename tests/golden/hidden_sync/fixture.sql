-- SPDX-License-Identifier: Apache-2.0
-- trainer (pid 3000) launches five kernels every 10 ms, then reads the loss back with a 4-byte
-- cudaMemcpy device-to-host (like loss.item()): it waits 6.5 ms for the kernels, then does
-- 3.2 ms of host work before the next launch, while the GPU has nothing queued.
-- Planted answer: HIGH hidden_sync (read-backs), about 32% of the time the GPU sits idle.
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-3', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0,
       t0 + 10000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 3000, t0, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 3000, 3000, 'trainer', t0 FROM fx;

WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999),
               k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 4)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10 * ms + j * 50000, 5000, 3000, 3000, 1, 1, 0, 0 FROM fx, step, k;
-- cudaMemcpy (api 5), device_to_host (op 2), 4 bytes: dst on the host, src on the device.
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 999)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, bytes, op, addr, addr2)
SELECT t0 + i * 10 * ms + 300000, 6500000, 3000, 3000, 5, 1, 0, 4, 2, 140000000000000,
       139000000000000 FROM fx, step;
