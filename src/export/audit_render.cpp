// SPDX-License-Identifier: Apache-2.0
#include "export/audit_render.hpp"

#include <cmath>

#include <fmt/format.h>

#include "analysis/units.hpp"
#include "core/untrusted.hpp"
#include "export/gpu_time_render.hpp"
#include "export/json_rounding.hpp"

namespace gpuwhy::render {
namespace {

using analysis::fmt_bytes;
using analysis::fmt_duration;
using analysis::fmt_percent;
using json = nlohmann::ordered_json;
// Text output: every string from the report (process names, call sites' file names, sentences
// built around them) goes out through shown(), never raw.
using untrusted::shown;

double share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}
// Costs of short windows are fractions of a cent: kept to a millionth.
double round6(double v) { return std::round(v * 1e6) / 1e6; }
// Cents for real sums; small windows keep four significant digits instead of showing 0.00.
std::string money(double v) {
  return v >= 1 || v == 0 ? fmt::format("{:.2f}", v) : fmt::format("{:.4g}", v);
}

std::string sites_text(const analysis::ProcessMemory& m) {
  std::string out;
  size_t listed = 0;
  for (const analysis::MemorySite& s : m.sites) {
    if (listed++ == 8) {
      out += fmt::format("      … {} more sites\n", m.sites.size() - 8);
      break;
    }
    out += fmt::format("      {:<9} {:>10} kept of {:>10} in {} alloc(s), {} freed: {}\n",
                       s.pattern, fmt_bytes(s.kept_bytes), fmt_bytes(s.bytes_allocated), s.allocs,
                       s.frees, shown(s.site));
    if (s.untouched_bytes > 0)
      out += fmt::format(
          "                {} in {} kept allocation(s) that no copy or memset "
          "touched: a candidate to free (kernels' own use is not recorded)\n",
          fmt_bytes(s.untouched_bytes), s.untouched_allocs);
  }
  return out;
}

std::string steps_text(const std::vector<analysis::ReserveStep>& steps, char sign) {
  std::string out;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i == 6) return out + fmt::format(", … {} more", steps.size() - 6);
    out += fmt::format("{}+{} {}{}", i ? ", " : "", fmt_duration(steps[i].at_ns), sign,
                       fmt_bytes(steps[i].bytes));
  }
  return out;
}

// A caching allocator's reserve, apart from the program's own buffers (docs/audit.md).
std::string reserve_text(const analysis::AllocatorReserve& r) {
  std::string out = fmt::format(
      "  reserved by a caching allocator: {} in {} segment(s) at the end, peak {} in {} at +{}; "
      "grown at {} step(s) ({})",
      fmt_bytes(r.bytes), r.segments, fmt_bytes(r.peak_bytes), r.peak_segments,
      fmt_duration(r.peak_at_ns), r.growth.size(), steps_text(r.growth, '+'));
  if (!r.sweeps.empty())
    out +=
        fmt::format(", released in {} sweep(s) ({})", r.sweeps.size(), steps_text(r.sweeps, '-'));
  out += "; by " + shown(r.site) + "\n";
  if (r.still_growing)
    out +=
        "        still growing in the window's last half with no sweep: tensors kept alive "
        "behind the allocator (a leak), or fragmentation\n";
  return out;
}

json reserve_json(const analysis::AllocatorReserve& r) {
  auto steps = [](const std::vector<analysis::ReserveStep>& v) {
    json a = json::array();
    for (const analysis::ReserveStep& s : v)
      a.push_back({{"rel_ns", s.at_ns},
                   {"segments", s.segments},
                   {"bytes", s.bytes},
                   {"reserved_after_bytes", s.reserved_after}});
    return a;
  };
  return {{"site", r.site},
          {"segments", r.segments},
          {"bytes", r.bytes},
          {"peak_segments", r.peak_segments},
          {"peak_bytes", r.peak_bytes},
          {"peak_rel_ns", r.peak_at_ns},
          {"reserved_segments", r.reserved_segments},
          {"released_segments", r.released_segments},
          {"growth", steps(r.growth)},
          {"sweeps", steps(r.sweeps)},
          {"still_growing", r.still_growing}};
}

