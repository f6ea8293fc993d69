// SPDX-License-Identifier: Apache-2.0
// Loads a gpuwhy Parquet export into DuckDB with the export's own duckdb.sql (its tables and
// gpuwhy's views), then runs each SQL statement given and prints its result as one line of JSON
// rows (64-bit integers as strings): export_test compares the views' answers with gpuwhy query's.
//   node duckdb_views.mjs DIR SQL...   (GW_DUCKDB_DIR: where @duckdb/node-api is installed)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(process.env.GW_DUCKDB_DIR + '/');
const { DuckDBInstance } = require('@duckdb/node-api');
const [dir, ...statements] = process.argv.slice(2);
process.chdir(dir);  // duckdb.sql names the files relative to the export directory
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
await con.run(readFileSync('duckdb.sql', 'utf8'));
for (const sql of statements) {
  const r = await con.runAndReadAll(sql);
  console.log(JSON.stringify(r.getRowObjectsJson()));
}
