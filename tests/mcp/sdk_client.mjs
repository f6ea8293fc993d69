// SPDX-License-Identifier: Apache-2.0
// A real MCP client, the official TypeScript SDK's, talking to `gpuwhy mcp` over stdio: it starts
// the server, lists the tools and resources, calls explain, audit, query (good SQL, two columns of
// one name, bad SQL, a wrong argument), chain_evidence and an unknown tool, reads the schema
// resource, then serves a file that is no trace and calls a tool on it, and prints what it got as
// one JSON object for tests/unit/mcp_sdk_test.cpp to check. The SDK validates the
// structuredContent of explain, audit and query against their outputSchema itself (callTool
// throws when it does not conform); the same validator is run on the reports of REPORT files
// (`gpuwhy explain --json` of other traces) and on documents that must not conform.
//   node sdk_client.mjs GPUWHY TRACE NOT_A_TRACE [REPORT...]
//   (GW_MCP_DIR: where @modelcontextprotocol/sdk is installed)
import { createRequire } from 'node:module';

const require = createRequire(process.env.GW_MCP_DIR + '/');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { AjvJsonSchemaValidator } = require('@modelcontextprotocol/sdk/validation/ajv');
const { readFileSync } = require('node:fs');
const { isDeepStrictEqual } = require('node:util');
const [gpuwhy, trace, notTrace, ...reports] = process.argv.slice(2);

const transport = new StdioClientTransport({ command: gpuwhy, args: ['mcp', '--db', trace], stderr: 'pipe' });
let stderr = '';
transport.stderr?.on('data', (d) => { stderr += d; });
const client = new Client({ name: 'gpuwhy-test', version: '1.0.0' });
await client.connect(transport);

const text = (r) => r.content.map((c) => c.text).join('');
const out = { server: client.getServerVersion(), capabilities: client.getServerCapabilities() };
const tools = (await client.listTools()).tools;
out.tools = tools.map((t) => ({ name: t.name, schema: t.inputSchema,
  output_schema: t.outputSchema !== undefined }));
// A structured result: the text block parsed is the structuredContent, and the text is compact.
const structured = (r) => ({
  structured: r.structuredContent !== undefined,
  same_as_text: isDeepStrictEqual(r.structuredContent, JSON.parse(text(r))),
  compact: !text(r).includes('\n'), text_bytes: Buffer.byteLength(text(r)) });

const explain = await client.callTool({ name: 'explain', arguments: {} });
out.explain = { isError: explain.isError === true, report: JSON.parse(text(explain)),
  ...structured(explain) };
const audit = await client.callTool({ name: 'audit', arguments: { price_per_gpu_hour: 2 } });
out.audit = { isError: audit.isError === true, report: JSON.parse(text(audit)),
  ...structured(audit) };
const query = await client.callTool({
  name: 'query', arguments: { sql: 'SELECT count(*) AS n FROM api_calls', max_rows: 5 } });
out.query = { isError: query.isError === true, result: JSON.parse(text(query)),
  ...structured(query) };
// Two columns of one name: a join's two pids, and the plainest case. Both values must come back.
const dup = await client.callTool({ name: 'query', arguments: { sql:
  'SELECT 1 AS a, 2 AS a, p.pid, t.pid FROM processes AS p JOIN threads AS t ON t.pid = p.pid ' +
  'ORDER BY t.tid LIMIT 1' } });
out.duplicate_columns = { isError: dup.isError === true, result: JSON.parse(text(dup)) };
const badSql = await client.callTool({ name: 'query', arguments: { sql: 'SELEC 1' } });
out.bad_sql = { isError: badSql.isError === true, text: text(badSql) };
const badArg = await client.callTool({ name: 'query', arguments: { sql: 42 } });
out.bad_argument = { isError: badArg.isError === true, text: text(badArg) };
const chain = await client.callTool({ name: 'chain_evidence', arguments: { rank: 1 } });
out.chain = { isError: chain.isError === true, chain: JSON.parse(text(chain)),
  structured: chain.structuredContent !== undefined };

// The output schemas through the SDK's own validator: every report given conforms, and
// documents that are not such a result do not (a schema that took anything would not test).
const validator = new AjvJsonSchemaValidator();
const check = (tool, doc) => validator.getValidator(tools.find((t) => t.name === tool).outputSchema)(doc);
out.reports = reports.map((f) => {
  const r = check('explain', JSON.parse(readFileSync(f, 'utf8')));
  return { file: f, valid: r.valid, error: r.errorMessage ?? null };
});
const report = JSON.parse(text(explain));
const noVerdict = { ...report };
delete noVerdict.verdict;
const wrongRank = structuredClone(report);
if (wrongRank.chains.length) wrongRank.chains[0].rank = 'first';
out.refused = {
  explain_without_verdict: check('explain', noVerdict).valid,
  explain_rank_as_string: check('explain', wrongRank).valid,
  audit_as_explain: check('explain', JSON.parse(text(audit))).valid,
  explain_as_audit: check('audit', report).valid,
  query_with_unknown_member: check('query', { ...JSON.parse(text(query)), extra: 1 }).valid,
};
try {
  await client.callTool({ name: 'no_such_tool', arguments: {} });
  out.unknown_tool = { thrown: false };
} catch (e) {
  out.unknown_tool = { thrown: true, code: e.code, message: e.message };
}

out.resources = (await client.listResources()).resources.map((r) => r.uri);
const schema = await client.readResource({ uri: 'gpuwhy://schema' });
out.schema = { mimeType: schema.contents[0].mimeType, text: schema.contents[0].text };
await client.ping();

await client.close();
out.stderr = stderr;

// A file that is no trace: the server serves, and a tool call's error result says why.
const badTransport = new StdioClientTransport({ command: gpuwhy, args: ['mcp', '--db', notTrace],
  stderr: 'pipe' });
let badStderr = '';
badTransport.stderr?.on('data', (d) => { badStderr += d; });
const badClient = new Client({ name: 'gpuwhy-test', version: '1.0.0' });
await badClient.connect(badTransport);
await badClient.listTools();
out.not_a_trace = {};
for (const [tool, args] of [['explain', {}], ['query', { sql: 'SELECT 1' }]]) {
  try {
    const r = await badClient.callTool({ name: tool, arguments: args });
    out.not_a_trace[tool] = { isError: r.isError === true, text: text(r),
      structured: r.structuredContent !== undefined };
  } catch (e) {
    out.not_a_trace[tool] = { thrown: true, message: e.message };
  }
}
await badClient.ping();
await badClient.close();
out.not_a_trace.stderr = badStderr;
console.log(JSON.stringify(out));
