// SPDX-License-Identifier: Apache-2.0
// A mock libcupti.so.13 for CI (no GPU): the subset of CUPTI's activity API that gpuwhy's client
// (src/cupti_client) calls, compiled against NVIDIA's own headers, producing
// CUpti_ActivityKernel10 / Memcpy6 / Memset4 records (the versions CUDA 13's CUPTI writes) from
// the simulated device's truth: every operation the GPU thread executed, with its timeline start
// and end, stream, bytes, direction, host memory kind and device (gwsim_set_activity_hook).
//
// Buffers are requested from the client and completed from a worker thread ("gwsim-cupti")
// every 20 ms, as CUPTI's own worker does, and synchronously by cuptiActivityFlushAll. A buffer
// request the client refuses drops the records, counted for cuptiActivityGetNumDroppedRecords.
// No synchronisation records (the simulator models no host-side sync activity) and no overhead
// records (cuptiActivityEnable(OVERHEAD) fails with CUPTI_ERROR_INVALID_KIND, which the client
// accepts).
//
// GWSIM_CUPTI_SUBSCRIBED=1: another subscriber is there (the PyTorch profiler, nsys):
// cuptiSubscribe returns CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gwsim/gwsim.h"

#define MOCK_API extern "C" __attribute__((visibility("default")))

namespace {

uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct State {
  std::mutex mu;
  std::vector<gwsim_activity> pending;
  bool subscribed = false;
  bool kernels = false, memcpy = false, memset = false;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  int64_t clock_offset = 0;  // the client's timestamp source minus CLOCK_MONOTONIC
  uint32_t next_correlation = 1;
  std::unordered_map<uint64_t, uint32_t> stream_ids;
  std::unordered_map<const void*, const char*> names;  // never freed: records point at them
  size_t dropped = 0;
  bool worker = false;
};

State& state() {
  static State* s = new State();  // never destroyed: the worker may run during exit
  return *s;
}

std::mutex g_deliver_mu;  // one delivery at a time (the worker and a flush)

void on_activity(const gwsim_activity* a, void*) {
  State& s = state();
  std::lock_guard lk(s.mu);
  const bool kernel = a->kind == 0 || a->kind == 1 || a->kind == 4;
  if ((kernel && !s.kernels) || (a->kind == 2 && !s.memcpy) || (a->kind == 3 && !s.memset)) return;
  s.pending.push_back(*a);
}

const char* kernel_name(State& s, const gwsim_activity& a) {
  if (a.kind == 4) return "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  auto it = s.names.find(a.func);
  if (it != s.names.end()) return it->second;
  std::string name;
  Dl_info info{};
  if (a.func != nullptr && dladdr(a.func, &info) != 0 && info.dli_sname != nullptr &&
      info.dli_saddr == a.func)
    name = info.dli_sname;
  else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s_%p", a.kind == 1 ? "graph" : "kernel", a.func);
    name = buf;
  }
  const char* kept = strdup(name.c_str());
  s.names.emplace(a.func, kept);
  return kept;
}

uint8_t memcpy_kind(unsigned dir) {
  switch (dir) {
    case 0:
      return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
    case 1:
      return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    case 2:
      return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    default:
      return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  }
}

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    default:
      return 0;
  }
}

// Writes one record at `p` (room checked by the caller); its size.
size_t write_record(State& s, const gwsim_activity& a, uint8_t* p) {
  uint32_t& sid = s.stream_ids[a.stream];
  if (sid == 0) sid = static_cast<uint32_t>(s.stream_ids.size()) + 6;  // CUPTI's start near 7
  const uint64_t start = a.start_ns + s.clock_offset, end = a.end_ns + s.clock_offset;
  const uint32_t corr = s.next_correlation++;
  if (a.kind == 2) {
    CUpti_ActivityMemcpy6 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = memcpy_kind(a.dir);
    const uint8_t host = a.pageable ? uint8_t{CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE}
                                    : uint8_t{CUPTI_ACTIVITY_MEMORY_KIND_PINNED};
    const uint8_t device = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.srcKind = (a.dir == 0 || a.dir == 1) ? host : device;
    m.dstKind = (a.dir == 0 || a.dir == 2) ? host : device;
    m.bytes = a.bytes;
    m.start = start;
    m.end = end;
    m.deviceId = a.device;
    m.contextId = a.device + 1;
    m.streamId = sid;
    m.correlationId = corr;
    std::memcpy(p, &m, sizeof m);
    return sizeof m;
  }
  if (a.kind == 3) {
    CUpti_ActivityMemset4 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.bytes = a.bytes;
    m.start = start;
    m.end = end;
    m.deviceId = a.device;
    m.contextId = a.device + 1;
    m.streamId = sid;
    m.correlationId = corr;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    std::memcpy(p, &m, sizeof m);
    return sizeof m;
  }
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.completed = end;
  k.deviceId = a.device;
  k.contextId = a.device + 1;
  k.streamId = sid;
  k.gridX = static_cast<int32_t>(a.grid[0]);
  k.gridY = static_cast<int32_t>(a.grid[1]);
  k.gridZ = static_cast<int32_t>(a.grid[2]);
  k.blockX = static_cast<int32_t>(a.block[0]);
  k.blockY = static_cast<int32_t>(a.block[1]);
  k.blockZ = static_cast<int32_t>(a.block[2]);
  k.registersPerThread = 32;
  k.correlationId = corr;
  k.name = kernel_name(s, a);
  std::memcpy(p, &k, sizeof k);
  return sizeof k;
}

