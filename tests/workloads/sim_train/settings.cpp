// SPDX-License-Identifier: Apache-2.0
#include "sim_train/settings.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace gw {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// "a,b,c" -> its numbers; exits with the usage on anything else.
std::vector<double> number_list(const Args& args, const char* name) {
  std::vector<double> out;
  const std::string text = args.str(name, "");
  size_t at = 0;
  while (at <= text.size() && !text.empty()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    try {
      size_t used = 0;
      const std::string item = text.substr(at, comma - at);
      out.push_back(std::stod(item, &used));
      if (used != item.size() || out.back() < 0) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      args.fail(std::string("--") + name + " takes numbers of 0 or more, comma-separated");
    }
    at = comma + 1;
  }
  return out;
}

struct Named {
  const char* name;
  Scenario scenario;
};

constexpr Named kScenarios[] = {
    {"clean", Scenario::kClean},
    {"contention", Scenario::kContention},
    {"lock", Scenario::kLock},
    {"hidden-sync", Scenario::kHiddenSync},
    {"transfer", Scenario::kTransfer},
    {"alloc-churn", Scenario::kAllocChurn},
    {"launch-drop", Scenario::kLaunchDrop},
    {"straggler", Scenario::kStraggler},
    {"input-stall", Scenario::kInputStall},
    {"inline-save", Scenario::kInlineSave},
    {"neighbour", Scenario::kNeighbour},
};

constexpr const char* kUsage =
    "[--scenario clean|contention|lock|hidden-sync|transfer|alloc-churn|launch-drop|straggler|\n"
    "  input-stall|inline-save|neighbour]\n"
    "  [--steps N (200) | --seconds S] [--threads N (1)] [--wait-file PATH]\n"
    "  GPUs: [--devices N (1): thread i on device i % N] [--device-prep-us A,B,..]\n"
    "        [--device-kernel-scale A,B,..] (one per device: its threads' prep-us, kernel-scale)\n"
    "  step shape: [--prep-us N (500)] [--overhead-us N (10)] [--optimizer-us N (150)]\n"
    "              [--kernel-scale F (1.0)] [--batch-mib N (4)] [--loss-every N (10)]\n"
    "  contention, launch-drop, neighbour: [--cpu N (0)]\n"
    "  contention, launch-drop: [--hog-threads N (1; launch-drop 6)]\n"
    "  transfer: [--transfer-mib N (32)] [--pinned-transfer-mib N (0): also a synchronous\n"
    "            upload from pinned memory every step, at most --transfer-mib]\n"
    "  alloc-churn: [--alloc-buffers N (4)] [--alloc-mib N (8)]\n"
    "  lock: [--ckpt-hold-ms N (20)] [--ckpt-period-ms N (50)]\n"
    "  input-stall: [--input-kib N (256)] [--loader-ms N (4)]\n"
    "  inline-save: [--save-mib N (64)] [--save-every N (10)] [--save-dir DIR (/tmp)]\n"
    "  memory (any scenario): [--leak-kib N (0): a buffer per step, never freed]\n"
    "                         [--unused-mib N (0): a buffer at set-up no copy touches]\n"
    "                         [--caching-allocator 1: activations from a caching allocator]\n"
    "  sync-bound (any scenario): [--readback-each-op 1: a 4-byte D2H copy after every launch]\n"
    "  straggler: [--ranks N (2)] [--grad-mib N (8)] [--straggle-rank R (last)]\n"
    "             [--straggle-ms N (5)]   (GWSIM_STRAGGLE_RANK / GWSIM_STRAGGLE_MS win if set)\n"
    "  env: GW_START_DELAY_MS (0), GWSIM_* (the simulator), GWSIM_TRUTH (ground truth file)\n"
    "  time-budget scenarios (own options: --scenario NAME --help): loader-pipe, step-sleep,\n"
    "  straggler-host, contention-sync, renamed-corunner";

}  // namespace

const char* scenario_name(Scenario s) {
  for (const auto& n : kScenarios) {
    if (n.scenario == s) return n.name;
  }
  return "?";
}

Args make_args(int argc, char** argv) {
  return Args(argc, argv,
              {"scenario",
               "steps",
               "seconds",
               "threads",
               "wait-file",
               "prep-us",
               "overhead-us",
               "optimizer-us",
               "kernel-scale",
               "batch-mib",
               "loss-every",
               "cpu",
               "hog-threads",
               "transfer-mib",
               "alloc-buffers",
               "alloc-mib",
               "ckpt-hold-ms",
               "ckpt-period-ms",
               "ranks",
               "grad-mib",
               "straggle-rank",
               "straggle-ms",
               "rank",
               "nccl-id",
               "input-kib",
               "loader-ms",
               "save-mib",
               "save-every",
               "save-dir",
               "leak-kib",
               "unused-mib",
               "readback-each-op",
               "devices",
               "device-prep-us",
               "device-kernel-scale",
               "pinned-transfer-mib",
               "caching-allocator"},
              {}, kUsage);
}

