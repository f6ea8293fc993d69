-- SPDX-License-Identifier: Apache-2.0
-- Off-CPU time per thread over the whole trace: "which threads lost the most time off the CPU,
-- and to whom?" One row per (pid, tid) with off-CPU intervals.
-- preempted_ns: runnable while another task held the CPU (top_preemptor held it longest);
-- blocked_ns: asleep (GPU sync, lock, I/O; top_waker's wake-ups ended the most of it);
-- runq_ns: runnable but waiting for a CPU (all preempted time plus wake-up delays);
-- intervals: number of off-CPU intervals. comm: the thread's latest known name.
-- Read from the offcpu_per_second rollup (docs/schema.md): instant on traces that store it.
CREATE VIEW v_thread_offcpu AS
WITH
-- Read once: a file without the rollup tables computes it from every interval (docs/schema.md).
r AS MATERIALIZED (SELECT * FROM offcpu_per_second),
totals AS (
  SELECT pid, tid, sum(ns) AS offcpu_ns,
         sum(CASE WHEN preempted != 0 THEN ns ELSE 0 END) AS preempted_ns,
         sum(CASE WHEN preempted != 0 THEN 0 ELSE ns END) AS blocked_ns,
         sum(runq_ns) AS runq_ns, sum(intervals) AS intervals
  FROM r GROUP BY pid, tid
),
culprits AS (  -- preempted = 1: who took the CPU; 0: who woke the thread
  SELECT r.pid, r.tid, r.preempted, s.s AS task, sum(r.ns) AS ns,
         row_number() OVER (PARTITION BY r.pid, r.tid, r.preempted
                            ORDER BY sum(r.ns) DESC, s.s) AS rank
  FROM r JOIN strings AS s ON s.id = r.other_comm
  GROUP BY r.pid, r.tid, r.preempted, s.s
)
SELECT t.pid, t.tid,
       (SELECT th.comm FROM threads AS th WHERE th.tid = t.tid AND th.pid = t.pid
        ORDER BY th.first_seen_ns DESC LIMIT 1) AS comm,
       t.offcpu_ns, t.preempted_ns, t.blocked_ns, t.runq_ns, t.intervals,
       p.task AS top_preemptor, p.ns AS top_preemptor_ns,
       w.task AS top_waker, w.ns AS top_waker_ns
FROM totals AS t
LEFT JOIN culprits AS p ON p.pid = t.pid AND p.tid = t.tid AND p.preempted = 1 AND p.rank = 1
LEFT JOIN culprits AS w ON w.pid = t.pid AND w.tid = t.tid AND w.preempted = 0 AND w.rank = 1;
