// SPDX-License-Identifier: Apache-2.0
// uprobe_multi links (Linux >= 6.6) through the raw bpf(2) call: libbpf 1.1, Debian 12's, predates
// them. One link probes many offsets of one file, each with its own cookie.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::probes {

inline constexpr uint32_t kAttachUprobeMulti = 48;  // BPF_TRACE_UPROBE_MULTI

// Does the running kernel know uprobe_multi links? (Looks the link type up in kernel BTF.)
bool kernel_has_uprobe_multi();

// Returns the link fd. `ret` attaches return probes.
Result<int> attach_uprobe_multi(int prog_fd, const std::string& path,
                                const std::vector<uint64_t>& offsets,
                                const std::vector<uint64_t>& cookies, bool ret);

}  // namespace gpuwhy::probes
