-- SPDX-License-Identifier: Apache-2.0
-- Per GPU API call, how long its own thread was off the CPU during the call, and why:
-- "was this slow call waiting on the GPU, or was its thread descheduled?"
-- Only off-CPU time inside [ts, ts + dur] counts (intervals straddling either end are clipped).
-- preempted_ns: runnable while another task held the CPU, top_preemptor being the task that held
-- it longest; blocked_ns: asleep (GPU sync, lock, I/O), top_waker being the task whose wake-ups
-- ended the most of that time; runq_ns: time runnable but waiting for a CPU; oncpu_ns: the rest
-- (running or spinning). Every call has a row; filter first (WHERE dur > ...) on big traces.
CREATE VIEW v_call_offcpu AS
SELECT c.rowid AS call_id, c.ts, c.dur, c.pid, c.tid, c.api, a.name, a.category,
       c.dur - coalesce((SELECT sum(i.ns) FROM v_call_offcpu_intervals AS i
                         WHERE i.call_id = c.rowid), 0) AS oncpu_ns,
       coalesce((SELECT sum(i.ns) FROM v_call_offcpu_intervals AS i
                 WHERE i.call_id = c.rowid), 0) AS offcpu_ns,
       coalesce((SELECT sum(i.ns) FROM v_call_offcpu_intervals AS i
                 WHERE i.call_id = c.rowid AND i.preempted != 0), 0) AS preempted_ns,
       coalesce((SELECT sum(i.ns) FROM v_call_offcpu_intervals AS i
                 WHERE i.call_id = c.rowid AND i.preempted = 0), 0) AS blocked_ns,
       coalesce((SELECT sum(i.runq_ns) FROM v_call_offcpu_intervals AS i
                 WHERE i.call_id = c.rowid), 0) AS runq_ns,
       (SELECT count(*) FROM v_call_offcpu_intervals AS i WHERE i.call_id = c.rowid) AS intervals,
       (SELECT i.next_task FROM v_call_offcpu_intervals AS i
        WHERE i.call_id = c.rowid AND i.preempted != 0 AND i.next_task IS NOT NULL
        GROUP BY i.next_task ORDER BY sum(i.ns) DESC, i.next_task LIMIT 1) AS top_preemptor,
       (SELECT sum(i.ns) AS ns FROM v_call_offcpu_intervals AS i
        WHERE i.call_id = c.rowid AND i.preempted != 0 AND i.next_task IS NOT NULL
        GROUP BY i.next_task ORDER BY ns DESC, i.next_task LIMIT 1) AS top_preemptor_ns,
       (SELECT i.waker_task FROM v_call_offcpu_intervals AS i
        WHERE i.call_id = c.rowid AND i.preempted = 0 AND i.waker_task IS NOT NULL
        GROUP BY i.waker_task ORDER BY sum(i.ns) DESC, i.waker_task LIMIT 1) AS top_waker,
       (SELECT sum(i.ns) AS ns FROM v_call_offcpu_intervals AS i
        WHERE i.call_id = c.rowid AND i.preempted = 0 AND i.waker_task IS NOT NULL
        GROUP BY i.waker_task ORDER BY ns DESC, i.waker_task LIMIT 1) AS top_waker_ns
FROM api_calls AS c
LEFT JOIN apis AS a ON a.id = c.api;
