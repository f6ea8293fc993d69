// SPDX-License-Identifier: Apache-2.0
#include "gpu_activity/receiver.hpp"

#include <cxxabi.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gpuwhy::gpu_activity {
namespace {

constexpr size_t kBatchRows = 8192;
constexpr uint64_t kMaxDurationNs = 86'400'000'000'000;  // a day

std::string demangle(const std::string& mangled) {
  int st = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &st);
  if (st != 0 || d == nullptr) {
    std::free(d);
    return mangled;
  }
  std::string out(d);
  std::free(d);
  return out;
}

}  // namespace

// ---- Converter --------------------------------------------------------------------------------

bool Converter::keep(uint64_t start_ns, uint64_t end_ns) {
  ++records_;
  // CUPTI leaves an interval's end 0 when it was cut short (a forced flush before it completed);
  // such a record, or one longer than a day, has no usable time: counted, not kept.
  if (end_ns < start_ns || end_ns - start_ns > kMaxDurationNs) {
    ++bad_times_;
    return false;
  }
  if (until_ != 0 && start_ns >= until_) {
    ++after_box_;
    return false;
  }
  return true;
}

store::GpuActivityRow Converter::base(std::string_view kind, uint32_t pid, uint64_t start,
                                      uint64_t end) {
  store::GpuActivityRow r;
  r.kind = kind;
  r.pid = pid;
  r.ts = clock_.to_wall(start);
  r.dur = static_cast<int64_t>(end - start);  // keep() checked end >= start, within a day
  return r;
}

void Converter::hello(const gw_ga_hello&) { ++hello_; }

void Converter::kernel(const gw_ga_kernel& k) {
  if (!keep(k.start_ns, k.end_ns)) return;
  store::GpuActivityRow r = base("kernel", k.h.pid, k.start_ns, k.end_ns);
  r.device = k.device;
  r.context = k.context;
  r.stream = k.stream;
  r.correlation = k.correlation;
  if (auto it = name_ids_.find({k.h.pid, k.name_id}); it != name_ids_.end()) r.name_id = it->second;
  r.has_dims = true;
  for (int i = 0; i < 3; ++i) {
    r.grid[i] = k.grid[i];
    r.block[i] = k.block[i];
  }
  rows_.push_back(r);
}

void Converter::memcpy(const gw_ga_memcpy& m) {
  if (!keep(m.start_ns, m.end_ns)) return;
  store::GpuActivityRow r = base("memcpy", m.h.pid, m.start_ns, m.end_ns);
  r.device = m.device;
  r.context = m.context;
  r.stream = m.stream;
  r.correlation = m.correlation;
  r.bytes = static_cast<int64_t>(m.bytes);
  r.copy_kind = copy_kind_name(m.copy_kind);
  r.src_kind = memory_kind_name(m.src_kind);
  r.dst_kind = memory_kind_name(m.dst_kind);
  rows_.push_back(r);
}

void Converter::memset(const gw_ga_memset& m) {
  if (!keep(m.start_ns, m.end_ns)) return;
  store::GpuActivityRow r = base("memset", m.h.pid, m.start_ns, m.end_ns);
  r.device = m.device;
  r.context = m.context;
  r.stream = m.stream;
  r.correlation = m.correlation;
  r.bytes = static_cast<int64_t>(m.bytes);
  r.detail = memory_kind_name(m.memory_kind);
  rows_.push_back(r);
}

void Converter::sync(const gw_ga_sync& s) {
  if (!keep(s.start_ns, s.end_ns)) return;
  store::GpuActivityRow r = base("sync", s.h.pid, s.start_ns, s.end_ns);
  r.context = s.context;
  r.stream = s.stream;
  r.correlation = s.correlation;
  r.detail = sync_type_name(s.type);
  rows_.push_back(r);
}

void Converter::overhead(const gw_ga_overhead& o) {
  if (!keep(o.start_ns, o.end_ns)) return;
  store::GpuActivityRow r = base("overhead", o.h.pid, o.start_ns, o.end_ns);
  r.correlation = o.correlation;
  r.detail = overhead_kind_name(o.overhead_kind);
  rows_.push_back(r);
}

void Converter::name(uint32_t pid, uint32_t name_id, std::string_view text) {
  auto [it, added] = name_ids_.try_emplace({pid, name_id}, next_name_id_);
  if (!added) return;  // sent again after a lost datagram: the first one stands
  ++next_name_id_;
  store::GpuKernelName n;
  n.id = it->second;
  n.pid = pid;
  n.mangled = std::string(text);
  n.name = demangle(n.mangled);
  names_.push_back(std::move(n));
}

void Converter::dropped(const gw_ga_dropped& d) { dropped_[d.h.pid] = d; }

void Converter::status(uint32_t pid, uint32_t code, int32_t, std::string_view text) {
  if (code == GW_GA_ST_OTHER_SUBSCRIBER || code == GW_GA_ST_NO_CUPTI ||
      code == GW_GA_ST_CUPTI_ERROR)
    ++stepped_aside_;
  if (statuses_.size() < 16)
    statuses_.push_back("pid " + std::to_string(pid) + ": " + std::string(text));
}

bool Converter::add_datagram(std::span<const uint8_t> bytes) {
  const ParseResult r = parse_datagram(bytes, *this);
  unknown_ += r.unknown;
  if (r.malformed) ++malformed_;
  return !r.malformed;
}

