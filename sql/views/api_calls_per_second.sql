-- SPDX-License-Identifier: Apache-2.0
-- Not a shipped view: the api_calls_per_second rollup computed from api_calls, for files written
-- before the rollup tables existed. A reader that finds no such table in the file creates this as
-- a TEMP view of the same name, so the views that read the rollup answer as before (at per-row
-- speed). It is also the definition of what the writer stores (src/store/rollups.cpp), except that
-- the writer stores one row per key and chunk, this one row per key.
CREATE VIEW api_calls_per_second AS
SELECT pid, tid, api, (ts - (SELECT start_ns FROM session)) / 1000000000 AS second,
       count(*) AS calls, sum(dur) AS dur_ns, max(dur) AS max_dur_ns, sum(bytes) AS bytes
FROM api_calls
GROUP BY 1, 2, 3, 4;
