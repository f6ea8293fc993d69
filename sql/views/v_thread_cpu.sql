-- SPDX-License-Identifier: Apache-2.0
-- Where each traced thread's CPU time went, from the CPU samples (trace --sample-hz): "what does
-- the dispatch thread run while it is on the CPU?" One row per (pid, tid, what): `what` is the
-- syscall the samples found it in, by name; 'kernel' for kernel code outside a syscall (a page
-- fault, an interrupt); 'user' for its own code. samples; est_ns: samples x the sampling period,
-- an estimate of that CPU time; share: of the thread's samples. comm: the thread's latest name.
-- A trace recorded before CPU samples existed has no cpu_samples table: the view says so.
CREATE VIEW v_thread_cpu AS
WITH s AS (
  SELECT c.pid, c.tid,
         CASE WHEN c.syscall IS NOT NULL THEN coalesce(n.name, 'syscall ' || c.syscall)
              WHEN c.kernel != 0 THEN 'kernel' ELSE 'user' END AS what,
         count(*) AS samples, sum(c.dur) AS est_ns
  FROM cpu_samples AS c LEFT JOIN syscall_names AS n ON n.nr = c.syscall
  GROUP BY c.pid, c.tid, what
)
SELECT s.pid, s.tid,
       (SELECT th.comm FROM threads AS th WHERE th.tid = s.tid AND th.pid = s.pid
        ORDER BY th.first_seen_ns DESC LIMIT 1) AS comm,
       s.what, s.samples, s.est_ns,
       round(1.0 * s.samples / sum(s.samples) OVER (PARTITION BY s.pid, s.tid), 4) AS share
FROM s;
