-- SPDX-License-Identifier: Apache-2.0
-- Every GPU API call in words: "what did each thread ask of the GPU, and when?"
-- api_calls joined with apis (name, family, category) and copy_kinds (direction, copies only).
-- t_ms: milliseconds since the session started; dur_us: duration in microseconds.
-- call_id is the api_calls rowid, the key v_call_offcpu uses too.
CREATE VIEW v_calls AS
SELECT c.rowid AS call_id, c.ts, (c.ts - (SELECT start_ns FROM session)) / 1e6 AS t_ms,
       c.dur, c.dur / 1e3 AS dur_us, c.pid, c.tid, c.api, a.name, a.family, a.category,
       c.lib, c.ret, c.stream, c.bytes, c.op, k.name AS direction, c.addr, c.addr2,
       c.blocks, c.tpb, c.peer, c.nranks, c.stack_id, c.flags
FROM api_calls AS c
LEFT JOIN apis AS a ON a.id = c.api
LEFT JOIN copy_kinds AS k ON k.id = c.op AND a.category = 'copy';