Settings parse_settings(const Args& args) {
  Settings s;
  const std::string name = args.str("scenario", "clean");
  bool known = false;
  for (const auto& n : kScenarios) {
    if (name == n.name) {
      s.scenario = n.scenario;
      known = true;
    }
  }
  if (!known) args.fail("unknown scenario '" + name + "'");

  s.steps = args.u64("steps", s.steps);
  s.seconds = args.f64("seconds", 0);
  if (args.has("steps") && args.has("seconds")) args.fail("give --steps or --seconds, not both");
  if (s.steps == 0 && s.seconds == 0) args.fail("nothing to run: --steps 0");
  s.threads = static_cast<int>(args.u64("threads", 1));
  if (s.threads < 1 || s.threads > 16) args.fail("--threads must be 1..16");

  s.cpu = static_cast<int>(args.u64("cpu", 0));
  if (s.cpu >= static_cast<int>(std::thread::hardware_concurrency())) {
    args.fail("--cpu is not an online CPU");
  }
  // launch-drop must lose more than half its launch rate even on a busy CI machine: with h hog
  // threads and b other runnable threads on the CPU, the rate falls to about (1+b)/(1+h+b), so
  // h = 6 keeps the drop above half up to b = 3. Plain contention only has to show preemption.
  s.hog_threads =
      static_cast<int>(args.u64("hog-threads", s.scenario == Scenario::kLaunchDrop ? 6 : 1));
  if (s.hog_threads < 1) args.fail("--hog-threads must be at least 1");

  s.prep_ns = args.u64("prep-us", s.prep_ns / 1000) * 1000;
  s.op_overhead_ns = args.u64("overhead-us", s.op_overhead_ns / 1000) * 1000;
  s.optimizer_ns = args.u64("optimizer-us", s.optimizer_ns / 1000) * 1000;
  s.kernel_scale = args.f64("kernel-scale", s.kernel_scale);
  s.batch_bytes = args.u64("batch-mib", s.batch_bytes / kMiB) * kMiB;
  s.loss_every = args.u64("loss-every", s.loss_every);
  if (s.loss_every == 0) args.fail("--loss-every must be at least 1");
  s.transfer_bytes = args.u64("transfer-mib", s.transfer_bytes / kMiB) * kMiB;
  s.pinned_transfer_bytes = args.u64("pinned-transfer-mib", 0) * kMiB;
  if (s.pinned_transfer_bytes > s.transfer_bytes)
    args.fail("--pinned-transfer-mib must be at most --transfer-mib");
  s.alloc_buffers = args.u64("alloc-buffers", s.alloc_buffers);
  s.alloc_bytes = args.u64("alloc-mib", s.alloc_bytes / kMiB) * kMiB;
  s.ckpt_hold_ns = args.u64("ckpt-hold-ms", s.ckpt_hold_ns / 1'000'000) * 1'000'000;
  s.ckpt_period_ns = args.u64("ckpt-period-ms", s.ckpt_period_ns / 1'000'000) * 1'000'000;
  if (s.ckpt_period_ns <= s.ckpt_hold_ns) args.fail("--ckpt-period-ms must exceed the hold");
  s.input_bytes = args.u64("input-kib", s.input_bytes >> 10) << 10;
  if (s.input_bytes == 0) args.fail("--input-kib must be at least 1");
  s.loader_ns = args.u64("loader-ms", s.loader_ns / 1'000'000) * 1'000'000;
  s.save_bytes = args.u64("save-mib", s.save_bytes >> 20) << 20;
  s.save_every = args.u64("save-every", s.save_every);
  if (s.save_bytes == 0 || s.save_every == 0) args.fail("--save-mib and --save-every must be >= 1");
  s.save_dir = args.str("save-dir", s.save_dir);
  s.leak_bytes = args.u64("leak-kib", 0) << 10;
  s.unused_bytes = args.u64("unused-mib", 0) * kMiB;
  s.readback_each_op = args.u64("readback-each-op", 0) != 0;
  s.caching_allocator = args.u64("caching-allocator", 0) != 0;
  s.devices = static_cast<int>(args.u64("devices", 1));
  if (s.devices < 1 || s.devices > 8) args.fail("--devices must be 1..8");
  for (double us : number_list(args, "device-prep-us"))
    s.device_prep_ns.push_back(static_cast<uint64_t>(us * 1000));
  s.device_kernel_scale = number_list(args, "device-kernel-scale");
  if (s.device_prep_ns.size() > static_cast<size_t>(s.devices) ||
      s.device_kernel_scale.size() > static_cast<size_t>(s.devices))
    args.fail("--device-prep-us / --device-kernel-scale: at most one value per device");

  s.ranks = static_cast<int>(args.u64("ranks", 2));
  if (s.ranks < 1 || s.ranks > 64) args.fail("--ranks must be 1..64");
  s.grad_bytes = args.u64("grad-mib", s.grad_bytes / kMiB) * kMiB;
  s.straggle_ms = args.u64("straggle-ms", s.straggle_ms);
  s.straggle_rank = static_cast<int>(args.i64("straggle-rank", s.ranks - 1));
  s.rank = static_cast<int>(args.i64("rank", -1));
  s.nccl_id = args.str("nccl-id", "");
  if (s.scenario == Scenario::kStraggler) {
    if (s.seconds > 0) args.fail("straggler needs --steps: every rank must run the same steps");
    if (s.threads != 1) args.fail("straggler runs one dispatch thread per rank");
    if (s.rank >= s.ranks) args.fail("--rank must be below --ranks");
    if (s.rank >= 0 && s.nccl_id.empty()) args.fail("--rank needs --nccl-id");
  } else if (s.rank >= 0) {
    args.fail("--rank is only for the straggler scenario");
  }
  return s;
}

}  // namespace gw
