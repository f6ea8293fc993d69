// SPDX-License-Identifier: Apache-2.0
#include "sim_train/trainer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/proc.hpp"
#include "gwsim/clock.hpp"
#include "sim_train/budget_gpu.hpp"
#include "sim_train/co_runners.hpp"

namespace gw {

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "sim_train: %s failed: %s (%d)\n", what, cudaGetErrorString(err), err);
  std::exit(1);
}

void check_nccl(ncclResult_t err, const char* what) {
  if (err == ncclSuccess) return;
  std::fprintf(stderr, "sim_train: %s failed: %s (%d)\n", what, ncclGetErrorString(err), err);
  std::exit(1);
}

Trainer::Trainer(Shared& shared, int index)
    : shared_(shared), s_(shared.settings), index_(index), prep_ns_(s_.prep_ns) {
  const size_t device = static_cast<size_t>(index % s_.devices);
  if (device < s_.device_prep_ns.size()) prep_ns_ = s_.device_prep_ns[device];
}

void Trainer::run() {
  name_this_thread(index_ == 0 ? "trainer" : "trainer-" + std::to_string(index_));
  stats_.tid = gettid();
  const Scenario sc = s_.scenario;
  if (sc == Scenario::kContention || sc == Scenario::kLaunchDrop || sc == Scenario::kNeighbour)
    pin_this_thread(s_.cpu);
  if (s_.devices > 1) {
    // torch.cuda.set_device(i): this thread's calls go to its own GPU from here on, whose
    // kernels last as that device's --device-kernel-scale says.
    const int device = index_ % s_.devices;
    check(cudaSetDevice(device), "cudaSetDevice");
    register_kernels(static_cast<size_t>(device) < s_.device_kernel_scale.size()
                         ? s_.device_kernel_scale[device]
                         : s_.kernel_scale);
  }
  setup();
  // The process is traced from its first GPU call on: what it forks now is traced too.
  if (index_ == 0 && shared_.on_setup) shared_.on_setup();
  stats_.start_ns = gwsim::now_ns();
  const uint64_t runq0 = thread_runq_ns();
  const uint64_t deadline = stats_.start_ns + static_cast<uint64_t>(s_.seconds * 1e9);
  for (uint64_t i = 0; s_.seconds > 0 ? gwsim::now_ns() < deadline : i < s_.steps; ++i) {
    if (stats_.halfway_ns == 0 && halfway(i)) {
      stats_.halfway_ns = gwsim::now_ns();
      stats_.halfway_launches = stats_.launches;
      if (index_ == 0 && shared_.on_halfway) shared_.on_halfway();
    }
    step(i);
    ++stats_.steps;
  }
  stats_.end_ns = gwsim::now_ns();
  stats_.runq_ns = thread_runq_ns() - runq0;
  teardown();
}

bool Trainer::halfway(uint64_t i) const {
  if (s_.seconds > 0) return gwsim::now_ns() >= stats_.start_ns + s_.seconds * 0.5e9;
  return i >= s_.steps / 2;
}

void Trainer::setup() {
  check(cudaStreamCreate(&stream_), "cudaStreamCreate");
  const bool transfer = s_.scenario == Scenario::kTransfer;
  check(cudaMalloc(&d_batch_, transfer ? s_.transfer_bytes : s_.batch_bytes), "cudaMalloc batch");
  check(cudaMalloc(&d_loss_, sizeof(float)), "cudaMalloc loss");
  check(cudaMallocHost(&h_batch_, s_.batch_bytes), "cudaMallocHost batch");
  check(cudaMallocHost(&h_loss_, sizeof(float)), "cudaMallocHost loss");
  if (transfer) h_pageable_.assign(s_.transfer_bytes, 1);  // touched: really resident
  if (transfer && s_.pinned_transfer_bytes > 0)
    check(cudaMallocHost(&h_pinned_, s_.pinned_transfer_bytes), "cudaMallocHost transfer");
  if (s_.scenario == Scenario::kStraggler) {
    check(cudaMalloc(&d_grads_, s_.grad_bytes), "cudaMalloc grads");
  }
  temps_.assign(s_.alloc_buffers, nullptr);
  if (s_.unused_bytes > 0) check(cudaMalloc(&d_unused_, s_.unused_bytes), "cudaMalloc unused");
  if (s_.scenario == Scenario::kInlineSave) {
    const std::string path =
        s_.save_dir + "/sim_train-ckpt-" + std::to_string(getpid()) + "-" + std::to_string(index_);
    save_fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (save_fd_ < 0) {
      std::perror(("sim_train: " + path).c_str());
      std::exit(1);
    }
    unlink(path.c_str());  // nothing is left behind, whatever happens
  }
  gwsim::burn_cpu_ns(1);  // calibrates the CPU-burn loop now, not inside the first step
}

