// SPDX-License-Identifier: Apache-2.0
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "core/log.hpp"
#include "core/untrusted.hpp"

namespace gpuwhy::cli {

namespace {
std::string g_invocation;
}

const std::string& invocation() { return g_invocation; }

// Error lines name files, tables and processes the user or a traced process chose: one line,
// escaped, whatever they hold.
int fail(const std::string& line, int code) {
  std::fprintf(stderr, "gpuwhy: %s\n", untrusted::shown(line).c_str());
  return code;
}

int run_cli(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) g_invocation += (i ? " " : "") + std::string(argv[i]);
  CLI::App app{
      "gpuwhy: why is my GPU job slow? eBPF tracing of GPU API calls and of what the host "
      "did to the calling threads, with ranked root causes."};
  app.set_version_flag("--version", GPUWHY_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // -v works after the subcommand too
  int verbosity = 0;
  app.add_flag("-v,--verbose", verbosity, "More log output (repeat for debug)");

  Runner run;
  add_check_command(app, run);
  add_trace_command(app, run);
  add_explain_command(app, run);
  add_audit_command(app, run);
  add_query_command(app, run);
  add_export_command(app, run);
  add_mcp_command(app, run);
  add_generate_command(app, run);  // hidden: man page and completions (generate_cmd.cpp)

  const auto known = [&](const char* name) {
    return !app.get_subcommands([&](const CLI::App* c) { return c->get_name() == name; }).empty();
  };
  if (argc > 1 && argv[1][0] != '-' && !known(argv[1]))
    return fail(std::string("unknown command '") + argv[1] +
                    "'; the commands are check, trace, explain, audit, query, export and mcp (see "
                    "'gpuwhy --help')",
                2);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + "; see 'gpuwhy --help'", 2);
  }
  setup_logging(verbosity);
  if (!run) return fail("no command given; see 'gpuwhy --help'", 2);
  try {
    return run();
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what() + "; please report it", 70);
  }
}

}  // namespace gpuwhy::cli