std::vector<store::LossCount> Converter::losses() const {
  uint64_t unsent = 0, cupti = 0, no_buffer = 0;
  for (const auto& [pid, d] : dropped_) {
    unsent += d.unsent;
    cupti += d.cupti;
    no_buffer += d.no_buffer;
  }
  return {{"cupti", "unsent", unsent},
          {"cupti", "cupti_dropped", cupti},
          {"cupti", "no_buffer", no_buffer},
          {"cupti", "malformed", malformed_}};
}

std::vector<std::pair<std::string, uint64_t>> Converter::event_counts() const {
  return {{"gpu_activity", records_ - after_box_ - bad_times_},
          {"gpu_activity_after_time_box", after_box_},
          {"gpu_activity_bad_times", bad_times_},
          {"gpu_activity_unknown", unknown_},
          {"gpu_activity_processes", hello_}};
}

std::pair<std::string, std::string> Converter::family_state() const {
  std::string detail;
  for (const std::string& s : statuses_) detail += (detail.empty() ? "" : "; ") + s;
  if (hello_ > 0) {
    std::string d =
        std::to_string(hello_) + (hello_ == 1 ? " process" : " processes") + " with CUPTI activity";
    return {"on", detail.empty() ? d : d + "; " + detail};
  }
  if (stepped_aside_ > 0) return {"failed", detail};
  return {"off", detail.empty() ? "no CUDA process loaded the CUPTI client (no cuInit?)" : detail};
}

// ---- Receiver ---------------------------------------------------------------------------------

Result<std::unique_ptr<Receiver>> Receiver::create(uint64_t until_mono_ns) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0)
    return errno_error("cannot make the GPU activity socket", errno);
  std::unique_ptr<Receiver> r(new Receiver(until_mono_ns));
  r->fd_ = sv[0];
  r->client_fd_ = sv[1];
  // The command's end is inherited across its exec; ours is not.
  ::fcntl(sv[1], F_SETFD, 0);
  // Room for bursts (a flush at exit sends every record at once): 4 MiB, as the kernel allows.
  int bytes = 4 << 20;
  ::setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  ::setsockopt(sv[0], SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes);
  ::setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  ::setsockopt(sv[1], SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes);
  return r;
}

Result<std::unique_ptr<Receiver>> Receiver::bind(const std::string& path, uint64_t until_mono_ns) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path)
    return Error{"--gpu-activity-socket " + path + ": a socket path must be 1 to " +
                 std::to_string(sizeof a.sun_path - 1) + " bytes"};
  std::memcpy(a.sun_path, path.data(), path.size());
  // A socket left by an earlier trace is replaced; any other file is not.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return Error{"--gpu-activity-socket " + path + " exists and is not a socket",
                   "give a new path"};
    ::unlink(path.c_str());
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno_error("cannot make the GPU activity socket", errno);
  const mode_t old = ::umask(0177);  // 0600 from the start: no window for another user
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  const int e = errno;
  ::umask(old);
  if (rc != 0) {
    ::close(fd);
    return errno_error("cannot bind the GPU activity socket " + path, e);
  }
  std::unique_ptr<Receiver> r(new Receiver(until_mono_ns));
  r->fd_ = fd;
  r->bound_path_ = path;
  int bytes = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes);
  return r;
}

Receiver::~Receiver() {
  stop();
  close_client_fd();
  if (fd_ >= 0) ::close(fd_);
  if (!bound_path_.empty()) ::unlink(bound_path_.c_str());
}

void Receiver::close_client_fd() {
  if (client_fd_ >= 0) ::close(client_fd_);
  client_fd_ = -1;
}

void Receiver::start(ClockConverter clock, WriteFn write) {
  conv_.set_clock(clock);
  write_ = std::move(write);
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "gpuwhy-gpuact");
    run();
  });
}

void Receiver::stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  thread_.join();
  drain(false);
  write_pending();
}

void Receiver::run() {
  auto last_write = std::chrono::steady_clock::now();
  while (!stop_.load()) {
    drain(true);
    const auto now = std::chrono::steady_clock::now();
    size_t pending;
    {
      std::lock_guard lk(mu_);
      pending = conv_.pending_rows();
    }
    if (pending >= kBatchRows ||
        (pending > 0 && now - last_write >= std::chrono::milliseconds(200))) {
      write_pending();
      last_write = now;
    }
  }
}

void Receiver::drain(bool wait) {
  static thread_local uint8_t buf[GW_GA_MAX_MSG + 8];
  if (wait) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) return;
  }
  for (int i = 0; i < 4096; ++i) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) return;
    std::lock_guard lk(mu_);
    conv_.add_datagram(std::span<const uint8_t>(buf, static_cast<size_t>(n)));
  }
}

void Receiver::write_pending() {
  std::vector<store::GpuKernelName> names;
  std::vector<store::GpuActivityRow> rows;
  {
    std::lock_guard lk(mu_);
    names = conv_.take_names();
    rows = conv_.take_rows();
  }
  if ((!names.empty() || !rows.empty()) && write_) write_(names, rows);
}

std::vector<store::LossCount> Receiver::losses() const {
  std::lock_guard lk(mu_);
  return conv_.losses();
}

std::vector<std::pair<std::string, uint64_t>> Receiver::event_counts() const {
  std::lock_guard lk(mu_);
  return conv_.event_counts();
}

std::pair<std::string, std::string> Receiver::family_state() const {
  std::lock_guard lk(mu_);
  return conv_.family_state();
}

}  // namespace gpuwhy::gpu_activity
