// SPDX-License-Identifier: Apache-2.0
// `gpuwhy trace`: flags -> TraceOptions -> run_trace (trace_session.cpp).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>

#include "catalog/api_catalog.hpp"
#include "cli/commands.hpp"
#include "cli/trace_session.hpp"
#include "core/clock.hpp"
#include "metrics/listen_address.hpp"
#include "probes/probes.hpp"

namespace gpuwhy::cli {
namespace {

struct TraceFlags {
  std::string duration;
  std::vector<uint32_t> pids;
  std::string out = kDefaultDb;
  std::vector<std::string> libs;
  uint32_t ring_mb = 32;
  uint32_t ring_kb = 0;
  bool stacks = false;
  uint32_t launch_arg_sampling = 64;
  bool no_launch_batching = false;
  bool no_uprobe_multi = false;
  bool no_uprobe_session = false;
  bool full = false;
  // Opt-in until the scenario suites are shown to give the same answers with it on an idle
  // machine (issue 33): every launch is timed by default.
  uint32_t untimed_above = 0;
  bool no_python = false;
  bool no_sample_stacks = false;
  std::vector<std::string> entry_only;
  double min_offcpu_us = 0;
  double min_syscall_us = 1000;
  uint32_t sample_hz = probes::kDefaultSampleHz;
  bool no_host_libs = false;
  std::vector<std::string> with, without;
  bool quiet = false;
  bool keep_secret_args = false;
  std::string ready_file;
  std::vector<std::string> command;
  bool no_hold = false;
  uint32_t hold_bound_ms = 2000;
  std::string metrics;
  std::string keep, max_size;
  std::string gpu_activity, gpu_activity_socket;
  std::string max_size_floor = "64M";  // hidden: tests record into smaller budgets
  uint32_t age_check_ms = 1000;        // hidden: how often --keep is applied
};

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

}  // namespace

void add_trace_command(CLI::App& root, Runner& run) {
  auto flags = std::make_shared<TraceFlags>();
  auto* cmd = root.add_subcommand(
      "trace", "Record GPU API calls and what the host did to the calling threads (needs root)");
  cmd->add_option("-d,--duration", flags->duration,
                  "How long to trace, e.g. 30s, 5m (default: until Ctrl-C)");
  cmd->add_option("-p,--pid", flags->pids,
                  "Only these processes and their children (repeatable or comma-separated); "
                  "default: every process using a GPU runtime")
      ->delimiter(',');
  cmd->add_option("-o,--out", flags->out, "Trace file to write")->capture_default_str();
  cmd->add_option("--lib", flags->libs, "Also probe this GPU runtime library file (repeatable)");
  cmd->add_option("--ring-mb", flags->ring_mb, "Event ring buffer size in MiB (power of two)")
      ->capture_default_str();
  cmd->add_option("--ring-kb", flags->ring_kb,
                  "Event ring buffer size in KiB (power of two; overrides --ring-mb; for tests)")
      ->group("");
  cmd->add_flag(
      "--stacks", flags->stacks,
      "Capture the user stack of every GPU API call and CPU sample, stored with function names");
  cmd->add_option("--launch-arg-sampling", flags->launch_arg_sampling,
                  "Read a kernel launch's in-memory arguments (its stream, a launch config) on 1 "
                  "in N launches of each thread (power of two; 1: every launch). Each read costs "
                  "more than the rest of the probe")
      ->capture_default_str();
  cmd->add_flag("--no-launch-batching", flags->no_launch_batching,
                "Give every kernel launch a record of its own, keeping the grid and block of "
                "launches whose in-memory arguments are not read (each launch costs ~4% more)");
  cmd->add_flag("--no-uprobe-multi", flags->no_uprobe_multi,
                "Attach one uprobe per function, as on kernels before 6.6, instead of one "
                "uprobe_multi link per library (troubleshooting; stopping takes longer)");
  cmd->add_flag("--no-uprobe-session", flags->no_uprobe_session,
                "Probe driver launches with entry and return probes, as on kernels before 6.13, "
                "instead of a uprobe session that skips (and does not record) a driver launch "
                "made inside a runtime launch (troubleshooting; such launches cost more)");
  cmd->add_flag("--full", flags->full,
                "Time every kernel launch (the default; overrides --untimed-above)");
  cmd->add_option("--untimed-above", flags->untimed_above,
                  "Launches a second of one thread above which its unsampled launches are "
                  "recorded at entry only, counted and placed exactly, durations from 1 in "
                  "--launch-arg-sampling (opt-in, e.g. 10000; 0: every launch timed)")
      ->capture_default_str();
  cmd->add_flag("--no-python", flags->no_python,
                "Do not record the Python line behind each GPU call of Python processes (on by "
                "default: every call but the launches whose arguments are not sampled walks the "
                "calling thread's Python frames)");
  cmd->add_flag("--no-sample-stacks", flags->no_sample_stacks,
                "Do not record the native user stack of the CPU samples of threads without a "
                "Python stack (on by default: where a native program's time goes, e.g. the "
                "function a late NCCL rank spends its CPU in)");
  std::vector<std::string> categories;
  for (Category c : all_categories()) categories.emplace_back(category_name(c));
  cmd->add_option("--entry-only", flags->entry_only,
                  "Record these API categories at entry only, without a return probe "
                  "(comma-separated, e.g. launch): each call costs about half, but has no "
                  "duration or return code")
      ->delimiter(',')
      ->check(CLI::IsMember(categories));
  cmd->add_option("--min-offcpu-us", flags->min_offcpu_us,
                  "Record off-CPU intervals at least this long")
      ->capture_default_str();
  cmd->add_option("--min-syscall-us", flags->min_syscall_us,
                  "With --with syscalls, record syscalls at least this long")
      ->capture_default_str();
  cmd->add_option("--sample-hz", flags->sample_hz,
                  "Sample what traced threads do on the CPU this often per CPU (the syscall they "
                  "are in, kernel or user code); 0: off")
      ->capture_default_str();
  const std::vector<std::string> families = {"syscalls", "block-io", "tcp", "reclaim",
                                             "driver-ioctls"};
  cmd->add_option("--with", flags->with,
                  "Add a kernel probe family that is off by default: syscalls (every slow "
                  "syscall with its full duration, on-CPU time included; costs every syscall on "
                  "the host ~0.2 us, and each traced call more). Without it the scheduler still "
                  "names the syscall a thread slept in. driver-ioctls: every ioctl of a traced "
                  "thread on the NVIDIA driver's files (/dev/nvidia*), on the same tracepoints and "
                  "at the same cost to the host")
      ->delimiter(',')
      ->check(CLI::IsMember(families));
  cmd->add_option("--without", flags->without,
                  "Leave out a kernel probe family (repeatable or comma-separated): block-io, "
                  "tcp, reclaim")
      ->delimiter(',')
      ->check(CLI::IsMember(families));
  cmd->add_flag("--no-host-libs", flags->no_host_libs,
                "Do not probe GPU runtimes installed on the host until a process maps them");
  cmd->add_flag("-q,--quiet", flags->quiet, "No live status line");
  cmd->add_flag("--keep-secret-args", flags->keep_secret_args,
                "Store traced command lines as they are; by default values of arguments that "
                "look like secrets (--*token*, --*password*, --*secret*, --*key*=, NAME_KEY=...) "
                "are stored as ***");
  cmd->add_option("--ready-file", flags->ready_file,
                  "Create this file once the probes are attached (for scripts)");
  cmd->add_flag("--no-hold", flags->no_hold,
                "Do not stop a process that maps a GPU runtime not yet probed until it is (its "
                "first calls may then be missed; they are counted per process)");
  cmd->add_option("--hold-bound-ms", flags->hold_bound_ms,
                  "Continue a held process after this long even if its runtime is not probed yet "
                  "(counted)")
      ->group("");
  cmd->add_option("--metrics", flags->metrics,
                  "Serve Prometheus metrics on http://ADDR/metrics while tracing: a port (9464) "
                  "or :PORT listens on 127.0.0.1, HOST:PORT or [IPV6]:PORT where given "
                  "(docs/metrics.md)");
  cmd->add_option("--keep", flags->keep,
                  "Flight recorder: keep only the last DURATION of data (30s, 30m, 12h, 7d); the "
                  "oldest goes first, and the trace runs until stopped");
  cmd->add_option("--max-size", flags->max_size,
                  "Flight recorder: keep the trace file (with its -wal) within SIZE (64M, 2G; at "
                  "least 64M), dropping the oldest data; the trace runs until stopped");
  cmd->add_option("--max-size-floor", flags->max_size_floor,
                  "Smallest --max-size accepted (for tests)")
      ->group("");
  cmd->add_option("--age-check-ms", flags->age_check_ms,
                  "How often --keep is applied, in ms (for tests)")
      ->group("");
  cmd->add_option("--gpu-activity", flags->gpu_activity,
                  "GPU truth for the launched command (trace --gpu-activity [DURATION] -- CMD): "
                  "gpuwhy's CUPTI client, loaded by the CUDA driver (CUDA_INJECTION64_PATH), "
                  "records every kernel, copy, memset and sync as the device ran it; for "
                  "DURATION (30s) only, when given. Costs the job CUPTI's own tracing overhead, "
                  "most on launch-bound work (docs/performance.md); steps aside when another "
                  "CUPTI profiler is present")
      ->expected(0, 1);
  cmd->add_option("--gpu-activity-socket", flags->gpu_activity_socket,
                  "With --gpu-activity: also for CUDA processes you start yourself (a service): "
                  "receive their records on a socket bound at PATH (0600); the agent logs the "
                  "CUDA_INJECTION64_PATH and GPUWHY_GPU_ACTIVITY_SOCKET to start them with");
  cmd->add_option("command", flags->command,
                  "A command to launch and trace from its first instruction, after --: only it "
                  "and its descendants are traced, and gpuwhy exits with its status");

  cmd->callback([flags, cmd, &run] {
    const bool metrics_given = cmd->count("--metrics") > 0;  // an empty value is refused, not off
    const bool gpu_activity = cmd->count("--gpu-activity") > 0;
    run = [flags, metrics_given, gpu_activity] {
      TraceOptions opt;
      if (!flags->duration.empty()) {
        opt.duration_ns = parse_duration_ns(flags->duration.c_str());
        if (opt.duration_ns <= 0)
          return fail(
              "--duration '" + flags->duration + "' is not a duration; use e.g. 30s, 5m, 1h", 2);
      }
      const uint64_t ring =
          flags->ring_kb ? uint64_t{flags->ring_kb} << 10 : uint64_t{flags->ring_mb} << 20;
      if (!power_of_two(ring) || ring < 4096 || ring > (1ull << 31))
        return fail("ring size must be a power of two between 4 KiB and 2 GiB (e.g. --ring-mb 64)",
                    2);
      opt.ring_bytes = static_cast<uint32_t>(ring);
      opt.pids = flags->pids;
      opt.out = flags->out;
      opt.libs = flags->libs;
      opt.stacks = flags->stacks;
      if (!power_of_two(flags->launch_arg_sampling) || flags->launch_arg_sampling > (1u << 20))
        return fail(
            "--launch-arg-sampling must be a power of two from 1 to 1048576 (e.g. 64; 1 "
            "reads every launch)",
            2);
      opt.launch_read_mask = flags->launch_arg_sampling - 1;
      opt.launch_batching = !flags->no_launch_batching;
      opt.uprobe_multi = !flags->no_uprobe_multi;
      opt.uprobe_session = !flags->no_uprobe_session;
      opt.launch_untimed_per_s = flags->full ? 0 : flags->untimed_above;
      opt.python_stacks = !flags->no_python;
      opt.sample_stacks = !flags->no_sample_stacks;
      for (const std::string& name : flags->entry_only)  // names checked by the option
        opt.entry_only_categories |= category_bit(*category_of_name(name));
      opt.min_offcpu_ns = static_cast<uint64_t>(flags->min_offcpu_us * 1000);
      opt.min_syscall_ns = static_cast<uint64_t>(flags->min_syscall_us * 1000);
      opt.host_libraries = !flags->no_host_libs;
      auto named = [](const std::vector<std::string>& v, std::string_view family) {
        return std::find(v.begin(), v.end(), family) != v.end();
      };
      for (const std::string& f : flags->with)
        if (named(flags->without, f))
          return fail("--with " + f + " and --without " + f + " contradict each other; give one",
                      2);
      // A family is on when asked for, or on by default and not left out.
      auto on = [&](std::string_view family, bool by_default) {
        return named(flags->with, family) || (by_default && !named(flags->without, family));
      };
      using probes::HostFamily;
      opt.syscalls = on("syscalls", probes::host_family_on_by_default(HostFamily::Syscalls));
      opt.block_io = on("block-io", probes::host_family_on_by_default(HostFamily::BlockIo));
      opt.tcp = on("tcp", probes::host_family_on_by_default(HostFamily::Tcp));
      opt.reclaim = on("reclaim", probes::host_family_on_by_default(HostFamily::Reclaim));
      opt.driver_ioctls =
          on("driver-ioctls", probes::host_family_on_by_default(HostFamily::DriverIoctls));
      if (flags->sample_hz > 10000)
        return fail("--sample-hz must be at most 10000 (e.g. 199; 0 turns sampling off)", 2);
      opt.sample_hz = flags->sample_hz;
      opt.status_line = !flags->quiet;
      opt.command_line = invocation();
      opt.ready_file = flags->ready_file;
      opt.command = flags->command;
      opt.hold_new_libs = !flags->no_hold;
      if (flags->hold_bound_ms == 0 || flags->hold_bound_ms > 60000)
        return fail("--hold-bound-ms must be from 1 to 60000", 2);
      opt.hold_bound_ms = flags->hold_bound_ms;
      opt.keep_secret_args = flags->keep_secret_args;
      if (metrics_given) {
        auto where = metrics::parse_listen_address(flags->metrics);
        if (!where) return fail(where.error().line(), where.error().exit_code);
        opt.metrics = *where;
      }
      if (!flags->keep.empty()) {
        opt.retention.keep_ns = parse_duration_ns(flags->keep.c_str());
        if (opt.retention.keep_ns < 1'000'000'000)
          return fail("--keep '" + flags->keep +
                          "' is not a duration of at least 1s; use e.g. "
                          "30m, 12h, 7d",
                      2);
      }
      if (!flags->max_size.empty()) {
        const auto floor = store::parse_size_bytes(flags->max_size_floor);
        const auto size = store::parse_size_bytes(flags->max_size);
        if (!size)
          return fail("--max-size '" + flags->max_size + "' is not a size; use e.g. 512M, 2G", 2);
        if (!floor || *size < *floor)
          return fail("--max-size " + flags->max_size + " is below the smallest budget, " +
                          flags->max_size_floor +
                          " (the file's own tables, its write-ahead log and "
                          "a few seconds of events must fit); give at least " +
                          flags->max_size_floor,
                      2);
        opt.retention.max_bytes = *size;
      }
      if (!flags->gpu_activity_socket.empty() && !gpu_activity)
        return fail("--gpu-activity-socket needs --gpu-activity", 2);
      if (gpu_activity) {
        if (flags->command.empty() && flags->gpu_activity_socket.empty())
          return fail(
              "--gpu-activity needs a command to launch (trace --gpu-activity -- CMD) or "
              "--gpu-activity-socket PATH for processes you start yourself",
              2);
        opt.gpu_activity_socket = flags->gpu_activity_socket;
        opt.gpu_activity = true;
        if (!flags->gpu_activity.empty()) {
          opt.gpu_activity_ns = parse_duration_ns(flags->gpu_activity.c_str());
          if (opt.gpu_activity_ns <= 0)
            return fail(
                "--gpu-activity '" + flags->gpu_activity + "' is not a duration; use e.g. 30s, 5m",
                2);
        }
      }
      if (flags->age_check_ms == 0) return fail("--age-check-ms must be at least 1", 2);
      opt.retention.age_check_ns = int64_t{flags->age_check_ms} * 1'000'000;
      return run_trace(opt);
    };
    (void)cmd;
  });
}

}  // namespace gpuwhy::cli
