-- SPDX-License-Identifier: Apache-2.0
-- Not a shipped view: the offcpu_per_second rollup computed from offcpu, for files written before
-- the rollup tables existed. A reader that finds no such table in the file creates this as a TEMP
-- view of the same name, so the views that read the rollup answer as before (at per-row speed).
-- It is also the definition of what the writer stores (src/store/rollups.cpp), except that the
-- writer stores one row per key and chunk, this one row per key.
CREATE VIEW offcpu_per_second AS
SELECT pid, tid, (ts - (SELECT start_ns FROM session)) / 1000000000 AS second,
       CASE WHEN preempted THEN 1 ELSE 0 END AS preempted,
       CASE WHEN preempted THEN next_comm ELSE waker_comm END AS other_comm,
       sum(dur) AS ns, coalesce(sum(runq), 0) AS runq_ns, count(*) AS intervals
FROM offcpu
GROUP BY 1, 2, 3, 4, 5;
