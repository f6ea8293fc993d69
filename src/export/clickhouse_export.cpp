// SPDX-License-Identifier: Apache-2.0
// The fleet export (clickhouse_export.hpp, docs/fleet.md). The rows come from the same reading
// as `explain --db a --db b` (analysis/multihost_load.hpp: ranks from ncclCommInitRank, each
// rank's collectives numbered from its set-up) and the same time budget (rank_budget.hpp), so
// the fleet's SQL and explain name the same rank.
#include "export/clickhouse_export.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "analysis/analysis.hpp"
#include "analysis/multihost_load.hpp"
#include "analysis/rank_budget.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::exporter {
namespace {

constexpr std::string_view kSchema =
    R"(-- gpuwhy fleet tables for ClickHouse (docs/fleet.md). Load with:
--   clickhouse-client --multiquery < schema.sql
CREATE DATABASE IF NOT EXISTS gpuwhy;
-- Every rank's collectives on each communicator it set up; seq counts from 0 at the set-up, so the
-- k-th collective of one job's ranks on every host joins on (job, nranks, seq). done_ts: the end
-- of the blocked sync that completed it (asynchronous NCCL), 0 when none.
CREATE TABLE IF NOT EXISTS gpuwhy.nccl_collectives (
  job String, host String, boot_id String, rank UInt32, nranks UInt32, pid UInt32, comm UInt64,
  seq UInt32, api String, ts Int64, dur Int64, done_ts Int64
) ENGINE = MergeTree() ORDER BY (job, nranks, seq, rank);
-- One row per rank: who it is, and where its dispatch thread's time went per collective, from
-- its own host's time budget (explain's buckets, docs/explain.md).
CREATE TABLE IF NOT EXISTS gpuwhy.nccl_ranks (
  job String, host String, boot_id String, file String, rank UInt32, nranks UInt32, pid UInt32,
  comm UInt64, process String, collectives UInt64, init_ts Int64, budget_known UInt8,
  host_work_ns Float64, runnable_ns Float64, asleep_ns Float64, gpu_wait_ns Float64,
  cpu_holder String, slept_in String
) ENGINE = MergeTree() ORDER BY (job, nranks, rank);
)";

using nlohmann::json;

Status write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return errno_error("cannot create " + path, errno, "check the directory");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return errno_error("cannot write " + path, err);
  }
  return {};
}

std::string line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string_view clickhouse_schema() { return kSchema; }

Result<ExportStats> export_clickhouse(const store::TraceFile& file, const std::string& dir,
                                      const ClickHouseOptions& opt) {
  auto host = analysis::load_host_file(file, 0);
  if (!host) return host.error();
  if (host->members.empty())
    return Error{file.path() + " records no NCCL communicator set-up (ncclCommInitRank)",
                 "the fleet tables hold NCCL jobs' ranks; trace the job from its start", 2};
  auto rows = analysis::load_trace(file, {});
  if (!rows) return rows.error();
  const analysis::Report report = analysis::analyze(std::move(rows.value()));

  std::unordered_map<uint16_t, std::string> names;
  {
    auto s = store::Stmt::prepare(file.db(), "SELECT id, name FROM apis", "API names");
    if (!s) return s.error();
    while (sqlite3_step(s->get()) == SQLITE_ROW) {
      const auto* n = reinterpret_cast<const char*>(sqlite3_column_text(s->get(), 1));
      names[static_cast<uint16_t>(sqlite3_column_int(s->get(), 0))] = n ? n : "?";
    }
  }

  ExportStats stats;
  std::string collectives, ranks;
  for (const analysis::RankMember& m : host->members) {
    const json who = {{"job", opt.job}, {"host", host->host}, {"boot_id", host->boot_id},
                      {"rank", m.rank}, {"nranks", m.nranks}, {"pid", m.pid},
                      {"comm", m.comm}};
    for (size_t k = 0; k < m.collectives.size(); ++k) {
      const analysis::RankCollective& c = m.collectives[k];
      json j = who;
      j["seq"] = k;
      j["api"] = names.count(c.api) ? names[c.api] : "?";
      j["ts"] = c.ts;
      j["dur"] = c.end - c.ts;
      j["done_ts"] = c.done;
      collectives += line(j);
      ++stats.rows;
    }
    const analysis::PerCollective p = analysis::per_collective(report, m);
    const analysis::BudgetReport* b = analysis::dispatch_budget(report, m.pid);
    json r = who;
    r["file"] = file.path();
    r["process"] = b ? b->process.comm : "?";
    r["collectives"] = m.collectives.size();
    r["init_ts"] = m.init_ts;
    r["budget_known"] = p.known ? 1 : 0;
    r["host_work_ns"] = p.host;
    r["runnable_ns"] = p.runnable;
    r["asleep_ns"] = p.asleep;
    r["gpu_wait_ns"] = p.waiting;
    r["cpu_holder"] = p.holder;
    r["slept_in"] = p.syscall;
    ranks += line(r);
    ++stats.rows;
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return errno_error("cannot create the directory " + dir, errno);
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"schema.sql", std::string(kSchema)},
        {"nccl_collectives.jsonl", collectives},
        {"nccl_ranks.jsonl", ranks}}) {
    if (Status s = write_file(dir + "/" + name, text); !s) return s.error();
    ++stats.tables;
  }
  return stats;
}

}  // namespace gpuwhy::exporter
