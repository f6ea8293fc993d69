// SPDX-License-Identifier: Apache-2.0
#include "analysis/launch_timing.hpp"

#include <algorithm>
#include <vector>

namespace gpuwhy::analysis {
namespace {

struct MeanAcc {
  int64_t sum = 0;
  int64_t n = 0;
  void add(int64_t d) { sum += d, ++n; }
  int64_t mean() const { return n ? sum / n : 0; }
};

bool untimed(const CallRow& c) { return c.cat == Category::Launch && c.dur == 0; }
bool timed_launch(const CallRow& c) { return c.cat == Category::Launch && c.dur > 0; }

}  // namespace

void impute_untimed_launches(TraceRows& rows) {
  if (rows.launch_timing().untimed_above_per_s == 0 || rows.entry_only(Category::Launch)) return;
  CallRows& calls = rows.calls;
  std::vector<MeanAcc> all(rows.apis.size());
  auto acc_of = [](std::vector<MeanAcc>& v, uint16_t api) -> MeanAcc& {
    if (api >= v.size()) v.resize(api + 1u);
    return v[api];
  };
  for (const CallRow& c : calls)
    if (timed_launch(c)) acc_of(all, c.api).add(c.dur);
  std::vector<MeanAcc> own;
  for (size_t b = 0; b < calls.size();) {
    size_t e = b;
    while (e < calls.size() && calls[e].tid == calls[b].tid) ++e;
    own.assign(all.size(), {});
    bool any_untimed = false;
    for (size_t i = b; i < e; ++i) {
      if (timed_launch(calls[i])) acc_of(own, calls[i].api).add(calls[i].dur);
      any_untimed = any_untimed || untimed(calls[i]);
    }
    for (size_t i = b; any_untimed && i < e; ++i) {
      CallRow& c = calls[i];
      if (!untimed(c)) continue;
      const MeanAcc& mine = acc_of(own, c.api);
      int64_t d = mine.n ? mine.mean() : acc_of(all, c.api).mean();
      // Never past the thread's next call: the launch had returned by then.
      if (i + 1 < e) d = std::min(d, std::max<int64_t>(calls[i + 1].ts - c.ts, 0));
      c.dur = d;
      c.dir = kDurationImputed;
    }
    b = e;
  }
}

}  // namespace gpuwhy::analysis
