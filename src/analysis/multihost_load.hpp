// SPDX-License-Identifier: Apache-2.0
// Reads one trace file's part of a multi-host job (multihost.hpp): its host, NCCL communicator
// set-ups and collectives.
#pragma once

#include <cstddef>

#include "analysis/multihost.hpp"

namespace gpuwhy::store {
class TraceFile;
}

namespace gpuwhy::analysis {

// `index`: the file's place among the files given (RankMember::file).
Result<HostFile> load_host_file(const store::TraceFile& file, size_t index);

}  // namespace gpuwhy::analysis
