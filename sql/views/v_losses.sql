-- SPDX-License-Identifier: Apache-2.0
-- Events lost, by where and why, then a 'total' row: "can I trust this trace?" A non-zero total
-- means counts and times taken from the event tables are lower bounds. source: bpf | reader |
-- store; causes are listed in docs/schema.md ("Losses").
CREATE VIEW v_losses AS
SELECT source, cause, count FROM (
  SELECT source, cause, count, 0 AS k FROM losses
  UNION ALL
  SELECT 'total', 'all', coalesce(sum(count), 0), 1 FROM losses
)
ORDER BY k, source, cause;
