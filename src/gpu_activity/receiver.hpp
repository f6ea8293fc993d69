// SPDX-License-Identifier: Apache-2.0
// trace --gpu-activity: the agent's end of the CUPTI client's socket. A thread receives the
// client's datagrams, turns their records into gpu_activity rows (wall ns, names demangled) and
// hands them to the store in batches; what was lost is counted (losses source "cupti") and why
// a process has no GPU rows is kept (probe_families "gpu_activity").
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu_activity/records.hpp"
#include "store/store.hpp"

namespace gpuwhy::gpu_activity {

// Records -> rows, per process (pure apart from the clock; unit-tested).
class Converter : public RecordSink {
 public:
  // until_mono_ns: records starting later are not kept (--gpu-activity DURATION); 0: no bound.
  Converter(ClockConverter clock, uint64_t until_mono_ns) : clock_(clock), until_(until_mono_ns) {}
  void set_clock(ClockConverter clock) { clock_ = clock; }

  void hello(const gw_ga_hello&) override;
  void kernel(const gw_ga_kernel&) override;
  void memcpy(const gw_ga_memcpy&) override;
  void memset(const gw_ga_memset&) override;
  void sync(const gw_ga_sync&) override;
  void overhead(const gw_ga_overhead&) override;
  void name(uint32_t pid, uint32_t name_id, std::string_view text) override;
  void dropped(const gw_ga_dropped&) override;
  void status(uint32_t pid, uint32_t code, int32_t cupti_result, std::string_view text) override;

  // One datagram; false when it was malformed (counted).
  bool add_datagram(std::span<const uint8_t> bytes);

  // The rows and names gathered since the last take.
  std::vector<store::GpuKernelName> take_names() { return std::exchange(names_, {}); }
  std::vector<store::GpuActivityRow> take_rows() { return std::exchange(rows_, {}); }
  size_t pending_rows() const { return rows_.size(); }

  std::vector<store::LossCount> losses() const;
  std::vector<std::pair<std::string, uint64_t>> event_counts() const;
  // probe_families "gpu_activity": "on" when some process sent activity, else "off"/"failed";
  // the detail names the processes whose client stepped aside and why.
  std::pair<std::string, std::string> family_state() const;

 private:
  bool keep(uint64_t start_ns, uint64_t end_ns);
  store::GpuActivityRow base(std::string_view kind, uint32_t pid, uint64_t start, uint64_t end);

  ClockConverter clock_;
  uint64_t until_;
  std::vector<store::GpuActivityRow> rows_;
  std::vector<store::GpuKernelName> names_;
  std::map<std::pair<uint32_t, uint32_t>, int64_t> name_ids_;  // (pid, client id) -> row id
  int64_t next_name_id_ = 1;
  std::map<uint32_t, gw_ga_dropped> dropped_;  // latest cumulative counts per process
  std::vector<std::string> statuses_;          // "pid 12: text"
  uint32_t hello_ = 0, stepped_aside_ = 0;
  uint64_t records_ = 0, after_box_ = 0, bad_times_ = 0, malformed_ = 0, unknown_ = 0;
};

class Receiver {
 public:
  using WriteFn = std::function<void(std::span<const store::GpuKernelName>,
                                     std::span<const store::GpuActivityRow>)>;
  // A socket pair: one end for the command (client_fd(), inherited across exec), one read here.
  static Result<std::unique_ptr<Receiver>> create(uint64_t until_mono_ns);
  // A socket bound at `path` (0600; a socket already there is replaced) for processes the user
  // starts (GPUWHY_GPU_ACTIVITY_SOCKET=path); removed again with the receiver.
  static Result<std::unique_ptr<Receiver>> bind(const std::string& path, uint64_t until_mono_ns);
  ~Receiver();

  int client_fd() const { return client_fd_; }
  void close_client_fd();  // in the agent once the command has its copy

  // Receives on a thread until stop(); `write` is called from it with each batch.
  void start(ClockConverter clock, WriteFn write);
  // Receives what is still queued, writes it, and joins the thread.
  void stop();

  std::vector<store::LossCount> losses() const;
  std::vector<std::pair<std::string, uint64_t>> event_counts() const;
  std::pair<std::string, std::string> family_state() const;

 private:
  explicit Receiver(uint64_t until) : conv_(ClockConverter(0), until) {}
  void run();
  void drain(bool wait);
  void write_pending();

  mutable std::mutex mu_;  // conv_
  Converter conv_;
  int fd_ = -1, client_fd_ = -1;
  std::string bound_path_;
  WriteFn write_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Writes the CUPTI client library carried in this binary to a new private (0700) directory;
// its path. remove_client_library() takes it away again.
Result<std::string> write_client_library();
void remove_client_library(const std::string& path);
// Whether this build carries the client (it needs CUPTI's headers at build time).
bool client_library_built();

}  // namespace gpuwhy::gpu_activity
