// SPDX-License-Identifier: Apache-2.0
// `gpuwhy check [--json]`: renders discover::run_check(). All judging happens there; this file
// only turns the report into aligned text or one JSON object, and picks the exit code.
#include <bpf/libbpf.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/untrusted.hpp"
#include "discover/host_check.hpp"
#include "probes/probes.hpp"
#include "probes/uprobe_multi.hpp"

namespace gpuwhy::cli {
namespace {

using discover::CheckReport;
using discover::Finding;
using discover::HostFacts;
using discover::Severity;
// Keys in the order written, so the JSON reads like the text report.
using json = nlohmann::ordered_json;

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Info:
      return "info";
    case Severity::Warning:
      return "warning";
    case Severity::Problem:
      return "problem";
  }
  return "?";
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string limit_text(uint64_t v) {
  return v == RLIM_INFINITY ? "unlimited" : std::to_string(v / 1024) + " KiB";
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string file_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Rows of cells printed with each column padded to its widest cell. Cells hold process names and
// library paths, which any local user chooses: shown() keeps them from driving the terminal.
void print_table(const std::vector<std::vector<std::string>>& raw, const char* indent = "  ") {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : raw) {
    rows.emplace_back();
    for (const std::string& cell : r) rows.back().push_back(untrusted::shown(cell));
  }
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
}

std::string privileges_text(const HostFacts& f) {
  std::string s = f.euid == 0 ? "root" : "euid " + std::to_string(f.euid);
  if (!f.cap_eff) return s + ", capabilities unknown";
  std::vector<std::string> caps;
  if (f.has_cap(discover::kCapBpf)) caps.emplace_back("CAP_BPF");
  if (f.has_cap(discover::kCapPerfmon)) caps.emplace_back("CAP_PERFMON");
  if (f.has_cap(discover::kCapSysAdmin)) caps.emplace_back("CAP_SYS_ADMIN");
  return s + ", " + (caps.empty() ? "none of CAP_BPF/CAP_PERFMON/CAP_SYS_ADMIN" : join(caps, "+"));
}

std::string ringbuf_text(int r) {
  if (r == discover::kNotProbed) return "not probed (needs privileges)";
  if (r == 1) return "supported";
  if (r == 0) return "map creation failed";
  return std::string("probe failed: ") + std::strerror(-r);
}

std::string helpers_text(const discover::HostFacts& f) {
  if (!f.helpers_probed) return "not probed (needs privileges)";
  if (f.missing_helpers.empty()) return "all that trace calls are present";
  std::string s = "missing: ";
  for (size_t i = 0; i < f.missing_helpers.size(); ++i) s += (i ? ", " : "") + f.missing_helpers[i];
  return s;
}

// The BPF helpers trace's uprobe and tracepoint programs call, with the first upstream kernel
// that has each, probed on a kprobe-type program (uprobes are of that type).
std::vector<std::string> missing_bpf_helpers() {
  static const std::pair<bpf_func_id, const char*> kNeeded[] = {
      {BPF_FUNC_ringbuf_reserve, "bpf_ringbuf_reserve (Linux 5.8)"},
      {BPF_FUNC_get_current_task_btf, "bpf_get_current_task_btf (Linux 5.11)"},
      {BPF_FUNC_get_attach_cookie, "bpf_get_attach_cookie (Linux 5.15)"},
      {BPF_FUNC_task_pt_regs, "bpf_task_pt_regs (Linux 5.15)"},
      {BPF_FUNC_loop, "bpf_loop (Linux 5.17)"},
  };
  std::vector<std::string> missing;
  for (const auto& [id, name] : kNeeded)
    if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, id, nullptr) != 1) missing.emplace_back(name);
  return missing;
}

std::string uprobe_multi_text(int r) {
  if (r == discover::kNotProbed) return "not probed";
  return r == 1 ? "uprobe_multi links (one per library)"
                : "one uprobe per function (no uprobe_multi: Linux < 6.6)";
}

std::string uprobe_session_text(int r) {
  if (r == discover::kNotProbed) return "not probed";
  return r == 1 ? "uprobe sessions: a driver launch inside a runtime launch costs one trap"
                : "no uprobe sessions (Linux < 6.13): nested driver launches probed in full";
}

std::string cpu_clock_text(int r) {
  if (r == discover::kNotProbed) return "not probed (needs privileges)";
  if (r == 1) return "cpu-clock perf events open (CPU samples)";
  return std::string("cpu-clock perf event refused: ") + std::strerror(-r);
}