// Hands everything pending to the client, a buffer at a time.
void deliver() {
  State& s = state();
  std::lock_guard dl(g_deliver_mu);
  while (true) {
    std::vector<gwsim_activity> batch;
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
    {
      std::lock_guard lk(s.mu);
      if (s.pending.empty() || s.request == nullptr) return;
      batch.swap(s.pending);
      request = s.request;
      complete = s.complete;
    }
    size_t i = 0;
    while (i < batch.size()) {
      uint8_t* buf = nullptr;
      size_t size = 0, max_records = 0;
      request(&buf, &size, &max_records);
      if (buf == nullptr || size < sizeof(CUpti_ActivityKernel10)) {
        std::lock_guard lk(s.mu);
        s.dropped += batch.size() - i;  // no buffer: CUPTI drops them
        break;
      }
      size_t used = 0, n = 0;
      {
        std::lock_guard lk(s.mu);
        while (i < batch.size() && used + sizeof(CUpti_ActivityKernel10) <= size &&
               (max_records == 0 || n < max_records)) {
          used += write_record(s, batch[i++], buf + used);
          ++n;
        }
      }
      complete(nullptr, 0, buf, size, used);
    }
  }
}

void* worker(void*) {
  pthread_setname_np(pthread_self(), "gwsim-cupti");
  while (true) {
    timespec ts{0, 20'000'000};
    nanosleep(&ts, nullptr);
    deliver();
  }
  return nullptr;
}

void start_worker_locked(State& s) {
  if (s.worker) return;
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &attr, worker, nullptr) == 0) s.worker = true;
  pthread_attr_destroy(&attr);
}

bool* kind_flag(State& s, CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return &s.kernels;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return &s.memcpy;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return &s.memset;
    default:
      return nullptr;
  }
}

}  // namespace

MOCK_API CUptiResult cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS:
      *str = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_INVALID_KIND:
      *str = "CUPTI_ERROR_INVALID_KIND";
      break;
    case CUPTI_ERROR_INVALID_PARAMETER:
      *str = "CUPTI_ERROR_INVALID_PARAMETER";
      break;
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      break;
  }
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  const char* other = std::getenv("GWSIM_CUPTI_SUBSCRIBED");
  State& s = state();
  std::lock_guard lk(s.mu);
  if ((other != nullptr && std::strcmp(other, "1") == 0) || s.subscribed)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.subscribed = true;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  State& s = state();
  std::lock_guard lk(s.mu);
  s.subscribed = false;
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  if (fn == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = state();
  std::lock_guard lk(s.mu);
  s.clock_offset = static_cast<int64_t>(fn() - mono_ns());
  // Within a few microseconds of 0 for a CLOCK_MONOTONIC source: round that to exactly 0.
  if (s.clock_offset > -1'000'000 && s.clock_offset < 1'000'000) s.clock_offset = 0;
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = state();
  std::lock_guard lk(s.mu);
  s.request = request;
  s.complete = complete;
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  State& s = state();
  std::lock_guard lk(s.mu);
  if (kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) return CUPTI_SUCCESS;  // none ever come
  bool* f = kind_flag(s, kind);
  if (f == nullptr) return CUPTI_ERROR_INVALID_KIND;
  *f = true;
  gwsim_set_activity_hook(on_activity, nullptr);
  start_worker_locked(s);
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  State& s = state();
  std::lock_guard lk(s.mu);
  if (kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) return CUPTI_SUCCESS;
  bool* f = kind_flag(s, kind);
  if (f == nullptr) return CUPTI_ERROR_INVALID_KIND;
  *f = false;
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid,
                                                CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t at = 0;
  if (*record != nullptr) {
    const auto* cur = reinterpret_cast<uint8_t*>(*record);
    at = static_cast<size_t>(cur - buffer) + record_size((*record)->kind);
  }
  if (at + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + at);
  const size_t size = record_size(next->kind);
  if (size == 0 || at + size > valid) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = state();
  std::lock_guard lk(s.mu);
  *dropped = s.dropped;
  s.dropped = 0;
  return CUPTI_SUCCESS;
}

MOCK_API CUptiResult cuptiActivityFlushAll(uint32_t) {
  deliver();
  return CUPTI_SUCCESS;
}
