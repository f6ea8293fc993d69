// SPDX-License-Identifier: Apache-2.0
// `gpuwhy explain --db a.db --db b.db`: one job's NCCL ranks across the trace files of several
// hosts (analysis/multihost.hpp), the rank the others wait for, and why, from its own host's file.
#pragma once

#include <string>
#include <vector>

namespace gpuwhy::cli {

int run_explain_hosts(const std::vector<std::string>& dbs, bool json);

}  // namespace gpuwhy::cli
