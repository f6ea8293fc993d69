-- SPDX-License-Identifier: Apache-2.0
-- Calls and time per GPU operation, per thread, over the whole trace: "which operations took the
-- time, and how many calls was that?" One row per (pid, tid, api) that was called.
-- name, family, category: from apis; calls; dur_ns: total time inside the calls; max_dur_ns: the
-- longest call; avg_dur_ns; bytes: total copy/memset/alloc/collective bytes (NULL for APIs that
-- carry none). Sum over tid (GROUP BY pid, name) for per-process totals.
-- Read from the api_calls_per_second rollup (docs/schema.md): instant on traces that store it
-- (v_calls has one row per call).
CREATE VIEW v_op_totals AS
SELECT r.pid, r.tid, r.api, a.name, a.family, a.category,
       sum(r.calls) AS calls, sum(r.dur_ns) AS dur_ns, max(r.max_dur_ns) AS max_dur_ns,
       -- The integer quotient written out, so that DuckDB (whose / divides exactly) gives it too.
       (sum(r.dur_ns) - sum(r.dur_ns) % sum(r.calls)) / sum(r.calls) AS avg_dur_ns,
       sum(r.bytes) AS bytes
FROM api_calls_per_second AS r
LEFT JOIN apis AS a ON a.id = r.api
GROUP BY r.pid, r.tid, r.api, a.name, a.family, a.category;
