// SPDX-License-Identifier: Apache-2.0
// uprobe_multi links (Linux >= 6.6) and uprobe session links (Linux >= 6.13) through the raw bpf(2)
// call: libbpf 1.1, Debian 12's, predates both. One link probes many offsets of one file, each with
// its own cookie.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::probes {

inline constexpr uint32_t kAttachUprobeMulti = 48;    // BPF_TRACE_UPROBE_MULTI
inline constexpr uint32_t kAttachUprobeSession = 57;  // BPF_TRACE_UPROBE_SESSION (Linux 6.13)

// Does the running kernel know uprobe_multi links? (Looks the link type up in kernel BTF.)
bool kernel_has_uprobe_multi();

// Does it know uprobe sessions (one program at entry and at return, the return skipped when the
// entry returns nonzero)? Looks for BPF_TRACE_UPROBE_SESSION in its enum bpf_attach_type, and for
// the bpf_session_is_return kfunc the session program calls.
bool kernel_has_uprobe_session();

// Returns the link fd. `ret` attaches return probes.
Result<int> attach_uprobe_multi(int prog_fd, const std::string& path,
                                const std::vector<uint64_t>& offsets,
                                const std::vector<uint64_t>& cookies, bool ret);

// A uprobe session link: the program (loaded with expected attach type kAttachUprobeSession) runs
// at every offset's entry and, unless that run returned nonzero, at its return. Returns the fd.
Result<int> attach_uprobe_session(int prog_fd, const std::string& path,
                                  const std::vector<uint64_t>& offsets,
                                  const std::vector<uint64_t>& cookies);

}  // namespace gpuwhy::probes
