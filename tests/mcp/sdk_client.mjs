// SPDX-License-Identifier: Apache-2.0
// A real MCP client, the official TypeScript SDK's, talking to `gpuwhy mcp` over stdio: it starts
// the server, lists the tools and resources, calls explain, query (good SQL, two columns of one
// name, bad SQL, a wrong argument), chain_evidence and an unknown tool, reads the schema resource,
// and prints what it got as one JSON object for tests/unit/mcp_sdk_test.cpp to check.
//   node sdk_client.mjs GPUWHY TRACE   (GW_MCP_DIR: where @modelcontextprotocol/sdk is installed)
import { createRequire } from 'node:module';

const require = createRequire(process.env.GW_MCP_DIR + '/');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const [gpuwhy, trace] = process.argv.slice(2);

const transport = new StdioClientTransport({ command: gpuwhy, args: ['mcp', '--db', trace], stderr: 'pipe' });
let stderr = '';
transport.stderr?.on('data', (d) => { stderr += d; });
const client = new Client({ name: 'gpuwhy-test', version: '1.0.0' });
await client.connect(transport);

const text = (r) => r.content.map((c) => c.text).join('');
const out = { server: client.getServerVersion(), capabilities: client.getServerCapabilities() };
out.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, schema: t.inputSchema }));

const explain = await client.callTool({ name: 'explain', arguments: {} });
out.explain = { isError: explain.isError === true, report: JSON.parse(text(explain)) };
const query = await client.callTool({
  name: 'query', arguments: { sql: 'SELECT count(*) AS n FROM api_calls', max_rows: 5 } });
out.query = { isError: query.isError === true, result: JSON.parse(text(query)) };
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
out.chain = { isError: chain.isError === true, chain: JSON.parse(text(chain)) };
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
console.log(JSON.stringify(out));
