// SPDX-License-Identifier: Apache-2.0
#include "cli/trace_summary.hpp"

#include <unistd.h>

#include "core/untrusted.hpp"
#include "export/plural.hpp"
#include "gpuwhy/abi/events.h"
#include "reader/decode.hpp"

namespace gpuwhy::cli {
namespace {

// Loss causes kept by the kernel side, in gw_counter order.
struct BpfLoss {
  uint32_t counter;
  const char* cause;
};
constexpr BpfLoss kBpfLosses[] = {
    {GW_CNT_EVENTS_RING_FULL, "events_ring_full"},
    {GW_CNT_LIFECYCLE_RING_FULL, "lifecycle_ring_full"},
    {GW_CNT_PENDING_FULL, "pending_full"},
    {GW_CNT_OFFCPU_FULL, "offcpu_full"},
};

std::string with_commas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof(buf), "%.1f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / double(1ull << 20));
  else
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  return buf;
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

std::vector<store::LossCount> TraceCounts::losses() const {
  std::vector<store::LossCount> out;
  for (const BpfLoss& l : kBpfLosses) out.push_back({"bpf", l.cause, bpf[l.counter]});
  out.push_back({"reader", "decode_error", decode_errors});
  out.push_back({"store", "write_error", write_errors});
  out.push_back({"discovery", "hold_timeout", hold_timeout});
  out.push_back({"discovery", "not_held", not_held});
  out.push_back({"discovery", "found_late", found_late});
  out.push_back({"python", "stack_unread", bpf[GW_CNT_PY_STACK_FAIL]});
  for (const auto& [cause, n] : py_gaps) out.push_back({"python", cause, n});
  out.push_back({"python", "unsupported_process", py_unsupported});
  if (!stop_cause.empty()) out.push_back({"store", stop_cause, dropped});
  out.insert(out.end(), gpu_losses.begin(), gpu_losses.end());
  return out;
}

uint64_t TraceCounts::lost() const {
  uint64_t n = 0;
  for (const auto& l : losses())
    if (l.source != "discovery" && l.source != "python") n += l.count;
  return n;
}

std::vector<std::pair<std::string, uint64_t>> TraceCounts::event_counts() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [kind, n] : by_kind) out.emplace_back(std::string(reader::kind_name(kind)), n);
  // Not losses, but worth knowing when reading the numbers.
  out.emplace_back("return_unmatched", bpf[GW_CNT_RETURN_UNMATCHED]);
  out.emplace_back("entry_unmatched", bpf[GW_CNT_ENTRY_UNMATCHED]);
  out.emplace_back("arg_read_fault", bpf[GW_CNT_READ_FAULT]);
  out.emplace_back("stack_fail", bpf[GW_CNT_STACK_FAIL]);
  // Driver launches made inside an open runtime launch, not recorded (uprobe sessions).
  out.emplace_back("launch_nested_skipped", bpf[GW_CNT_LAUNCH_NESTED_SKIPPED]);
  out.emplace_back("launch_batch_at_stop", batches_at_stop);
  out.emplace_back("held_processes", held);
  out.emplace_back("python_stack_renamed", py_stacks_renamed);
  out.insert(out.end(), gpu_counts.begin(), gpu_counts.end());
  return out;
}

StatusLine::StatusLine(bool wanted) : on_(wanted && isatty(STDERR_FILENO)) {}

void StatusLine::update(std::chrono::steady_clock::duration elapsed, const TraceCounts& c,
                        size_t processes) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && now - last_ < std::chrono::seconds(1)) return;
  const double dt = shown_ ? seconds(now - last_) : seconds(elapsed);
  const double rate = dt > 0 ? (c.total_events - last_total_) / dt : 0;
  const long s = static_cast<long>(seconds(elapsed));
  std::fprintf(
      stderr, "\r\033[Kgpuwhy: %02ld:%02ld  %s events  %s ev/s  %s  %s lost", s / 60, s % 60,
      with_commas(c.total_events).c_str(), with_commas(static_cast<uint64_t>(rate)).c_str(),
      render::count_of(processes, "process", "processes").c_str(), with_commas(c.lost()).c_str());
  std::fflush(stderr);
  last_ = now;
  last_total_ = c.total_events;
  shown_ = true;
}