// torch.save(model.state_dict(), path) on the dispatch thread: the bytes are copied into the
// page cache by one large write(), on the CPU, while no GPU work is queued. The same file region
// is rewritten each time, so the page cache does not grow.
void Trainer::save_checkpoint() {
  static const std::vector<char> state(s_.save_bytes, 3);
  const auto n = static_cast<ssize_t>(state.size());
  const uint64_t t0 = gwsim::now_ns();
  if (pwrite(save_fd_, state.data(), state.size(), 0) != n) {
    std::perror("sim_train: writing the checkpoint");
    std::exit(1);
  }
  stats_.save_ns += gwsim::now_ns() - t0;
}

void Trainer::teardown() {
  if (save_fd_ >= 0) close(save_fd_);
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  check(cudaFree(d_batch_), "cudaFree batch");
  check(cudaFree(d_loss_), "cudaFree loss");
  if (d_grads_ != nullptr) check(cudaFree(d_grads_), "cudaFree grads");
  if (d_unused_ != nullptr) check(cudaFree(d_unused_), "cudaFree unused");
  check(cudaFreeHost(h_batch_), "cudaFreeHost batch");
  check(cudaFreeHost(h_loss_), "cudaFreeHost loss");
  if (h_pinned_ != nullptr) check(cudaFreeHost(h_pinned_), "cudaFreeHost transfer");
  // The allocator's segments stay reserved to the end, as a process's cache does at exit.
  stats_.cache_bytes = cache_.reserved_bytes();
  stats_.cache_segments = cache_.segments();
  stats_.cache_peak_bytes = cache_.peak_bytes();
  stats_.cache_peak_segments = cache_.peak_segments();
  stats_.cache_reserves = cache_.reserves();
  stats_.cache_sweeps = cache_.sweeps();
  check(cudaStreamDestroy(stream_), "cudaStreamDestroy");
}

