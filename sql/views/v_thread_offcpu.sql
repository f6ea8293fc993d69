-- SPDX-License-Identifier: Apache-2.0
-- Off-CPU time per thread over the whole trace: "which threads lost the most time off the CPU,
-- and to whom?" One row per (pid, tid) with off-CPU intervals.
-- preempted_ns: runnable while another task held the CPU (top_preemptor held it longest);
-- blocked_ns: asleep (GPU sync, lock, I/O; top_waker's wake-ups ended the most of it);
-- runq_ns: runnable but waiting for a CPU (all preempted time plus wake-up delays);
-- intervals: number of off-CPU intervals. comm: the thread's latest known name.
CREATE VIEW v_thread_offcpu AS
WITH totals AS (
  SELECT pid, tid, sum(dur) AS offcpu_ns,
         sum(CASE WHEN preempted THEN dur ELSE 0 END) AS preempted_ns,
         sum(CASE WHEN preempted THEN 0 ELSE dur END) AS blocked_ns,
         sum(runq) AS runq_ns, count(*) AS intervals
  FROM offcpu GROUP BY pid, tid
),
preemptors AS (
  SELECT o.pid, o.tid, s.s AS task, sum(o.dur) AS ns,
         row_number() OVER (PARTITION BY o.pid, o.tid ORDER BY sum(o.dur) DESC, s.s) AS rank
  FROM offcpu AS o JOIN strings AS s ON s.id = o.next_comm
  WHERE o.preempted
  GROUP BY o.pid, o.tid, s.s
),
wakers AS (
  SELECT o.pid, o.tid, s.s AS task, sum(o.dur) AS ns,
         row_number() OVER (PARTITION BY o.pid, o.tid ORDER BY sum(o.dur) DESC, s.s) AS rank
  FROM offcpu AS o JOIN strings AS s ON s.id = o.waker_comm
  WHERE NOT o.preempted
  GROUP BY o.pid, o.tid, s.s
)
SELECT t.pid, t.tid,
       (SELECT th.comm FROM threads AS th WHERE th.tid = t.tid AND th.pid = t.pid
        ORDER BY th.first_seen_ns DESC LIMIT 1) AS comm,
       t.offcpu_ns, t.preempted_ns, t.blocked_ns, t.runq_ns, t.intervals,
       p.task AS top_preemptor, p.ns AS top_preemptor_ns,
       w.task AS top_waker, w.ns AS top_waker_ns
FROM totals AS t
LEFT JOIN preemptors AS p ON p.pid = t.pid AND p.tid = t.tid AND p.rank = 1
LEFT JOIN wakers AS w ON w.pid = t.pid AND w.tid = t.tid AND w.rank = 1;
