// SPDX-License-Identifier: Apache-2.0
// The man page and the shell completions that `gpuwhy generate` makes (the package installs
// them): the man page documents every command and every option that CLI11's own --help lists
// and renders with man/groff; the bash completion completes commands, options and option values
// in a real bash; the zsh completion does the same in a real interactive zsh (zpty).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "shell_run.hpp"

namespace gpuwhy::testing {
namespace {

namespace fs = std::filesystem;

const std::string kGpuwhy = std::string(GW_BINARY_DIR) + "/gpuwhy";

std::string generate(const std::string& what) {
  ShellResult r = shell(kGpuwhy + " generate " + what);
  EXPECT_EQ(r.exit_code, 0) << what;
  return r.out;
}

struct TempFile {
  explicit TempFile(const std::string& name, const std::string& text) {
    dir = fs::temp_directory_path() / ("gw_pkg_" + std::to_string(::getpid()) + "_" + name);
    fs::create_directories(dir);
    path = dir / name;
    std::ofstream(path) << text;
  }
  ~TempFile() { fs::remove_all(dir); }
  fs::path dir, path;
};

// The names a section of CLI11's --help lists ("Options:", "Subcommands:"): the first word of
// each indented line, split at commas ("-d,--duration").
std::vector<std::string> help_names(const std::string& help, const std::string& section) {
  std::vector<std::string> names;
  std::istringstream in(help);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      inside = line.rfind(section, 0) == 0;
      continue;
    }
    if (!inside) continue;
    std::istringstream words(line);
    std::string first;
    words >> first;
    // Entries start at column 2; a wrapped description continues further right.
    if (line.size() < 3 || line[2] == ' ' || (section == "Options:" && first[0] != '-')) continue;
    std::stringstream parts(first);
    std::string name;
    while (std::getline(parts, name, ',')) names.push_back(name);
  }
  return names;
}

