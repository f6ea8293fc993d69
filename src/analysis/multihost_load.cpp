// SPDX-License-Identifier: Apache-2.0
// Reads what the cross-host join needs from one trace file: the host, the NCCL communicator
// set-ups (rank, size, communicator pointer) and each rank's collectives on that communicator.
#include "analysis/multihost_load.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {
namespace {

std::string text_at(sqlite3_stmt* s, int i) {
  const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return t ? t : "";
}

}  // namespace

Result<HostFile> load_host_file(const store::TraceFile& file, size_t index) {
  sqlite3* db = file.db();
  HostFile out;
  out.path = file.path();
  {
    auto s = store::Stmt::prepare(db, "SELECT host, boot_id, start_ns FROM session", "session");
    if (!s) return s.error();
    if (sqlite3_step(s->get()) == SQLITE_ROW) {
      out.host = text_at(s->get(), 0);
      out.boot_id = text_at(s->get(), 1);
      out.start_ns = sqlite3_column_int64(s->get(), 2);
    }
    if (out.host.empty()) out.host = "?";
  }
  {
    // ncclCommInitRank*: `peer` is the caller's rank, `nranks` the size, `addr` the
    // communicator it got back (read at return).
    auto s = store::Stmt::prepare(db,
                                  "SELECT pid, tid, ts, addr, peer, nranks FROM api_calls "
                                  "WHERE category = 'init' AND ret = 0 AND peer IS NOT NULL "
                                  "AND nranks > 0 ORDER BY ts",
                                  "NCCL communicator set-ups");
    if (!s) return s.error();
    int rc;
    while ((rc = sqlite3_step(s->get())) == SQLITE_ROW) {
      RankMember m;
      m.file = index;
      m.pid = static_cast<uint32_t>(sqlite3_column_int64(s->get(), 0));
      m.tid = static_cast<uint32_t>(sqlite3_column_int64(s->get(), 1));
      m.init_ts = sqlite3_column_int64(s->get(), 2);
      m.comm = static_cast<uint64_t>(sqlite3_column_int64(s->get(), 3));
      m.rank = static_cast<uint32_t>(sqlite3_column_int64(s->get(), 4));
      m.nranks = static_cast<uint32_t>(sqlite3_column_int64(s->get(), 5));
      if (m.rank < m.nranks) out.members.push_back(std::move(m));
    }
    if (rc != SQLITE_DONE) return store::sqlite_error(db, "reading " + out.path);
  }
  // Collectives, with the thread that made each: its next blocked sync completes it under
  // asynchronous NCCL (RankCollective::done).
  {
    auto s = store::Stmt::prepare(db,
                                  "SELECT pid, tid, ts, dur, api, addr FROM api_calls "
                                  "WHERE category = 'collective' AND dur IS NOT NULL ORDER BY ts",
                                  "NCCL collectives");
    if (!s) return s.error();
    int rc;
    while ((rc = sqlite3_step(s->get())) == SQLITE_ROW) {
      const auto pid = static_cast<uint32_t>(sqlite3_column_int64(s->get(), 0));
      const auto tid = static_cast<uint32_t>(sqlite3_column_int64(s->get(), 1));
      const int64_t ts = sqlite3_column_int64(s->get(), 2);
      const auto comm = static_cast<uint64_t>(sqlite3_column_int64(s->get(), 5));
      // The latest set-up of this communicator in this process before the call (a pointer can
      // be reused after a destroy); an unread pointer (0) matches the process's only set-up.
      RankMember* into = nullptr;
      for (RankMember& m : out.members)
        if (m.pid == pid && m.init_ts <= ts && (m.comm == comm || m.comm == 0)) into = &m;
      if (into == nullptr) continue;
      into->collectives.push_back({ts, ts + sqlite3_column_int64(s->get(), 3),
                                   static_cast<uint16_t>(sqlite3_column_int64(s->get(), 4)), tid,
                                   0});
    }
    if (rc != SQLITE_DONE) return store::sqlite_error(db, "reading " + out.path);
  }
  {
    // Blocked syncs of the members' processes, per thread in time order.
    std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> syncs;  // tid -> (ts, end)
    std::set<uint32_t> pids;
    for (const RankMember& m : out.members) pids.insert(m.pid);
    auto s = store::Stmt::prepare(db,
                                  "SELECT pid, tid, ts, dur FROM api_calls WHERE category = 'sync' "
                                  "AND dur >= ?1 ORDER BY ts",
                                  "synchronisations");
    if (!s) return s.error();
    s->i64(1, kBlockedSyncNs);
    int rc;
    while ((rc = sqlite3_step(s->get())) == SQLITE_ROW) {
      if (!pids.count(static_cast<uint32_t>(sqlite3_column_int64(s->get(), 0)))) continue;
      const int64_t ts = sqlite3_column_int64(s->get(), 2);
      syncs[static_cast<uint32_t>(sqlite3_column_int64(s->get(), 1))].emplace_back(
          ts, ts + sqlite3_column_int64(s->get(), 3));
    }
    if (rc != SQLITE_DONE) return store::sqlite_error(db, "reading " + out.path);
    for (RankMember& m : out.members) {
      for (size_t k = 0; k < m.collectives.size(); ++k) {
        RankCollective& c = m.collectives[k];
        const int64_t next = k + 1 < m.collectives.size() ? m.collectives[k + 1].ts : INT64_MAX;
        auto it = syncs.find(c.tid);
        if (it == syncs.end()) continue;
        auto at = std::lower_bound(it->second.begin(), it->second.end(),
                                   std::pair<int64_t, int64_t>{c.end, INT64_MIN});
        if (at != it->second.end() && at->first < next) c.done = at->second;
      }
    }
  }
  return out;
}

}  // namespace gpuwhy::analysis
