// SPDX-License-Identifier: Apache-2.0
// driver_ioctls: a process at the GPU driver's boundary, for the driver_ioctls family's test. Its
// first act is a GPU call on the simulated runtime (the process is traced from then on); then it
// issues ioctls on stand-ins of the NVIDIA driver's device files, which the test names to the
// agent with GPUWHY_TEST_DRIVER_PATH=DIR/nvidia, and on files the agent must leave out:
//   DIR/nvidia0      --count ioctls from the main thread, outside any GPU call
//   DIR/nvidia-uvm   --count ioctls from a second thread
//   DIR/other        --count ioctls (not a driver file: another name)
//   DIR/sub/nvidia0  --count ioctls (not a driver file: another directory)
//   /dev/null        --count ioctls
// The stand-ins are regular files: each ioctl fails (ENOTTY), but it is a real system call.
// Prints {"workload":"driver_ioctls","pid":..,"tid":..,"tid2":..,"request":..,"per_file":N}.
//
// usage: driver_ioctls --dir DIR [--count N (40)]
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/args.hpp"
#include "common/json.hpp"
#include "gwsim/cudart.h"

namespace {

// _IOWR('F', 42, 32 bytes): shaped like an NVIDIA resource-manager control.
constexpr unsigned long kRequest = 0xc020462aul;

int open_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(("driver_ioctls: " + path).c_str());
    std::exit(1);
  }
  return fd;
}

void issue(int fd, uint64_t n) {
  char arg[32] = {};
  for (uint64_t i = 0; i < n; ++i) (void)ioctl(fd, kRequest, arg);
}

}  // namespace

int main(int argc, char** argv) {
  void* p = nullptr;
  if (cudaMalloc(&p, 4096) != cudaSuccess) return 1;  // traced from here on
  const gw::Args args(argc, argv, {"dir", "count"}, {}, "--dir DIR [--count N (40)]");
  const std::string dir = args.str("dir", "");
  if (dir.empty()) args.fail("--dir is required");
  const uint64_t n = args.u64("count", 40);
  mkdir((dir + "/sub").c_str(), 0700);
  const int driver = open_file(dir + "/nvidia0");
  const int uvm = open_file(dir + "/nvidia-uvm");
  const int other = open_file(dir + "/other");
  const int elsewhere = open_file(dir + "/sub/nvidia0");
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  issue(driver, n);
  pid_t tid2 = 0;
  std::thread t([&] {
    tid2 = gettid();
    issue(uvm, n);
  });
  t.join();
  issue(other, n);
  issue(elsewhere, n);
  issue(null, n);
  cudaFree(p);
  gw::print_line(gw::Json()
                     .str("workload", "driver_ioctls")
                     .num("pid", getpid())
                     .num("tid", gettid())
                     .num("tid2", tid2)
                     .num("request", kRequest)
                     .num("per_file", n));
  return 0;
}
