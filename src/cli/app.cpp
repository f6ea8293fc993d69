// SPDX-License-Identifier: Apache-2.0
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/suggest.hpp"
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

// The flags `cmd` and the top level accept, spelled as typed ("--since", "-o").
std::vector<std::string> flags_of(const CLI::App& top, const CLI::App* cmd) {
  std::vector<std::string> out;
  for (const CLI::App* a : {cmd, &top}) {
    if (!a) continue;
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
      for (const std::string& n : o->get_snames()) out.push_back("-" + n);
    }
  }
  return out;
}

// For an unknown flag on the command line, the known one it is probably a typo of:
// "; did you mean --since?" (empty when none is close).
std::string flag_hint(const CLI::App& top, const CLI::App* cmd, int argc, char** argv) {
  const std::vector<std::string> known = flags_of(top, cmd);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9')) continue;
    if (const size_t eq = a.find('='); eq != std::string::npos) a.resize(eq);
    if (std::find(known.begin(), known.end(), a) != known.end()) continue;
    if (a[1] != '-' && a.size() > 2) continue;  // -abc: short flags together, or a value
    const std::string near = closest(a, known);
    if (!near.empty()) return "; did you mean " + near + " instead of " + a + "?";
  }
  return "";
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
  if (argc > 1 && argv[1][0] != '-' && !known(argv[1])) {
    const std::string near =
        closest(argv[1], {"check", "trace", "explain", "audit", "query", "export", "mcp"});
    return fail(std::string("unknown command '") + argv[1] + "'" +
                    (near.empty() ? "" : "; did you mean '" + near + "'?") +
                    " The commands are check, trace, explain, audit, query, export and mcp (see "
                    "'gpuwhy --help')",
                2);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const CLI::App* cmd = nullptr;
    if (argc > 1 && argv[1][0] != '-' && known(argv[1])) cmd = app.get_subcommand(argv[1]);
    const std::string help =
        cmd ? "gpuwhy " + cmd->get_name() + " --help" : std::string("gpuwhy --help");
    const std::string hint = flag_hint(app, cmd, argc, argv);
    return fail(std::string(e.what()) + hint + (hint.empty() ? "; see '" : " See '") + help + "'",
                2);
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
