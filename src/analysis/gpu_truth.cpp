// SPDX-License-Identifier: Apache-2.0
#include "analysis/gpu_truth.hpp"

#include <algorithm>
#include <map>

#include "analysis/audit.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::analysis {
namespace {

struct DeviceRows {
  std::vector<std::pair<int64_t, int64_t>> all, kernels, copies, memsets;
  std::vector<std::pair<int64_t, int64_t>> pageable;
};

GpuTruthFigures figures_of(DeviceRows& d, int64_t lo, int64_t hi, int64_t estimate_ns) {
  GpuTruthFigures f;
  f.span_ns = std::max<int64_t>(0, hi - lo);
  f.busy_ns = union_ns(d.all, lo, hi);
  f.kernel_ns = union_ns(d.kernels, lo, hi);
  f.copy_ns = union_ns(d.copies, lo, hi);
  f.memset_ns = union_ns(d.memsets, lo, hi);
  auto inside = [&](const std::vector<std::pair<int64_t, int64_t>>& v) {
    return static_cast<uint64_t>(std::count_if(
        v.begin(), v.end(), [&](const auto& x) { return x.second > lo && x.first < hi; }));
  };
  f.kernels = inside(d.kernels);
  f.copies = inside(d.copies);
  f.memsets = inside(d.memsets);
  f.pageable_copies = inside(d.pageable);
  f.pageable_copy_ns = union_ns(d.pageable, lo, hi);
  f.host_estimate_ns = estimate_ns;
  return f;
}

void add_figures(GpuTruthFigures& to, const GpuTruthFigures& f) {
  to.span_ns += f.span_ns;
  to.busy_ns += f.busy_ns;
  to.kernel_ns += f.kernel_ns;
  to.copy_ns += f.copy_ns;
  to.memset_ns += f.memset_ns;
  to.kernels += f.kernels;
  to.copies += f.copies;
  to.memsets += f.memsets;
  to.pageable_copies += f.pageable_copies;
  to.pageable_copy_ns += f.pageable_copy_ns;
}

Result<ProcessGpuTruth> process_truth(sqlite3* db, const ProcessAudit& p, int64_t trace_start,
                                      size_t top) {
  auto st = store::Stmt::prepare(
      db,
      "SELECT a.kind, a.ts, a.dur, coalesce(a.device, 0), a.src_kind, a.dst_kind, "
      "coalesce(n.name, '(unnamed)') FROM gpu_activity a LEFT JOIN gpu_kernel_names n "
      "ON n.id = a.name_id WHERE a.pid = ? AND a.kind IN ('kernel', 'memcpy', 'memset')",
      "reading gpu_activity");
  if (!st) return st.error();
  sqlite3_bind_int64(st->get(), 1, p.process.pid);
  std::map<int, DeviceRows> by_device;
  std::map<std::string, TopKernel> kernels;
  const int64_t lo = trace_start + p.first_ns, hi = trace_start + p.last_ns;
  int rc;
  while ((rc = sqlite3_step(st->get())) == SQLITE_ROW) {
    sqlite3_stmt* s = st->get();
    const std::string kind = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    const int64_t ts = sqlite3_column_int64(s, 1), dur = sqlite3_column_int64(s, 2);
    DeviceRows& d = by_device[sqlite3_column_int(s, 3)];
    const std::pair<int64_t, int64_t> iv{ts, ts + std::max<int64_t>(dur, 0)};
    d.all.push_back(iv);
    if (kind == "kernel") {
      d.kernels.push_back(iv);
      if (iv.second > lo && iv.first < hi) {
        const char* name = reinterpret_cast<const char*>(sqlite3_column_text(s, 6));
        TopKernel& k = kernels[name ? name : ""];
        ++k.count;
        k.total_ns += std::min(iv.second, hi) - std::max(iv.first, lo);
        k.max_ns = std::max(k.max_ns, dur);
      }
    } else if (kind == "memcpy") {
      d.copies.push_back(iv);
      auto text = [&](int c) {
        const unsigned char* t = sqlite3_column_text(s, c);
        return t ? std::string_view(reinterpret_cast<const char*>(t)) : std::string_view();
      };
      if (text(4) == "pageable" || text(5) == "pageable") d.pageable.push_back(iv);
    } else {
      d.memsets.push_back(iv);
    }
  }
  if (rc != SQLITE_DONE) return Error{std::string("reading gpu_activity: ") + sqlite3_errmsg(db)};
  ProcessGpuTruth t;
  if (by_device.empty()) return t;
  for (auto& [device, rows] : by_device) {
    // A device the host side saw is measured over that device's span; one it did not over the
    // process's. (A copy: clang 14 cannot capture a structured binding.)
    const int dev = device;
    const auto it = std::find_if(p.devices.begin(), p.devices.end(),
                                 [&](const DeviceAudit& d) { return d.device == dev; });
    GpuTruthFigures f = it != p.devices.end()
                            ? figures_of(rows, trace_start + it->first_ns,
                                         trace_start + it->last_ns, it->busy.estimate_ns)
                            : figures_of(rows, lo, hi, 0);
    add_figures(t.figures, f);
    t.devices.emplace_back(device, f);
  }
  // The process's span is the one its host estimate is a share of.
  t.figures.span_ns = p.gpu_span_ns;
  t.figures.host_estimate_ns = p.busy.estimate_ns;
  for (auto& [name, k] : kernels) {
    k.name = name;
    t.top_kernels.push_back(std::move(k));
  }
  std::sort(t.top_kernels.begin(), t.top_kernels.end(), [](const TopKernel& a, const TopKernel& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (t.top_kernels.size() > top) t.top_kernels.resize(top);
  return t;
}

}  // namespace

int64_t union_ns(std::vector<std::pair<int64_t, int64_t>>& iv, int64_t lo, int64_t hi) {
  std::sort(iv.begin(), iv.end());
  int64_t total = 0, cur_s = 0, cur_e = 0;
  bool open = false;
  for (const auto& [s0, e0] : iv) {
    const int64_t s = std::max(s0, lo), e = std::min(e0, hi);
    if (e <= s) continue;
    if (open && s <= cur_e) {
      cur_e = std::max(cur_e, e);
      continue;
    }
    if (open) total += cur_e - cur_s;
    cur_s = s;
    cur_e = e;
    open = true;
  }
  if (open) total += cur_e - cur_s;
  return total;
}

Status add_gpu_truth(sqlite3* db, AuditReport& report, size_t top_kernels) {
  auto has = store::has_table(db, "gpu_activity");
  if (!has) return has.error();
  if (!*has) return {};
  for (ProcessAudit& p : report.processes) {
    auto t = process_truth(db, p, report.trace.window.trace_start_ns, top_kernels);
    if (!t) return t.error();
    if (t->devices.empty()) continue;
    // The regime weighs host time against the time the GPU was fed: measured now.
    p.busy.fed_ns = t->figures.busy_ns;
    p.busy.fed_measured = true;
    for (DeviceAudit& d : p.devices)
      for (const auto& [device, f] : t->devices)
        if (device == d.device) {
          d.busy.fed_ns = f.busy_ns;
          d.busy.fed_measured = true;
        }
    p.gpu_truth = std::move(*t);
    reclassify(report, p);
  }
  return {};
}

}  // namespace gpuwhy::analysis
