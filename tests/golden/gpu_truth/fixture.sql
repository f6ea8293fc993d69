-- SPDX-License-Identifier: Apache-2.0
-- trainer (pid 3100), traced with --gpu-activity: every 10 ms it launches a kernel, queues a
-- 1 MiB upload from pageable memory and a second kernel, then syncs (to +6 ms) and works on the
-- host until the next step. The device's records (gpu_activity) say what ran: kernel A
-- +0.02 .. +3 ms, the upload +3 .. +4 ms, kernel B +4.01 .. +6 ms on stream 7 of device 0.
-- Planted answer: over the thread's 1.996 s the device is busy 5.97 ms a step (59.8%; the calls
-- estimated 60.1%: 6 ms over), idle 802 ms: 800 ms waiting on the host (the 4.02 ms after each
-- sync, and the first 20 µs), 2 ms between queued work (the 10 µs before kernel B);
-- compute/stall 994 / (200 + 800) = 0.99. The chain stays hidden_sync (the syncs leave the GPU
-- idle), its share now of measured idle time.
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-5', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0,
       t0 + 2000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 3100, t0, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 3100, 3100, 'trainer', t0 FROM fx;

-- cudaLaunchKernel (api 1) at +0 and +0.05 ms, cudaMemcpyAsync (api 7) host_to_device (op 1)
-- at +0.03 ms, cudaStreamSynchronize (api 22) +0.1 .. +6 ms.
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 199),
               k(j) AS (SELECT 0 UNION ALL SELECT 1)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10 * ms + j * 50000, 5000, 3100, 3100, 1, 1, 0, 7 FROM fx, step, k;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 199)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, bytes, op, addr, addr2, stream)
SELECT t0 + i * 10 * ms + 30000, 8000, 3100, 3100, 7, 1, 0, 1048576, 1, 30000000000,
       139887084879872, 7 FROM fx, step;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 199)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10 * ms + 100000, 5900000, 3100, 3100, 22, 1, 0, 7 FROM fx, step;

INSERT INTO gpu_kernel_names(id, pid, name, mangled) VALUES
  (1, 3100, 'gemm_kernel(float*, int)', '_Z11gemm_kernelPfi'),
  (2, 3100, 'relu_kernel(float*)', '_Z11relu_kernelPf');
-- Kernel A (+0.02 .. +3 ms), the upload (+3 .. +4 ms), kernel B (+4.01 .. +6 ms); CUPTI's
-- correlation ids in launch order (A, upload, B: 3 per step).
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 199)
INSERT INTO gpu_activity(kind, pid, ts, dur, device, context, stream, correlation, name_id,
                         grid_x, grid_y, grid_z, block_x, block_y, block_z)
SELECT 'kernel', 3100, t0 + i * 10 * ms + 20000, 2980000, 0, 1, 7, 3 * i + 1, 1, 128, 1, 1, 256,
       1, 1 FROM fx, step
UNION ALL
SELECT 'kernel', 3100, t0 + i * 10 * ms + 4010000, 1990000, 0, 1, 7, 3 * i + 3, 2, 64, 1, 1, 128,
       1, 1 FROM fx, step;
WITH RECURSIVE step(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM step WHERE i < 199)
INSERT INTO gpu_activity(kind, pid, ts, dur, device, context, stream, correlation, bytes,
                         copy_kind, src_kind, dst_kind)
SELECT 'memcpy', 3100, t0 + i * 10 * ms + 3 * ms, 1 * ms, 0, 1, 7, 3 * i + 2, 1048576, 'HtoD',
       'pageable', 'device' FROM fx, step;