// What pinning returns, and how it was estimated (docs/audit.md).
std::string pinning_text(const analysis::Lever& l) {
  const analysis::PinningEstimate& p = *l.pinning;
  std::string out = fmt::format(
      "        pinning returns {}: pageable copies {} less {} for the same {} at {} ({})",
      fmt_duration(p.returns_ns), fmt_duration(p.pageable_ns), fmt_duration(p.at_pinned_ns),
      fmt_bytes(p.pageable_bytes), analysis::fmt_bandwidth(p.pinned_bytes_per_s),
      p.rate_observed ? "the pinned rate seen in this trace"
                      : "assumed: no pinned copy in the trace measures the rate");
  if (l.async_returns_ns > 0)
    out += fmt::format("; async copies of the pinned synchronous ones {} more",
                       fmt_duration(l.async_returns_ns));
  return out + "\n";
}

json pinning_json(const analysis::Lever& l) {
  const analysis::PinningEstimate& p = *l.pinning;
  return {{"returns_ns", p.returns_ns},
          {"pageable_ns", p.pageable_ns},
          {"pageable_bytes", p.pageable_bytes},
          {"at_pinned_ns", p.at_pinned_ns},
          {"pinned_bytes_per_s", std::round(p.pinned_bytes_per_s)},
          {"rate", p.rate_observed ? "observed" : "default"},
          {"async_returns_ns", l.async_returns_ns}};
}

}  // namespace

