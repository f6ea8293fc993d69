// SPDX-License-Identifier: Apache-2.0
// The Nsight-shaped export (sqlite_export.hpp): the tables Nsight Systems' SQLite export names
// for CUDA API calls, OS runtime calls, scheduling and thread names, with its conventions, so a
// recipe written for an nsys report runs on a gpuwhy trace:
//  - times are ns since the session start (TARGET_INFO_SESSION_START_TIME.utcEpochNs is the
//    start as wall-clock ns);
//  - threads are serialized: globalTid = pid << 24 | tid (pid = globalTid / 0x1000000 % 0x1000000,
//    tid = globalTid % 0x1000000), a process's globalPid the same with tid 0;
//  - names are in StringIds (nameId): API names, syscall names, thread and process names, and
//    kernel names (demangledName, shortName, mangledName);
//  - the device's own records (trace --gpu-activity) in CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY and
//    _MEMSET, with CUPTI's numbers for copyKind, srcKind, dstKind and memKind. Their
//    correlationId is CUPTI's; CUPTI_ACTIVITY_KIND_RUNTIME's is gpuwhy's call id (the host's
//    calls do not carry CUPTI's), so the two do not join on it.
// What gpuwhy does not record is NULL: callchainId, priority, threadBlock (docs/export.md).
#include <string>

#include "export/output_db.hpp"
#include "export/sqlite_export.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::exporter {
namespace {

constexpr const char* kNsightSchema = R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL,
  nestingLevel INTEGER, callchainId INTEGER);
CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER NOT NULL, isSchedIn INTEGER NOT NULL,
  globalTid INTEGER, threadState INTEGER, threadBlock INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
  globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
  mangledName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,
  blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER, staticSharedMemory INTEGER,
  dynamicSharedMemory INTEGER, gridId INTEGER, graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
  globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER,
  srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER,
  dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
  globalPid INTEGER, value INTEGER, bytes INTEGER NOT NULL, graphNodeId INTEGER,
  memKind INTEGER);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, busLocation TEXT, uuid TEXT,
  totalMemory INTEGER, smCount INTEGER, chipName TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
)sql";

// StringIds: one id per distinct text, in a temporary table the inserts below join.
constexpr const char* kStrings = R"sql(
INSERT INTO StringIds (value)
  SELECT DISTINCT v FROM (SELECT name AS v FROM src_apis UNION SELECT name FROM src_syscall_names
                          UNION SELECT comm FROM src_threads WHERE comm NOT NULL
                          UNION SELECT comm FROM src_processes WHERE comm NOT NULL
                          UNION SELECT 'syscall ' || nr FROM syscalls_in
                          UNION SELECT name FROM kernel_names UNION SELECT mangled FROM kernel_names
                          UNION SELECT short FROM kernel_names
                          UNION SELECT 'kernel' WHERE EXISTS (SELECT 1 FROM gpu_in))
)sql";

// The device's rows (trace --gpu-activity) in Nsight's tables; CUPTI's enum values from the
// names gpuwhy stored (src/gpu_activity/records.cpp names them from the same numbers).
constexpr const char* kMemoryKind =
    "CASE %s WHEN 'pageable' THEN 1 WHEN 'pinned' THEN 2 WHEN 'device' THEN 3 WHEN 'array' "
    "THEN 4 WHEN 'managed' THEN 5 WHEN 'device_static' THEN 6 WHEN 'managed_static' THEN 7 "
    "ELSE 0 END";
constexpr const char* kCopyKind =
    "CASE copy_kind WHEN 'HtoD' THEN 1 WHEN 'DtoH' THEN 2 WHEN 'HtoA' THEN 3 WHEN 'AtoH' THEN 4 "
    "WHEN 'AtoA' THEN 5 WHEN 'AtoD' THEN 6 WHEN 'DtoA' THEN 7 WHEN 'DtoD' THEN 8 WHEN 'HtoH' "
    "THEN 9 WHEN 'PtoP' THEN 10 ELSE 0 END";

