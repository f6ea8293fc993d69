-- SPDX-License-Identifier: Apache-2.0
-- GPU API calls per 1-second bucket, per process and category: "did the call rate drop, and
-- when?" One row per (pid, category, second) from the pair's first to its last active second;
-- seconds without a call are included with zeros, so a stall shows as a run of zero rows.
-- second: whole seconds since the session started (bucket_ts: its wall-clock start, ns);
-- busy_ns: time inside calls that started in the bucket; bytes: their copy/alloc/collective bytes.
-- Read from the api_calls_per_second rollup (docs/schema.md): instant on traces that store it.
CREATE VIEW v_throughput AS
WITH RECURSIVE
buckets AS (
  SELECT r.pid, coalesce(a.category, 'unknown') AS category, r.second,
         sum(r.calls) AS calls, sum(r.dur_ns) AS busy_ns, coalesce(sum(r.bytes), 0) AS bytes
  FROM api_calls_per_second AS r LEFT JOIN apis AS a ON a.id = r.api
  GROUP BY 1, 2, 3
),
seconds(pid, category, second, last) AS (
  SELECT pid, category, min(second), max(second) FROM buckets GROUP BY pid, category
  UNION ALL
  SELECT pid, category, second + 1, last FROM seconds WHERE second < last
)
SELECT s.pid, s.category, s.second,
       (SELECT start_ns FROM session) + s.second * 1000000000 AS bucket_ts,
       coalesce(b.calls, 0) AS calls, coalesce(b.busy_ns, 0) AS busy_ns,
       coalesce(b.bytes, 0) AS bytes
FROM seconds AS s
LEFT JOIN buckets AS b ON b.pid = s.pid AND b.category = s.category AND b.second = s.second
ORDER BY s.pid, s.category, s.second;
