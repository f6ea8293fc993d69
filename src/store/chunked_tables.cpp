// SPDX-License-Identifier: Apache-2.0
#include "store/chunked_tables.hpp"

#include <algorithm>
#include <array>

#include "store/chunk_index.hpp"

namespace gpuwhy::store {
namespace {

// Column order is the storage order: appending a column later keeps old chunks readable (a column
// a chunk does not have reads as NULL). Meanings: sql/schema.sql and docs/schema.md.
constexpr std::array<std::string_view, 19> kApiCalls = {
    "ts",   "dur",   "pid",    "tid", "api",  "lib",    "ret",      "stream", "bytes",   "op",
    "addr", "addr2", "blocks", "tpb", "peer", "nranks", "stack_id", "flags",  "py_stack"};
// `throttled`, `arg0`: appended with ABI 9 (1: held off the CPU by its cgroup's CPU quota; the
// first argument of the syscall it slept in).
constexpr std::array<std::string_view, 22> kOffCpu = {
    "ts",        "dur",        "runq",       "pid",        "tid",         "cpu",
    "preempted", "state",      "next_pid",   "next_tid",   "next_comm",   "waker_pid",
    "waker_tid", "waker_comm", "holder_pid", "holder_tid", "holder_comm", "syscall",
    "wait_cpu",  "migrations", "throttled",  "arg0"};
// `request`: appended with ABI 7, the request of an ioctl on the GPU driver's device files (the
// driver_ioctls family), NULL for every other syscall and in older files.
constexpr std::array<std::string_view, 8> kSyscalls = {"ts", "dur", "pid",  "tid",
                                                       "nr", "ret", "arg0", "request"};
constexpr std::array<std::string_view, 9> kBlockIo = {"ts",     "dur",   "pid", "tid",  "dev",
                                                      "sector", "bytes", "op",  "error"};
constexpr std::array<std::string_view, 5> kReclaim = {"ts", "dur", "pid", "tid", "nr_reclaimed"};
// `min_flt`, `maj_flt`: appended with ABI 9, the thread's page faults so far.
constexpr std::array<std::string_view, 11> kCpuSamples = {
    "ts",     "dur",      "pid",      "tid",     "cpu",    "syscall",
    "kernel", "stack_id", "py_stack", "min_flt", "maj_flt"};

// Who held a CPU while a traced thread waited for it: chunked per CPU, not per thread (the key
// columns pid and tid of the table spec both name `cpu`, so a chunk's pid and tid hold its CPU):
// the rows are read by CPU and time, and the holders are any task of the host.
constexpr std::array<std::string_view, 6> kCpuRuns = {"ts", "dur", "cpu", "pid", "tid", "comm"};
constexpr std::array<std::string_view, 6> kWaitMigrations = {"ts",  "dur",      "pid",
                                                             "tid", "from_cpu", "to_cpu"};

// What the per-call views joined apis for: GROUP BY name then needs no join and no sorter.
constexpr std::array<ChunkedLabel, 3> kApiLabels = {{
    {"name", 4, "SELECT id, name FROM main.apis"},
    {"family", 4, "SELECT id, family FROM main.apis"},
    {"category", 4, "SELECT id, category FROM main.apis"},
}};
static_assert(kApiCalls[4] == "api");

const std::array<ChunkedTable, 8> kTables = {{
    {"api_calls", kApiCalls, 0, 1, 2, 3, kApiLabels},
    {"offcpu", kOffCpu, 0, 1, 3, 4},
    {"syscalls", kSyscalls, 0, 1, 2, 3},
    {"block_io", kBlockIo, 0, 1, 2, 3},
    {"reclaim", kReclaim, 0, 1, 2, 3},
    {"cpu_samples", kCpuSamples, 0, 1, 2, 3},
    {"cpu_runs", kCpuRuns, 0, 1, 2, 2},
    {"wait_migrations", kWaitMigrations, 0, 1, 2, 3},
}};

}  // namespace

std::span<const ChunkedTable> chunked_tables() { return kTables; }

const ChunkedTable* find_chunked_table(std::string_view name) {
  for (const ChunkedTable& t : kTables)
    if (t.name == name) return &t;
  return nullptr;
}

Result<ChunkSink> ChunkSink::prepare(sqlite3* db, const ChunkedTable& table) {
  ChunkSink s;
  s.db_ = db;
  s.table_ = &table;
  // A file made before index_crc (chunk_index.hpp) is written as it was made.
  auto crc = has_index_crc(db, table.chunks());
  if (!crc) return crc.error();
  s.index_crc_ = *crc;
  auto ins = Stmt::prepare(db,
                           "INSERT INTO " + table.chunks() +
                               (s.index_crc_ ? "(pid, tid, ts_min, end_max, rows, data, index_crc) "
                                               "VALUES (?,?,?,?,?,?,?)"
                                             : "(pid, tid, ts_min, end_max, rows, data) "
                                               "VALUES (?,?,?,?,?,?)"),
                           "preparing inserts into " + table.chunks());
  if (!ins) return ins.error();
  s.insert_ = std::move(ins.value());
  auto rollup = RollupWriter::prepare(db, table);
  if (!rollup) return rollup.error();
  s.rollup_ = std::move(rollup.value());
  // A flight recorder file notes each chunk's rollup rows, to age them out with the chunk.
  if (!s.rollup_.table().empty()) {
    auto spans = has_table(db, "rollup_spans");
    if (!spans) return spans.error();
    if (*spans) {
      auto ins = Stmt::prepare(
          db, "INSERT INTO rollup_spans(tbl, chunk, first_row, last_row) VALUES (?,?,?,?)",
          "preparing inserts into rollup_spans");
      if (!ins) return ins.error();
      s.span_insert_ = std::move(ins.value());
    }
  }
  return s;
}

Status ChunkSink::add(const RowValues& row, int64_t now_ns) {
  const ChunkedTable& t = *table_;
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(row.v[t.pid])) << 32) |
                       static_cast<uint32_t>(row.v[t.tid]);
  Open& open = open_.try_emplace(key, Open{ChunkBuilder(static_cast<uint32_t>(t.columns.size()))})
                   .first->second;
  if (open.rows.empty()) open.first_add_ns = now_ns;
  open.rows.add({row.v, t.columns.size()}, row.nulls);
  if (open.rows.rows() >= kChunkRows) return write(key, open);
  return {};
}

