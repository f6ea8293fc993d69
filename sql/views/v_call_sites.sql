-- SPDX-License-Identifier: Apache-2.0
-- GPU API calls by where the application made them (trace --stacks): "which functions of my
-- code make the costly GPU calls?" One row per (pid, api name, call site): the call site is the
-- first frame of the call's stack outside the GPU and C/C++ runtime libraries
-- (stack_frames.call_site = 1), its `symbol` ("gw::Trainer::step(unsigned long)+0x2f2") and
-- `module`. calls; dur_ns (total) and max_dur_ns (NULL for calls recorded at entry only).
-- Calls without a stack, or whose stack has no such frame, are not in it.
CREATE VIEW v_call_sites AS
SELECT c.pid, a.name, f.symbol, f.module, count(*) AS calls, sum(c.dur) AS dur_ns,
       max(c.dur) AS max_dur_ns
FROM api_calls AS c
JOIN stack_frames AS f ON f.stack_id = c.stack_id AND f.call_site = 1
JOIN apis AS a ON a.id = c.api
GROUP BY c.pid, a.name, f.symbol, f.module;
