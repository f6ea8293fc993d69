// SPDX-License-Identifier: Apache-2.0
#include "cli/trace_session.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "catalog/api_catalog.hpp"
#include "cli/commands.hpp"
#include "cli/launched_command.hpp"
#include "cli/process_holds.hpp"
#include "cli/python_stacks.hpp"
#include "cli/trace_metrics.hpp"
#include "cli/trace_summary.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/stop.hpp"
#include "discover/discover.hpp"
#include "discover/symbolize.hpp"
#include "gpu_activity/receiver.hpp"
#include "gpuwhy/abi/events.h"
#include "gpuwhy/abi/gpu_activity.h"
#include "metrics/live_metrics.hpp"
#include "model/launch_timing.hpp"
#include "probes/probes.hpp"
#include "reader/ring_reader.hpp"
#include "store/owned_files.hpp"
#include "store/redact.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

// A failed write of names (stacks, Python frames, start-up gaps) is worth a warning, except when
// the file can take no more (storage_failure(): a full disk): recording then stops with one line
// that says so, and SQLite's "database or disk is full" before it would only repeat it.
void warn_write(const store::TraceWriter& w, const Status& s) {
  if (!s && w.storage_failure().empty()) spdlog::warn("{}", s.error().line());
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

store::SessionInfo make_session_info(const TraceOptions& opt, const std::set<uint32_t>& pids,
                                     const ClockConverter& clock) {
  store::SessionInfo s;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  utsname u{};
  uname(&u);
  s.host = host;
  s.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  s.agent_version = GPUWHY_VERSION;
  s.command_line =
      opt.keep_secret_args ? opt.command_line : store::redact_command_line(opt.command_line);
  for (uint32_t pid : pids) s.pid_filter += (s.pid_filter.empty() ? "" : ",") + std::to_string(pid);
  s.boot_id = read_first_line("/proc/sys/kernel/random/boot_id");
  s.start_ns = wall_ns();
  s.mono_to_wall_ns = clock.offset();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  s.online_cpus = online > 0 ? static_cast<uint32_t>(online) : 0;
  return s;
}

// The kernel's dev_t (major << 20 | minor) as user space's st_dev encodes it.
uint64_t user_dev(uint32_t kernel_dev) { return makedev(kernel_dev >> 20, kernel_dev & 0xfffff); }

// The flight recorder's line after the summary: what the file still covers, what went.
void print_retention(const store::TraceWriter& w) {
  const auto r = w.retention_totals();
  if (!r) return;
  if (r->age_outs == 0 && r->dropped == 0) {
    std::fprintf(stderr, "gpuwhy: flight recorder: nothing was aged out\n");
    return;
  }
  std::string line = "gpuwhy: flight recorder: " + std::to_string(r->events) + " events (" +
                     std::to_string(r->bytes >> 20) + " MiB encoded) aged out in " +
                     std::to_string(r->age_outs) + " steps; the file covers every event that " +
                     "ended after " + format_utc(r->window_start_ns.value_or(0));
  if (r->dropped > 0)
    line += "; " + std::to_string(r->dropped) +
            " events were dropped while a reader held the write-ahead log (losses "
            "store/over_budget)";
  std::fprintf(stderr, "%s\n", line.c_str());
}

// The trace file and everything that writes to it. The writer thread writes event batches; the
// discovery loop adds libraries and processes; the mutex keeps their transactions apart.
class Recorder {
 public:
  explicit Recorder(std::unique_ptr<store::TraceWriter> w) : w_(std::move(w)) {}

  store::TraceWriter& writer() { return *w_; }
  std::mutex& mu() { return mu_; }

  // With --stacks: reads a captured user stack by id from the kernel's map.
  void read_stacks_with(std::function<std::vector<uint64_t>(int32_t)> read) {
    read_stack_ = std::move(read);
  }

  // On the reader thread, the first time a stack id comes: the process's mappings are kept at
  // once (it may be gone by the time the writer resolves the stack).
  void note_new_stack(uint32_t pid) { symbols_.remember(pid); }

  // Names the processes and threads seen in a batch before the batch itself is written, and
  // resolves the user stacks seen for the first time.
  void note_identities(const reader::Batch& batch) {
    for (const Event& ev : batch)
      if (const auto* p = std::get_if<ProcEvent>(&ev)) remember_lifecycle(*p);
    for (const Event& ev : batch) {
      std::visit([&](const auto& e) { note(e); }, ev);
    }
    write_new_stacks();
  }

  // Command lines are stored with secret-looking values replaced (trace --keep-secret-args).
  void keep_secret_args(bool keep) { keep_secrets_ = keep; }

  size_t process_count() const { return pids_.size(); }

 private:
  template <class E>
  void note(const E& e) {
    if constexpr (std::is_same_v<E, ProcEvent>) {
      if (e.kind == ProcEventKind::Exec) return;  // every exec on the host: not a traced process
    }
    if constexpr (requires {
                    e.pid;
                    e.tid;
                  }) {
      if constexpr (std::is_same_v<E, TcpRetrans>)
        return;  // softirq context: not a traced task
      else if constexpr (std::is_same_v<E, CpuRun>)
        return;  // any task of the host
      else
        see(e.pid, e.tid, e.ts);
    }
    if constexpr (std::is_same_v<E, OffCpu>) note_cpus(e.pid, e.tid, e.cpus_allowed);
    if constexpr (std::is_same_v<E, ApiCall> || std::is_same_v<E, CpuSample>) {
      if (e.stack_id >= 0 && read_stack_ && stacks_.insert(e.stack_id).second)
        new_stacks_.emplace_back(e.stack_id, e.pid);
    }
  }

  // A stack is resolved the first time a batch carries its id, against the mappings the reader
  // kept when it decoded the id (note_new_stack): names cannot be had later, on another machine.
  // One process's mapping of the id is as good as any: equal ids, equal stacks.
  void write_new_stacks() {
    if (new_stacks_.empty()) return;
    std::vector<store::StackFrameRow> rows;
    for (const auto& [id, pid] : new_stacks_) {
      std::vector<discover::Frame> frames;
      for (uint64_t ip : read_stack_(id)) frames.push_back(symbols_.resolve(pid, ip));
      const size_t site = discover::call_site_depth(frames);
      for (size_t d = 0; d < frames.size(); ++d) {
        discover::Frame& f = frames[d];
        rows.push_back({id, static_cast<uint32_t>(d), f.addr, std::move(f.module), f.offset,
                        std::move(f.symbol), d == site});
      }
    }
    new_stacks_.clear();
    warn_write(*w_, w_->write_stack_frames(rows));
  }

  // What the lifecycle events say about a process, for one gone before /proc could be read
  // (short-lived processes under churn): its name, program, parent and start (fork) time.
  struct Lifecycle {
    std::string comm, exe;
    uint32_t ppid = 0;
    int64_t fork_ns = 0, exec_ns = 0;
  };
  void remember_lifecycle(const ProcEvent& e) {
    if (lifecycle_.size() > 65536) lifecycle_.clear();  // bounded: only recent ones matter
    if (e.kind == ProcEventKind::Exec) {
      Lifecycle& l = lifecycle_[e.pid];
      l.comm = std::string(comm_view(e.comm));
      l.exe = e.filename;
      if (e.other_pid) l.ppid = e.other_pid;
      l.exec_ns = e.ts;
    } else if (e.kind == ProcEventKind::Fork && e.other_pid) {
      Lifecycle& l = lifecycle_[e.other_pid];
      l = Lifecycle{std::string(comm_view(e.comm)), {}, e.pid, e.ts, 0};
    }
  }

  void see(uint32_t pid, uint32_t tid, int64_t ts) {
    if (pid == 0) return;
    if (pids_.insert(pid).second) {
      auto p = discover::read_process(pid);
      discover::ProcessInfo info;
      if (p) {
        info = std::move(*p);
      } else {
        // Gone already: what the fork and exec events said. start_ns stays 0 (unknown) only
        // when neither was seen.
        info.pid = pid;
        if (auto it = lifecycle_.find(pid); it != lifecycle_.end()) {
          info.comm = it->second.comm;
          info.exe = it->second.exe;
          info.ppid = it->second.ppid;
          info.start_ns = it->second.fork_ns ? it->second.fork_ns : it->second.exec_ns;
        }
      }
      if (!keep_secrets_) info.cmdline = store::redact_command_line(info.cmdline);
      (void)w_->upsert_process(info, ts);
    }
    if (tids_.insert(tid).second) {
      std::string comm = read_first_line("/proc/" + std::to_string(pid) + "/task/" +
                                         std::to_string(tid) + "/comm");
      if (comm.empty() && tid == pid)  // gone: the main thread is named as its process
        if (auto it = lifecycle_.find(pid); it != lifecycle_.end()) comm = it->second.comm;
      (void)w_->upsert_thread(pid, tid, comm, ts);
      const discover::AllowedCpus cpus = discover::read_allowed_cpus(pid, tid);
      if (cpus.count) {
        cpus_[tid] = cpus.count;
        (void)w_->set_thread_cpus(pid, tid, cpus.count, cpus.list);
      }
    }
  }

  // The kernel's count of the CPUs a thread may run on, at each of its switch-ins: a change
  // (sched_setaffinity after the thread was named) is stored with the list /proc then shows.
  void note_cpus(uint32_t pid, uint32_t tid, uint32_t count) {
    if (count == 0) return;
    uint32_t& known = cpus_[tid];
    if (known == count) return;
    known = count;
    discover::AllowedCpus now = discover::read_allowed_cpus(pid, tid);
    (void)w_->set_thread_cpus(pid, tid, count, now.count == count ? now.list : std::string());
  }

  std::unique_ptr<store::TraceWriter> w_;
  std::mutex mu_;
  std::set<uint32_t> pids_, tids_;
  std::unordered_map<uint32_t, uint32_t> cpus_;  // tid -> CPUs it may run on, as last stored
  std::unordered_map<uint32_t, Lifecycle> lifecycle_;
  bool keep_secrets_ = false;
  std::function<std::vector<uint64_t>(int32_t)> read_stack_;
  std::set<int32_t> stacks_;                              // ids seen (resolved or queued)
  std::vector<std::pair<int32_t, uint32_t>> new_stacks_;  // (id, a pid that used it)
  discover::Symbolizer symbols_;
};

class TraceSession {
 public:
  explicit TraceSession(const TraceOptions& opt) : opt_(opt), queue_(64) {}
  ~TraceSession() { gpu_activity::remove_client_library(gpu_client_path_); }
  Status prepare_gpu_activity();
  void start_gpu_activity();
  void finish_gpu_activity();
  int run();

 private:
  Status validate() const;
  // True when the library was attached now (not before).
  bool attach_library(const discover::LibraryFile& lib, uint32_t seen_in_pid);
  // Attaches the GPU runtimes `pid` maps; the paths of those attached now.
  std::vector<std::string> scan_process(uint32_t pid);
  // scan_process, counting a process found with a runtime not probed before it mapped it.
  void scan_late(uint32_t pid);
  void find_python(uint32_t pid);
  void write_python_frames();
  void scan_all();
  void handle_hints();
  // A runtime file new to the dynamic linker's hook, mapped by a process held for it or not.
  void on_new_file(const LibMapped& m);
  void note_gap(uint32_t pid, const char* cause, const std::string& library);
  // After the last drain: no hint left unanswered keeps a process stopped.
  void continue_held_in(std::vector<Event> hints);
  int finish_command(int trace_status);
  void writer_loop();
  reader::RingReader::Options reader_options();
  void flush_counts();
  TraceCounts counts() const;

  const TraceOptions& opt_;
  ClockConverter clock_{0};
  std::unique_ptr<probes::Probes> probes_;
  std::unique_ptr<Recorder> rec_;
  std::unique_ptr<PythonStacks> py_;  // null with trace --no-python
  reader::BatchQueue queue_;
  reader::HintQueue hints_;
  std::unique_ptr<reader::RingReader> reader_;
  std::map<std::pair<uint64_t, uint64_t>, uint16_t> libs_;  // (dev, inode) -> libraries.id
  std::set<uint32_t> pid_filter_;
  std::multimap<SteadyClock::time_point, uint32_t> scans_due_;
  std::set<uint32_t> dlopen_scan_due_;  // pids with a scan due (dlopen hints are coalesced)
  uint32_t probes_attached_ = 0;
  uint64_t batches_at_stop_ = 0;  // launch batches read from task storage after the probes left
  std::unique_ptr<LaunchedCommand> command_;  // trace -- CMD
  // trace --gpu-activity: the CUPTI client's socket and the library file written for it.
  std::unique_ptr<gpu_activity::Receiver> gpu_;
  std::string gpu_client_path_;
  std::atomic<uint64_t> gpu_write_lost_{0};
  std::unique_ptr<ProcessHolds> holds_;
  std::unique_ptr<metrics::LiveMetrics> metrics_;  // trace --metrics
  bool started_ = false;  // the initial scan is done: a runtime found later was found late
  std::atomic<uint64_t> hold_timeout_{0}, not_held_{0}, found_late_{0};
  // Set once by whichever thread finds the file unwritable (storage_failure()); then recording
  // stops and the writer drops what still comes, counting it.
  std::mutex stop_mu_;
  std::string stop_cause_, stop_error_;
  std::atomic<bool> stopping_early_{false};
  std::atomic<uint64_t> dropped_{0};
  bool write_error_logged_ = false;

  void stop_recording(std::string cause, std::string error);
  int finish_early(SteadyClock::time_point t0, int exit_code);
};

void TraceSession::stop_recording(std::string cause, std::string error) {
  std::lock_guard lock(stop_mu_);
  if (stopping_early_) return;
  stop_cause_ = std::move(cause);
  stop_error_ = std::move(error);
  stopping_early_ = true;
  request_stop();
}

Status TraceSession::validate() const {
  // Refused before anything is loaded; TraceWriter::create checks again when it creates the file.
  if (Status out = store::check_trace_path(opt_.out); !out) return out;
  for (uint32_t pid : opt_.pids) {
    struct stat st {};
    if (stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0)
      return Error{"no process with pid " + std::to_string(pid),
                   "check the pid with 'ps' or leave out --pid to trace every GPU process"};
  }
  for (const std::string& path : opt_.libs) {
    if (access(path.c_str(), R_OK) != 0)
      return errno_error("cannot read library " + path, errno, "check the --lib path");
  }
  if (geteuid() != 0) {
    return Error{"gpuwhy trace needs root to load BPF programs",
                 "run it with sudo (or grant CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN); 'gpuwhy "
                 "check' shows what "
                 "is missing"};
  }
  return {};
}

bool TraceSession::attach_library(const discover::LibraryFile& lib, uint32_t seen_in_pid) {
  // Known to the dynamic linker's hook under the identity its mappings show, attached or not;
  // but only once the attach is over (this guard, on every return). Marked before, a process
  // mapping the file during the attach (tens of ms under load) was not held and ran its first
  // calls unprobed, silently: the churn test lost whole processes that way.
  struct MarkKnown {
    probes::Probes& probes;
    const discover::LibraryFile& lib;
    ~MarkKnown() {
      if (lib.map_inode)
        (void)probes.mark_known(major(lib.map_dev), minor(lib.map_dev), lib.map_inode);
      (void)probes.mark_known(major(lib.dev), minor(lib.dev), lib.inode);
    }
  } mark_known_after{*probes_, lib};
  const auto key = std::make_pair(lib.dev, lib.inode);
  if (libs_.count(key)) return false;
  std::lock_guard lock(rec_->mu());
  auto id = rec_->writer().add_library(lib, wall_ns(), seen_in_pid);
  if (!id) {
    spdlog::warn("cannot record library {}: {}", lib.path, id.error().line());
    return false;
  }
  libs_[key] = *id;
  uint32_t ok = 0, failed = 0;
  for (const probes::AttachedSite& site : probes_->attach_library(lib, *id)) {
    if (!site.api) {  // the file could not be read at all
      spdlog::warn("cannot probe {}: {}", lib.path, site.error);
      ++failed;
      continue;
    }
    (void)rec_->writer().add_lib_probe(*id, site.api->id, site.offset, site.skipped_bytes,
                                       site.error);
    site.error.empty() ? ++ok : ++failed;
  }
  (void)rec_->writer().set_library_probe_counts(*id, ok, failed);
  probes_attached_ += ok;
  spdlog::info("probing {} ({} functions{})", lib.path, ok,
               failed ? ", " + std::to_string(failed) + " failed" : "");
  return true;
}

std::vector<std::string> TraceSession::scan_process(uint32_t pid) {
  // With a pid filter: the given processes and the children the kernel tracks with them.
  if (!pid_filter_.empty() && !pid_filter_.count(pid) && !probes_->is_tracked(pid)) return {};
  auto libs = discover::gpu_libraries_of(pid);
  if (!libs) return {};
  if (libs->empty()) {
    // A child of a traced process that maps no GPU runtime (a multiprocessing data-loader
    // worker, spawned) is traced all the same; its Python line is what a wait on it names.
    if (probes_->is_tracked(pid)) find_python(pid);
    return {};
  }
  if (metrics_)
    metrics_->remember_name(pid, read_first_line("/proc/" + std::to_string(pid) + "/comm"));
  std::vector<std::string> attached;
  for (const auto& lib : *libs)
    if (attach_library(lib, pid)) attached.push_back(lib.path);
  (void)probes_->track_pid(pid);
  find_python(pid);
  return attached;
}

// A runtime the scans attach after the trace began was mapped, and perhaps called, unprobed:
// the dynamic linker's hook did not see it (another ld.so, a lost hint).
void TraceSession::scan_late(uint32_t pid) {
  const std::vector<std::string> attached = scan_process(pid);
  if (started_ && !attached.empty()) note_gap(pid, "found_late", attached.front());
}

// A traced process running CPython gets its interpreter's layout in the kernel, so its calls
// carry their Python stacks from now on; one that cannot be walked is recorded with why.
void TraceSession::find_python(uint32_t pid) {
  if (!py_) return;
  auto p = py_->discover(pid);
  if (!p) return;
  int64_t layout_ns = 0;  // calls that began before it carry no Python stack (python_processes)
  if (p->supported) {
    if (Status s = probes_->set_python_layout(pid, p->layout); !s) {
      p->supported = false;
      p->why_not = s.error().what;
    } else {
      layout_ns = clock_.to_wall(static_cast<uint64_t>(monotonic_ns()));
    }
  }
  if (p->supported)
    spdlog::info("pid {}: Python {} ({}): recording Python lines", pid, p->version, p->interpreter);
  else
    spdlog::warn("pid {}: Python {} ({}): no Python lines: {}", pid, p->version, p->interpreter,
                 p->why_not);
  std::lock_guard lock(rec_->mu());
  (void)rec_->writer().add_python_process({pid, p->interpreter, p->version, p->supported,
                                           discover::python_detail(*p), layout_ns, p->runtime_addr,
                                           p->runtime_size});
}

// Writer thread, with the recorder's lock held: the Python frames named since the last batch.
void TraceSession::write_python_frames() {
  if (!py_) return;
  const auto rows = py_->take_rows();
  warn_write(rec_->writer(), rec_->writer().write_python_frames(rows));
}

void TraceSession::scan_all() {
  if (!pid_filter_.empty()) {
    for (uint32_t pid : pid_filter_) scan_late(pid);
    return;
  }
  for (uint32_t pid : discover::list_pids()) scan_late(pid);
}

void TraceSession::note_gap(uint32_t pid, const char* cause, const std::string& library) {
  const std::string_view c = cause;
  (c == "hold_timeout" ? hold_timeout_ : c == "not_held" ? not_held_ : found_late_)++;
  spdlog::info("pid {} may have called {} before it was probed ({})", pid, library, cause);
  std::lock_guard lock(rec_->mu());
  warn_write(rec_->writer(), rec_->writer().add_startup_gap(pid, cause, library, wall_ns()));
}

// The hook found `m`'s file mapped and unknown, before the process ran on. Held: attach, mark the
// file known (whether or not it could be probed: it must not hold every process), continue.
void TraceSession::on_new_file(const LibMapped& m) {
  const bool held = (m.flags & GW_LIB_HELD) != 0;
  // Test-only: the hint of a held process is dropped, as when the agent dies before reading its
  // ring record; the root test then kills the agent, and the guardian must continue the process.
  static const bool drop_held = std::getenv("GPUWHY_TEST_DROP_HOLD_HINTS") != nullptr;
  if (held && drop_held) return;
  if (held) holds_->held(m.pid);
  const std::vector<std::string> attached = scan_process(m.pid);
  (void)probes_->mark_known(m.dev >> 20, m.dev & 0xfffff, m.inode);
  const std::string lib = attached.empty() ? m.name : attached.front();
  if (!held)
    note_gap(m.pid, "not_held", lib);
  else if (!holds_->release(m.pid))
    note_gap(m.pid, "hold_timeout", lib);
}

void TraceSession::continue_held_in(std::vector<Event> hints) {
  for (const Event& ev : hints)
    if (const auto* m = std::get_if<LibMapped>(&ev); m && (m->flags & GW_LIB_HELD)) {
      holds_->continue_unseen(m->pid);
      note_gap(m->pid, "hold_timeout", m->name);
    }
}

// Exec and library-mapping hints from the kernel: look at that process soon. An mmap hint fires
// while the mapping is still being made, so look twice. A dlopen hint (inode 0: which file is not
// known) fires after the mapping; a process importing hundreds of modules sends one per dlopen,
// so hints for a process with a scan already due are dropped.
void TraceSession::handle_hints() {
  const auto now = SteadyClock::now();
  for (Event& ev : hints_.take()) {
    if (const auto* m = std::get_if<LibMapped>(&ev)) {
      if (m->flags & (GW_LIB_HELD | GW_LIB_NOT_HELD)) {
        on_new_file(*m);
        continue;
      }
      if (m->inode == 0) {
        if (!dlopen_scan_due_.insert(m->pid).second) continue;
        scans_due_.emplace(now + 20ms, m->pid);
        continue;
      }
      if (libs_.count({user_dev(m->dev), m->inode})) continue;
      scans_due_.emplace(now + 5ms, m->pid);
      scans_due_.emplace(now + 100ms, m->pid);
    } else if (const auto* p = std::get_if<ProcEvent>(&ev)) {
      if (p->kind == ProcEventKind::Fork) {
        // A child of a traced process (a data-loader worker). Soon, not at once: a child that
        // runs exec (spawn, a subprocess) is then mostly seen as its new program.
        if (p->other_pid) scans_due_.emplace(now + 20ms, p->other_pid);
        continue;
      }
      if (py_) py_->forget(p->pid);  // exec: a new program, perhaps another Python
      scans_due_.emplace(now + 200ms, p->pid);
    }
  }
  while (!scans_due_.empty() && scans_due_.begin()->first <= now) {
    const uint32_t pid = scans_due_.begin()->second;
    scans_due_.erase(scans_due_.begin());
    dlopen_scan_due_.erase(pid);
    scan_late(pid);
  }
}

reader::RingReader::Options TraceSession::reader_options() {
  reader::RingReader::Options o;
  if (opt_.any_stacks()) {
    // Runs for every call or sample with a stack, on the reader thread only: its own set, no lock.
    o.on_stack = [this, seen = std::unordered_set<int32_t>()](uint32_t pid, int32_t id) mutable {
      if (seen.insert(id).second) rec_->note_new_stack(pid);
    };
  }
  if (py_) o.on_python_stack = [this](uint32_t pid, uint64_t key) { return py_->intern(pid, key); };
  if (metrics_) o.on_batch = [this](const reader::Batch& b) { metrics_->observe(b); };
  return o;
}

void TraceSession::writer_loop() {
  auto last_counts = SteadyClock::now();
  for (;;) {
    bool timed_out = false;
    auto batch = queue_.pop(200ms, &timed_out);
    if (batch && (stopping_early_ || hurry_requested())) {
      dropped_ += batch->size();  // the file cannot take them, or the user will not wait
    } else if (batch) {
      std::lock_guard lock(rec_->mu());
      rec_->note_identities(*batch);
      write_python_frames();
      if (Status s = rec_->writer().write_batch(*batch); !s) {
        if (std::string cause = rec_->writer().storage_failure(); !cause.empty())
          stop_recording(cause, s.error().what);
        else if (!std::exchange(write_error_logged_, true))  // counted; said once
          spdlog::error("{} (further write errors are counted in losses, not shown)",
                        s.error().line());
      }
    } else if (!timed_out && queue_.closed_and_empty()) {
      return;
    }
    if (SteadyClock::now() - last_counts >= 1s) {
      std::unique_lock lock(rec_->mu());
      if (!stopping_early_)
        if (Status s = rec_->writer().flush_due(); !s) {
          if (std::string cause = rec_->writer().storage_failure(); !cause.empty())
            stop_recording(cause, s.error().what);
        }
      lock.unlock();
      flush_counts();
      last_counts = SteadyClock::now();
    }
  }
}

TraceCounts TraceSession::counts() const {
  TraceCounts c;
  const auto& st = reader_->stats();
  for (uint16_t k = 0; k < st.by_kind.size(); ++k)
    if (uint64_t n = st.by_kind[k].load()) c.by_kind.emplace_back(k, n);
  c.total_events = st.total.load();
  c.bpf = probes_->read_counters();
  c.decode_errors = st.decode_errors.load();
  c.write_errors = rec_->writer().lost_rows();
  c.batches_at_stop = batches_at_stop_;
  c.held = holds_ ? holds_->held_total() : 0;
  c.hold_timeout = hold_timeout_.load();
  c.not_held = not_held_.load();
  c.found_late = found_late_.load();
  if (py_) {
    c.py_gaps = py_->gaps();
    c.py_stacks_renamed = py_->stacks_renamed();
    c.py_unsupported = py_->unsupported_processes();
  }
  c.dropped = dropped_.load();
  if (gpu_) {
    c.gpu_losses = gpu_->losses();
    c.gpu_losses.push_back({"cupti", "write_error", gpu_write_lost_.load()});
    c.gpu_counts = gpu_->event_counts();
  }
  if (stopping_early_)
    c.stop_cause = stop_cause_;
  else if (hurry_requested())
    c.stop_cause = "interrupted";
  return c;
}

void TraceSession::flush_counts() {
  if (stopping_early_) return;  // finish_early writes them once, after the space is freed
  const TraceCounts c = counts();
  std::lock_guard lock(rec_->mu());
  (void)rec_->writer().set_counts(c.losses(), c.event_counts());
}

// trace --gpu-activity, before the command is forked: the client library written out, the
// socket made, and the command's environment set (CUDA_INJECTION64_PATH, the socket's fd, the
// time box); the agent's own environment is restored right after the fork.
Status TraceSession::prepare_gpu_activity() {
  if (const char* other = std::getenv("CUDA_INJECTION64_PATH"); other && *other)
    return Error{std::string("CUDA_INJECTION64_PATH is already set (") + other +
                     "): another tool injects itself into CUDA; --gpu-activity cannot as well",
                 "unset it, or trace without --gpu-activity"};
  auto lib = gpu_activity::write_client_library();
  if (!lib) return lib.error();
  gpu_client_path_ = *lib;
  const uint64_t until =
      opt_.gpu_activity_ns > 0 ? static_cast<uint64_t>(monotonic_ns() + opt_.gpu_activity_ns) : 0;
  const std::string& sock = opt_.gpu_activity_socket;
  auto r = sock.empty() ? gpu_activity::Receiver::create(until)
                        : gpu_activity::Receiver::bind(sock, until);
  if (!r) return r.error();
  gpu_ = std::move(r.value());
  if (!sock.empty()) {  // what a service needs, on one line a script can take
    std::string env =
        "CUDA_INJECTION64_PATH=" + gpu_client_path_ + " " + GW_GA_ENV_SOCKET + "=" + sock;
    if (until) env += std::string(" ") + GW_GA_ENV_UNTIL + "=" + std::to_string(until);
    std::fprintf(stderr, "gpuwhy: GPU activity: start CUDA processes with %s\n", env.c_str());
  }
  if (opt_.command.empty()) return {};
  ::setenv("CUDA_INJECTION64_PATH", gpu_client_path_.c_str(), 1);
  if (sock.empty())
    ::setenv(GW_GA_ENV_FD, std::to_string(gpu_->client_fd()).c_str(), 1);
  else
    ::setenv(GW_GA_ENV_SOCKET, sock.c_str(), 1);
  if (until) ::setenv(GW_GA_ENV_UNTIL, std::to_string(until).c_str(), 1);
  return {};
}

void TraceSession::start_gpu_activity() {
  (void)rec_->writer().set_probe_family("gpu_activity", "off",
                                        "no CUDA process has loaded the CUPTI client yet");
  gpu_->start(clock_, [this](std::span<const store::GpuKernelName> names,
                             std::span<const store::GpuActivityRow> rows) {
    std::lock_guard lock(rec_->mu());
    if (stopping_early_) return;
    if (Status s = rec_->writer().write_gpu_activity(names, rows); !s) {
      if (gpu_write_lost_.fetch_add(rows.size()) == 0)
        spdlog::error("{} (further GPU activity write errors are counted in losses)",
                      s.error().line());
    }
  });
}

// After the command ended (its client flushed at exit): what is still queued is written, and the
// family row says whether, and why not, GPU activity was recorded.
void TraceSession::finish_gpu_activity() {
  gpu_->stop();
  const auto [state, detail] = gpu_->family_state();
  std::lock_guard lock(rec_->mu());
  (void)rec_->writer().set_probe_family("gpu_activity", state, detail);
  if (state != "on") spdlog::warn("GPU activity: {} ({})", state, detail);
}

int TraceSession::run() {
  if (Status v = validate(); !v) return fail(v.error().line());
  // The command first, before any thread: it waits on a pipe until the probes are in place.
  if (opt_.gpu_activity && opt_.command.empty())  // --gpu-activity-socket alone
    if (Status g = prepare_gpu_activity(); !g) return fail(g.error().line());
  if (!opt_.command.empty()) {
    if (opt_.gpu_activity)
      if (Status g = prepare_gpu_activity(); !g) return fail(g.error().line());
    auto c = LaunchedCommand::fork_waiting(opt_.command);
    if (gpu_) {
      for (const char* v :
           {"CUDA_INJECTION64_PATH", GW_GA_ENV_FD, GW_GA_ENV_SOCKET, GW_GA_ENV_UNTIL})
        ::unsetenv(v);
      gpu_->close_client_fd();
    }
    if (!c) return fail(c.error().line());
    command_ = std::move(c.value());
    pid_filter_.insert(static_cast<uint32_t>(command_->pid()));
  }
  pid_filter_.insert(opt_.pids.begin(), opt_.pids.end());
  // After the fork (its server is a thread), before anything is traced: a refused address ends
  // here, and a command still waiting to start exits with it.
  if (opt_.metrics) {
    auto m = metrics::LiveMetrics::start(*opt_.metrics);
    if (!m) return fail(m.error().line());
    metrics_ = std::move(m.value());
    spdlog::info("serving metrics on http://{}/metrics", opt_.metrics->text());
  }
  // A flight recorder runs as a service: SIGHUP (a reload, a closed terminal) must not end it.
  install_stop_signals(/*hangup_stops=*/!opt_.retention.on());
  if (command_) forward_stop_signals_to(command_->pid());
  const auto t0 = SteadyClock::now();
  clock_ = ClockConverter::calibrate();

  probes::ProbeConfig cfg;
  cfg.filter_pids = !pid_filter_.empty();
  cfg.hold_new_libs = opt_.hold_new_libs;
  cfg.capture_stacks = opt_.stacks;
  cfg.sample_stacks = opt_.sample_stacks;
  cfg.launch_read_mask = opt_.launch_read_mask;
  // A launch that reads its memory words has a record of its own; every other launch waits in
  // its thread's batch (bpf/api.bpf.h).
  cfg.launch_batch = opt_.launch_batching && opt_.launch_read_mask != 0;
  cfg.entry_only_categories = opt_.entry_only_categories;
  cfg.uprobe_multi = opt_.uprobe_multi;
  cfg.uprobe_session = opt_.uprobe_session;
  cfg.launch_untimed_per_s = opt_.launch_untimed_per_s;
  cfg.events_ring_bytes = opt_.ring_bytes;
  cfg.min_offcpu_ns = opt_.min_offcpu_ns;
  cfg.min_syscall_ns = opt_.min_syscall_ns;
  cfg.syscalls = opt_.syscalls;
  cfg.sample_hz = opt_.sample_hz;
  cfg.block_io = opt_.block_io;
  cfg.tcp = opt_.tcp;
  cfg.reclaim = opt_.reclaim;
  cfg.driver_ioctls = opt_.driver_ioctls;
  cfg.python_stacks = opt_.python_stacks;
  auto probes = probes::Probes::load(cfg);
  if (!probes) return fail(probes.error().line());
  probes_ = std::move(probes.value());
  for (const auto& w : probes_->warnings()) spdlog::warn("{}", w);
  if (!probes_->has_rtld_hook())
    spdlog::warn(
        "no dynamic linker hook ({}): a runtime at a new path is found after the process "
        "mapped it, and its first calls may be missed (counted as found_late)",
        probes_->rtld_hook_detail());
  holds_ = std::make_unique<ProcessHolds>(std::chrono::milliseconds(opt_.hold_bound_ms),
                                          probes_->held_pids_map_fd());

  auto writer = store::TraceWriter::create(opt_.out, make_session_info(opt_, pid_filter_, clock_),
                                           opt_.retention);
  if (!writer) return fail(writer.error().line());
  rec_ = std::make_unique<Recorder>(std::move(writer.value()));
  rec_->keep_secret_args(opt_.keep_secret_args);
  if (opt_.any_stacks()) rec_->read_stacks_with([this](int32_t id) { return probes_->user_stack(id); });
  if (opt_.python_stacks)
    py_ = std::make_unique<PythonStacks>(
        [this](uint64_t key, gw_py_stack* out) { return probes_->python_stack(key, out); });
  if (Status s = rec_->writer().set_probe_family("python_stacks", opt_.python_stacks ? "on" : "off",
                                                 opt_.python_stacks ? "" : "trace --no-python");
      !s)
    return fail(s.error().line());
  for (const probes::FamilyState& f : probes_->family_states()) {
    if (Status s =
            rec_->writer().set_probe_family(probes::host_family_name(f.family), f.state, f.detail);
        !s)
      return fail(s.error().line());
  }
  // Whether runtimes at new paths are seen as they are mapped (and their processes held).
  if (Status s = rec_->writer().set_probe_family(
          "rtld_hook", probes_->has_rtld_hook() ? "on" : "failed", probes_->rtld_hook_detail());
      !s)
    return fail(s.error().line());
  // How the API probes were attached: an offline reader of the file may want to know.
  if (Status s = rec_->writer().set_probe_family(
          "api_uprobes", "on",
          probes_->uses_uprobe_session()
              ? "uprobe_multi: one link per library; driver launches by uprobe session (one "
                "nested in a runtime launch is not recorded: event_counts launch_nested_skipped)"
          : probes_->uses_uprobe_multi()
              ? "uprobe_multi: one link per library"
              : "single uprobes: one per function (kernel without uprobe_multi, or trace "
                "--no-uprobe-multi)");
      !s)
    return fail(s.error().line());
  // Adaptive launch timing: explain reads the row to say which launches have no duration and
  // where the durations it shows come from ("on": every launch timed, trace --full).
  if (Status s = rec_->writer().set_probe_family(
          kLaunchTimingFamily, probes_->launch_untimed_per_s() ? "sampled" : "on",
          probes_->launch_untimed_per_s()
              ? launch_timing_detail({probes_->launch_untimed_per_s(), opt_.launch_read_mask + 1})
              : std::string(opt_.launch_untimed_per_s ? "every launch timed (needs uprobe "
                                                        "sessions and launch batching)"
                                                      : "every launch timed (trace --full)"));
      !s)
    return fail(s.error().line());
  // Entry-only categories are stored as families of missing evidence too ("returns:launch"):
  // an offline explain must know their calls have no durations.
  for (Category c : all_categories()) {
    if (!(opt_.entry_only_categories & category_bit(c))) continue;
    if (Status s = rec_->writer().set_probe_family(store::entry_only_family(category_name(c)),
                                                   "off", "trace --entry-only");
        !s)
      return fail(s.error().line());
    // Launches and the like return at once; the other categories' durations are what explain
    // measures host waits, copies and collectives with.
    if (c != Category::Launch && c != Category::Graph && c != Category::StreamWait &&
        c != Category::EventRecord)
      spdlog::warn(
          "--entry-only {}: these calls will have no durations; explain cannot tell how "
          "long the host waited in them",
          category_name(c));
  }

  if (gpu_) start_gpu_activity();

  reader_ = std::make_unique<reader::RingReader>(clock_, queue_, hints_, reader_options());
  if (Status s = reader_->open(probes_->events_ring_fd(), probes_->lifecycle_ring_fd()); !s)
    return fail(s.error().line());

  std::atomic<bool> reader_stop{false};
  // Named threads: `top -H` and the agent's own off-CPU rows say which one is busy; explain
  // recognises "gpuwhy-*" as the tracer.
  std::thread reader_thread([&] {
    pthread_setname_np(pthread_self(), "gpuwhy-reader");
    reader_->run(reader_stop);
  });
  std::thread writer_thread([&] {
    pthread_setname_np(pthread_self(), "gpuwhy-writer");
    writer_loop();
  });

  // Tracked before the first scan so their scheduling is recorded from the start.
  for (uint32_t pid : pid_filter_) (void)probes_->track_pid(pid);
  for (const std::string& path : opt_.libs) {
    auto lib = discover::describe_library(path);
    if (lib)
      attach_library(*lib, 0);
    else
      spdlog::warn("--lib {}: {}", path, lib.error().line());
  }
  if (opt_.host_libraries && pid_filter_.empty())
    for (const auto& lib : discover::host_gpu_libraries()) attach_library(lib, 0);
  scan_all();
  started_ = true;
  const auto attached_after = SteadyClock::now() - t0;
  spdlog::info("probes attached in {} ms",
               std::chrono::duration_cast<std::chrono::milliseconds>(attached_after).count());

  if (!opt_.ready_file.empty()) {
    auto fd = store::replace_private_file(opt_.ready_file, "the ready file");
    if (!fd) {
      spdlog::error("{}", fd.error().line());
    } else {
      const std::string pid = std::to_string(getpid()) + "\n";
      if (write(*fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size()))
        spdlog::error("cannot write the ready file {}", opt_.ready_file);
      close(*fd);
    }
  }
  if (command_) {
    if (Status s = command_->start(); !s) {
      request_stop();
      spdlog::error("{}", s.error().line());
    }
  }

  StatusLine status(opt_.status_line);
  auto next_full_scan = SteadyClock::now() + 10s;
  auto next_file_check = SteadyClock::now() + 1s;
  auto next_metrics_totals = SteadyClock::now();
  const auto deadline = opt_.duration_ns > 0 ? t0 + std::chrono::nanoseconds(opt_.duration_ns)
                                             : SteadyClock::time_point::max();
  while (!stop_requested() && SteadyClock::now() < deadline) {
    hints_.wait(20ms);  // at once for a process held at the dynamic linker's hook
    handle_hints();
    if (command_ && command_->poll()) break;     // the command ended: so does its trace
    if (SteadyClock::now() >= next_full_scan) {  // backstop for anything the hints missed
      scan_all();
      next_full_scan = SteadyClock::now() + 10s;
    }
    // A trace file removed or replaced under us would be written into nothing for the rest of
    // the run, then reported as written.
    if (SteadyClock::now() >= next_file_check) {
      std::unique_lock lock(rec_->mu());
      if (rec_->writer().storage_failure() == "file_replaced") stop_recording("file_replaced", "");
      next_file_check = SteadyClock::now() + 1s;
    }
    // counts() reads the per-CPU kernel counters: only worth it when a line is shown.
    if (status.on()) status.update(SteadyClock::now() - t0, counts(), rec_->process_count());
    if (metrics_ && SteadyClock::now() >= next_metrics_totals) {
      metrics_->set_totals(metrics_totals(counts()));
      next_metrics_totals = SteadyClock::now() + 1s;
    }
  }
  status.clear();

  // Shutdown order: stop new events at the source, drain the rings, then finish the file.
  const auto t_detach = SteadyClock::now();
  probes_->detach_all();
  spdlog::info(
      "probes detached in {} ms",
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t_detach).count());
  auto open_batches =
      hurry_requested() || stopping_early_
          ? Result<std::vector<std::vector<uint8_t>>>(std::vector<std::vector<uint8_t>>{})
          : probes_->open_launch_batches();
  if (!open_batches) {
    // Rare (the iterator is part of the loaded object); the launches are gone, so say so.
    spdlog::warn("{}: the last launches of threads still running at stop are missing",
                 open_batches.error().line());
    open_batches = std::vector<std::vector<uint8_t>>{};
  }
  reader_stop = true;
  reader_thread.join();
  holds_->release_all();
  continue_held_in(hints_.take());
  for (const auto& b : *open_batches) reader_->inject(b.data(), b.size());
  batches_at_stop_ = open_batches->size();
  queue_.close();
  writer_thread.join();
  if (gpu_) finish_gpu_activity();
  {
    std::unique_lock lock(rec_->mu());
    write_python_frames();
    if (!stopping_early_ && rec_->writer().storage_failure() == "file_replaced")
      stop_recording("file_replaced", "");
  }
  if (stopping_early_ || hurry_requested()) return finish_early(t0, stopping_early_ ? 1 : 130);
  flush_counts();
  const TraceCounts final_counts = counts();
  Status fin;
  {
    std::lock_guard lock(rec_->mu());
    fin = rec_->writer().finish(wall_ns());
  }
  if (!fin) return fail(fin.error().line());
  print_summary(stderr, SteadyClock::now() - t0, final_counts, rec_->process_count(), libs_.size(),
                probes_attached_, rec_->writer().path(), rec_->writer().bytes_on_disk());
  print_retention(rec_->writer());
  return finish_command(0);
}

