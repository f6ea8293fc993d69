// SPDX-License-Identifier: Apache-2.0
// Traces for the HTML report's tests: the golden fixtures' SQL, and lock_wait with names far
// longer than a window is wide (a trace file can say anything: names from it are untrusted) plus
// a sparse process whose few long intervals lie off the timeline's bucket edges.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuwhy::html_test {

inline std::string fixture_sql(const std::string& fixture) {
  std::ifstream in(std::filesystem::path(GW_SOURCE_DIR) / "tests" / "golden" / fixture /
                   "fixture.sql");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A name of `n` characters with no space to break at, as a deep path or a generated kernel name
// would be.
inline std::string long_name(const std::string& stem, size_t n) {
  std::string s = stem;
  while (s.size() < n) s += "_segment" + std::to_string(s.size());
  return s;
}

inline std::string long_names_sql() {
  const std::string victim = long_name("trainer_with_a_very_long_thread_name", 300);
  const std::string culprit = long_name("/home/someone/checkpoints/writer", 400);
  const std::string sparse = long_name("sparse_worker", 250);
  // In the fixture's own connection: its temp table fx (t0, ms) is still there.
  return fixture_sql("lock_wait") + R"sql(
UPDATE threads SET comm = ')sql" +
         victim + R"sql(' WHERE tid = 2000;
UPDATE processes SET comm = ')sql" +
         victim + R"sql(', exe = '/opt/)sql" + culprit +
         R"sql(' WHERE pid = 2000;
UPDATE threads SET comm = ')sql" +
         culprit + R"sql(' WHERE tid = 2005;
UPDATE strings SET s = ')sql" +
         culprit + R"sql(' WHERE id = 1;
INSERT INTO processes(pid, start_ns, comm, exe, first_seen_ns)
SELECT 3000, t0, ')sql" +
         sparse + R"sql(', '/usr/bin/python3', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 3000, 3000, ')sql" +
         sparse +
         R"sql(', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 3000, 3001, 'loader', t0 FROM fx;
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + 1003700 * 1000, 500 * ms, 3000, 3000,
       (SELECT id FROM apis WHERE category = 'launch' ORDER BY id LIMIT 1), 1, 0, 0 FROM fx;
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + 2001100 * 1000, 2000 * ms, 3000, 3000,
       (SELECT id FROM apis WHERE category = 'sync' ORDER BY id LIMIT 1), 1, 0, 0 FROM fx;
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state)
SELECT t0 + 2500300 * 1000, 1000 * ms + 777, 0, 3000, 3000, 0, 0, 1 FROM fx;
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state)
SELECT t0 + 6000700 * 1000, 300 * ms + 4321, 5000, 3000, 3000, 0, 1, 0 FROM fx;
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state)
SELECT t0 + 500 * ms + 12345, 9000 * ms, 0, 3000, 3001, 1, 0, 1 FROM fx;
)sql";
}

}  // namespace gpuwhy::html_test
