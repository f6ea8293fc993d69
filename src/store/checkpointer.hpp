// SPDX-License-Identifier: Apache-2.0
// Folds the trace's write-ahead log into the database from a thread of its own. SQLite would
// otherwise checkpoint (and fsync) inside the writer's commits; on a busy disk that stalled the
// writer, the reader waited on it, and the kernel ring dropped events (docs/performance.md).
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

struct sqlite3;

namespace gpuwhy::store {

class Checkpointer {
 public:
  // Opens its own connection to `path`; does nothing if that fails (the writer then keeps
  // SQLite's automatic checkpoints, see TraceWriter::create).
  static std::unique_ptr<Checkpointer> start(const std::string& path, int period_ms = 1000);
  ~Checkpointer();  // stops and joins; the last checkpoint is the writer's own at finish()

 private:
  Checkpointer() = default;
  void run(int period_ms);
  sqlite3* db_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gpuwhy::store
