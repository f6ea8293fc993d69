// SPDX-License-Identifier: Apache-2.0
#include "cli/empty_trace.hpp"

#include "analysis/loader.hpp"

namespace gpuwhy::cli {

std::optional<Error> no_events_error(const store::TraceFile& file) {
  auto bounds = analysis::trace_bounds(file.db());
  // A trace that ended normally spans its session even without events: explain says "no causal
  // chain" there. Only a file whose end comes from its last event, and has none, is empty.
  if (!bounds || !bounds->end_is_last_event || bounds->trace_end_ns > bounds->trace_start_ns)
    return std::nullopt;
  const std::string how =
      file.is_live()
          ? "the recording (pid " + std::to_string(file.writer_pid()) + ") has stored none yet"
      : file.status() == "recording"
          ? "the recording was killed before it stored any event (the file is still marked "
            "'recording')"
          : "the recording stopped before it stored any event (status '" + file.status() + "')";
  return Error{file.path() + " holds no events: " + how,
               "trace again and let it run until the job has made GPU calls", kExitNoData};
}

}  // namespace gpuwhy::cli