void Trainer::upload_batch() {
  if (s_.scenario == Scenario::kTransfer) {
    // pin_memory=False: the runtime stages every byte through the CPU, then waits for the DMA.
    check(cudaMemcpy(d_batch_, h_pageable_.data(), s_.transfer_bytes, cudaMemcpyHostToDevice),
          "cudaMemcpy batch");
    // Part of the batch already pinned: copied synchronously, so its time is the DMA's.
    if (h_pinned_ != nullptr)
      check(cudaMemcpy(d_batch_, h_pinned_, s_.pinned_transfer_bytes, cudaMemcpyHostToDevice),
            "cudaMemcpy pinned batch");
  } else {
    check(cudaMemcpyAsync(d_batch_, h_batch_, s_.batch_bytes, cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync batch");
  }
}

// Four activation tensors from the caching allocator, with no runtime call unless a segment
// must be reserved: 6 MiB each, 12 MiB in the middle third of the steps (a larger batch: the
// reserve grows once). The kernels use them (not recorded); no copy touches them.
void Trainer::carve_activations(uint64_t i) {
  const bool large = i >= s_.steps / 3 && i < 2 * s_.steps / 3;
  for (int k = 0; k < 4; ++k) cache_.allocate((large ? 12ull : 6ull) << 20);
}

void Trainer::launch_batch(std::span<const Kernel> kernels) {
  std::unique_lock<std::mutex> lock;
  if (s_.scenario == Scenario::kLock) lock = std::unique_lock(shared_.dispatch_mutex);
  const dim3 grid{1024, 1, 1}, block{256, 1, 1};
  void* params[] = {&d_batch_};
  for (const Kernel& k : kernels) {
    gwsim::burn_cpu_ns(s_.op_overhead_ns);  // the framework's own work for this op
    check(cudaLaunchKernel(reinterpret_cast<const void*>(k.fn), grid, block, params, 0, stream_),
          k.name);
    ++stats_.launches;
    if (s_.readback_each_op) {
      float v = 0;  // a per-layer metric read back with .item(): the host waits for each kernel
      check(cudaMemcpy(&v, d_loss_, sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy metric");
    }
  }
}

void Trainer::step(uint64_t i) {
  const Scenario sc = s_.scenario;
  if (sc == Scenario::kInputStall) {
    // next(data_iter): the step waits for the loader's next batch, a read on its pipe.
    input_.resize(s_.input_bytes);
    read_batch(shared_.input_fd, input_.data(), input_.size());
  }
  upload_batch();
  if (sc == Scenario::kAllocChurn) {
    for (void*& t : temps_) check(cudaMalloc(&t, s_.alloc_bytes), "cudaMalloc temporary");
  }
  if (s_.leak_bytes > 0) {
    void* kept = nullptr;  // a cache that only grows: appended to every step, never freed
    check(cudaMalloc(&kept, s_.leak_bytes), "cudaMalloc leak");
    leaked_.push_back(kept);
  }
  if (s_.caching_allocator) carve_activations(i);
  launch_batch(forward_kernels());
  if (sc == Scenario::kHiddenSync) {
    const uint64_t t0 = gwsim::now_ns();
    float loss = 0;  // loss.item(): a blocking 4-byte download in the middle of the step
    check(cudaMemcpy(&loss, d_loss_, sizeof loss, cudaMemcpyDeviceToHost), "cudaMemcpy loss");
    stats_.hidden_sync_ns += gwsim::now_ns() - t0;
  }
  launch_batch(backward_kernels());
  if (sc == Scenario::kHiddenSync) {
    const uint64_t t0 = gwsim::now_ns();
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (grad check)");
    stats_.hidden_sync_ns += gwsim::now_ns() - t0;
  }
  if (sc == Scenario::kAllocChurn) {
    for (void*& t : temps_) check(cudaFree(t), "cudaFree temporary");
  }
  if (sc == Scenario::kStraggler) {
    // The straggling rank arrives late: slow host-side work (input pipeline, preprocessing) before
    // the collective, so the other ranks wait inside theirs. (GWSIM_STRAGGLE_* set by the caller
    // instead delays inside the simulated ncclAllReduce itself.)
    if (s_.rank == s_.straggle_rank && std::getenv("GWSIM_STRAGGLE_RANK") == nullptr)
      gwsim::burn_cpu_ns(s_.straggle_ms * 1'000'000);
    check_nccl(ncclAllReduce(d_grads_, d_grads_, s_.grad_bytes / sizeof(float), ncclFloat32,
                             ncclSum, shared_.comm, stream_),
               "ncclAllReduce");
  }
  gwsim::burn_cpu_ns(s_.optimizer_ns);
  launch_batch(optimizer_kernels());
  if (i % s_.loss_every == 0) {
    check(cudaMemcpyAsync(h_loss_, d_loss_, sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync loss");
  }
  if (sc == Scenario::kInlineSave && i % s_.save_every == s_.save_every - 1) save_checkpoint();
  gwsim::burn_cpu_ns(prep_ns_);  // collate the next batch while the GPU works
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  if (s_.caching_allocator) {
    cache_.release_blocks();
    // torch.cuda.empty_cache() once the larger batches are done: every segment is freed, and
    // the next step reserves what the smaller batch needs again.
    if (i + 1 == 2 * s_.steps / 3) cache_.empty_cache();
  }
}

}  // namespace gw
