// SPDX-License-Identifier: Apache-2.0
// Initialisation, error mapping and device queries of the simulated driver.
#include <atomic>

#include "cuda/cuda_front.hpp"
#include "gwsim/gwsim.h"

namespace gwsim::cuda {
namespace {

constexpr CUresult kDeinitialized = 4;  // CUDA_ERROR_DEINITIALIZED
constexpr CUresult kNoDevice = 100;     // CUDA_ERROR_NO_DEVICE
constexpr int kDriverVersion = 13000;   // what a CUDA 13.0 driver reports

std::atomic<bool> g_initialized{false};

}  // namespace

bool initialized() { return g_initialized.load(std::memory_order_acquire); }
void mark_initialized() { g_initialized.store(true, std::memory_order_release); }

CUresult result(Status st) {
  switch (st) {
    case Status::kOk:
      return CUDA_SUCCESS;
    case Status::kInvalidValue:
      return CUDA_ERROR_INVALID_VALUE;
    case Status::kInvalidHandle:
      return CUDA_ERROR_INVALID_HANDLE;
    case Status::kInvalidFunction:
      return CUDA_ERROR_INVALID_HANDLE;
    case Status::kInvalidConfig:
      return CUDA_ERROR_INVALID_VALUE;
    case Status::kInvalidDevice:
      return CUDA_ERROR_INVALID_DEVICE;
    case Status::kOutOfMemory:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case Status::kNotReady:
      return CUDA_ERROR_NOT_READY;
    case Status::kStopped:
      return kDeinitialized;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace gwsim::cuda

using gwsim::Device;
using namespace gwsim::cuda;

extern "C" {

CUresult cuInit(unsigned int Flags) {
  GWSIM_ENTER();
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (Device::get().config().device_count <= 0) return kNoDevice;
  mark_initialized();
  gwsim_load_cuda_injection();  // CUDA_INJECTION64_PATH, as NVIDIA's cuInit loads it
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* driverVersion) {
  GWSIM_ENTER();
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = Device::get().config().device_count;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= Device::get().config().device_count) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *device = ordinal;
  return CUDA_SUCCESS;
}

}  // extern "C"
