// SPDX-License-Identifier: Apache-2.0
#include "store/rollups.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "core/wrapping.hpp"
#include "store/chunked_tables.hpp"

namespace gpuwhy::store {

// How one chunked table rolls up. `in` holds the chunk column indexes of `inputs`.
struct RollupSpec {
  std::string_view source;                    // the chunked table: "api_calls"
  std::string_view table;                     // its rollup table
  std::span<const std::string_view> columns;  // after pid and tid: the key, then the sums
  uint32_t empty_nulls;                       // sums that are NULL until a row has a value
  std::array<std::string_view, 4> inputs;     // chunk columns that key() and add() read
  // Row r's key columns, given its second; every other column of `out` stays 0.
  void (*key)(const ChunkBuilder& b, const uint32_t* in, uint32_t r, int64_t second,
              RollupRow& out);
  // Adds row r, of duration `dur`, to its key's sums.
  void (*add)(const ChunkBuilder& b, const uint32_t* in, uint32_t r, int64_t dur, RollupRow& sums);
};

namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

// A NULL reads as 0, as sum() skips it (the writer leaves a stale value in a NULL's slot).
int64_t or_zero(const ChunkBuilder& b, uint32_t r, uint32_t c) {
  return b.is_null(r, c) ? 0 : b.value(r, c);
}

// api_calls_per_second: per (api, second), calls, sum and max of dur, sum of bytes.
enum ApiIn : uint32_t { kApiCol, kBytesCol };
constexpr std::array<std::string_view, 6> kApiColumns = {"api",    "second",     "calls",
                                                         "dur_ns", "max_dur_ns", "bytes"};

void api_key(const ChunkBuilder& b, const uint32_t* in, uint32_t r, int64_t second,
             RollupRow& out) {
  out.v[0] = or_zero(b, r, in[kApiCol]);
  out.v[1] = second;
}

void api_add(const ChunkBuilder& b, const uint32_t* in, uint32_t r, int64_t dur, RollupRow& s) {
  s.v[2] += 1;
  s.v[3] = wrapping_add(s.v[3], dur);
  s.v[4] = std::max(s.v[4], dur);
  if (b.is_null(r, in[kBytesCol])) return;
  s.v[5] = wrapping_add(s.v[5], b.value(r, in[kBytesCol]));
  s.nulls &= ~(1u << 5);
}

// offcpu_per_second: per (second, preempted, the task to blame), time, run-queue time, intervals.
// The task to blame is who took the CPU for a preemption and who woke the thread otherwise: the
// two v_thread_offcpu ranks.
enum OffCpuIn : uint32_t { kPreempted, kNextComm, kWakerComm, kRunq };
constexpr std::array<std::string_view, 6> kOffCpuColumns = {"second", "preempted", "other_comm",
                                                            "ns",     "runq_ns",   "intervals"};

void offcpu_key(const ChunkBuilder& b, const uint32_t* in, uint32_t r, int64_t second,
                RollupRow& out) {
  const bool preempted = or_zero(b, r, in[kPreempted]) != 0;
  const uint32_t other = in[preempted ? kNextComm : kWakerComm];
  out.v[0] = second;
  out.v[1] = preempted;
  out.v[2] = or_zero(b, r, other);
  if (b.is_null(r, other)) out.nulls |= 1u << 2;
}

void offcpu_add(const ChunkBuilder& b, const uint32_t* in, uint32_t r, int64_t dur, RollupRow& s) {
  s.v[3] = wrapping_add(s.v[3], dur);
  s.v[4] = wrapping_add(s.v[4], or_zero(b, r, in[kRunq]));
  s.v[5] += 1;
}

const std::array<RollupSpec, 2> kSpecs = {{
    {"api_calls", "api_calls_per_second", kApiColumns, 1u << 5, {"api", "bytes"}, api_key, api_add},
    {"offcpu",
     "offcpu_per_second",
     kOffCpuColumns,
     0,
     {"preempted", "next_comm", "waker_comm", "runq"},
     offcpu_key,
     offcpu_add},
}};
const std::array<std::string_view, 2> kTableNames = {kSpecs[0].table, kSpecs[1].table};

const RollupSpec* find_spec(std::string_view source) {
  for (const RollupSpec& s : kSpecs)
    if (s.source == source) return &s;
  return nullptr;
}

// A key of a chunk's rollup: the RollupRow key() filled (its sums are all still 0).
struct KeyHash {
  size_t operator()(const RollupRow& k) const {
    uint64_t h = k.nulls;
    for (int64_t v : k.v) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};
struct KeyEq {
  bool operator()(const RollupRow& a, const RollupRow& b) const {
    return a.v == b.v && a.nulls == b.nulls;
  }
};

std::string insert_sql(const RollupSpec& s) {
  std::string cols = "pid, tid", params = "?, ?";
  for (std::string_view c : s.columns) {
    cols += ", " + std::string(c);
    params += ", ?";
  }
  return "INSERT INTO " + std::string(s.table) + "(" + cols + ") VALUES (" + params + ")";
}

}  // namespace

std::span<const std::string_view> rollup_tables() { return kTableNames; }

int64_t rollup_second(int64_t ts, int64_t start_ns) {
  int64_t since = 0;
  if (!__builtin_sub_overflow(ts, start_ns, &since)) return since / kSecondNs;
  // Only absurd values get here: the difference needs 65 bits, the quotient never does.
  return static_cast<int64_t>((static_cast<__int128>(ts) - start_ns) / kSecondNs);
}

Result<RollupWriter> RollupWriter::prepare(sqlite3* db, const ChunkedTable& table) {
  RollupWriter w;
  w.db_ = db;
  w.table_ = &table;
  const RollupSpec* spec = find_spec(table.name);
  if (!spec) return w;
  auto exists = has_table(db, spec->table);
  if (!exists) return exists.error();
  if (!*exists) return w;
  for (size_t i = 0; i < spec->inputs.size() && !spec->inputs[i].empty(); ++i) {
    const auto at = std::find(table.columns.begin(), table.columns.end(), spec->inputs[i]);
    if (at == table.columns.end())
      return Error{"internal: " + std::string(table.name) + " has no column " +
                   std::string(spec->inputs[i])};
    w.inputs_[i] = static_cast<uint32_t>(at - table.columns.begin());
  }
  const std::string what = "preparing inserts into " + std::string(spec->table);
  auto ins = Stmt::prepare(db, insert_sql(*spec), what);
  if (!ins) return ins.error();
  auto start = Stmt::prepare(db, "SELECT start_ns FROM session WHERE id = 1", what);
  if (!start) return start.error();
  w.insert_ = std::move(ins.value());
  w.start_ = std::move(start.value());
  w.spec_ = spec;
  return w;
}

// Read at every chunk rather than once: the vtab's INSERT path may write the session row in the
// same transaction as the events. A file with no session row (not a trace yet) counts from 0.
Result<int64_t> RollupWriter::session_start() {
  sqlite3_stmt* s = start_.get();
  const int rc = sqlite3_step(s);
  const int64_t start = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
  sqlite3_reset(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqlite_error(db_, "reading session");
  return start;
}

std::vector<RollupRow> RollupWriter::roll(const ChunkBuilder& b, int64_t start_ns) const {
  const RollupSpec& s = *spec_;
  const ChunkedTable& t = *table_;
  std::vector<RollupRow> out;
  std::unordered_map<RollupRow, size_t, KeyHash, KeyEq> index;
  RollupRow last_key;
  size_t last = SIZE_MAX;
  for (uint32_t r = 0; r < b.rows(); ++r) {
    RollupRow key;
    s.key(b, inputs_.data(), r, rollup_second(b.value(r, t.ts), start_ns), key);
    // Consecutive rows mostly share a key (one thread, in time order): skip the hash then.
    if (last == SIZE_MAX || !KeyEq{}(key, last_key)) {
      const auto [it, added] = index.try_emplace(key, out.size());
      if (added) {
        out.push_back(key);
        out.back().nulls |= s.empty_nulls;
      }
      last = it->second;
      last_key = key;
    }
    s.add(b, inputs_.data(), r, b.value(r, t.dur), out[last]);
  }
  return out;
}

std::string_view RollupWriter::table() const { return spec_ ? spec_->table : std::string_view(); }

Status RollupWriter::write(const ChunkBuilder& rows, int64_t pid, int64_t tid,
                           std::pair<int64_t, int64_t>* rowids) {
  if (rowids) *rowids = {0, 0};
  if (!spec_ || rows.empty()) return {};
  auto start = session_start();
  if (!start) return start.error();
  for (const RollupRow& row : roll(rows, *start)) {
    insert_.i64(1, pid);
    insert_.i64(2, tid);
    for (size_t c = 0; c < spec_->columns.size(); ++c) {
      const int at = static_cast<int>(c) + 3;
      (row.nulls >> c) & 1 ? insert_.null(at) : insert_.i64(at, row.v[c]);
    }
    if (insert_.run() != SQLITE_DONE)
      return sqlite_error(db_, "writing " + std::string(spec_->table));
    if (rowids) {
      const int64_t id = sqlite3_last_insert_rowid(db_);
      if (rowids->first == 0) rowids->first = id;
      rowids->second = id;
    }
  }
  return {};
}

}  // namespace gpuwhy::store