namespace {

std::string memory_text(const analysis::ProcessMemory& m, const char* indent) {
  if (m.allocations == 0)
    return fmt::format("{}device memory: no allocation calls in the window\n", indent);
  std::string out = fmt::format("{}device memory: peak {} at +{}, {} at the start, {} at the end",
                                indent, fmt_bytes(m.peak), fmt_duration(m.peak_at_ns),
                                fmt_bytes(m.live_start), fmt_bytes(m.live_end));
  if (m.pinned_host_peak > 0)
    out += fmt::format("; pinned host peak {}", fmt_bytes(m.pinned_host_peak));
  return out + "\n";
}

std::string busy_text(const analysis::AuditFigures& p, const char* indent, size_t gpus) {
  const int64_t span = p.gpu_span_ns;
  return fmt::format(
      "{}GPU busy (host-side estimate): {} of {}{} ({}), within {} .. {} (waited in syncs .. "
      "had work queued)\n",
      indent, fmt_duration(p.busy.estimate_ns), fmt_duration(span),
      gpus > 1 ? fmt::format(", its {} GPUs' spans summed,", gpus) : std::string(),
      fmt_percent(share(p.busy.estimate_ns, span)), fmt_duration(p.busy.lower_ns),
      fmt_duration(p.busy.upper_ns));
}

// trace --gpu-activity: the device's busy time, measured, with the host estimate beside it.
std::string truth_text(const analysis::GpuTruthFigures& t, const char* indent, size_t gpus) {
  std::string out = fmt::format(
      "{}GPU busy (device, CUPTI): {} of {}{} ({}): kernels {}, copies {}, memsets {}\n", indent,
      fmt_duration(t.busy_ns), fmt_duration(t.span_ns),
      gpus > 1 ? fmt::format(", its {} GPUs' spans summed,", gpus) : std::string(),
      fmt_percent(share(t.busy_ns, t.span_ns)), fmt_duration(t.kernel_ns), fmt_duration(t.copy_ns),
      fmt_duration(t.memset_ns));
  const int64_t err = t.host_error_ns();
  out += fmt::format("{}  host-side estimate {} ({}), {} {} the truth ({} of the span)\n", indent,
                     fmt_duration(t.host_estimate_ns),
                     fmt_percent(share(t.host_estimate_ns, t.span_ns)),
                     fmt_duration(err < 0 ? -err : err), err < 0 ? "under" : "over",
                     fmt_percent(share(err < 0 ? -err : err, t.span_ns)));
  if (t.pageable_copies > 0)
    out += fmt::format("{}  {} copies with pageable host memory took {} on the device\n", indent,
                       t.pageable_copies, fmt_duration(t.pageable_copy_ns));
  return out;
}

// A kernel name is the traced program's text: shown escaped, as every such name (untrusted.hpp),
// and cut to a line's width.
std::string printable_name(const std::string& name) {
  const std::string out = shown(name);
  return out.size() > 80 ? out.substr(0, 77) + "..." : out;
}

std::string top_kernels_text(const analysis::ProcessGpuTruth& t, const char* indent) {
  std::string out;
  const size_t n = std::min<size_t>(t.top_kernels.size(), 5);
  for (size_t i = 0; i < n; ++i) {
    const analysis::TopKernel& k = t.top_kernels[i];
    out += fmt::format("{}{} {} in {} launches ({} of kernel time): {}\n", indent,
                       i == 0 ? "top kernels:" : "            ", fmt_duration(k.total_ns), k.count,
                       fmt_percent(share(k.total_ns, t.figures.kernel_ns)), printable_name(k.name));
  }
  return out;
}

const analysis::GpuTruthFigures* device_truth(const analysis::ProcessAudit& p, int device) {
  if (!p.gpu_truth) return nullptr;
  for (const auto& [d, f] : p.gpu_truth->devices)
    if (d == device) return &f;
  return nullptr;
}

json truth_json(const analysis::GpuTruthFigures& t) {
  return {{"busy_ns", t.busy_ns},
          {"span_ns", t.span_ns},
          {"ratio", round4(share(t.busy_ns, t.span_ns))},
          {"kernel_ns", t.kernel_ns},
          {"copy_ns", t.copy_ns},
          {"memset_ns", t.memset_ns},
          {"kernels", t.kernels},
          {"copies", t.copies},
          {"memsets", t.memsets},
          {"pageable_copies", t.pageable_copies},
          {"pageable_copy_ns", t.pageable_copy_ns},
          {"host_estimate_ns", t.host_estimate_ns},
          {"host_error_ns", t.host_error_ns()}};
}

std::string tids_text(const std::vector<uint32_t>& tids) {
  std::string out;
  for (uint32_t t : tids) out += (out.empty() ? "" : ", ") + std::to_string(t);
  return out;
}

}  // namespace

