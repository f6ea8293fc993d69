// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the export writers (src/export: CSV, JSON Lines, Perfetto, the plain and
// Nsight-shaped SQLite files) on a trace made from the input: events, processes, threads, stack
// and Python frames whose names, paths and addresses are any bytes (task names and paths come
// from the traced host and need not be UTF-8 or free of quotes, commas and newlines), at any
// time and pid. Checked beyond "no crash": every JSON Lines line is a JSON object, every CSV
// record has its header's field count, both hold as many rows as the export says it wrote, and
// the Perfetto file is well-formed protobuf (packets of fields that end where their lengths say).
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "export/export_scope.hpp"
#include "export/perfetto_export.hpp"
#include "export/sqlite_export.hpp"
#include "export/text_export.hpp"
#include "store/store.hpp"

namespace {

using namespace gpuwhy;
namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One directory for the run, removed at exit (libFuzzer ends with exit()). In memory where there
// is a tmpfs: the store and the SQLite exports sync their files, which on a disk costs more
// than the rest of an input.
struct Scratch {
  std::string dir;
  Scratch() {
    std::string tmpl = fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    tmpl += "/gw-fuzz-export-XXXXXX";
    if (!mkdtemp(tmpl.data())) std::abort();
    dir = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};
const std::string& scratch() {
  static const Scratch s;
  return s.dir;
}

// ---- the trace ---------------------------------------------------------------------------------

constexpr int64_t kStart = 1'700'000'000'000'000'000;

Comm comm(FuzzedDataProvider& p) {
  Comm c{};
  const std::string s = p.ConsumeRandomLengthString(c.size() - 1);
  std::copy(s.begin(), s.end(), c.begin());
  return c;
}
std::string text(FuzzedDataProvider& p) { return p.ConsumeRandomLengthString(48); }
uint32_t pid(FuzzedDataProvider& p) {
  return p.ConsumeBool() ? p.ConsumeIntegralInRange<uint32_t>(1, 4) : p.ConsumeIntegral<uint32_t>();
}
// Times near the trace's start, and now and then any at all (a crafted or damaged file).
int64_t ts(FuzzedDataProvider& p) {
  if (p.ConsumeIntegralInRange<int>(0, 15) == 0) return p.ConsumeIntegral<int64_t>();
  return kStart + p.ConsumeIntegralInRange<int64_t>(-(int64_t{1} << 40), int64_t{1} << 42);
}
int64_t dur(FuzzedDataProvider& p) {
  if (p.ConsumeIntegralInRange<int>(0, 15) == 0)
    return p.ConsumeIntegralInRange<int64_t>(0, INT64_MAX);
  return p.ConsumeIntegralInRange<int64_t>(0, int64_t{1} << 40);
}

Event event(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange<int>(0, 6)) {
    case 0: {
      OffCpu o;
      o.ts = ts(p), o.dur = dur(p), o.runq = p.ConsumeIntegralInRange<int64_t>(0, o.dur);
      o.pid = pid(p), o.tid = pid(p), o.cpu = p.ConsumeIntegralInRange<uint32_t>(0, 8);
      o.preempted = p.ConsumeBool();
      o.next_pid = pid(p), o.next_tid = pid(p), o.next_comm = comm(p);
      o.waker_pid = pid(p), o.waker_tid = pid(p), o.waker_comm = comm(p);
      o.holder_pid = pid(p), o.holder_tid = pid(p), o.holder_comm = comm(p);
      o.syscall = p.ConsumeIntegralInRange<int32_t>(-1, 500);
      return o;
    }
    case 1: {
      ProcEvent e;
      e.ts = ts(p), e.pid = pid(p), e.tid = pid(p), e.other_pid = pid(p);
      e.kind = static_cast<ProcEventKind>(p.ConsumeIntegralInRange<int>(1, 5));
      e.comm = comm(p);
      if (e.kind == ProcEventKind::Exec) e.filename = text(p);
      return e;
    }
    case 2: {
      TcpRetrans t;
      t.ts = ts(p), t.pid = pid(p), t.tid = pid(p);
      t.family = p.ConsumeBool() ? 2 : 10;
      t.saddr = text(p), t.daddr = text(p);
      t.sport = p.ConsumeIntegral<uint16_t>(), t.dport = p.ConsumeIntegral<uint16_t>();
      return t;
    }
    case 3: {
      TaskRename r;
      r.ts = ts(p), r.pid = pid(p), r.tid = pid(p), r.comm = comm(p);
      return r;
    }
    case 4: {
      CpuSample c;
      c.ts = ts(p), c.dur = dur(p), c.pid = pid(p), c.tid = pid(p);
      c.stack_id = p.ConsumeIntegralInRange<int32_t>(-1, 3);
      return c;
    }
    default: {
      ApiCall c;
      c.ts = ts(p), c.dur = dur(p), c.pid = pid(p), c.tid = pid(p);
      const auto apis = api_catalog();
      c.api = apis[p.ConsumeIntegralInRange<size_t>(0, apis.size() - 1)].id;
      c.ret = p.ConsumeIntegral<int64_t>();
      c.f.bytes = p.ConsumeIntegral<uint64_t>();
      c.f.addr = p.ConsumeIntegral<uint64_t>();
      c.f.op = p.ConsumeIntegralInRange<int32_t>(-1, 5);
      c.stack_id = p.ConsumeIntegralInRange<int32_t>(-1, 3);
      c.py_stack_id = p.ConsumeIntegralInRange<int32_t>(-1, 3);
      return c;
    }
  }
}

// Writes the trace; false when the store refuses it (not what this target is about).
bool write_trace(FuzzedDataProvider& p, const std::string& path) {
  store::SessionInfo s;
  s.host = text(p);
  s.command_line = text(p);
  s.start_ns = kStart;
  auto w = store::TraceWriter::create(path, s);
  if (!w) return false;
  store::TraceWriter& tw = **w;
  std::vector<Event> batch;
  const int n = p.ConsumeIntegralInRange<int>(0, 48);
  for (int i = 0; i < n && p.remaining_bytes(); ++i) batch.push_back(event(p));
  if (!tw.write_batch(batch).ok()) return false;
  for (int i = p.ConsumeIntegralInRange<int>(0, 3); i > 0; --i) {
    discover::ProcessInfo pi;
    pi.pid = pid(p), pi.ppid = pid(p);
    pi.comm = text(p), pi.exe = text(p), pi.cmdline = text(p), pi.cgroup = text(p);
    pi.start_ns = ts(p);
    if (!tw.upsert_process(pi, pi.start_ns).ok()) return false;
    if (!tw.upsert_thread(pi.pid, pid(p), text(p), ts(p)).ok()) return false;
  }
  std::vector<store::StackFrameRow> frames;
  for (int i = p.ConsumeIntegralInRange<int>(0, 3); i > 0; --i) {
    store::StackFrameRow f;
    f.stack_id = p.ConsumeIntegralInRange<int32_t>(0, 3);
    f.depth = p.ConsumeIntegralInRange<uint32_t>(0, 3);
    f.addr = p.ConsumeIntegral<uint64_t>();
    f.module = text(p), f.symbol = text(p);
    f.call_site = p.ConsumeBool();
    frames.push_back(f);
  }
  if (!frames.empty() && !tw.write_stack_frames(frames).ok()) return false;
  std::vector<store::PythonFrameRow> py;
  for (int i = p.ConsumeIntegralInRange<int>(0, 2); i > 0; --i) {
    store::PythonFrameRow f;
    f.py_stack_id = p.ConsumeIntegralInRange<int32_t>(0, 3);
    f.depth = p.ConsumeIntegralInRange<uint32_t>(0, 3);
    f.pid = pid(p);
    f.file = text(p), f.function = text(p), f.source = text(p);
    f.line = p.ConsumeIntegralInRange<int32_t>(-1, 1000);
    py.push_back(f);
  }
  if (!py.empty() && !tw.write_python_frames(py).ok()) return false;
  return tw.finish(kStart + p.ConsumeIntegralInRange<int64_t>(0, int64_t{1} << 42)).ok();
}

// ---- the checks --------------------------------------------------------------------------------

// Records of an RFC 4180 text (quoted fields may hold commas, quotes and line breaks), each as its
// number of fields; nullopt when the text is not well-formed.
std::optional<std::vector<size_t>> csv_records(const std::string& s) {
  std::vector<size_t> out;
  size_t i = 0, fields = 1;
  while (i < s.size()) {
    if (s[i] == '"') {
      for (++i;; ++i) {
        if (i >= s.size()) return std::nullopt;  // an unterminated quote
        if (s[i] == '"') {
          if (i + 1 < s.size() && s[i + 1] == '"') {
            ++i;
            continue;
          }
          ++i;
          break;
        }
      }
      if (i < s.size() && s[i] != ',' && s[i] != '\r') return std::nullopt;
    }
    while (i < s.size() && s[i] != ',' && s[i] != '\r' && s[i] != '\n' && s[i] != '"') ++i;
    if (i >= s.size()) return std::nullopt;  // every record ends in CRLF
    if (s[i] == '"') return std::nullopt;    // a quote inside an unquoted field
    if (s[i] == ',') {
      ++fields, ++i;
      continue;
    }
    if (s[i] == '\n' || i + 1 >= s.size() || s[i + 1] != '\n') return std::nullopt;  // a bare CR/LF
    out.push_back(fields);
    fields = 1;
    i += 2;
  }
  return out;
}

void check_csv_dir(const fs::path& dir, uint64_t rows) {
  uint64_t seen = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    const auto records = csv_records(slurp(f.path()));
    if (!records || records->empty()) std::abort();
    for (size_t n : *records)
      if (n != records->front()) std::abort();
    seen += records->size() - 1;  // the header
  }
  if (seen != rows) std::abort();
}