std::string memory_kind(const std::string& column) {
  std::string out = kMemoryKind;
  out.replace(out.find("%s"), 2, column);
  return out;
}

std::string gpu_tables_sql(const std::string& start) {
  const std::string id_of = "(SELECT id FROM sid WHERE value = ";
  return "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT g.ts - " + start + ", g.ts + g.dur - " +
         start + ", coalesce(g.device, 0), g.context, g.stream, g.correlation, g.pid << 24, " +
         id_of + "coalesce(n.name, 'kernel')), " + id_of + "coalesce(n.short, 'kernel')), " +
         id_of +
         "n.mangled), g.grid_x, g.grid_y, g.grid_z, g.block_x, g.block_y, g.block_z, NULL, NULL, "
         "NULL, NULL, NULL FROM gpu_in AS g LEFT JOIN kernel_names AS n ON n.id = g.name_id "
         "WHERE g.kind = 'kernel' ORDER BY g.ts;\n"
         "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY SELECT ts - " +
         start + ", ts + dur - " + start +
         ", coalesce(device, 0), context, stream, correlation, pid << 24, coalesce(bytes, 0), " +
         kCopyKind + ", NULL, " + memory_kind("src_kind") + ", " + memory_kind("dst_kind") +
         ", NULL, NULL, NULL, NULL, NULL, NULL FROM gpu_in WHERE kind = 'memcpy' ORDER BY ts;\n"
         "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET SELECT ts - " +
         start + ", ts + dur - " + start +
         ", coalesce(device, 0), context, stream, correlation, pid << 24, NULL, "
         "coalesce(bytes, 0), NULL, " +
         memory_kind("detail") + " FROM gpu_in WHERE kind = 'memset' ORDER BY ts;\n";
}

// Event classes as Nsight numbers them (TRACE_PROCESS_EVENT_CUDA_RUNTIME, _CUDA_DRIVER,
// _OS_RUNTIME). A driver call made inside a runtime call (cudaStreamSynchronize's
// cuStreamSynchronize) lies within it: a summary over both classes counts that time twice, so
// recipes that rank APIs by their share filter on eventClass (docs/export.md).
constexpr int kEventClassCudaRuntime = 0;
constexpr int kEventClassCudaDriver = 1;
constexpr int kEventClassOsRuntime = 27;
// META_DATA_EXPORT's EXPORT_SCHEMA_VERSION: the version of this subset's tables and columns
// (not Nsight's own numbering), raised when one changes.
constexpr int kNsightSubsetVersion = 2;

}  // namespace

