// SPDX-License-Identifier: Apache-2.0
#include "cli/python_stacks.hpp"

#include <algorithm>

namespace gpuwhy::cli {

std::optional<discover::PythonProcess> PythonStacks::discover(uint32_t pid) {
  if (looked_at_.count(pid)) return std::nullopt;
  auto p = discover::find_python(pid);
  if (!p) return std::nullopt;
  looked_at_.insert(pid);
  if (p->supported) namer_.add_process(*p);
  else ++unsupported_;
  return p;
}

int32_t PythonStacks::intern(uint32_t pid, uint64_t key) {
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  gw_py_stack st{};
  if (!read_(key, &st) || st.pid != pid) {
    // Evicted before it was read (a map too small for the stacks of the moment): this call has
    // no Python line; a later call with the same stack gets one.
    ++unresolved_;
    return -1;
  }
  const int32_t id = next_id_++;
  ids_.emplace(key, id);
  std::vector<store::PythonFrameRow> rows;
  uint32_t depth = 0;
  for (uint32_t i = 0; i < std::min<uint32_t>(st.n, GW_PY_MAX_FRAMES); ++i) {
    const gw_py_frame& f = st.frames[i];
    if (f.instr < 0) continue;  // a frame pushed but not started: no line of its own yet
    discover::PyFrameName n = namer_.name(pid, f.code, f.instr);
    if (!n.resolved) ++unresolved_;
    rows.push_back({id, depth++, pid, std::move(n.file), std::move(n.function), n.line,
                    std::move(n.source), f.code, f.instr});
  }
  std::lock_guard lock(mu_);
  rows_.insert(rows_.end(), std::make_move_iterator(rows.begin()),
               std::make_move_iterator(rows.end()));
  return id;
}

std::vector<store::PythonFrameRow> PythonStacks::take_rows() {
  std::lock_guard lock(mu_);
  std::vector<store::PythonFrameRow> out;
  out.swap(rows_);
  return out;
}

}  // namespace gpuwhy::cli
