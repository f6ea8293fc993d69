// SPDX-License-Identifier: Apache-2.0
// Reads every CSV, JSONL or Parquet file of a gpuwhy export directory with DuckDB and prints
// "<table> <rows>" per file: export_test compares the counts with the trace's.
//   node duckdb_counts.mjs DIR csv|jsonl|parquet   (GW_DUCKDB_DIR: where @duckdb/node-api is)
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(process.env.GW_DUCKDB_DIR + '/');
const { DuckDBInstance } = require('@duckdb/node-api');
const [dir, format] = process.argv.slice(2);
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
for (const f of readdirSync(dir).sort()) {
  if (!f.endsWith('.' + format)) continue;
  const path = `${dir}/${f}`.replaceAll("'", "''");
  // Explicit readers: all_varchar keeps a column DuckDB cannot type (64-bit bit patterns) readable.
  const from = format === 'csv'
    ? `read_csv('${path}', header=true, all_varchar=true)`
    : format === 'parquet' ? `read_parquet('${path}')`
    : `read_json('${path}', format='newline_delimited')`;
  const r = await con.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM ${from}`);
  console.log(`${f.slice(0, -format.length - 1)} ${r.getRowObjectsJson()[0].n}`);
}