std::string audit_text(const analysis::AuditReport& r) {
  std::string out = fmt::format("gpuwhy audit: {} GPU process(es) over {}", r.processes.size(),
                                fmt_duration(r.trace.window.duration()));
  if (r.price_per_gpu_hour > 0)
    out += fmt::format(", {} at {}/GPU-hour (each GPU a process used)", money(r.window_cost),
                       money(r.price_per_gpu_hour));
  out += "\n";
  for (const analysis::Caveat& c : r.caveats) out += "  note: " + shown(c.text) + "\n";
  for (const analysis::ProcessAudit& p : r.processes) {
    const int64_t span = p.last_ns - p.first_ns;
    std::string gpus;
    for (const analysis::DeviceAudit& d : p.devices)
      gpus += (gpus.empty() ? "" : ", ") + std::to_string(d.device);
    out += fmt::format("\n{} on GPU {}: {} for {}\n", shown(p.process.label()), gpus,
                       std::string(analysis::regime_name(p.regime)), fmt_duration(span));
    out += "  why:  " + shown(p.evidence) + "\n";
    out += "  move: " + shown(p.move) + "\n";
    if (!p.agreement.empty()) out += "  explain: " + shown(p.agreement) + "\n";
    if (p.gpu_truth) {  // the device's own figures replace the host-side range
      out += truth_text(p.gpu_truth->figures, "  ", p.devices.size());
      if (const analysis::ProcessGpuTime* g = find_process(r.explain.gpu_time, p.process.pid))
        out += devices_text(*g, "  ");  // compute/stall and idle by category
      out += top_kernels_text(*p.gpu_truth, "  ");
    } else {
      out += busy_text(p, "  ", p.devices.size());
    }
    if (r.price_per_gpu_hour > 0)
      out += fmt::format("  cost: {} for its span, {} of it lost to the causes below\n",
                         money(p.cost), money(p.lost_cost));
    for (const analysis::Lever& l : p.levers) {
      out += fmt::format("  fix ({} back{}): {}: {}\n", fmt_duration(l.lost_ns),
                         r.price_per_gpu_hour > 0 ? ", " + money(l.cost) : std::string(),
                         shown(l.title), shown(l.fix));
      if (l.pinning) out += pinning_text(l);
    }
    out += memory_text(p.memory, "  ");
    if (p.memory.reserve.reserved_segments > 0) out += reserve_text(p.memory.reserve);
    if (p.memory.allocations > 0) out += sites_text(p.memory);
    if (p.driver.count > 0)
      out += fmt::format(
          "  driver ioctls: {} on the GPU driver's files in {} thread(s), {}: {} inside its "
          "runtime calls, {} outside them (driver work no probed call shows)\n",
          p.driver.count, p.driver.threads, fmt_duration(p.driver.ns),
          fmt_duration(p.driver.inside_calls_ns),
          fmt_duration(p.driver.ns - p.driver.inside_calls_ns));
    if (p.devices.size() < 2) continue;
    if (p.moved_threads > 0)
      out += fmt::format(
          "  {} thread(s) moved between GPUs: each counts its time on the GPU it spent most "
          "of its calls on\n",
          p.moved_threads);
    for (const analysis::DeviceAudit& d : p.devices) {
      out += fmt::format("  GPU {} (thread {}): {} for {}\n", d.device, tids_text(d.tids),
                         std::string(analysis::regime_name(d.regime)),
                         fmt_duration(d.last_ns - d.first_ns));
      out += "    why:  " + shown(d.evidence) + "\n";
      if (const analysis::GpuTruthFigures* t = device_truth(p, d.device))
        out += truth_text(*t, "    ", 1);
      else
        out += busy_text(d, "    ", 1);
      out += memory_text(d.memory, "    ");
    }
  }
  return out;
}

namespace {

json memory_json(const analysis::ProcessMemory& m) {
  json sites = json::array();
  for (const analysis::MemorySite& s : m.sites)
    sites.push_back({{"site", s.site},
                     {"pattern", s.pattern},
                     {"allocs", s.allocs},
                     {"frees", s.frees},
                     {"bytes_allocated", s.bytes_allocated},
                     {"kept_bytes", s.kept_bytes},
                     {"untouched_bytes", s.untouched_bytes},
                     {"untouched_allocs", s.untouched_allocs}});
  json timeline = json::array();
  for (const analysis::MemoryPoint& pt : m.timeline) timeline.push_back({pt.at_ns, pt.live_bytes});
  json j{{"allocations", m.allocations},    {"live_start_bytes", m.live_start},
         {"live_end_bytes", m.live_end},    {"peak_bytes", m.peak},
         {"peak_rel_ns", m.peak_at_ns},     {"pinned_host_peak_bytes", m.pinned_host_peak},
         {"timeline", std::move(timeline)}, {"sites", std::move(sites)}};
  if (m.reserve.reserved_segments > 0) j["reserve"] = reserve_json(m.reserve);
  return j;
}

// The figures a process and each of its GPUs share, appended to `j`.
void figures_json(json& j, const analysis::AuditFigures& p, double price) {
  json levers = json::array();
  for (const analysis::Lever& l : p.levers) {
    json x{{"kind", l.kind}, {"title", l.title}, {"fix", l.fix}, {"lost_ns", l.lost_ns}};
    if (price > 0) x["cost"] = round6(l.cost);
    if (l.pinning) x["pinning"] = pinning_json(l);
    levers.push_back(std::move(x));
  }
  const analysis::RegimeTimes& t = p.times;
  j["first_rel_ns"] = p.first_ns;
  j["last_rel_ns"] = p.last_ns;
  j["regime"] = analysis::regime_name(p.regime);
  j["evidence"] = p.evidence;
  j["move"] = p.move;
  j["agreement"] = p.agreement;
  j["times"] = {{"span_ns", t.span_ns},         {"gpu_wait_ns", t.gpu_ns},
                {"transfer_ns", t.transfer_ns}, {"peer_ns", t.peer_ns},
                {"sync_ns", t.sync_ns},         {"refill_ns", t.refill_ns},
                {"host_ns", t.host_ns},         {"delegated_ns", t.delegated_ns}};
  j["gpu_busy"] = {{"estimate_ns", p.busy.estimate_ns},
                   {"error_ns", p.busy.error_ns()},
                   {"lower_ns", p.busy.lower_ns},
                   {"upper_ns", p.busy.upper_ns},
                   {"gpu_span_ns", p.gpu_span_ns},
                   {"fed_ns", p.busy.fed_ns},
                   {"fed_measured", p.busy.fed_measured},
                   {"ratio", round4(share(p.busy.estimate_ns, p.gpu_span_ns))}};
  j["levers"] = std::move(levers);
  j["memory"] = memory_json(p.memory);
  if (price > 0) {
    j["cost"] = round6(p.cost);
    j["lost_cost"] = round6(p.lost_cost);
  }
}

}  // namespace

