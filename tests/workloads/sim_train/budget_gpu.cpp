// SPDX-License-Identifier: Apache-2.0
#include "sim_train/budget_gpu.hpp"

#include <cstdio>
#include <fstream>

#include "gwsim/clock.hpp"
#include "gwsim/gwsim.h"
#include "sim_train/trainer.hpp"

namespace {

volatile int g_budget_kernel_sink = 0;

}  // namespace

// The kernels: real functions with their own addresses and names (see kernels.hpp).
extern "C" __attribute__((noinline)) void conv_forward() { g_budget_kernel_sink = 101; }
extern "C" __attribute__((noinline)) void conv_backward() { g_budget_kernel_sink = 102; }
extern "C" __attribute__((noinline)) void sgd_update() { g_budget_kernel_sink = 103; }

namespace gw {
namespace {

constexpr int kLayers = 4;
constexpr uint64_t kUpdateNs = 20'000;  // sgd_update; the layers share the rest of the step

}  // namespace

void register_step_kernels(uint64_t gpu_ns_per_step) {
  const uint64_t layers = gpu_ns_per_step > kUpdateNs ? gpu_ns_per_step - kUpdateNs : 0;
  gwsim_set_kernel_ns(reinterpret_cast<const void*>(conv_forward), layers / (2 * kLayers));
  gwsim_set_kernel_ns(reinterpret_cast<const void*>(conv_backward), layers / (2 * kLayers));
  gwsim_set_kernel_ns(reinterpret_cast<const void*>(sgd_update), kUpdateNs);
}

StepGpu::StepGpu(uint64_t gpu_ns_per_step, uint64_t batch_bytes) : batch_bytes_(batch_bytes) {
  register_step_kernels(gpu_ns_per_step);
  opened_ns_ = gwsim::now_ns();
  check(cudaStreamCreate(&stream_), "cudaStreamCreate");
  check(cudaMalloc(&d_batch_, batch_bytes_), "cudaMalloc batch");
  check(cudaMalloc(&d_loss_, sizeof(float)), "cudaMalloc loss");
  check(cudaMallocHost(&h_batch_, batch_bytes_), "cudaMallocHost batch");
}

uint64_t StepGpu::close() {
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  check(cudaFree(d_batch_), "cudaFree batch");
  check(cudaFree(d_loss_), "cudaFree loss");
  check(cudaFreeHost(h_batch_), "cudaFreeHost batch");
  check(cudaStreamDestroy(stream_), "cudaStreamDestroy");
  return gwsim::now_ns();
}

void StepGpu::upload() {
  check(cudaMemcpyAsync(d_batch_, h_batch_, batch_bytes_, cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync batch");
}

void StepGpu::launch(void (*fn)(), const char* what) {
  const dim3 grid{512, 1, 1}, block{256, 1, 1};
  void* params[] = {&d_batch_};
  check(cudaLaunchKernel(reinterpret_cast<const void*>(fn), grid, block, params, 0, stream_), what);
  ++launches_;
}

void StepGpu::forward() {
  for (int i = 0; i < kLayers; ++i) launch(conv_forward, "conv_forward");
}

void StepGpu::backward() {
  for (int i = 0; i < kLayers; ++i) launch(conv_backward, "conv_backward");
  launch(sgd_update, "sgd_update");
}

uint64_t StepGpu::sync() {
  const uint64_t t0 = gwsim::now_ns();
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  return gwsim::now_ns() - t0;
}

uint64_t StepGpu::read_loss() {
  const uint64_t t0 = gwsim::now_ns();
  float loss = 0;
  check(cudaMemcpy(&loss, d_loss_, sizeof loss, cudaMemcpyDeviceToHost), "cudaMemcpy loss");
  return gwsim::now_ns() - t0;
}

uint64_t thread_runq_ns() {
  std::ifstream in("/proc/thread-self/schedstat");
  uint64_t on_cpu = 0, runq = 0;
  if (!(in >> on_cpu >> runq)) {
    std::fprintf(stderr, "sim_train: cannot read /proc/thread-self/schedstat\n");
    return 0;
  }
  return runq;
}

}  // namespace gw
