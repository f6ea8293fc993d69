// SPDX-License-Identifier: Apache-2.0
// The Python line behind every GPU call, on the real interpreters of this machine: Python
// programs call the simulated runtime through ctypes (the GIL released during the call, as
// PyTorch's calls are) from known lines, and the trace must name each call's file, function and
// line, with the line's source text. A scenario: a training loop's per-step scalar read-back is
// the top chain, and explain names its line.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "discover/python.hpp"
#include "store/store.hpp"
#include "support/perfetto_decode.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

struct Interpreter {
  std::string name;  // "3.10", "debian-3.11"
  std::string path;  // empty: look under the pyenv roots
  std::string pyenv_version;
};

void PrintTo(const Interpreter& i, std::ostream* os) { *os << i.name; }

bool executable(const std::string& p) { return access(p.c_str(), X_OK) == 0; }

// The interpreter's path, or empty with why in `why`. pyenv lives under $HOME or, in CI (root on
// a fresh clone), /root.
std::string find_interpreter(const Interpreter& i, std::string* why) {
  if (!i.path.empty()) {
    if (executable(i.path)) return i.path;
    *why = i.path + " is not installed";
    return {};
  }
  const std::string minor = i.name;
  std::vector<std::string> roots;
  if (const char* home = std::getenv("HOME"))
    roots.push_back(std::string(home) + "/.pyenv/versions");
  roots.push_back("/root/.pyenv/versions");
  for (const std::string& r : roots) {
    const std::string p = r + "/" + i.pyenv_version + "/bin/python" + minor;
    if (executable(p)) return p;
  }
  *why = "no pyenv Python " + i.pyenv_version + " under $HOME/.pyenv or /root/.pyenv";
  return {};
}

std::string script(const std::string& name) {
  return std::string(GW_SOURCE_DIR) + "/tests/workloads/python/" + name;
}

// Line numbers of the lines of `file` holding `marker` ("# SITE 3 gen" -> {3: (line, "gen")}).
std::map<int, std::pair<int, std::string>> markers(const std::string& file,
                                                   const std::string& tag) {
  std::map<int, std::pair<int, std::string>> out;
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t at = line.find("# " + tag + " ");
    if (at == std::string::npos) continue;
    std::istringstream rest(line.substr(at + tag.size() + 3));
    int site = 0;
    std::string function;
    rest >> site >> function;
    out[site] = {n, function};
  }
  return out;
}

std::string source_of(const std::string& file, int line_no) {
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (n == line_no) {
      const size_t b = line.find_first_not_of(" \t");
      const size_t e = line.find_last_not_of(" \t\r");
      return line.substr(b, e - b + 1);
    }
  return {};
}

