// SPDX-License-Identifier: Apache-2.0
// `gpuwhy mcp [--db FILE]`: a Model Context Protocol server on stdin/stdout (docs/mcp.md), so an
// AI assistant can explain and query a trace. Read-only like explain and query; no socket.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "mcp/server.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

struct McpFlags {
  std::string db = kDefaultDb;
  unsigned timeout_s = 60;
  int64_t max_memory_mb = 4096;
  int64_t max_rows = 5000;
};

int run_mcp(const McpFlags& f) {
  // The trace is checked once here for the client's log; each tool call opens it again (a trace
  // still being recorded shows its newest rows). A file that cannot be opened (no such file, not
  // a trace, damaged) does not stop the server: a client shows a server that exits at start only
  // as "Connection closed", while each tool call's error result carries this line to the user.
  {
    auto file = store::TraceFile::open(f.db);
    if (!file)
      fail(file.error().line() + " (serving anyway: each tool call answers this as its error)", 0);
    else if (const std::string w = file.value()->incomplete_warning(); !w.empty())
      fail("warning: " + w, 0);
    if (file && !file.value()->wal_warning().empty())
      fail("warning: " + file.value()->wal_warning(), 0);
  }
  if (isatty(STDIN_FILENO))
    fail("MCP server for " + f.db +
             " on stdin/stdout: an MCP client starts this command (docs/mcp.md); Ctrl-D ends it",
         0);
  // A client that closes its end must not kill the server mid-write: the write fails instead.
  std::signal(SIGPIPE, SIG_IGN);
  mcp::ServerOptions options;
  options.db = f.db;
  options.query_timeout_s = f.timeout_s;
  options.query_max_memory_mb = f.max_memory_mb;
  options.max_rows = f.max_rows;
  options.default_rows = std::min<int64_t>(options.default_rows, f.max_rows);
  mcp::Server server(options);
  return server.serve(stdin, stdout);
}

}  // namespace

void add_mcp_command(CLI::App& root, Runner& run) {
  auto flags = std::make_shared<McpFlags>();
  CLI::App* cmd = root.add_subcommand(
      "mcp",
      "Serve a trace to an AI assistant: a Model Context Protocol server on stdin/stdout with "
      "read-only tools (explain, query, ...) and the schema (docs/mcp.md)");
  cmd->add_option("--db", flags->db, "Trace file to serve (opened read-only)")
      ->capture_default_str();
  cmd->add_option("--timeout", flags->timeout_s,
                  "Stop a query tool's statement that runs longer than this many seconds (0: no "
                  "limit)")
      ->capture_default_str();
  cmd->add_option("--max-memory", flags->max_memory_mb,
                  "Stop a query tool's statement once SQLite holds this many MiB (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-rows", flags->max_rows,
                  "The most rows one query call may return (it asks for 200 unless it says)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}))
      ->capture_default_str();
  cmd->callback([&run, flags] { run = [flags] { return run_mcp(*flags); }; });
}

}  // namespace gpuwhy::cli
