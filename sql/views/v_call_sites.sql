-- SPDX-License-Identifier: Apache-2.0
-- GPU API calls by where the application made them: "which functions of my code make the costly
-- GPU calls?" One row per (pid, api name, call site): the native call site is the first frame of
-- the call's stack outside the GPU and C/C++ runtime libraries (trace --stacks;
-- stack_frames.call_site = 1), its `symbol` ("gw::Trainer::step(unsigned long)+0x2f2") and
-- `module`; the Python call site (Python processes) is the innermost Python frame: py_file,
-- py_line, py_function, py_source (python_frames.depth = 0). Either side is NULL where the call
-- has none. calls; dur_ns (total) and max_dur_ns (NULL for calls recorded at entry only). Calls
-- with neither are not in it.
CREATE VIEW v_call_sites AS
SELECT c.pid, a.name, f.symbol, f.module, p.file AS py_file, p.line AS py_line,
       p.function AS py_function, p.source AS py_source, count(*) AS calls, sum(c.dur) AS dur_ns,
       max(c.dur) AS max_dur_ns
FROM api_calls AS c
LEFT JOIN stack_frames AS f ON f.stack_id = c.stack_id AND f.call_site = 1
LEFT JOIN python_frames AS p ON p.py_stack_id = c.py_stack AND p.depth = 0
JOIN apis AS a ON a.id = c.api
WHERE f.stack_id IS NOT NULL OR p.py_stack_id IS NOT NULL
GROUP BY c.pid, a.name, f.symbol, f.module, p.file, p.line, p.function, p.source;