std::string roff_dashes(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

TEST(ManPage, DocumentsEveryCommandAndEveryOptionItsHelpLists) {
  const std::string man = generate("man");
  const std::vector<std::string> commands =
      help_names(shell(kGpuwhy + " --help").out, "Subcommands:");
  ASSERT_GE(commands.size(), 5u) << "check, trace, explain, query, export";
  int options = 0;
  for (const std::string& cmd : commands) {
    SCOPED_TRACE(cmd);
    EXPECT_NE(man.find(".SS \"gpuwhy " + cmd + "\""), std::string::npos);
    for (const std::string& name :
         help_names(shell(kGpuwhy + " " + cmd + " --help").out, "Options:")) {
      EXPECT_NE(man.find("\\fB" + roff_dashes(name) + "\\fR"), std::string::npos) << name;
      ++options;
    }
  }
  EXPECT_GE(options, 40) << "trace alone has more than 20 options";
  EXPECT_EQ(man.find("gpuwhy generate\""), std::string::npos) << "the hidden command stays hidden";
  EXPECT_EQ(man.find("--ring-kb"), std::string::npos) << "hidden options stay hidden";
}

TEST(ManPage, RendersWithoutWarnings) {
  if (!have_tool("groff")) GTEST_SKIP() << "groff is not installed (Debian package groff-base)";
  TempFile page("gpuwhy.1", generate("man"));
  // -ww: every warning; -z: no output, only the diagnostics.
  ShellResult warnings = shell("groff -man -Tutf8 -ww -z " + shell_quote(page.path) + " 2>&1");
  EXPECT_EQ(warnings.exit_code, 0);
  EXPECT_EQ(warnings.out, "") << "groff warns about the generated page";
  const std::string viewer = have_tool("man") ? "MANWIDTH=100 man -l " : "groff -man -Tutf8 ";
  ShellResult text = shell(viewer + shell_quote(page.path) + " 2>&1 | col -b");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("gpuwhy trace"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("--duration"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("EXIT STATUS"), std::string::npos) << text.out;
}

// Completes the words in a real bash with the generated script: COMP_WORDS/COMP_CWORD as bash
// sets them, the last word being the one under the cursor. Returns COMPREPLY, space-separated.
std::string bash_complete(const std::string& script, const std::string& words) {
  const std::string cmd = "bash --norc --noprofile -c " +
                          shell_quote("source " + script + " && COMP_WORDS=(" + words +
                                      ") && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && _gpuwhy && "
                                      "echo \"${COMPREPLY[*]}\"") +
                          " 2>&1";
  ShellResult r = shell(cmd);
  EXPECT_EQ(r.exit_code, 0) << words << ": " << r.out;
  return r.out.substr(0, r.out.find_last_not_of('\n') + 1);
}

TEST(BashCompletion, CompletesCommandsOptionsAndValues) {
  TempFile script("gpuwhy.bash", generate("bash-completion"));
  const std::string s = shell_quote(script.path);
  ShellResult registered =
      shell("bash --norc --noprofile -c " + shell_quote("source " + s + " && complete -p gpuwhy"));
  EXPECT_EQ(registered.out, "complete -F _gpuwhy gpuwhy\n");

  EXPECT_EQ(bash_complete(s, "gpuwhy tr"), "trace");
  EXPECT_EQ(bash_complete(s, "gpuwhy e"), "explain export");
  EXPECT_EQ(bash_complete(s, "gpuwhy ge"), "") << "the hidden command is not offered";
  EXPECT_EQ(bash_complete(s, "gpuwhy trace --dur"), "--duration");
  EXPECT_EQ(bash_complete(s, "gpuwhy -v trace --entry-only l"), "launch");
  EXPECT_EQ(bash_complete(s, "gpuwhy trace --without t"), "tcp");
  EXPECT_EQ(bash_complete(s, "gpuwhy export --format p"), "parquet perfetto");
  EXPECT_EQ(bash_complete(s, "gpuwhy export --format pe"), "perfetto");
  EXPECT_EQ(bash_complete(s, "gpuwhy query --format j"), "json");
  // After `trace --` the command to launch completes as a command.
  EXPECT_NE(bash_complete(s, "gpuwhy trace -o t.db -- bas").find("bash"), std::string::npos);
  // A value that is a path completes as a file.
  EXPECT_EQ(bash_complete(s, "gpuwhy explain --db " + script.dir.string() + "/gpuwhy.b"),
            script.path.string());
}

// Runs an interactive zsh in a pseudo-terminal (zsh/zpty), types `line` and TAB, and returns
// what the completion system offered: every match handed to compadd, one per line.
std::string zsh_complete(const fs::path& fpath_dir, const std::string& line) {
  const std::string driver = R"ZSH(
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PROMPT='' RPROMPT=''; unsetopt zle_bracketed_paste"
zpty -w z "fpath=($1 \$fpath); autoload -Uz compinit && compinit -u -D"
# Print every match the completion functions add, then add them as usual.
zpty -w z 'compadd() { local -a hits; builtin compadd -O hits "$@"; print -rl -- "@@"${^hits}; builtin compadd "$@" }'
zpty -w z "print READY"
out=''
# Bounded waits (20 s): a shell that does not answer fails the test instead of hanging it.
for i in {1..400}; do
  if zpty -r -t z chunk; then out+=$chunk; [[ $out == *READY*READY* ]] && break; else sleep 0.05; fi
done
[[ $out == *READY*READY* ]] || { print -u2 "zsh did not start: $out"; exit 4 }
zpty -w -n z "$2"$'\t'
zpty -w z $'\C-e\C-u''print DONE''D''ONE'
out=''
for i in {1..400}; do
  if zpty -r -t z chunk; then out+=$chunk; [[ $out == *DONEDONE* ]] && break; else sleep 0.05; fi
done
zpty -d z
print -r -- "$out" | grep -ao '@@[^[:cntrl:]]*' | sed 's/^@@//' | sort -u
)ZSH";
  TempFile drv("driver.zsh", driver);
  ShellResult r = shell("zsh -f " + shell_quote(drv.path) + " " + shell_quote(fpath_dir) + " " +
                        shell_quote(line) + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return r.out;
}

TEST(ZshCompletion, CompletesCommandsOptionsAndValues) {
  if (!have_tool("zsh")) GTEST_SKIP() << "zsh is not installed (scripts/install-deps installs it)";
  TempFile fn("_gpuwhy", generate("zsh-completion"));
  ShellResult syntax = shell("zsh -n " + shell_quote(fn.path) + " 2>&1");
  ASSERT_EQ(syntax.exit_code, 0) << syntax.out;
  EXPECT_EQ(zsh_complete(fn.dir, "gpuwhy tr"), "trace\n");
  EXPECT_EQ(zsh_complete(fn.dir, "gpuwhy trace --dur"), "--duration\n");
  EXPECT_EQ(zsh_complete(fn.dir, "gpuwhy trace --entry-only l"), "launch\n");
  EXPECT_EQ(zsh_complete(fn.dir, "gpuwhy export --format n"), "nsight\n");
  EXPECT_EQ(zsh_complete(fn.dir, "gpuwhy e"), "explain\nexport\n");
  // After `trace --` the command to launch completes as a command.
  EXPECT_NE(zsh_complete(fn.dir, "gpuwhy trace -o t.db -- ech").find("echo\n"), std::string::npos);
}

}  // namespace
}  // namespace gpuwhy::testing
