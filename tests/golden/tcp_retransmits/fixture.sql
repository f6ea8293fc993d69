-- SPDX-License-Identifier: Apache-2.0
-- One rank (trainer, pid 9500) all-reduces over TCP every 20 ms (2 ms). Every tenth all-reduce
-- loses a segment to 10.0.0.2:5000 and waits 10 ms more for the retransmission; one unrelated
-- retransmit (ssh) happens between collectives.
-- Planted answer: tcp_retransmits, 50 collectives hit, about 5% of the time lost (MEDIUM).
CREATE TEMP TABLE fx AS SELECT 1700000000000000000 AS t0, 1000000 AS ms;

INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line,
                    start_ns, end_ns, mono_to_wall_ns)
SELECT 1, 'complete', 'gpu-node-10', '6.1.0-18-amd64', '0.1.0', 1, 'gpuwhy trace', t0,
       t0 + 10000 * ms, 0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 9500, t0, 'trainer', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 9500, 9500, 'trainer', t0 FROM fx;

CREATE TEMP TABLE steps AS
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 499)
SELECT i, t0 + i * 20 * ms AS t, i % 10 = 0 AS hit FROM fx, s;
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t, 5000, 9500, 9500, 1, 1, 0, 0 FROM steps;
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream, bytes, op, addr)
SELECT t + 1000000, CASE WHEN hit THEN 12000000 ELSE 2000000 END, 9500, 9500, 200, 2, 0, 0,
       67108864, 0, 4096 FROM steps;
INSERT INTO tcp_retrans(ts, pid, tid, family, saddr, sport, daddr, dport, state)
SELECT t + 3000000, 0, 0, 2, '10.0.0.1', 43512, '10.0.0.2', 5000, 1 FROM steps WHERE hit;
INSERT INTO tcp_retrans(ts, pid, tid, family, saddr, sport, daddr, dport, state)
SELECT t0 + 15 * ms, 0, 0, 2, '10.0.0.1', 22, '10.0.0.9', 51234, 1 FROM fx;