Status ChunkSink::flush(int64_t older_than_ns) {
  Status result;
  for (auto it = open_.begin(); it != open_.end();) {
    Open& open = it->second;
    if (!open.rows.empty() && open.first_add_ns < older_than_ns) {
      if (Status st = write(it->first, open); !st && result) result = st;
    }
    // A thread that went quiet gives its buffer back.
    it = open.rows.empty() ? open_.erase(it) : std::next(it);
  }
  return result;
}

Status ChunkSink::write(uint64_t key, Open& open) {
  const ChunkedTable& t = *table_;
  const ChunkBuilder& b = open.rows;
  const uint32_t n = b.rows();
  int64_t ts_min = INT64_MAX, end_max = INT64_MIN;
  for (uint32_t r = 0; r < n; ++r) {
    const int64_t ts = b.value(r, t.ts);
    ts_min = std::min(ts_min, ts);
    int64_t end;  // saturating: a garbled duration must not overflow (tests/fuzz/fuzz_export)
    if (__builtin_add_overflow(ts, b.value(r, t.dur), &end)) end = ts < 0 ? INT64_MIN : INT64_MAX;
    end_max = std::max(end_max, end);
  }
  const auto pid = static_cast<int64_t>(key >> 32), tid = static_cast<int64_t>(key & 0xffffffffu);
  // From here the rows are lost if anything fails: the caller rolls the transaction back, and
  // with it whatever of the chunk and its rollup rows was written.
  written_since_mark_ += n;
  std::pair<int64_t, int64_t> rollup_rows{0, 0};
  const Status rolled = rollup_.write(b, pid, tid, &rollup_rows);  // before encode() empties it
  const std::string blob = open.rows.encode(t.ts);
  if (!rolled) return rolled;
  insert_.i64(1, pid);
  insert_.i64(2, tid);
  insert_.i64(3, ts_min);
  insert_.i64(4, end_max);
  insert_.i64(5, n);
  sqlite3_bind_blob(insert_.get(), 6, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
  if (index_crc_) insert_.i64(7, chunk_index_crc({pid, tid, ts_min, end_max, n}));
  if (insert_.run() != SQLITE_DONE) return sqlite_error(db_, "writing " + t.chunks());
  if (span_insert_ && rollup_rows.first != 0) {
    span_insert_.text(1, rollup_.table());
    span_insert_.i64(2, sqlite3_last_insert_rowid(db_));
    span_insert_.i64(3, rollup_rows.first);
    span_insert_.i64(4, rollup_rows.second);
    if (span_insert_.run() != SQLITE_DONE) return sqlite_error(db_, "writing rollup_spans");
  }
  return {};
}

}  // namespace gpuwhy::store
