// SPDX-License-Identifier: Apache-2.0
// Runs one SQL statement with DuckDB over a gpuwhy Parquet export directory, each <table>.parquet
// a view named <table>, and prints the result as JSON rows (64-bit integers as strings, so
// nothing is rounded on the way): export_test compares them with gpuwhy query's.
//   node duckdb_sql.mjs DIR SQL   (GW_DUCKDB_DIR: where @duckdb/node-api is installed)
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(process.env.GW_DUCKDB_DIR + '/');
const { DuckDBInstance } = require('@duckdb/node-api');
const [dir, sql] = process.argv.slice(2);
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
for (const f of readdirSync(dir).sort()) {
  if (!f.endsWith('.parquet')) continue;
  const path = `${dir}/${f}`.replaceAll("'", "''");
  await con.run(`CREATE VIEW "${f.slice(0, -8)}" AS SELECT * FROM read_parquet('${path}')`);
}
const r = await con.runAndReadAll(sql);
console.log(JSON.stringify(r.getRowObjectsJson()));
