// SPDX-License-Identifier: Apache-2.0
#include "device/config.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace gwsim {
namespace {

// A bad value must not silently change a test's ground truth: say so, keep the default.
void warn(const char* name, const char* value) {
  std::fprintf(stderr, "gwsim: ignoring %s=%s (not a valid number)\n", name, value);
}

template <typename T>
void read_uint(const char* name, T* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || *v == '-') return warn(name, v);
  *out = static_cast<T>(n);
}

void read_int(const char* name, int* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0') return warn(name, v);
  *out = static_cast<int>(n);
}

void read_gbps(const char* name, double* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (*end != '\0' || !(d > 0)) return warn(name, v);
  *out = d;
}

}  // namespace

Config config_from_env() {
  Config c;
  read_uint("GWSIM_KERNEL_NS", &c.kernel_ns);
  read_uint("GWSIM_LAUNCH_NS", &c.launch_ns);
  read_uint("GWSIM_MALLOC_NS", &c.malloc_ns);
  read_uint("GWSIM_FREE_NS", &c.free_ns);
  read_gbps("GWSIM_PINNED_GBPS", &c.pinned_gbps);
  read_gbps("GWSIM_PAGEABLE_GBPS", &c.pageable_gbps);
  read_gbps("GWSIM_D2D_GBPS", &c.d2d_gbps);
  read_gbps("GWSIM_STAGING_GBPS", &c.staging_gbps);
  read_gbps("GWSIM_NCCL_GBPS", &c.nccl_gbps);
  read_uint("GWSIM_QUEUE_DEPTH", &c.queue_depth);
  if (c.queue_depth == 0) c.queue_depth = 1;
  read_int("GWSIM_DEVICE_COUNT", &c.device_count);
  read_int("GWSIM_STRAGGLE_RANK", &c.straggle_rank);
  uint64_t ms = 0;
  read_uint("GWSIM_STRAGGLE_MS", &ms);
  c.straggle_ns = ms * 1'000'000;
  ms = c.nccl_timeout_ns / 1'000'000;
  read_uint("GWSIM_NCCL_TIMEOUT_MS", &ms);
  c.nccl_timeout_ns = ms * 1'000'000;
  int async = 0;
  read_int("GWSIM_NCCL_ASYNC", &async);
  c.nccl_async = async != 0;
  if (const char* t = std::getenv("GWSIM_TRUTH")) c.truth_path = t;
  return c;
}

uint64_t transfer_ns(uint64_t bytes, double gbps) {
  return static_cast<uint64_t>(static_cast<double>(bytes) / gbps);
}

}  // namespace gwsim