json audit_json(const analysis::AuditReport& r) {
  const analysis::TimeWindow& w = r.trace.window;
  json caveats = json::array();
  for (const analysis::Caveat& c : r.caveats)
    caveats.push_back({{"kind", c.kind}, {"text", c.text}});
  json procs = json::array();
  for (const analysis::ProcessAudit& p : r.processes) {
    json j{{"pid", p.process.pid}, {"comm", p.process.comm}};
    figures_json(j, p, r.price_per_gpu_hour);
    json devices = json::array();
    for (const analysis::DeviceAudit& d : p.devices) {
      json x{{"device", d.device}, {"tids", d.tids}};
      figures_json(x, d, r.price_per_gpu_hour);
      if (const analysis::GpuTruthFigures* t = device_truth(p, d.device))
        x["gpu_truth"] = truth_json(*t);
      devices.push_back(std::move(x));
    }
    j["moved_threads"] = p.moved_threads;
    j["driver_ioctls"] = {{"count", p.driver.count},
                          {"threads", p.driver.threads},
                          {"ns", p.driver.ns},
                          {"inside_calls_ns", p.driver.inside_calls_ns},
                          {"outside_calls_ns", p.driver.ns - p.driver.inside_calls_ns}};
    j["devices"] = std::move(devices);
    if (p.gpu_truth) {
      json t = truth_json(p.gpu_truth->figures);
      json top = json::array();
      for (const analysis::TopKernel& k : p.gpu_truth->top_kernels)
        top.push_back(
            {{"name", k.name}, {"count", k.count}, {"total_ns", k.total_ns}, {"max_ns", k.max_ns}});
      t["top_kernels"] = std::move(top);
      j["gpu_truth"] = std::move(t);
      if (const analysis::ProcessGpuTime* g = find_process(r.explain.gpu_time, p.process.pid))
        j["gpu_time"] = process_gpu_time_json(*g);
    }
    procs.push_back(std::move(j));
  }
  json out{{"schema", "gpuwhy.audit/1"},
           {"window",
            {{"start_rel_ns", w.start_ns - w.trace_start_ns},
             {"end_rel_ns", w.end_ns - w.trace_start_ns},
             {"duration_ns", w.duration()}}},
           {"caveats", std::move(caveats)},
           {"processes", std::move(procs)}};
  if (r.price_per_gpu_hour > 0) {
    out["price_per_gpu_hour"] = r.price_per_gpu_hour;
    out["window_cost"] = round6(r.window_cost);
  }
  return out;
}

}  // namespace gpuwhy::render
