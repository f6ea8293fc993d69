-- SPDX-License-Identifier: Apache-2.0
-- Every GPU API call in words: "what did each thread ask of the GPU, and when?"
-- name, family and category are api_calls' label columns (apis' texts for c.api, read into memory,
-- so GROUP BY name needs no join and no sort); a copy's direction comes from copy_kinds only when
-- a query reads it.
-- t_ms: milliseconds since the session started; dur_us: duration in microseconds.
-- call_id is the api_calls rowid, the key v_call_offcpu uses too.
-- py_file, py_line, py_function, py_source: the Python line that made the call (its stack's
-- innermost frame, python_frames depth 0; NULL without one), looked up only when a query reads
-- them, like direction.
CREATE VIEW v_calls AS
SELECT c.rowid AS call_id, c.ts, (c.ts - (SELECT start_ns FROM session)) / 1e6 AS t_ms,
       c.dur, c.dur / 1e3 AS dur_us, c.pid, c.tid, c.api, c.name, c.family, c.category,
       c.lib, c.ret, c.stream, c.bytes, c.op,
       CASE WHEN c.category = 'copy' THEN (SELECT name FROM copy_kinds WHERE id = c.op) END
         AS direction,
       c.addr, c.addr2,
       c.blocks, c.tpb, c.peer, c.nranks, c.stack_id, c.flags, c.py_stack,
       (SELECT file FROM python_frames WHERE py_stack_id = c.py_stack AND depth = 0) AS py_file,
       (SELECT line FROM python_frames WHERE py_stack_id = c.py_stack AND depth = 0) AS py_line,
       (SELECT function FROM python_frames WHERE py_stack_id = c.py_stack AND depth = 0)
         AS py_function,
       (SELECT source FROM python_frames WHERE py_stack_id = c.py_stack AND depth = 0)
         AS py_source
FROM api_calls AS c;
