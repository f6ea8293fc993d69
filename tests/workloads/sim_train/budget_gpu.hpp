// SPDX-License-Identifier: Apache-2.0
// What the time-budget scenarios (budget_scenarios.hpp) share: one thread's GPU step on the
// simulated runtime, and the clocks their ground truth is measured with.
//
// The step is a small convolutional model's: upload the batch (pinned, async), `layers` forward
// kernels, `layers` backward kernels, one sgd_update, all on the thread's own stream; the caller
// decides where the step syncs. Its GPU time is --gpu-us, spread evenly over the kernels.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "gwsim/cudart.h"

namespace gw {

class StepGpu {
 public:
  // Creates the stream and buffers: the calling thread's first GPU calls (its span starts here).
  StepGpu(uint64_t gpu_ns_per_step, uint64_t batch_bytes);
  StepGpu(const StepGpu&) = delete;
  StepGpu& operator=(const StepGpu&) = delete;
  // Syncs and frees: the thread's last GPU calls. Returns when the span ends (CLOCK_MONOTONIC).
  uint64_t close();

  uint64_t opened_ns() const { return opened_ns_; }
  void upload();    // cudaMemcpyAsync H2D of the batch, pinned
  void forward();   // half of the step's GPU time
  void backward();  // the other half, with the optimizer kernel
  // cudaStreamSynchronize; returns the wall time it blocked.
  uint64_t sync();
  // loss.item(): a 4-byte cudaMemcpy D2H of the loss, a sync in disguise; returns its wall time.
  uint64_t read_loss();
  cudaStream_t stream() const { return stream_; }
  uint64_t launches() const { return launches_; }

 private:
  void launch(void (*fn)(), const char* what);

  uint64_t opened_ns_ = 0;
  uint64_t batch_bytes_;
  uint64_t launches_ = 0;
  cudaStream_t stream_ = nullptr;
  void* d_batch_ = nullptr;
  void* d_loss_ = nullptr;
  void* h_batch_ = nullptr;
};

// Registers the kernels' durations so that one step is `gpu_ns_per_step` of GPU time.
void register_step_kernels(uint64_t gpu_ns_per_step);

// This thread's run-queue wait so far (/proc/thread-self/schedstat, field 2: time runnable but
// not running, in ns), the kernel's own count of what contention costs it.
uint64_t thread_runq_ns();

}  // namespace gw
