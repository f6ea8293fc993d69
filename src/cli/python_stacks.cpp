// SPDX-License-Identifier: Apache-2.0
#include "cli/python_stacks.hpp"

#include <algorithm>

namespace gpuwhy::cli {

std::optional<discover::PythonProcess> PythonStacks::discover(uint32_t pid) {
  if (looked_at_.count(pid)) return std::nullopt;
  auto p = discover::find_python(pid);
  if (!p) return std::nullopt;
  looked_at_.insert(pid);
  if (p->supported)
    namer_.add_process(*p);
  else
    ++unsupported_;
  return p;
}

bool PythonStacks::still_current(Known& k) {
  const auto now = clock_();
  if (now - k.checked < kRecheck) return true;
  k.checked = now;
  for (size_t i = 0; i < k.frames.size(); ++i)
    if (k.generations[i] &&  // 0: a frame not named (not started), nothing to compare
        namer_.generation(k.pid, k.frames[i].code, {}) != k.generations[i])
      return false;
  return true;
}

int32_t PythonStacks::intern(uint32_t pid, uint64_t key) {
  if (auto it = ids_.find(key); it != ids_.end() && it->second.pid == pid) {
    if (still_current(it->second)) return it->second.id;
    // The same addresses and instructions, but a code object there was freed and another made
    // in its place: the old names would be another function's.
    ++renamed_;
    return name_stack(pid, key, it->second.frames);
  }
  gw_py_stack st{};
  if (!read_(key, &st) || st.pid != pid) {
    // Evicted before it was read (a map too small for the stacks of the moment): this call has
    // no Python line; a later call with the same stack gets one.
    ++evicted_;
    return -1;
  }
  const uint32_t n = std::min<uint32_t>(st.n, GW_PY_MAX_FRAMES);
  return name_stack(pid, key, std::vector<gw_py_frame>(st.frames, st.frames + n));
}

int32_t PythonStacks::name_stack(uint32_t pid, uint64_t key, std::vector<gw_py_frame> frames) {
  Known k;
  k.id = next_id_++;
  k.pid = pid;
  k.checked = clock_();
  std::vector<store::PythonFrameRow> rows;
  uint32_t depth = 0;
  for (const gw_py_frame& f : frames) {
    if (f.instr < 0) {  // a frame pushed but not started: no line of its own yet
      k.generations.push_back(0);
      continue;
    }
    // The source text later, on the writer thread (take_rows): a file read here for each new
    // one (thousands at a PyTorch import) delays the naming of the stacks behind, whose code
    // objects may be freed by then.
    discover::PyFrameName n = namer_.name(pid, f.code, f.instr, false);
    if (!n.resolved) ++unnamed_[static_cast<size_t>(n.why)];
    k.generations.push_back(n.generation);
    rows.push_back({k.id, depth++, pid, std::move(n.file), std::move(n.function), n.line,
                    std::move(n.source), f.code, f.instr});
  }
  k.frames = std::move(frames);
  const int32_t id = k.id;
  ids_[key] = std::move(k);
  std::lock_guard lock(mu_);
  rows_.insert(rows_.end(), std::make_move_iterator(rows.begin()),
               std::make_move_iterator(rows.end()));
  return id;
}

std::vector<std::pair<std::string, uint64_t>> PythonStacks::gaps() const {
  std::vector<std::pair<std::string, uint64_t>> out{{"stack_evicted", evicted_.load()}};
  for (int r = 1; r < discover::kPyUnnamedReasons; ++r)
    out.emplace_back(discover::py_unnamed_cause(static_cast<discover::PyUnnamed>(r)),
                     unnamed_[static_cast<size_t>(r)].load());
  return out;
}

std::vector<store::PythonFrameRow> PythonStacks::take_rows() {
  std::vector<store::PythonFrameRow> out;
  {
    std::lock_guard lock(mu_);
    out.swap(rows_);
  }
  for (store::PythonFrameRow& r : out) r.source = namer_.source_line(r.pid, r.file, r.line);
  return out;
}

}  // namespace gpuwhy::cli