void check_jsonl_dir(const fs::path& dir, uint64_t rows) {
  uint64_t seen = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    const std::string s = slurp(f.path());
    size_t at = 0;
    while (at < s.size()) {
      const size_t nl = s.find('\n', at);
      if (nl == std::string::npos) std::abort();
      const auto row = nlohmann::json::parse(s.substr(at, nl - at), nullptr, false);
      if (row.is_discarded() || !row.is_object()) std::abort();
      ++seen;
      at = nl + 1;
    }
  }
  if (seen != rows) std::abort();
}

bool read_varint(const std::string& s, size_t& i, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (i >= s.size()) return false;
    const auto b = static_cast<uint8_t>(s[i++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Fields of a protobuf message from `begin` to `end`; the length-delimited ones' [begin, end)
// go to `nested` (submessages or strings: a schema would be needed to tell which).
bool proto_fields(const std::string& s, size_t begin, size_t end,
                  std::vector<std::pair<size_t, size_t>>* nested) {
  size_t i = begin;
  while (i < end) {
    uint64_t tag, v;
    if (!read_varint(s, i, tag) || (tag >> 3) == 0) return false;
    switch (tag & 7) {
      case 0:
        if (!read_varint(s, i, v)) return false;
        break;
      case 1:
        i += 8;
        break;
      case 5:
        i += 4;
        break;
      case 2:
        if (!read_varint(s, i, v) || v > end - i) return false;
        if (nested) nested->push_back({i, i + v});
        i += v;
        break;
      default:
        return false;
    }
    if (i > end) return false;
  }
  return true;
}

void check_perfetto(const std::string& s) {
  std::vector<std::pair<size_t, size_t>> packets;
  if (!proto_fields(s, 0, s.size(), &packets)) std::abort();
  for (const auto& [b, e] : packets)
    if (!proto_fields(s, b, e, nullptr)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  const fs::path dir = scratch();
  std::error_code ec;
  fs::remove_all(dir / "out", ec);
  fs::remove(dir / "t.db", ec);
  fs::remove(dir / "t.db-wal", ec);
  fs::remove(dir / "t.db-shm", ec);
  fs::create_directories(dir / "out", ec);
  const std::string db = dir / "t.db";
  if (!write_trace(p, db)) return 0;
  auto file = store::TraceFile::open(db);
  if (!file) return 0;
  auto scope = exporter::resolve_scope(**file, {}, {});
  if (!scope) return 0;

  auto csv = exporter::export_text_dir(**file, *scope, exporter::TextFormat::Csv, dir / "out/csv");
  if (csv) check_csv_dir(dir / "out/csv", csv->rows);
  auto jsonl =
      exporter::export_text_dir(**file, *scope, exporter::TextFormat::Jsonl, dir / "out/jsonl");
  if (jsonl) check_jsonl_dir(dir / "out/jsonl", jsonl->rows);
  if (csv && jsonl && csv->rows != jsonl->rows) std::abort();
  // Parquet: every file framed (PAR1 at both ends, the footer's length inside the file), and
  // as many rows as the CSV export wrote when both succeed.
  auto pq = exporter::export_text_dir(**file, *scope, exporter::TextFormat::Parquet,
                                      dir / "out/parquet");
  if (pq) {
    for (const auto& e : fs::directory_iterator(dir / "out/parquet")) {
      if (e.path().extension() != ".parquet") continue;  // duckdb.sql beside them
      const std::string b = slurp(e.path().string());
      if (b.size() < 12 || b.compare(0, 4, "PAR1") != 0 || b.compare(b.size() - 4, 4, "PAR1") != 0)
        std::abort();
      uint32_t footer = 0;
      std::memcpy(&footer, b.data() + b.size() - 8, 4);
      if (footer + 12 > b.size()) std::abort();
    }
    if (csv && csv->rows != pq->rows) std::abort();
  }
  const std::string pf = dir / "out/t.perfetto";
  if (exporter::export_perfetto(**file, *scope, pf)) check_perfetto(slurp(pf));
  (void)exporter::export_plain_sqlite(**file, *scope, dir / "out/plain.db");
  (void)exporter::export_nsight_sqlite(**file, *scope, dir / "out/nsight.db");
  return 0;
}
