-- SPDX-License-Identifier: Apache-2.0
-- Each off-CPU interval of the calling thread that overlaps a GPU API call, clipped to the call:
-- "while this call ran, when was its thread off the CPU, who ran instead, who woke it?"
-- One row per (call, interval). ns: the overlap; runq_ns: the part of it spent runnable, waiting
-- for a CPU (the runq tail of the interval, clipped too). next_task / waker_task / holder_task:
-- task names (holder: who had the CPU when the thread got it back; NULL in pre-ABI-2 traces).
-- syscall / syscall_name: the system call the thread slept in (NULL: none, or a pre-ABI-3 trace).
-- A thread's off-CPU intervals never overlap one another, so the only interval that starts
-- before a call and reaches into it is the thread's last one before the call (its start is
-- `lo`): with the offcpu(tid, ts) index of a finished trace a call costs two index seeks.
CREATE VIEW v_call_offcpu_intervals AS
SELECT c.call_id, o.rowid AS offcpu_id, c.pid, c.tid, o.ts, o.dur, o.runq, o.preempted,
       -- CASE, not SQLite's two-argument min()/max(), so that DuckDB runs the view too.
       CASE WHEN o.ts + o.dur < c.ts + c.dur THEN o.ts + o.dur ELSE c.ts + c.dur END
         - CASE WHEN o.ts > c.ts THEN o.ts ELSE c.ts END AS ns,
       CASE WHEN o.runq IS NULL THEN NULL
            WHEN (CASE WHEN o.ts + o.dur < c.ts + c.dur THEN o.ts + o.dur ELSE c.ts + c.dur END)
                 - (CASE WHEN o.ts + o.dur - o.runq > c.ts THEN o.ts + o.dur - o.runq ELSE c.ts END)
                 > 0
            THEN (CASE WHEN o.ts + o.dur < c.ts + c.dur THEN o.ts + o.dur ELSE c.ts + c.dur END)
                 - (CASE WHEN o.ts + o.dur - o.runq > c.ts THEN o.ts + o.dur - o.runq ELSE c.ts END)
            ELSE 0 END AS runq_ns,
       o.next_pid, o.next_tid, n.s AS next_task, o.waker_pid, o.waker_tid, w.s AS waker_task,
       o.holder_pid, o.holder_tid, h.s AS holder_task, o.syscall, sn.name AS syscall_name
FROM (SELECT rowid AS call_id, ts, dur, pid, tid,
             coalesce((SELECT max(p.ts) FROM offcpu AS p
                       WHERE p.tid = api_calls.tid AND p.ts < api_calls.ts), ts) AS lo
      FROM api_calls) AS c
JOIN offcpu AS o ON o.tid = c.tid AND o.ts >= c.lo AND o.ts < c.ts + c.dur AND o.pid = c.pid
LEFT JOIN strings AS n ON n.id = o.next_comm
LEFT JOIN strings AS w ON w.id = o.waker_comm
LEFT JOIN strings AS h ON h.id = o.holder_comm
LEFT JOIN syscall_names AS sn ON sn.nr = o.syscall
WHERE o.ts + o.dur > c.ts;
