// SPDX-License-Identifier: Apache-2.0
// A damaged -wal drops rows without an error: SQLite replays the log up to the first frame whose
// checksum fails and ignores the rest, committed batches included. check_wal() reads the log the
// way SQLite does (https://sqlite.org/fileformat2.html#walformat) and counts the frames of the
// current log generation (the header's salts) that come after the point where replay stops.
#pragma once

#include <cstdint>
#include <string>

namespace gpuwhy::store {

struct WalCheck {
  uint64_t valid_frames = 0;    // frames SQLite replays (a checksum chain from the header)
  uint64_t ignored_frames = 0;  // later frames of the same generation: lost to damage
  bool header_damaged = false;  // the header itself fails its checksum: the whole log is ignored
  bool damaged() const { return ignored_frames > 0 || header_damaged; }
};

// Reads `wal_path`; a missing, empty or unreadable file is an undamaged empty log.
WalCheck check_wal(const std::string& wal_path);

}  // namespace gpuwhy::store
