// SPDX-License-Identifier: Apache-2.0
// The catalogue of every probed GPU API: one row per exported function. It drives what the probes
// attach to (symbol names), how the generic BPF entry program captures arguments (the spec), how
// user space turns captured words into meaning (the fields), and the `apis` lookup table of the
// trace file. Adding a function is adding a row here; nothing else changes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "gpuwhy/abi/events.h"

namespace gpuwhy {

enum class Family : uint8_t { Cudart = 1, CudaDriver = 2, Nccl = 3, Hip = 4 };

// What a call does, for analysis (explicit values: they are stored in the trace file).
enum class Category : uint8_t {
  Launch = 1,  // a kernel launch
  Copy = 2,    // a memory copy
  Memset = 3,
  Alloc = 4,  // device, host (pinned) or managed allocation
  Free = 5,
  Sync = 6,        // blocks the host until GPU work completes
  StreamWait = 7,  // orders streams, does not block the host
  Graph = 8,       // a graph launch
  Collective = 9,  // NCCL collective or point-to-point
  Group = 10,      // NCCL group start/end
  Init = 11,       // communicator set-up
  Device = 12,     // selects the calling thread's current device (cudaSetDevice, hipSetDevice)
  // Asks without blocking whether GPU work is done (cudaEventQuery, cudaStreamQuery): "not ready"
  // (600 in CUDA, the driver and HIP alike) while it is not. Called in a loop, a wait on the CPU.
  Poll = 13,
  EventRecord = 14,  // marks a point in a stream that an event completes at (cudaEventRecord)
};

// What one captured argument word means. The decoder folds these into an ApiCallFields.
enum class Field : uint8_t {
  None = 0,
  Func,         // kernel function / CUfunction
  GridXY,       // dim3 x | y << 32 (dim3 passed in a register, or read from a config struct)
  GridZ,        // dim3 z in the low 32 bits
  GridZBlockX,  // config struct word: grid z | block x << 32
  BlockXY,
  BlockZ,
  BlockYZ,  // config struct word: block y | block z << 32
  GridX,
  GridY,
  BlockX,
  BlockY,  // driver-style one value per argument
  Stream,
  Dst,
  Src,  // copy / memset endpoints
  Bytes,
  Width,
  Height,    // 2D copies: bytes = width * height
  CopyKind,  // cudaMemcpyKind / hipMemcpyKind
  Value,     // memset value
  Ptr,       // pointer freed
  Event,
  GraphExec,
  Count,
  Dtype,
  RedOp,
  Root,
  Peer,
  Comm,
  NRanks,
  Rank,  // NCCL
  Flags,
  DeviceOrdinal,  // cudaSetDevice / hipSetDevice: the ordinal chosen
};

// Copy directions as stored (cudaMemcpyKind values, which HIP shares).
enum class CopyDir : uint8_t { HostToHost = 0, HostToDevice = 1, DeviceToHost = 2,
                               DeviceToDevice = 3, Default = 4 };

struct ArgSource {
  uint8_t src = GW_ARG_NONE;  // enum gw_arg_src
  uint8_t index = 0;
  uint16_t offset = 0;
};

struct ArgUse {
  Field field = Field::None;
  ArgSource from{};
};

struct ApiInfo {
  uint16_t id;                 // stable, stored in trace files: never reuse or renumber
  std::string_view name;       // exported symbol
  Family family;
  Category category;
  ArgUse args[8];              // slot i of gw_api_call.args
  int8_t out_reg = -1;         // out-pointer register read at return (allocations, comm init)
  std::optional<CopyDir> fixed_dir{};  // driver copies name their direction
  // Legacy driver entry points with 32-bit values: bit 1 = the size argument, bit 2 = the value
  // behind the out-pointer (CUdeviceptr_v1). Their upper halves are not part of the value.
  uint8_t narrow32 = 0;
};

std::span<const ApiInfo> api_catalog();
const ApiInfo* find_api(uint16_t id);
const ApiInfo* find_api(std::string_view name);

std::string_view family_name(Family f);
std::string_view category_name(Category c);
// Every category, in enum order.
std::span<const Category> all_categories();
// The category with that name ("launch", "copy", ...), if any.
std::optional<Category> category_of_name(std::string_view name);
// A category's bit in a category set (1 << its value).
inline uint32_t category_bit(Category c) { return 1u << static_cast<unsigned>(c); }
// The library name prefix that identifies a family's runtime file ("libcudart", ...).
std::string_view family_library_prefix(Family f);
std::optional<Family> family_of_library(std::string_view file_name);

// The BPF-side capture spec of an API.
gw_api_spec make_spec(const ApiInfo& api);

// The attach cookie of an API's probes in library `lib_id` (events.h, GW_COOKIE_*): a launch
// carries what its batched fast path needs (batched, kernel register, entry-only) so that path
// reads no spec. `batch_launches`: gw_launch_batch collection is on for this trace.
uint64_t make_cookie(const ApiInfo& api, uint16_t lib_id, bool entry_only, bool batch_launches);

// Captured words -> meaning. Unused fields stay at 0 / -1.
struct ApiCallFields {
  uint64_t stream = 0;
  uint64_t bytes = 0;
  int32_t op = -1;      // copy direction (CopyDir) or NCCL reduce op; -1 when not applicable
  uint64_t addr = 0;    // dst of a copy/memset, kernel func, freed/allocated ptr, event, graph, comm
  uint64_t addr2 = 0;   // src of a copy
  uint64_t blocks = 0;  // launch: grid blocks in total
  uint32_t threads_per_block = 0;
  int32_t peer = -1;    // NCCL peer / root / rank
  int32_t nranks = 0;   // NCCL communicator size (init)
};

ApiCallFields decode_api_args(const ApiInfo& api, const uint64_t (&args)[8], uint64_t out);

// Size in bytes of an ncclDataType_t element (0 when unknown).
uint32_t nccl_dtype_size(uint64_t dtype);

}  // namespace gpuwhy
