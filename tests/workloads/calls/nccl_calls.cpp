// SPDX-License-Identifier: Apache-2.0
// real_nccl_calls: calls every NCCL function of gpuwhy's catalogue exactly once, with
// distinctive arguments, through dlopen() of NVIDIA's libnccl.so.2, and prints one JSON line per
// call (call_log.hpp). Communicator arguments are NULL: NCCL rejects a NULL comm with
// ncclInvalidArgument before touching anything, whereas a made-up handle would be dereferenced.
// The init calls get a made-up unique id and fail fast without a GPU (ncclUnhandledCudaError).
// Meant for hosts without a GPU. --lib loads another libnccl (the simulated one).
//
// usage: real_nccl_calls [--lib PATH] [--wait-file PATH]   (GW_START_DELAY_MS, default 300)
#include <cstdio>
#include <string>

#include "calls/call_log.hpp"
#include "common/args.hpp"
#include "common/startup.hpp"
#include "gwsim/nccl.h"

namespace {

using gw::Call;
using gw::Distinct;
using gw::Library;

struct Coll {
  Distinct v;
  int dtype, op, root;
  explicit Coll(int id) : v(id), dtype(id % 10), op(id % 5), root(1 + id % 3) {}
};

// Collective shapes: (send, recv, count, dtype, op, comm, stream) and relatives.
void reduce_all(const Library& lib, int id, const char* name, const char* count_name) {
  const auto fn = lib.get<decltype(&ncclAllReduce)>(name);
  if (fn == nullptr) return;
  const Coll a(id);
  Call c(name);
  c.args.num("sendbuff", a.v.src)
      .num("recvbuff", a.v.dst)
      .num(count_name, a.v.bytes)
      .num("datatype", a.dtype)
      .num("op", a.op)
      .ptr("comm", nullptr)
      .num("stream", a.v.stream);
  c.done(fn(a.v.as<const void*>(a.v.src), a.v.as<void*>(a.v.dst), a.v.bytes,
            static_cast<ncclDataType_t>(a.dtype), static_cast<ncclRedOp_t>(a.op), nullptr,
            a.v.as<cudaStream_t>(a.v.stream)));
}

void broadcast(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&ncclBroadcast)>(name);
  if (fn == nullptr) return;
  const Coll a(id);
  Call c(name);
  c.args.num("sendbuff", a.v.src)
      .num("recvbuff", a.v.dst)
      .num("count", a.v.bytes)
      .num("datatype", a.dtype)
      .num("root", a.root)
      .ptr("comm", nullptr)
      .num("stream", a.v.stream);
  c.done(fn(a.v.as<const void*>(a.v.src), a.v.as<void*>(a.v.dst), a.v.bytes,
            static_cast<ncclDataType_t>(a.dtype), a.root, nullptr,
            a.v.as<cudaStream_t>(a.v.stream)));
}

void all_gather(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&ncclAllGather)>(name);
  if (fn == nullptr) return;
  const Coll a(id);
  Call c(name);
  c.args.num("sendbuff", a.v.src)
      .num("recvbuff", a.v.dst)
      .num("sendcount", a.v.bytes)
      .num("datatype", a.dtype)
      .ptr("comm", nullptr)
      .num("stream", a.v.stream);
  c.done(fn(a.v.as<const void*>(a.v.src), a.v.as<void*>(a.v.dst), a.v.bytes,
            static_cast<ncclDataType_t>(a.dtype), nullptr, a.v.as<cudaStream_t>(a.v.stream)));
}

void reduce(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&ncclReduce)>(name);
  if (fn == nullptr) return;
  const Coll a(id);
  Call c(name);
  c.args.num("sendbuff", a.v.src)
      .num("recvbuff", a.v.dst)
      .num("count", a.v.bytes)
      .num("datatype", a.dtype)
      .num("op", a.op)
      .num("root", a.root)
      .ptr("comm", nullptr)
      .num("stream", a.v.stream);
  c.done(fn(a.v.as<const void*>(a.v.src), a.v.as<void*>(a.v.dst), a.v.bytes,
            static_cast<ncclDataType_t>(a.dtype), static_cast<ncclRedOp_t>(a.op), a.root, nullptr,
            a.v.as<cudaStream_t>(a.v.stream)));
}

void send(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&ncclSend)>(name);
  if (fn == nullptr) return;
  const Coll a(id);
  Call c(name);
  c.args.num("sendbuff", a.v.src)
      .num("count", a.v.bytes)
      .num("datatype", a.dtype)
      .num("peer", a.root)
      .ptr("comm", nullptr)
      .num("stream", a.v.stream);
  c.done(fn(a.v.as<const void*>(a.v.src), a.v.bytes, static_cast<ncclDataType_t>(a.dtype), a.root,
            nullptr, a.v.as<cudaStream_t>(a.v.stream)));
}

