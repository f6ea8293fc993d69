// SPDX-License-Identifier: Apache-2.0
// A Perfetto export as protoc prints it, decoded with Perfetto's own merged proto (a copy in
// tests/export/perfetto): what the root tests read the export's packets from.
#pragma once

#include <string>

#include "support/process.hpp"

namespace gpuwhy::testing {

inline RunResult decode_with_perfettos_proto(const std::string& pftrace) {
  return run({"/bin/sh", "-c",
              "protoc --proto_path=" + std::string(GW_SOURCE_DIR) +
                  "/tests/export/perfetto --decode=perfetto.protos.Trace perfetto_trace.proto < " +
                  pftrace});
}

}  // namespace gpuwhy::testing
