// SPDX-License-Identifier: Apache-2.0
// The GPU's time as explain and audit show it (analysis/gpu_idle_truth.hpp): per process its
// busy share, measured on the device or estimated from its calls (which one, said), the
// estimate's error beside the truth; per device the compute/stall ratio and the idle time by
// HTA's categories, and per stream with the thread it waited on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/gpu_idle_truth.hpp"

namespace gpuwhy::render {

// The text block; empty when nothing was measured (the host-only report is unchanged: its
// budgets say "no GPU work queued", the calls' inference). `streams`: how many streams per
// device to list.
std::string gpu_time_text(const analysis::GpuTimeReport& g, size_t streams = 3);

// {"source": "device" | "mixed" | "host", "processes": [...]}.
nlohmann::ordered_json gpu_time_json(const analysis::GpuTimeReport& g);

// One process's devices (compute/stall, idle by category, streams), each line led by `indent`:
// audit shows them under its measured busy time.
std::string devices_text(const analysis::ProcessGpuTime& p, const std::string& indent,
                         size_t streams = 3);
nlohmann::ordered_json process_gpu_time_json(const analysis::ProcessGpuTime& p);
// The process's figures in `g`; nullptr when it has none.
const analysis::ProcessGpuTime* find_process(const analysis::GpuTimeReport& g, uint32_t pid);

}  // namespace gpuwhy::render
