// SPDX-License-Identifier: Apache-2.0
#include "store/checkpointer.hpp"

#include <pthread.h>
#include <sqlite3.h>

#include <chrono>
#include <memory>

namespace gpuwhy::store {

std::unique_ptr<Checkpointer> Checkpointer::start(const std::string& path, int period_ms) {
  std::unique_ptr<Checkpointer> c(new Checkpointer());
  if (sqlite3_open_v2(path.c_str(), &c->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    sqlite3_close_v2(c->db_);
    return nullptr;
  }
  c->thread_ = std::thread([raw = c.get(), period_ms] {
    pthread_setname_np(pthread_self(), "gpuwhy-ckpt");
    raw->run(period_ms);
  });
  return c;
}

void Checkpointer::run(int period_ms) {
  // A connection learns the file is in WAL mode only when it first reads it; until then a
  // checkpoint request is a silent no-op.
  sqlite3_exec(db_, "SELECT count(*) FROM sqlite_schema", nullptr, nullptr, nullptr);
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(period_ms), [&] { return stop_; })) {
    lock.unlock();
    // PASSIVE: copy what is committed without waiting for or blocking the writer.
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    lock.lock();
  }
}

Checkpointer::~Checkpointer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  sqlite3_close_v2(db_);
}

}  // namespace gpuwhy::store