void recv(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&ncclRecv)>(name);
  if (fn == nullptr) return;
  const Coll a(id);
  Call c(name);
  c.args.num("recvbuff", a.v.dst)
      .num("count", a.v.bytes)
      .num("datatype", a.dtype)
      .num("peer", a.root)
      .ptr("comm", nullptr)
      .num("stream", a.v.stream);
  c.done(fn(a.v.as<void*>(a.v.dst), a.v.bytes, static_cast<ncclDataType_t>(a.dtype), a.root,
            nullptr, a.v.as<cudaStream_t>(a.v.stream)));
}

void group(const Library& lib, const char* name) {
  const auto fn = lib.get<decltype(&ncclGroupStart)>(name);
  if (fn == nullptr) return;
  Call c(name);
  c.done(fn());
}

// The NULL communicator is rejected (ncclInvalidArgument) before anything is read or written.
void async_error(const Library& lib, const char* name) {
  const auto fn = lib.get<decltype(&ncclCommGetAsyncError)>(name);
  if (fn == nullptr) return;
  ncclResult_t err = ncclSuccess;
  Call c(name);
  c.args.ptr("comm", nullptr).ptr("asyncError", &err);
  c.done(fn(nullptr, &err));
}

// A recognisable id that names no communicator: bytes 0x5a, 0x5b, ... (seeded by the row).
ncclUniqueId made_up_id(int id) {
  ncclUniqueId u;
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) u.internal[i] = static_cast<char>(0x5a + id + i);
  return u;
}

std::string hex16(const ncclUniqueId& u) {
  std::string s;
  char buf[4];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(u.internal[i]));
    s += buf;
  }
  return s;
}

void init_rank(const Library& lib, int id, const char* name, int nranks, int rank) {
  const auto fn = lib.get<decltype(&ncclCommInitRank)>(name);
  if (fn == nullptr) return;
  const ncclUniqueId u = made_up_id(id);
  ncclComm_t comm = nullptr;
  Call c(name);
  c.args.ptr("comm", &comm)
      .num("nranks", nranks)
      .str("commId_first16_hex", hex16(u))
      .num("rank", rank);
  const auto r = fn(&comm, nranks, u, rank);
  c.out.ptr("comm", comm);
  c.done(r);
}

void init_rank_config(const Library& lib, int id, const char* name, int nranks, int rank) {
  const auto fn = lib.get<decltype(&ncclCommInitRankConfig)>(name);
  if (fn == nullptr) return;
  const ncclUniqueId u = made_up_id(id);
  ncclComm_t comm = nullptr;
  Call c(name);
  c.args.ptr("comm", &comm)
      .num("nranks", nranks)
      .str("commId_first16_hex", hex16(u))
      .num("rank", rank)
      .ptr("config", nullptr);
  const auto r = fn(&comm, nranks, u, rank, nullptr);
  c.out.ptr("comm", comm);
  c.done(r);
}

}  // namespace

// In ASan builds (GPUWHY_SANITIZE), LeakSanitizer reports memory that NVIDIA's libnccl itself
// leaks in ncclGroupEnd; that is not ours to fix, and must not fail the run. Harmless otherwise.
extern "C" const char* __lsan_default_suppressions() { return "leak:libnccl.so\n"; }

int main(int argc, char** argv) {
  const gw::Args args(argc, argv, {"lib", "wait-file"}, {},
                      "[--lib PATH] [--wait-file PATH]   (env GW_START_DELAY_MS, default 300)");
  const Library lib(args.str("lib", GW_REAL_NCCL));
  gw::wait_for_start(args, 300);
  // Catalogue order; the number is the row id, which seeds the distinct values.
  reduce_all(lib, 200, "ncclAllReduce", "count");
  broadcast(lib, 201, "ncclBroadcast");
  all_gather(lib, 202, "ncclAllGather");
  reduce_all(lib, 203, "ncclReduceScatter", "recvcount");
  reduce(lib, 204, "ncclReduce");
  send(lib, 205, "ncclSend");
  recv(lib, 206, "ncclRecv");
  group(lib, "ncclGroupStart");
  group(lib, "ncclGroupEnd");
  init_rank(lib, 209, "ncclCommInitRank", 4, 1);
  init_rank_config(lib, 210, "ncclCommInitRankConfig", 8, 3);
  async_error(lib, "ncclCommGetAsyncError");
  return 0;
}