void StatusLine::clear() {
  if (on_ && shown_) std::fprintf(stderr, "\r\033[K");
}

void print_summary(std::FILE* out, std::chrono::steady_clock::duration elapsed,
                   const TraceCounts& c, size_t processes, size_t libraries, uint32_t probes,
                   const std::string& path, uint64_t bytes) {
  std::string per_kind;
  for (const auto& [kind, n] : c.by_kind) {
    // Hints are not stored; a launch batch's launches are counted as API calls already.
    if (kind == GW_EV_LIB_MAP || kind == GW_EV_LAUNCH_BATCH) continue;
    per_kind += (per_kind.empty() ? "" : ", ") + std::string(reader::kind_name(kind)) + " " +
                with_commas(n);
  }
  std::fprintf(out, "gpuwhy: traced %.1f s: %s events (%s)\n", seconds(elapsed),
               with_commas(c.total_events).c_str(), per_kind.empty() ? "none" : per_kind.c_str());
  std::fprintf(out, "gpuwhy: %s, %s, %s probed\n",
               render::count_of(processes, "process", "processes").c_str(),
               render::count_of(libraries, "GPU library", "GPU libraries").c_str(),
               render::count_of(probes, "function", "functions").c_str());
  const uint64_t lost = c.lost();
  if (lost == 0) {
    std::fprintf(out, "gpuwhy: 0 events lost\n");
  } else {
    std::string causes;
    for (const auto& l : c.losses())
      if (l.count && l.source != "discovery" && l.source != "python")
        causes += (causes.empty() ? "" : ", ") + l.cause + " " + with_commas(l.count);
    std::fprintf(out, "gpuwhy: LOST %s events (%s); a larger --ring-mb helps with ring_full\n",
                 with_commas(lost).c_str(), causes.c_str());
  }
  // Not a loss, but rows a reader might look for: a driver launch inside a runtime launch.
  if (const uint64_t nested = c.bpf[GW_CNT_LAUNCH_NESTED_SKIPPED])
    std::fprintf(out,
                 "gpuwhy: %s driver launches made inside runtime launches not recorded (their "
                 "time is in the runtime launch; event_counts launch_nested_skipped)\n",
                 with_commas(nested).c_str());
  if (c.late_processes())
    std::fprintf(out,
                 "gpuwhy: %s processes may have made GPU calls before their runtime was probed "
                 "(hold_timeout %s, not_held %s, found_late %s; see startup_gaps)\n",
                 with_commas(c.late_processes()).c_str(), with_commas(c.hold_timeout).c_str(),
                 with_commas(c.not_held).c_str(), with_commas(c.found_late).c_str());
  // Not lost events, but calls without their Python line, each cause apart.
  uint64_t py_unnamed = 0;
  std::string py_causes;
  for (const auto& l : c.losses())
    if (l.source == "python" && l.count && l.cause != "unsupported_process") {
      py_unnamed += l.count;
      py_causes += (py_causes.empty() ? "" : ", ") + l.cause + " " + with_commas(l.count);
    }
  if (py_unnamed)
    std::fprintf(out,
                 "gpuwhy: %s Python stacks or frames could not be named (%s): those calls have "
                 "no Python line (losses, source python)\n",
                 with_commas(py_unnamed).c_str(), py_causes.c_str());
  if (c.py_unsupported)
    std::fprintf(out, "gpuwhy: %s Python processes not supported (python_processes says why)\n",
                 with_commas(c.py_unsupported).c_str());
  // The summary names no traced process; the path is shown escaped as every text output does.
  const std::string shown_path = untrusted::shown(path);
  std::fprintf(out, "gpuwhy: wrote %s (%s); next: gpuwhy explain --db %s\n", shown_path.c_str(),
               human_bytes(bytes).c_str(), shown_path.c_str());
}

}  // namespace gpuwhy::cli
