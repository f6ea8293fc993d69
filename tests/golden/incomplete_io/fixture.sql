-- SPDX-License-Identifier: Apache-2.0
-- The agent was killed: the session is still 'recording', with no end and no last_event_ns, and
-- the ring buffer overflowed (1,500 events lost). trainer (pid 9000) writes its log and a
-- checkpoint shard from the dispatch thread every 10 ms step, after the step's sync (write 2 ms,
-- fsync 1 ms, with the disk requests it issues), then stalls 0.75 ms in direct reclaim.
-- Planted answer: caveats first (lost events, incomplete), then io_stall (~30%) and
-- memory_reclaim (~7.5%). The trace ends at its last event, about +8 s.
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, mono_to_wall_ns)
SELECT 1, 'recording', 'gpu-node-9', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0, 0 FROM fx;
INSERT INTO losses(source, cause, count) VALUES ('bpf', 'ringbuf_full', 1500), ('reader', 'decode_error', 0);
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 9000, t0, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 9000, 9000, 'trainer', t0 FROM fx;

CREATE TEMP TABLE steps AS
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 799)
SELECT i, t0 + i * 10 * ms AS t FROM fx, s;
WITH RECURSIVE k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 4)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t + j * 50000, 5000, 9000, 9000, 1, 1, 0, 0 FROM steps, k;
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t + 300000, 5900000, 9000, 9000, 22, 1, 0, 0 FROM steps;
-- write (nr 1) 2 ms, fsync (nr 74) 1 ms; the 1 MiB write-out it waits for.
INSERT INTO syscalls(ts, dur, pid, tid, nr, ret) SELECT t + 6200000, 2 * ms, 9000, 9000, 1, 4096 FROM fx, steps;
INSERT INTO syscalls(ts, dur, pid, tid, nr, ret) SELECT t + 8200000, 1 * ms, 9000, 9000, 74, 0 FROM fx, steps;
INSERT INTO block_io(ts, dur, pid, tid, dev, sector, bytes, op, error)
SELECT t + 8250000, 900000, 9000, 9000, 8388608, i * 2048, 1048576, 1, 0 FROM steps;
INSERT INTO reclaim(ts, dur, pid, tid, nr_reclaimed)
SELECT t + 9200000, 750000, 9000, 9000, 256 FROM steps;