// `trace -- CMD` exits with the command's status, as a shell would report it. A trace stopped by
// --duration waits for the command; one stopped by a second signal leaves it running.
int TraceSession::finish_command(int trace_status) {
  if (!command_) return trace_status;
  if (auto st = command_->poll()) return *st;
  if (stop_requested()) {
    spdlog::warn("the trace was stopped; {} (pid {}) is still running", opt_.command.front(),
                 command_->pid());
    return 130;
  }
  spdlog::info("the trace has ended; waiting for {} (pid {})", opt_.command.front(),
               command_->pid());
  return command_->wait();
}

// Recording ended before its time (the file cannot be written, or a second interrupt): the file
// is marked 'stopped', with the cause in losses, and one line says what happened and what is kept.
int TraceSession::finish_early(SteadyClock::time_point t0, int exit_code) {
  const TraceCounts c = counts();
  const std::string& path = rec_->writer().path();
  const double secs = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  Status st;
  {
    std::lock_guard lock(rec_->mu());
    st = rec_->writer().stop_early(wall_ns(), c.stop_cause, c.dropped);
    if (st) (void)rec_->writer().set_counts(c.losses(), c.event_counts());
  }
  const uint64_t lost = c.lost() + rec_->writer().lost_rows() - c.write_errors;
  char when[32];
  std::snprintf(when, sizeof when, "%.1f s", secs);
  const std::string kept = st ? "it keeps what was committed before, marked 'stopped'"
                              : "it keeps what was committed before but could not be marked (" +
                                    st.error().what + "): it reads as 'recording'";
  const std::string lost_text = std::to_string(lost) + " events lost";
  if (c.stop_cause == "disk_full")
    return fail("the disk holding " + path + " is full: recording stopped after " + when + "; " +
                kept + "; " + lost_text + "; free some space or trace to another disk (--out)");
  if (c.stop_cause == "file_replaced")
    return fail(path +
                " was removed, renamed or replaced while recording: recording stopped after " +
                when + "; what was written went with the old file; " + lost_text +
                "; do not move or delete a trace while gpuwhy writes it");
  if (c.stop_cause == "io_error")
    return fail("cannot write " + path + " (" + stop_error_ + "): recording stopped after " + when +
                "; " + kept + "; " + lost_text);
  std::fprintf(stderr, "gpuwhy: interrupted twice: %s; %s (%s); %s\n", path.c_str(), kept.c_str(),
               lost_text.c_str(), "events still in flight were dropped");
  return exit_code;
}

}  // namespace

int run_trace(const TraceOptions& opt) {
  TraceSession session(opt);
  return session.run();
}

}  // namespace gpuwhy::cli