void print_text(const CheckReport& r) {
  const HostFacts& f = r.facts;
  std::printf("System\n");
  print_table({
      {"kernel", f.kernel_release + " " + f.machine + " (" + f.kernel_version + ")"},
      {"btf", f.btf_path + (f.btf ? " present" : " missing")},
      {"privileges", privileges_text(f)},
      {"ring buffer", ringbuf_text(f.ringbuf)},
      {"bpf helpers", helpers_text(f)},
      {"cpu sampling", cpu_clock_text(f.cpu_clock)},
      {"uprobe attach", uprobe_multi_text(f.uprobe_multi)},
      {"uprobe session", uprobe_session_text(f.uprobe_session)},
      {"uprobes", f.uprobe_pmu_type >= 0
                      ? "uprobe PMU (type " + std::to_string(f.uprobe_pmu_type) + ")"
                      : "no uprobe PMU"},
      {"tracefs",
       (f.tracefs_path.empty() ? "not mounted" : "mounted at " + f.tracefs_path) + " (not needed)"},
      {"memlock", limit_text(f.memlock_cur) + " (max " + limit_text(f.memlock_max) + ")"},
  });

  std::printf("\nGPU runtime libraries (%zu)\n", f.libraries.size());
  if (!f.libraries.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"FAMILY", "VERSION", "SONAME", "EXPORTS", "ENDBR64", "USED BY", "PATH"}};
    for (const auto& c : f.libraries) {
      std::vector<std::string> pids;
      for (uint32_t pid : c.pids) pids.push_back(std::to_string(pid));
      rows.push_back(
          {std::string(family_name(c.file.family)), c.file.version.empty() ? "-" : c.file.version,
           c.file.soname.empty() ? "-" : c.file.soname,
           c.error.empty() ? std::to_string(c.exported) + "/" + std::to_string(c.catalogued)
                           : "error",
           std::to_string(c.shifted), pids.empty() ? "-" : join(pids, ","), c.file.path});
    }
    print_table(rows);
    std::printf("  build-ids:\n");
    std::vector<std::vector<std::string>> ids;
    for (const auto& c : f.libraries) {
      ids.push_back({c.file.build_id.empty() ? "(none)" : c.file.build_id, c.file.path});
    }
    print_table(ids, "    ");
    // Which probed functions each library lacks, by name: a runtime too old for some of them
    // traces without those calls (an older libcudart has no cudaEventRecordWithFlags).
    std::printf("  probed functions not exported:\n");
    std::vector<std::vector<std::string>> missing;
    for (const auto& c : f.libraries) {
      if (c.error.empty())
        missing.push_back(
            {c.file.path, c.missing.empty() ? "none (all found)" : join(c.missing, ", ")});
    }
    print_table(missing, "    ");
  }

  std::printf("\nProcesses using them (%zu of %zu scanned)\n", f.processes.size(),
              f.processes_scanned);
  if (!f.processes.empty()) {
    std::vector<std::vector<std::string>> rows = {{"PID", "COMM", "LIBRARIES"}};
    for (const auto& p : f.processes) {
      std::vector<std::string> names;
      for (const auto& lib : p.libraries) names.push_back(file_name(lib));
      rows.push_back({std::to_string(p.info.pid), p.info.comm, join(names, ", ")});
    }
    print_table(rows);
    for (const auto& p : f.processes)
      if (!p.python.empty())
        std::printf("  pid %u: %s\n", p.info.pid, untrusted::shown(p.python).c_str());
    // The Python versions found, each once: supported or not, and how gpuwhy's reading of it is
    // tested (on a live interpreter, or from the layout its headers publish).
    std::map<std::string, std::pair<const discover::ProcessCheck*, size_t>> versions;
    for (const auto& p : f.processes)
      if (!p.python_version.empty()) {
        auto& v = versions[p.python_version];
        if (!v.first) v.first = &p;
        ++v.second;
      }
    if (!versions.empty()) {
      std::printf("\nPython interpreters in these processes\n");
      std::vector<std::vector<std::string>> py = {{"VERSION", "PROCESSES", "SUPPORTED", "TESTED"}};
      for (const auto& [version, v] : versions)
        py.push_back({version, std::to_string(v.second), v.first->python_supported ? "yes" : "no",
                      v.first->python_tested.empty() ? "-" : v.first->python_tested});
      print_table(py);
    }
  }

  std::printf("\nFindings\n");
  std::vector<std::vector<std::string>> rows;
  for (const Finding& x : r.findings) {
    if (x.severity != Severity::Problem) rows.push_back({severity_name(x.severity), x.message});
  }
  if (rows.empty()) rows.push_back({"none"});
  print_table(rows);

  std::printf("\n");
  if (r.can_trace) {
    std::printf("Result: tracing can work on this host\n");
    return;
  }
  std::printf("Result: tracing cannot work until these are fixed:\n");
  for (const Finding& x : r.findings) {
    if (x.severity == Severity::Problem)
      std::printf("  problem: %s\n", untrusted::shown(x.message).c_str());
  }
}