class PythonFrames : public ::testing::TestWithParam<Interpreter> {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    std::string why;
    python_ = find_interpreter(GetParam(), &why);
    if (python_.empty()) GTEST_SKIP() << why;
  }
  // `args` (after the interpreter) run under the tracer with the simulated runtime probed;
  // the trace opened into `trace`.
  RunResult traced(const std::vector<std::string>& args, std::unique_ptr<store::TraceFile>* trace) {
    const std::string db = dir.file("t.db");
    Agent agent(db, {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13"}, dir);
    EXPECT_TRUE(agent.ready()) << agent.stderr_text();
    std::vector<std::string> cmd{python_};
    cmd.insert(cmd.end(), args.begin(), args.end());
    RunResult w = run(cmd);
    EXPECT_EQ(w.exit_code, 0) << w.err;
    EXPECT_EQ(agent.stop(), 0) << agent.stderr_text();
    agent_said_ = agent.stderr_text();
    auto f = store::TraceFile::open(db);
    EXPECT_TRUE(f.ok()) << f.error().line();
    *trace = f.ok() ? std::move(f.value()) : nullptr;
    return w;
  }
  std::string python_;
  std::string agent_said_;
  TempDir dir;
};

std::unique_ptr<store::TraceFile> open_trace(const std::string& db) {
  auto f = store::TraceFile::open(db);
  EXPECT_TRUE(f.ok()) << f.error().line();
  return f.ok() ? std::move(f.value()) : nullptr;
}

std::vector<std::vector<std::string>> rows_of(const store::TraceFile& f, const std::string& sql) {
  auto q = store::run_query(f, sql);
  EXPECT_TRUE(q.ok()) << (q.ok() ? "" : q.error().line()) << " in " << sql;
  if (!q.ok()) return {};
  std::vector<std::vector<std::string>> out;
  for (size_t r = 0; r < q->rows.size(); ++r) {
    std::vector<std::string> row = q->rows[r];
    for (size_t c = 0; c < row.size(); ++c)
      if (q->is_null[r][c]) row[c] = "NULL";
    out.push_back(row);
  }
  return out;
}

// The python losses of a trace, checked for none but what asynchronous CPU samples may cause: a
// sample interrupts a thread at any instruction, inside a frame push too (its code not written
// yet: frame_not_code), and its names are read after it was taken, when short-lived code may be
// gone (frame_names_unreadable). Each such frame is counted, as it must be; they may be one
// sample in a hundred. Every call's stack is checked exactly by the tests themselves. Returns the
// causes that have a row.
std::set<std::string> expect_no_python_losses_but_samples(const store::TraceFile& f) {
  const auto samples = rows_of(f, "SELECT count(*) FROM cpu_samples");
  const int64_t allowed = samples.empty() ? 0 : std::stoll(samples[0][0]) / 100;
  std::set<std::string> causes;
  for (const auto& r : rows_of(f, "SELECT cause, count FROM losses WHERE source = 'python'")) {
    causes.insert(r[0]);
    if (r[0] == "frame_not_code" || r[0] == "frame_names_unreadable")
      EXPECT_LE(std::stoll(r[1]), allowed) << r[0] << " (a sample in a hundred at most)";
    else
      EXPECT_EQ(r[1], "0") << r[0];
  }
  return causes;
}

// The Perfetto export of a Python trace, decoded with Perfetto's own proto: every call whose
// stack is named has its innermost frame as the slice's source location (interned once per
// file, function and line), the same set of lines the trace holds; v_calls has them too.
void expect_perfetto_slices_carry_python_lines(const store::TraceFile& f, const std::string& db,
                                               TempDir& dir) {
  if (run({"/bin/sh", "-c", "command -v protoc"}).exit_code != 0) {
    std::cerr << "protoc not installed (scripts/install-export-tools): Perfetto part not run\n";
    return;
  }
  const std::string pf = dir.file("t.pftrace");
  RunResult e = run({gpuwhy_binary(), "export", "--db", db, "--format", "perfetto", "-o", pf});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  RunResult d = decode_with_perfettos_proto(pf);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  int64_t with_location = 0;
  std::set<std::pair<std::string, std::string>> interned;  // (file, line)
  std::istringstream lines(d.out);
  std::string block, file, line_no;
  for (std::string line; std::getline(lines, line);) {
    const std::string l = line.substr(std::min(line.find_first_not_of(' '), line.size()));
    if (l.ends_with(" {")) block = l.substr(0, l.size() - 2);
    if (l.starts_with("source_location_iid: ")) ++with_location;
    if (block == "source_locations") {
      if (l.starts_with("file_name: ")) file = l.substr(12, l.size() - 13);
      if (l.starts_with("line_number: ")) line_no = l.substr(13);
      if (l == "}") interned.insert({file, line_no}), block.clear(), file.clear(), line_no.clear();
    }
  }
  EXPECT_EQ(std::to_string(with_location),
            rows_of(f,
                    "SELECT count(*) FROM api_calls AS c JOIN python_frames AS p ON "
                    "p.py_stack_id = c.py_stack AND p.depth = 0 WHERE p.file NOT NULL")[0][0]);
  std::set<std::pair<std::string, std::string>> want;
  for (const auto& r : rows_of(f,
                               "SELECT DISTINCT p.file, p.line FROM api_calls AS c JOIN "
                               "python_frames AS p ON p.py_stack_id = c.py_stack AND p.depth = 0 "
                               "WHERE p.file NOT NULL"))
    want.insert({r[0], r[1]});
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(interned, want);
  // v_calls gives each call its line as well.
  EXPECT_EQ(
      std::to_string(with_location),
      rows_of(f, "SELECT count(*) FROM v_calls WHERE py_file NOT NULL AND py_line NOT NULL")[0][0]);
}

// Every site's calls carry a Python stack whose innermost frame is that site's file, function
// and line, with its source text; the nested function's caller is the frame below it.
TEST_P(PythonFrames, EveryCallNamesItsLine) {
  const bool py310 = GetParam().name == "3.10";
  const std::string db = dir.file("t.db");
  Agent agent(db, {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13"}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  const std::string file = script("call_sites.py");
  RunResult w = run({python_, file, sim_dir() + "/libcudart.so.13", "3"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  SCOPED_TRACE("agent said:\n" + agent.stderr_text());

  const auto supported = rows_of(*f, "SELECT supported, version, detail FROM python_processes");
  ASSERT_EQ(supported.size(), 1u);
  ASSERT_EQ(supported[0][0], "1") << supported[0][2];
  // A supported process's detail says what was found: where its layout came from, how tested.
  EXPECT_NE(supported[0][2].find("layout: "), std::string::npos) << supported[0][2];
  EXPECT_NE(supported[0][2].find("tested on a live interpreter"), std::string::npos)
      << supported[0][2];

  const auto sites = markers(file, "SITE");
  ASSERT_EQ(sites.size(), 6u);
  for (const auto& [site, where] : sites) {
    const auto& [line, qualname] = where;
    // 3.10's code objects carry the bare name only (co_qualname came in 3.11).
    const std::string function = py310 ? qualname.substr(qualname.rfind('.') + 1) : qualname;
    SCOPED_TRACE("site " + std::to_string(site) + " (" + function + ")");
    const std::string from = " FROM api_calls c JOIN apis a ON a.id = c.api";
    const std::string filter =
        " WHERE a.name = 'cudaMalloc' AND c.bytes = " + std::to_string(4096 * site);
    const auto n = rows_of(*f, "SELECT count(*), count(c.py_stack)" + from + filter);
    ASSERT_EQ(n.size(), 1u);
    // Three rounds; the generator allocates twice a round.
    EXPECT_EQ(n[0][0], site == 3 ? "6" : "3");
    EXPECT_EQ(n[0][1], n[0][0]) << "every call has a Python stack";
    const auto frames = rows_of(
        *f, "SELECT DISTINCT p.file, p.function, p.line, p.source" + from +
                " JOIN python_frames p ON p.py_stack_id = c.py_stack AND p.depth = 0" + filter);
    ASSERT_EQ(frames.size(), 1u) << "one innermost frame for all of a site's calls";
    EXPECT_EQ(frames[0][0], file);
    EXPECT_EQ(frames[0][1], function);
    EXPECT_EQ(frames[0][2], std::to_string(line));
    EXPECT_EQ(frames[0][3], source_of(file, line));
  }
  // The nested function was called from outer(), at the line marked CALLER 2.
  const int caller = markers(file, "CALLER").at(2).first;
  const auto below =
      rows_of(*f,
              "SELECT DISTINCT p.function, p.line FROM api_calls c JOIN python_frames p ON "
              "p.py_stack_id = c.py_stack AND p.depth = 1 WHERE c.bytes = 8192");
  ASSERT_EQ(below.size(), 1u);
  EXPECT_EQ(below[0][0], "outer");
  EXPECT_EQ(below[0][1], std::to_string(caller));
  // The worker thread's calls come from another thread than main's.
  const auto threads = rows_of(*f, "SELECT count(DISTINCT tid) FROM api_calls WHERE bytes = " +
                                       std::to_string(4096 * 6) + " OR bytes = 4096");
  EXPECT_EQ(threads[0][0], "2");
  // The views: each site is a row of v_python_sites and of v_call_sites.
  EXPECT_EQ(rows_of(*f, "SELECT count(*) FROM v_python_sites WHERE name = 'cudaMalloc'")[0][0],
            "6");
  EXPECT_EQ(rows_of(*f,
                    "SELECT count(*) FROM v_call_sites WHERE name = 'cudaMalloc' AND "
                    "py_line IS NOT NULL")[0][0],
            "6");
  // No gap in the Python lines, and every cause of one has its row (zeros included).
  const std::set<std::string> causes = expect_no_python_losses_but_samples(*f);
  for (const char* c : {"stack_unread", "stack_evicted", "frame_not_code", "frame_unreadable",
                        "frame_names_unreadable", "frame_no_process", "unsupported_process"})
    EXPECT_TRUE(causes.count(c)) << "no losses row python/" << c;
  expect_perfetto_slices_carry_python_lines(*f, db, dir);
}

// With --no-python no call has a Python stack and the file says why.
TEST_P(PythonFrames, NoPythonFlagRecordsNone) {
  if (GetParam().name != "3.12") GTEST_SKIP() << "one interpreter is enough for the flag";
  const std::string db = dir.file("t.db");
  Agent agent(db, {"--no-host-libs", "--no-python", "--lib", sim_dir() + "/libcudart.so.13"}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  RunResult w = run({python_, script("call_sites.py"), sim_dir() + "/libcudart.so.13", "1", "0.5"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  EXPECT_NE(rows_of(*f, "SELECT count(*) FROM api_calls")[0][0], "0");
  EXPECT_EQ(rows_of(*f, "SELECT count(py_stack) FROM api_calls")[0][0], "0");
  EXPECT_EQ(rows_of(*f, "SELECT state FROM probe_families WHERE family = 'python_stacks'")[0][0],
            "off");
  RunResult ex = run({gpuwhy_binary(), "explain", "--db", db, "--json"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  const json report = json::parse(ex.out);  // kept: the loop must not walk a destroyed temporary
  bool caveat = false;
  for (const json& c : report["caveats"]) caveat = caveat || c["kind"] == "python_off";
  EXPECT_TRUE(caveat) << ex.out;
}

// The training loop's per-step read-back is the top chain (hidden_sync; only CPU contention from
// co-runners may rank above it), and its evidence names the line:
// "train_loop.py:<n> in train_step: lib.cudaMemcpy(...)".
TEST_P(PythonFrames, HiddenSyncNamesThePythonLine) {
  if (GetParam().name != "3.11") GTEST_SKIP() << "the scenario runs on the default python3 (3.11)";
  const std::string db = dir.file("t.db");
  Agent agent(db, {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13"}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  const std::string file = script("train_loop.py");
  RunResult w =
      run({python_, file, sim_dir() + "/libcudart.so.13", "100"}, {{"GWSIM_KERNEL_NS", "1000000"}});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  RunResult ex = run({gpuwhy_binary(), "explain", "--db", db, "--json"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  RunResult text = run({gpuwhy_binary(), "explain", "--db", db});
  SCOPED_TRACE("explain said:\n" + text.out);
  const json report = json::parse(ex.out);
  ASSERT_FALSE(report["chains"].empty());
  // The read-back's chain; above it only CPU contention (other engineers' builds on a shared
  // machine take the CPU from the loop; on an idle machine hidden_sync is the top chain).
  const json* sync = nullptr;
  for (const json& c : report["chains"]) {
    if (c["kind"] == "hidden_sync") {
      sync = &c;
      break;
    }
    EXPECT_EQ(c["kind"], "cpu_contention") << "a chain above the read-back's: " << c.dump();
  }
  ASSERT_NE(sync, nullptr) << report.dump(2);
  const json& top = *sync;
  int line = 0;
  {
    std::ifstream in(file);
    std::string l;
    for (int n = 1; std::getline(in, l); ++n)
      if (l.find("# READBACK") != std::string::npos) line = n;
  }
  const std::string site =
      "train_loop.py:" + std::to_string(line) + " in train_step: " + source_of(file, line);
  bool named = false;
  for (const json& e : top["evidence"])
    named = named || e["text"].get<std::string>().find("called from: " + site) != std::string::npos;
  EXPECT_TRUE(named) << "the evidence should name " << site << "\n" << top.dump(2);
}

// A chain whose culprit is another thread of the job names what that thread ran in Python, from
// the CPU samples' Python stacks: the main thread waits in read() on a pipe that a loader thread
// fills after CPU work on a known line, and explain's io_stall chain names the loader thread and
// "input_starved.py:<n> in produce: digest = hashlib.sha256(RAW).digest()". The calls made
// before the tracer knew the interpreter's layout are counted exactly: explain's caveat says as
// many as the file holds.
TEST_P(PythonFrames, CulpritThreadNamesItsPythonLine) {
  const std::string db = dir.file("t.db");
  Agent agent(db, {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13"}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  const std::string file = script("input_starved.py");
  RunResult w = run({python_, file, sim_dir() + "/libcudart.so.13", "30"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  const json out = json::parse(w.out);
  const std::string pid = std::to_string(out["pid"].get<int>());
  const std::string loader = std::to_string(out["loader_tid"].get<int>());
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  SCOPED_TRACE("agent said:\n" + agent.stderr_text());

  // The loader thread's samples carry Python stacks whose innermost frame is the HOT line.
  const int line = markers(file, "HOT").at(0).first;
  const auto hot = rows_of(
      *f,
      "SELECT count(*) FROM cpu_samples c JOIN python_frames p ON p.py_stack_id = c.py_stack "
      "AND p.depth = 0 WHERE c.tid = " +
          loader + " AND p.function = 'produce' AND p.line = " + std::to_string(line));
  ASSERT_EQ(hot.size(), 1u);
  if (hot[0][0] == "0") {  // what the loader's samples held instead (it failed once in CI)
    std::string seen;
    for (const auto& r : rows_of(
             *f,
             "SELECT c.py_stack IS NULL, p.file, p.function, p.line, count(*) FROM cpu_samples c "
             "LEFT JOIN python_frames p ON p.py_stack_id = c.py_stack AND p.depth = 0 WHERE "
             "c.tid = " +
                 loader + " GROUP BY 1, 2, 3, 4"))
      seen += "\n  no stack " + r[0] + ", " + r[1] + ":" + r[3] + " in " + r[2] + ": " + r[4];
    for (const auto& r :
         rows_of(*f, "SELECT cause, count FROM losses WHERE source = 'python' AND count > 0"))
      seen += "\n  loss python/" + r[0] + ": " + r[1];
    ADD_FAILURE() << "no sample of the loader thread names the HOT line; its samples:" << seen;
  }

  // From the loop on: the start-up sleep is not the step waiting for data.
  const std::string from = std::to_string(out["loop_ns"].get<int64_t>());
  RunResult ex = run({gpuwhy_binary(), "explain", "--db", db, "--json", "--from", from});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  RunResult text = run({gpuwhy_binary(), "explain", "--db", db, "--from", from});
  SCOPED_TRACE("explain said:\n" + text.out);
  const json report = json::parse(ex.out);
  const json* io = nullptr;
  for (const json& c : report["chains"])
    if (c["kind"] == "io_stall" && std::to_string(c["process"]["pid"].get<int64_t>()) == pid)
      io = &c;
  ASSERT_NE(io, nullptr) << "no io_stall chain for pid " << pid;
  ASSERT_TRUE((*io)["culprit"].is_object()) << io->dump(2);
  ASSERT_TRUE((*io)["culprit"].contains("tid")) << "not a thread: " << io->dump(2);
  EXPECT_EQ(std::to_string((*io)["culprit"]["tid"].get<int64_t>()), loader) << io->dump(2);
  const std::string site = "loader (tid " + loader +
                           ") was on the CPU in input_starved.py:" + std::to_string(line) +
                           " in produce: " + source_of(file, line) + " (";
  bool named = false;
  for (const json& e : (*io)["evidence"])
    named = named || e["text"].get<std::string>().find(site) != std::string::npos;
  EXPECT_TRUE(named) << "the evidence should name " << site << "\n" << io->dump(2);

  // Calls before the layout was known: as many as the file says, in the caveat or none at all.
  const auto layout = rows_of(*f, "SELECT layout_ns FROM python_processes WHERE pid = " + pid);
  ASSERT_EQ(layout.size(), 1u);
  ASSERT_NE(layout[0][0], "NULL");
  const std::string early =
      rows_of(*f, "SELECT count(*) FROM api_calls WHERE pid = " + pid + " AND ts < " +
                      layout[0][0] + " AND py_stack IS NULL")[0][0];
  // After it, every call of the main thread has a Python line (no gap is miscounted as early).
  EXPECT_EQ(rows_of(*f, "SELECT count(*) FROM api_calls WHERE tid = " + pid + " AND ts >= " +
                            layout[0][0] + " AND py_stack IS NULL AND flags & 2 = 0")[0][0],
            "0");
  // The whole trace, start-up included.
  RunResult whole = run({gpuwhy_binary(), "explain", "--db", db, "--json"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const json all = json::parse(whole.out);
  std::string caveat;
  for (const json& c : all["caveats"])
    if (c["kind"] == "python_before_layout") caveat = c["text"].get<std::string>();
  if (early == "0") {
    EXPECT_EQ(caveat, "");
  } else {
    EXPECT_NE(caveat.find("process " + pid + ": " + early +
                          " GPU calls made before its Python "
                          "layout was known"),
              std::string::npos)
        << caveat << " (the file holds " << early << ")";
  }
}

// The same when the producer is another process: a multiprocessing worker (DataLoader-style),
// started with fork (the interpreter's memory copied: the fork itself sends the agent to look)
// and, on 3.12 and 3.13, with spawn (a new interpreter that maps no GPU runtime: found as a child
// of a traced process). The worker's CPU samples carry its Python stacks, and explain's io_stall
// chain names the worker process and "mp_loader.py:<n> in produce: ...".
TEST_P(PythonFrames, WorkerProcessNamesItsPythonLine) {
  std::vector<std::string> methods = {"fork"};
  if (GetParam().name == "3.12" || GetParam().name == "3.13") methods.push_back("spawn");
  const std::string file = script("mp_loader.py");
  const int line = markers(file, "HOT").at(0).first;
  for (const std::string& method : methods) {
    SCOPED_TRACE("start method " + method);
    const std::string db = dir.file("mp-" + method + ".db");
    Agent agent(db, {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13"}, dir);
    ASSERT_TRUE(agent.ready()) << agent.stderr_text();
    RunResult w = run({python_, file, sim_dir() + "/libcudart.so.13", method, "20"});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
    const json out = json::parse(w.out);
    const std::string pid = std::to_string(out["pid"].get<int>());
    const std::string worker = std::to_string(out["worker_pid"].get<int>());
    auto f = open_trace(db);
    ASSERT_TRUE(f);
    SCOPED_TRACE("agent said:\n" + agent.stderr_text());

    // The worker is a Python process of the trace, and its samples name the HOT line.
    const auto py = rows_of(*f, "SELECT supported FROM python_processes WHERE pid = " + worker);
    ASSERT_EQ(py.size(), 1u) << "the worker's interpreter was not looked at";
    EXPECT_EQ(py[0][0], "1");
    const auto hot = rows_of(
        *f,
        "SELECT count(*) FROM cpu_samples c JOIN python_frames p ON p.py_stack_id = c.py_stack "
        "AND p.depth = 0 WHERE c.pid = " +
            worker + " AND p.function = 'produce' AND p.line = " + std::to_string(line));
    ASSERT_EQ(hot.size(), 1u);
    EXPECT_NE(hot[0][0], "0") << "no sample of the worker names the HOT line";

    const std::string from = std::to_string(out["loop_ns"].get<int64_t>());
    RunResult ex = run({gpuwhy_binary(), "explain", "--db", db, "--json", "--from", from});
    ASSERT_EQ(ex.exit_code, 0) << ex.err;
    RunResult text = run({gpuwhy_binary(), "explain", "--db", db, "--from", from});
    SCOPED_TRACE("explain said:\n" + text.out);
    const json report = json::parse(ex.out);
    const json* io = nullptr;
    for (const json& c : report["chains"])
      if (c["kind"] == "io_stall" && std::to_string(c["process"]["pid"].get<int64_t>()) == pid)
        io = &c;
    ASSERT_NE(io, nullptr) << "no io_stall chain for pid " << pid;
    ASSERT_TRUE((*io)["culprit"].is_object()) << io->dump(2);
    EXPECT_EQ(std::to_string((*io)["culprit"]["pid"].get<int64_t>()), worker) << io->dump(2);
    const std::string site = "(pid " + worker +
                             ") was on the CPU in mp_loader.py:" + std::to_string(line) +
                             " in produce: " + source_of(file, line) + " (";
    bool named = false;
    for (const json& e : (*io)["evidence"])
      named = named || e["text"].get<std::string>().find(site) != std::string::npos;
    EXPECT_TRUE(named) << "the evidence should name " << site << "\n" << io->dump(2);
  }
}

// Two Python threads make GPU calls at the same time, each from its own line: every call of each
// thread has a Python stack whose innermost frame is that thread's line, never the other's, and
// the two threads' calls overlap in time (the GIL is released during each call).
TEST_P(PythonFrames, ConcurrentThreadsEachNameTheirOwnLine) {
  const std::string file = script("two_threads.py");
  std::unique_ptr<store::TraceFile> f;
  RunResult w = traced({file, sim_dir() + "/libcudart.so.13", "1000"}, &f);
  ASSERT_TRUE(f);
  SCOPED_TRACE("agent said:\n" + agent_said_);
  const json out = json::parse(w.out);
  const auto lines = markers(file, "LINE");
  ASSERT_EQ(lines.size(), 2u);
  std::map<std::string, std::pair<int64_t, int64_t>> spans;
  for (const auto& [thread, site] : {std::pair<std::string, int>{"a", 7}, {"b", 8}}) {
    const std::string tid = std::to_string(out[thread].get<int>());
    const auto& [line, function] = lines.at(site);
    SCOPED_TRACE("thread " + thread + " (tid " + tid + ", " + function + ")");
    const std::string from = " FROM api_calls c JOIN apis a ON a.id = c.api";
    const std::string filter = " WHERE a.name = 'cudaMalloc' AND c.tid = " + tid;
    const auto n = rows_of(*f,
                           "SELECT count(*), count(c.py_stack), min(c.ts), max(c.ts), "
                           "count(DISTINCT c.bytes)" +
                               from + filter);
    ASSERT_EQ(n.size(), 1u);
    EXPECT_EQ(n[0][0], "1000");
    EXPECT_EQ(n[0][1], "1000") << "every call has a Python stack";
    EXPECT_EQ(n[0][4], "1");
    spans[thread] = {std::stoll(n[0][2]), std::stoll(n[0][3])};
    const auto frames = rows_of(
        *f, "SELECT DISTINCT p.function, p.line, p.source" + from +
                " JOIN python_frames p ON p.py_stack_id = c.py_stack AND p.depth = 0" + filter);
    ASSERT_EQ(frames.size(), 1u) << "one innermost frame for all of the thread's calls";
    EXPECT_EQ(frames[0][0], function);
    EXPECT_EQ(frames[0][1], std::to_string(line));
    EXPECT_EQ(frames[0][2], source_of(file, line));
  }
  EXPECT_LT(spans["a"].first, spans["b"].second) << "the threads' calls did not overlap";
  EXPECT_LT(spans["b"].first, spans["a"].second) << "the threads' calls did not overlap";
  expect_no_python_losses_but_samples(*f);
}

// Code objects that live a moment only (short_lived.py), as most of the frames a PyTorch start-up
// left unnamed were: a module body imported once and dropped, a class body in it, code made by
// exec. Each call names its own module, class or generated code and line, never another's (the
// next one's code object, and its name strings, may be made at the freed ones' addresses: the
// exec'd code's calls were named after the previous piece before the fix), and no frame is
// unnamed.
TEST_P(PythonFrames, ShortLivedCodeNamesItsOwnLine) {
  // Each piece of code works 0.3 s after its call: longer than the 250 ms within which a stack
  // key seen again is not compared with memory (PythonStacks::kRecheck), so the exec'd code,
  // whose key is the same each time, is named again on each call.
  const int n = 6;
  std::unique_ptr<store::TraceFile> f;
  RunResult w = traced(
      {script("short_lived.py"), sim_dir() + "/libcudart.so.13", std::to_string(n), "0.3"}, &f);
  ASSERT_TRUE(f);
  SCOPED_TRACE("agent said:\n" + agent_said_);
  const json out = json::parse(w.out);
  auto innermost = [&](int64_t pages) {
    return rows_of(*f,
                   "SELECT p.file, p.function, p.line FROM api_calls c JOIN apis a ON a.id = "
                   "c.api JOIN python_frames p ON p.py_stack_id = c.py_stack AND p.depth = 0 "
                   "WHERE a.name = 'cudaMalloc' AND c.bytes = " +
                       std::to_string(4096 * pages));
  };
  ASSERT_EQ(out["modules"].size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    SCOPED_TRACE("module " + std::to_string(i));
    const json& m = out["modules"][static_cast<size_t>(i)];
    const std::string file = m["file"].get<std::string>();
    const auto body = innermost(100 + i);
    ASSERT_EQ(body.size(), 1u) << "the module body's call, with a Python stack";
    EXPECT_EQ(body[0][0], file);
    EXPECT_EQ(body[0][1], "<module>");
    EXPECT_EQ(body[0][2], std::to_string(m["body_line"].get<int>()));
    const auto klass = innermost(1000 + i);
    ASSERT_EQ(klass.size(), 1u) << "the class body's call, with a Python stack";
    EXPECT_EQ(klass[0][0], file);
    // A class body's code is named after the class (3.10: co_name, the same here).
    EXPECT_EQ(klass[0][1], "K" + std::to_string(i));
    EXPECT_EQ(klass[0][2], std::to_string(m["class_line"].get<int>()));
    const auto gen = innermost(3000 + i);
    ASSERT_EQ(gen.size(), 1u) << "the exec'd code's call, with a Python stack";
    EXPECT_EQ(gen[0][0], "<generated " + std::to_string(i) + ">");
    EXPECT_EQ(gen[0][1], "<module>");
    EXPECT_EQ(gen[0][2], "3");
  }
  expect_no_python_losses_but_samples(*f);
}

// The probe's walk done from user space (walk_python_thread) on the live interpreter, with the
// layout find_python gives: 3.13's from the target's _Py_DebugOffsets alone (and equal to the
// offsets measured on 3.13.0), 3.10-3.12's from the tables. Two threads blocked in a C call
// with the GIL released each name their own line. `gpuwhy check` says the process's version,
// that it is supported, and that it is tested on a live interpreter.
TEST_P(PythonFrames, LiveWalkNamesEachThreadsLine) {
  const std::string file = script("sleepers.py");
  Child py({python_, file, sim_dir() + "/libcudart.so.13"}, dir.path);
  json ids;
  for (int i = 0; i < 200 && ids.is_null(); ++i) {
    const std::string text = py.stdout_text();
    if (text.find('\n') != std::string::npos)
      ids = json::parse(text.substr(0, text.find('\n')));
    else
      usleep(50 * 1000);
  }
  ASSERT_FALSE(ids.is_null()) << py.stderr_text();
  usleep(300 * 1000);  // the main thread from its print into its sleep
  auto p = discover::find_python(static_cast<uint32_t>(py.pid()));
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->supported) << p->why_not;
  const std::string name = GetParam().name;
  if (name == "3.13") {
    EXPECT_EQ(p->layout_from, "_Py_DebugOffsets");
    // The target's offsets agree with those measured with offsetof on 3.13.0.
    const gw_py_layout& l = p->layout;
    EXPECT_EQ(l.interp_head, 632);
    EXPECT_EQ(l.threads_head, 7344);
    EXPECT_EQ(l.tstate_frame, 72);
    EXPECT_EQ(l.tstate_id, 160);
    EXPECT_EQ(l.frame_code, 0);
    EXPECT_EQ(l.frame_prev, 8);
    EXPECT_EQ(l.frame_instr, 56);
    EXPECT_EQ(l.frame_owner, 70);
    EXPECT_EQ(l.code_adaptive, 200);
    EXPECT_EQ(l.frame_tlbc, GW_PY_NONE);
    EXPECT_EQ(p->code.filename, 112u);
    EXPECT_EQ(p->code.name, 128u);
    EXPECT_EQ(p->code.firstlineno, 68u);
    EXPECT_EQ(p->code.linetable, 136u);
    EXPECT_EQ(p->code.unicode_ascii, 40u);
    EXPECT_EQ(p->code.bytes_data, 32u);
    EXPECT_FALSE(p->free_threaded);
  } else {
    EXPECT_EQ(p->layout_from, "built-in table");
  }
  EXPECT_EQ(discover::python_tested(p->minor_hex, p->free_threaded),
            "tested on a live interpreter");
  const uint32_t pid = static_cast<uint32_t>(py.pid());
  discover::PythonNamer namer;
  namer.add_process(*p);
  const auto waits = markers(file, "WAIT");
  for (const auto& [thread, site] : {std::pair<std::string, int>{"main", 1}, {"worker", 2}}) {
    SCOPED_TRACE(thread);
    // 3.10's thread state holds pthread_self() (threading.get_ident()); 3.11+ the native id.
    const uint64_t id = ids[thread][name == "3.10" ? 0 : 1].get<uint64_t>();
    auto frames = discover::walk_python_thread(
        p->layout,
        [pid](uint64_t a, void* out, size_t n) {
          return discover::read_process_memory(pid, a, out, n);
        },
        id);
    ASSERT_TRUE(frames.has_value());
    ASSERT_FALSE(frames->empty());
    const discover::PyFrameName top = namer.name(pid, (*frames)[0].code, (*frames)[0].instr);
    const auto& [line, function] = waits.at(site);
    EXPECT_TRUE(top.resolved);
    EXPECT_EQ(top.file, file);
    EXPECT_EQ(top.function, function);
    EXPECT_EQ(top.line, line);
    EXPECT_EQ(top.source, source_of(file, line));
  }
  RunResult check = run({gpuwhy_binary(), "check", "--json"});
  const json report = json::parse(check.out);
  bool listed = false;
  for (const json& proc : report["processes"]) {
    if (proc["pid"].get<int64_t>() != py.pid()) continue;
    listed = true;
    EXPECT_EQ(proc["python_version"], p->version);
    EXPECT_EQ(proc["python_supported"], true);
    EXPECT_EQ(proc["python_tested"], "tested on a live interpreter");
  }
  EXPECT_TRUE(listed) << check.out;
  py.stop(SIGKILL, 10);
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonFrames,
                         ::testing::Values(Interpreter{"3.10", "", "3.10.13"},
                                           Interpreter{"3.11", "", "3.11.7"},
                                           Interpreter{"3.12", "", "3.12.1"},
                                           Interpreter{"3.13", "", "3.13.0"},
                                           Interpreter{"debian-3.11", "/usr/bin/python3.11", ""}),
                         [](const ::testing::TestParamInfo<Interpreter>& info) {
                           std::string n = "py" + info.param.name;
                           for (char& c : n)
                             if (c == '.' || c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace gpuwhy::testing
