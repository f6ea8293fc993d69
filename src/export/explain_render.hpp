// SPDX-License-Identifier: Apache-2.0
// Renderers of an explain Report: the text an SRE reads at 3 a.m. (verdict first, ranked chains,
// numbers with units) and the JSON a program reads (the whole structure). They only read the
// Report; every number in them was computed by src/analysis.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/explain.hpp"

namespace gpuwhy::render {

struct TextOptions {
  bool per_process = false;  // add the per-process / per-thread breakdown with percentiles
  size_t top_ops = 5;        // operations listed in the summary table
};

std::string explain_text(const analysis::Report& r, const TextOptions& opt = {});

// The full structure (schema "gpuwhy.explain/1", documented in docs/explain.md). Times are ns:
// *_ns durations, *_rel_ns since the trace start; shares are fractions (0.382 = 38.2%).
nlohmann::ordered_json explain_json(const analysis::Report& r);

}  // namespace gpuwhy::render
