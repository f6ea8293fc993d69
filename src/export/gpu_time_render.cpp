// SPDX-License-Identifier: Apache-2.0
#include "export/gpu_time_render.hpp"

#include <sstream>

#include "analysis/units.hpp"
#include "core/untrusted.hpp"
#include "export/json_rounding.hpp"

namespace gpuwhy::render {
namespace {

using namespace analysis;  // NOLINT: the renderer speaks the analysis' vocabulary throughout
using json = nlohmann::ordered_json;
using untrusted::shown;

double span_share(int64_t ns, int64_t of) {
  return of > 0 ? static_cast<double>(ns) / static_cast<double>(of) : 0.0;
}

std::string signed_duration(int64_t ns) {
  return (ns < 0 ? "-" : "+") + fmt_duration(ns < 0 ? -ns : ns);
}

std::string split_text(const IdleSplit& s, int64_t of) {
  return "waiting on the host " + fmt_percent(span_share(s.host_wait_ns, of)) +
         ", between queued work " + fmt_percent(span_share(s.kernel_wait_ns, of)) + ", other " +
         fmt_percent(span_share(s.other_ns, of));
}

json gpu_task_json(const Task& t) {
  json j{{"pid", t.pid}, {"comm", t.comm}};
  if (t.tid != 0) j["tid"] = t.tid;
  return j;
}

json split_json(const IdleSplit& s) {
  return {{"idle_ns", s.total()},
          {"host_wait_ns", s.host_wait_ns},
          {"kernel_wait_ns", s.kernel_wait_ns},
          {"other_ns", s.other_ns},
          {"gaps", s.gaps}};
}

}  // namespace

std::string devices_text(const ProcessGpuTime& p, const std::string& indent, size_t streams) {
  std::ostringstream os;
  for (const DeviceTime& d : p.devices) {
    os << indent << "device " << d.device << ": kernels "
       << fmt_percent(span_share(d.kernel_ns, p.span_ns)) << ", copies alone "
       << fmt_percent(span_share(d.copy_stall_ns, p.span_ns)) << ", idle "
       << fmt_percent(span_share(d.idle.total(), p.span_ns)) << " ("
       << split_text(d.idle, p.span_ns) << "); compute/stall "
       << (d.compute_stall_ratio() < 0 ? std::string("- (no stall)")
                                       : fmt_ratio(d.compute_stall_ratio()))
       << "\n";
    for (size_t i = 0; i < d.streams.size() && i < streams; ++i) {
      const StreamIdle& s = d.streams[i];
      const int64_t span = s.last_ns - s.first_ns;
      os << indent << "  stream " << s.stream << ": idle "
         << fmt_percent(span_share(s.idle.total(), span)) << " of " << fmt_duration(span) << " ("
         << split_text(s.idle, span) << ")";
      if (s.thread.tid != 0) os << ", launched by " << shown(s.thread.label());
      os << "\n";
    }
  }
  return os.str();
}

std::string gpu_time_text(const GpuTimeReport& g, size_t streams) {
  if (g.source == "host") return "";
  std::ostringstream os;
  os << "GPU time (measured on the device: trace --gpu-activity";
  if (g.source == "mixed") os << "; processes without its records: estimated from their calls";
  os << ")\n";
  for (const ProcessGpuTime& p : g.processes) {
    os << "  " << shown(p.process.label()) << ": busy "
       << fmt_percent(span_share(p.busy_ns, p.span_ns)) << " of " << fmt_duration(p.span_ns);
    if (p.measured) {
      os << " (its calls estimated " << fmt_percent(span_share(p.host_busy_ns, p.span_ns))
         << ", off by " << signed_duration(p.host_error_ns()) << ")\n";
    } else {
      os << " (estimated from its calls: no device records)\n";
    }
    os << devices_text(p, "    ", streams);
  }
  return os.str();
}

const ProcessGpuTime* find_process(const GpuTimeReport& g, uint32_t pid) {
  for (const ProcessGpuTime& p : g.processes)
    if (p.process.pid == pid) return &p;
  return nullptr;
}

json process_gpu_time_json(const ProcessGpuTime& p) {
  json devices = json::array();
  for (const DeviceTime& d : p.devices) {
    json ss = json::array();
    for (const StreamIdle& s : d.streams) {
      json sj{{"stream", s.stream},
              {"first_rel_ns", s.first_ns},
              {"last_rel_ns", s.last_ns},
              {"busy_ns", s.busy_ns},
              {"idle", split_json(s.idle)}};
      if (s.thread.tid != 0) sj["thread"] = gpu_task_json(s.thread);
      ss.push_back(std::move(sj));
    }
    const double ratio = d.compute_stall_ratio();
    devices.push_back({{"device", d.device},
                       {"busy_ns", d.busy_ns},
                       {"kernel_ns", d.kernel_ns},
                       {"copy_stall_ns", d.copy_stall_ns},
                       {"idle", split_json(d.idle)},
                       {"compute_stall_ratio", ratio < 0 ? json(nullptr) : json(round4(ratio))},
                       {"streams", std::move(ss)}});
  }
  return {{"process", gpu_task_json(p.process)},
          {"thread", gpu_task_json(p.thread)},
          {"span_ns", p.span_ns},
          {"source", p.measured ? "device" : "host"},
          {"busy_ns", p.busy_ns},
          {"host_estimate_ns", p.host_busy_ns},
          {"host_error_ns", p.host_error_ns()},
          {"devices", std::move(devices)}};
}

json gpu_time_json(const GpuTimeReport& g) {
  json procs = json::array();
  for (const ProcessGpuTime& p : g.processes) procs.push_back(process_gpu_time_json(p));
  return {{"source", g.source}, {"processes", std::move(procs)}};
}

}  // namespace gpuwhy::render