Result<ExportStats> export_nsight_sqlite(const store::TraceFile& file, const Scope& scope,
                                         const std::string& out_path) {
  auto out = OutputDb::create(out_path);
  if (!out) return out.error();
  sqlite3* db = out->db();
  if (auto st = out->exec(kNsightSchema, "creating the Nsight tables"); !st) return st.error();
  // The rows in scope, copied plain first (small temporary tables), then shaped with SQL.
  const std::string start = std::to_string(scope.start_ns());
  struct Stage {
    const char* name;
    std::string select;
    const char* create;
  };
  const Stage stages[] = {
      {"src_apis", "SELECT id, name, family FROM apis",
       "CREATE TEMP TABLE src_apis (id INTEGER PRIMARY KEY, name, family)"},
      {"src_syscall_names", "SELECT nr, name FROM syscall_names",
       "CREATE TEMP TABLE src_syscall_names (nr INTEGER PRIMARY KEY, name)"},
      {"src_threads", "SELECT pid, tid, comm FROM threads" + scope.where(false, true),
       "CREATE TEMP TABLE src_threads (pid, tid, comm)"},
      {"src_processes", "SELECT pid, comm FROM processes" + scope.where(false, true),
       "CREATE TEMP TABLE src_processes (pid, comm)"},
      {"calls_in",
       "SELECT rowid, ts, dur, pid, tid, api, ret, addr FROM api_calls" + scope.where(true, true),
       "CREATE TEMP TABLE calls_in (id, ts, dur, pid, tid, api, ret, addr)"},
      {"offcpu_in",
       "SELECT ts, dur, pid, tid, cpu, state, syscall FROM offcpu" + scope.where(true, true),
       "CREATE TEMP TABLE offcpu_in (ts, dur, pid, tid, cpu, state, syscall)"},
      {"syscalls_in", "SELECT ts, dur, pid, tid, nr, ret FROM syscalls" + scope.where(true, true),
       "CREATE TEMP TABLE syscalls_in (ts, dur, pid, tid, nr, ret)"},
      // The device's records and kernel names (empty for a file that predates them). shortName
      // as Nsight shows it: the demangled name up to its parameter list.
      {"gpu_in",
       "SELECT kind, pid, ts, max(dur, 0), device, context, stream, correlation, name_id, grid_x, "
       "grid_y, grid_z, block_x, block_y, block_z, bytes, copy_kind, src_kind, dst_kind, detail "
       "FROM gpu_activity" +
           (scope.where(true, true).empty() ? std::string(" WHERE")
                                            : scope.where(true, true) + " AND") +
           " kind IN ('kernel', 'memcpy', 'memset')",
       "CREATE TEMP TABLE gpu_in (kind, pid, ts, dur, device, context, stream, correlation, "
       "name_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, bytes, copy_kind, src_kind, "
       "dst_kind, detail)"},
      {"kernel_names",
       "SELECT id, name, mangled, CASE WHEN instr(name, '(') > 1 THEN substr(name, 1, "
       "instr(name, '(') - 1) ELSE name END FROM gpu_kernel_names" +
           scope.where(false, true),
       "CREATE TEMP TABLE kernel_names (id INTEGER PRIMARY KEY, name, mangled, short)"},
  };
  for (const Stage& s : stages) {
    if (auto st = out->exec(s.create, "staging " + std::string(s.name)); !st) return st.error();
    auto has = store::run_query(file, s.select + " LIMIT 0");
    if (!has) continue;  // a table the file predates (syscalls is always there; be lenient)
    std::string cols = has->columns.empty() ? "" : "?";
    for (size_t i = 1; i < has->columns.size(); ++i) cols += ",?";
    auto rows = out->copy_rows(file.db(), s.select,
                               "INSERT INTO temp." + std::string(s.name) + " VALUES (" + cols + ")",
                               s.name);
    if (!rows) return rows.error();
  }
  // Without the syscall family, the sleeps that name their syscall stand for the syscalls, as in
  // explain (their blocking part only; see docs/export.md).
  auto family = store::run_query(
      file,
      "SELECT count(*) FROM sqlite_schema WHERE name = 'probe_families' AND EXISTS "
      "(SELECT 1 FROM probe_families WHERE family = 'syscalls' AND state = 'on')");
  const bool syscalls_on = family && !family->rows.empty() && family->rows[0][0] != "0";
  if (!syscalls_on)
    if (auto st = out->exec("INSERT INTO temp.syscalls_in SELECT ts, dur, pid, tid, syscall, 0 "
                            "FROM temp.offcpu_in WHERE syscall NOT NULL",
                            "deriving syscalls from sleeps");
        !st)
      return st.error();
  const std::string sql =
      std::string(kStrings) + ";\n" +
      "CREATE TEMP TABLE sid AS SELECT value, id FROM StringIds;\n"
      "CREATE UNIQUE INDEX temp.sid_value ON sid(value);\n"
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT c.ts - " +
      start + ", c.ts + coalesce(c.dur, 0) - " + start + ", CASE a.family WHEN 'cuda' THEN " +
      std::to_string(kEventClassCudaDriver) + " ELSE " + std::to_string(kEventClassCudaRuntime) +
      " END, (c.pid << 24) | (c.tid & 16777215), c.id, "
      "(SELECT id FROM sid WHERE value = a.name), coalesce(c.ret, 0), NULL "
      "FROM calls_in AS c JOIN src_apis AS a ON a.id = c.api ORDER BY c.ts;\n"
      "INSERT INTO OSRT_API SELECT s.ts - " +
      start + ", s.ts + s.dur - " + start + ", " + std::to_string(kEventClassOsRuntime) +
      ", (s.pid << 24) | (s.tid & 16777215), NULL, "
      "(SELECT id FROM sid WHERE value = coalesce(n.name, 'syscall ' || s.nr)), "
      "coalesce(s.ret, 0), 0, NULL "
      "FROM syscalls_in AS s LEFT JOIN src_syscall_names AS n ON n.nr = s.nr ORDER BY s.ts;\n" +
      gpu_tables_sql(start) +
      "INSERT INTO SCHED_EVENTS SELECT t, cpu, sched_in, gtid, state, NULL FROM ("
      "  SELECT ts - " +
      start +
      " AS t, cpu, 0 AS sched_in, (pid << 24) | (tid & 16777215) AS gtid, "
      "         state FROM offcpu_in"
      "  UNION ALL SELECT ts + dur - " +
      start +
      ", cpu, 1, (pid << 24) | (tid & 16777215), NULL "
      "         FROM offcpu_in) ORDER BY t, sched_in;\n"
      "INSERT INTO main.PROCESSES SELECT pid << 24, pid, comm FROM src_processes GROUP BY pid;\n"
      "INSERT INTO ThreadNames SELECT (SELECT id FROM sid WHERE value = comm), NULL, "
      "(pid << 24) | (tid & 16777215) FROM src_threads WHERE comm NOT NULL GROUP BY pid, tid;\n"
      "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (" +
      start +
      ", NULL, NULL);\n"
      "INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PROGRAM_NAME', 'gpuwhy'), "
      "('EXPORT_PROGRAM_VERSION', '" GPUWHY_VERSION
      "'), ('EXPORT_FORMAT', 'nsight-subset'), ('EXPORT_SCHEMA_VERSION', '" +
      std::to_string(kNsightSubsetVersion) +
      "');\n"
      // The devices the trace saw work on (the device's records) or a thread select; gpuwhy
      // reads no device properties, so only the ordinal is known.
      "INSERT INTO TARGET_INFO_GPU (id) SELECT DISTINCT d FROM (SELECT coalesce(device, 0) AS d "
      "FROM gpu_in UNION SELECT c.addr FROM calls_in AS c JOIN src_apis AS a ON a.id = c.api "
      "WHERE a.name IN ('cudaSetDevice', 'hipSetDevice') AND coalesce(c.ret, 0) = 0 AND "
      "c.addr BETWEEN 0 AND 1023 UNION SELECT 0 WHERE EXISTS (SELECT 1 FROM calls_in)) "
      "ORDER BY d;\n"
      "DROP TABLE temp.sid;";
  if (auto st = out->exec(sql, "shaping the Nsight tables"); !st) return st.error();
  ExportStats stats;
  stats.tables = 12;
  auto count = store::Stmt::prepare(
      db,
      "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME) + (SELECT count(*) FROM OSRT_API) "
      "+ (SELECT count(*) FROM SCHED_EVENTS) + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL) "
      "+ (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY) "
      "+ (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET)",
      "counting");
  if (count && sqlite3_step(count->get()) == SQLITE_ROW)
    stats.rows = static_cast<uint64_t>(sqlite3_column_int64(count->get(), 0));
  count = store::Stmt();
  if (auto st = out->exec(
          "CREATE INDEX CUPTI_RUNTIME_nameId ON CUPTI_ACTIVITY_KIND_RUNTIME(nameId)", "indexing");
      !st)
    return st.error();
  if (auto st = out->commit(); !st) return st.error();
  return stats;
}

}  // namespace gpuwhy::exporter
