-- SPDX-License-Identifier: Apache-2.0
-- GPU API calls by the Python line that made them: "which line of my code makes the costly GPU
-- calls?" One row per (pid, api name, file, line): the innermost Python frame of the call
-- (python_frames.depth = 0), its function and source text. calls; dur_ns (total) and max_dur_ns
-- (NULL for calls recorded at entry only). Calls without a Python stack are not in it: launches
-- whose arguments were not sampled (trace --launch-arg-sampling), non-Python processes.
CREATE VIEW v_python_sites AS
SELECT c.pid, a.name, p.file, p.line, p.function, p.source, count(*) AS calls,
       sum(c.dur) AS dur_ns, max(c.dur) AS max_dur_ns
FROM api_calls AS c
JOIN python_frames AS p ON p.py_stack_id = c.py_stack AND p.depth = 0
JOIN apis AS a ON a.id = c.api
GROUP BY c.pid, a.name, p.file, p.line, p.function, p.source;
