// SPDX-License-Identifier: Apache-2.0
// One job, many hosts: the NCCL ranks of one job recorded in several trace files (one per host)
// joined into one picture. Pids repeat across hosts, so a rank is named by what its process told
// NCCL: ncclCommInitRank's rank and size (api_calls.peer, .nranks). The communicator's unique id
// is not recorded (a 128-byte struct passed by value on the stack), so ranks are joined by the
// communicator's size and their distinct rank numbers, and the join is checked against the
// collectives themselves: the k-th collective on a communicator ends at one moment on every
// rank (everyone leaves the barrier when the last rank arrives), which also measures how far
// the hosts' wall clocks disagree.
//
// Pure: the loader (multihost_load.cpp) reads the rows; everything here works in memory, so the
// unit tests build ranks by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::analysis {

// One collective call of a rank, in its own file's wall clock.
struct RankCollective {
  int64_t ts = 0, end = 0;
  uint16_t api = 0;
  uint32_t tid = 0;  // the calling thread
  // The end of the calling thread's first synchronisation after the call (before its next
  // collective) when that sync blocked: under asynchronous NCCL the call returns once queued and
  // the wait for the peers moves into that sync, whose end is then the instance's common moment
  // (plus the same GPU work on every rank). 0 when there is none, or it did not block.
  int64_t done = 0;
};

// A sync shorter than this did not wait for the GPU: its end says nothing about the instance.
inline constexpr int64_t kBlockedSyncNs = 200'000;

// A process's membership in one communicator, as its file recorded it.
struct RankMember {
  size_t file = 0;            // index into the files given
  uint32_t pid = 0, tid = 0;  // the thread that set the communicator up
  uint64_t comm = 0;          // the communicator pointer (per process: joins init to collectives)
  uint32_t rank = 0, nranks = 0;
  int64_t init_ts = 0;
  std::vector<RankCollective> collectives;  // on this communicator, after its set-up, by ts
};

// What one file contributes.
struct HostFile {
  std::string path, host, boot_id;
  int64_t start_ns = 0;
  std::vector<RankMember> members;  // every communicator set-up it recorded
};

// How one file's clock lines up with the reference file's (the first one given).
struct ClockFit {
  int64_t offset_ns = 0;        // add to this file's times to put them on the reference clock
  int64_t residual_p50_ns = 0;  // |end difference| left after the offset, over matched instances
  int64_t residual_p90_ns = 0;
  uint64_t instances = 0;       // collective instances the fit used
  int64_t max_residual_ns = 0;  // the median residual above which the join is refused
  bool same_clock = false;      // same boot_id as the reference: one host, one clock
  // What the offset was fitted on: "collective_ends" (blocking collectives) or "sync_ends"
  // (asynchronous collectives: the blocked syncs that complete them, a coarser anchor).
  std::string anchor = "collective_ends";
};

// One rank's arrivals over the matched instances.
struct RankLateness {
  size_t member = 0;                          // index into Job::members
  uint64_t last = 0;                          // instances it arrived last in (unbalanced ones only)
  int64_t late_mean_ns = 0, late_p50_ns = 0;  // entry minus the other ranks' median entry
  int64_t waited_ns = 0;  // its own time in collectives before the last rank arrived
  int64_t span_ns = 0;    // first collective entry to last collective end
};

struct Job {
  uint32_t nranks = 0;
  std::vector<RankMember> members;  // the job's ranks, by rank
  std::vector<ClockFit> clocks;     // per file, same order as the files
  uint64_t instances = 0;           // collective instances matched on every rank
  uint64_t unbalanced = 0;          // ... where the last rank came 100 µs or more after the rest
  std::vector<RankLateness> ranks;  // same order as members
  int straggler = -1;               // index into members; -1: none stands out
  int64_t imposed_ns = 0;           // the others' mean wait for the straggler, summed
  std::vector<std::string> notes;   // what the reader should know (partial jobs, extra comms)
};

// Above this median residual the files are not joined: the collectives do not line up. The
// bound grows to a quarter of the median time between instances for slow steps: ends that pair
// the wrong instances differ by about a whole period, scheduling jitter on a loaded host by far
// less.
inline constexpr int64_t kMaxResidualNs = 2'000'000;
inline constexpr double kMaxResidualOfPeriod = 0.25;
// A fitted offset this large is worth a note: the hosts' clocks are not synchronised.
inline constexpr int64_t kClockNoteNs = 100'000'000;
// Fewer matched instances than this cannot fit a clock.
inline constexpr uint64_t kMinInstances = 5;

// Joins the files into one job, fits the clocks and finds the rank the others wait for. An error
// (one line, exit 2) when the join cannot be trusted: a file without NCCL set-up, files that
// share no communicator, one rank in two files, collectives that do not line up.
Result<Job> join_hosts(const std::vector<HostFile>& files, uint32_t min_collectives = 5,
                       double majority = 0.6);

}  // namespace gpuwhy::analysis