json to_json(const CheckReport& r) {
  const HostFacts& f = r.facts;
  json libs = json::array();
  for (const auto& c : f.libraries) {
    libs.push_back({{"path", c.file.path},
                    {"map_path", c.file.map_path},
                    {"family", family_name(c.file.family)},
                    {"soname", c.file.soname},
                    {"version", c.file.version},
                    {"build_id", c.file.build_id},
                    {"dev", c.file.dev},
                    {"inode", c.file.inode},
                    {"on_host", c.on_host},
                    {"pids", c.pids},
                    {"exported", c.exported},
                    {"catalogued", c.catalogued},
                    {"missing", c.missing},
                    {"entry_probes_shifted", c.shifted},
                    {"error", c.error.empty() ? json(nullptr) : json(c.error)}});
  }
  json procs = json::array();
  for (const auto& p : f.processes) {
    json skipped = json::array();
    for (const auto& s : p.skipped) skipped.push_back({{"path", s.map_path}, {"reason", s.reason}});
    procs.push_back(
        {{"pid", p.info.pid},
         {"ppid", p.info.ppid},
         {"comm", p.info.comm},
         {"exe", p.info.exe},
         {"cmdline", p.info.cmdline},
         {"cgroup", p.info.cgroup},
         {"start_ns", p.info.start_ns},
         {"libraries", p.libraries},
         {"python", p.python.empty() ? json(nullptr) : json(p.python)},
         {"python_version", p.python_version.empty() ? json(nullptr) : json(p.python_version)},
         {"python_supported", p.python_version.empty() ? json(nullptr) : json(p.python_supported)},
         {"python_tested", p.python_tested.empty() ? json(nullptr) : json(p.python_tested)},
         {"skipped", skipped}});
  }
  json findings = json::array();
  json problems = json::array();
  for (const Finding& x : r.findings) {
    findings.push_back(
        {{"severity", severity_name(x.severity)}, {"topic", x.topic}, {"message", x.message}});
    if (x.severity == Severity::Problem) problems.push_back(x.message);
  }
  auto limit = [](uint64_t v) { return v == RLIM_INFINITY ? json(nullptr) : json(v); };
  return {
      {"can_trace", r.can_trace},
      {"kernel",
       {{"release", f.kernel_release}, {"version", f.kernel_version}, {"machine", f.machine}}},
      {"btf", {{"path", f.btf_path}, {"present", f.btf}}},
      {"privileges",
       {{"euid", f.euid},
        {"cap_eff", f.cap_eff ? json(hex64(*f.cap_eff)) : json(nullptr)},
        {"cap_bpf", f.has_cap(discover::kCapBpf)},
        {"cap_perfmon", f.has_cap(discover::kCapPerfmon)},
        {"cap_sys_admin", f.has_cap(discover::kCapSysAdmin)},
        {"sufficient", f.privileged()}}},
      {"ringbuf",
       {{"probed", f.ringbuf != discover::kNotProbed},
        {"supported", f.ringbuf == 1},
        {"detail", ringbuf_text(f.ringbuf)}}},
      {"helpers", {{"probed", f.helpers_probed}, {"missing", f.missing_helpers}}},
      {"uprobe_multi",
       {{"probed", f.uprobe_multi != discover::kNotProbed},
        {"supported", f.uprobe_multi == 1},
        {"detail", uprobe_multi_text(f.uprobe_multi)}}},
      {"uprobe_session",
       {{"probed", f.uprobe_session != discover::kNotProbed},
        {"supported", f.uprobe_session == 1},
        {"detail", uprobe_session_text(f.uprobe_session)}}},
      {"cpu_clock",
       {{"probed", f.cpu_clock != discover::kNotProbed},
        {"supported", f.cpu_clock == 1},
        {"detail", cpu_clock_text(f.cpu_clock)}}},
      {"uprobe_pmu",
       {{"present", f.uprobe_pmu_type >= 0},
        {"type", f.uprobe_pmu_type >= 0 ? json(f.uprobe_pmu_type) : json(nullptr)}}},
      {"tracefs",
       {{"mounted", !f.tracefs_path.empty()},
        {"path", f.tracefs_path},
        {"uprobe_events", f.tracefs_uprobe_events},
        {"needed", false}}},
      {"memlock", {{"cur", limit(f.memlock_cur)}, {"max", limit(f.memlock_max)}}},
      {"libraries", libs},
      {"processes", procs},
      {"processes_scanned", f.processes_scanned},
      {"processes_unreadable", f.unreadable_pids},
      {"findings", findings},
      {"problems", problems},
  };
}

}  // namespace

void add_check_command(CLI::App& root, Runner& run) {
  auto* cmd = root.add_subcommand(
      "check",
      "Can this host trace? Kernel, BTF, privileges and BPF features, and the GPU "
      "runtime libraries and processes there are to trace");
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "Print one JSON object instead of text");
  cmd->callback([&run, as_json] {
    run = [as_json] {
      discover::CheckOptions opts;
      opts.probe_ringbuf = [] { return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr); };
      opts.probe_cpu_clock = probes::probe_cpu_clock;
      opts.probe_missing_helpers = missing_bpf_helpers;
      opts.probe_uprobe_multi = probes::kernel_has_uprobe_multi;
      opts.probe_uprobe_session = probes::kernel_has_uprobe_session;
      const CheckReport report = discover::run_check(opts);
      if (*as_json) {
        std::printf("%s\n",
                    to_json(report).dump(2, ' ', false, json::error_handler_t::replace).c_str());
      } else {
        print_text(report);
      }
      std::fflush(stdout);
      return report.can_trace ? 0 : 1;
    };
  });
}

}  // namespace gpuwhy::cli
