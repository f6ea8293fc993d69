// SPDX-License-Identifier: Apache-2.0
#include "probes/uprobe_multi.hpp"

#include <bpf/btf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuwhy::probes {
namespace {

// The link_create part of union bpf_attr as Linux 6.6+ lays it out for uprobe_multi; the installed
// UAPI header (Linux 6.1) does not have it yet.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;  // BPF_F_UPROBE_MULTI_RETURN = 1
  uint32_t pid;          // 0: every process
  uint32_t pad;
};
static_assert(sizeof(LinkCreateUprobeMulti) == 64);

}  // namespace

bool kernel_has_uprobe_multi() {
  btf* vmlinux = btf__load_vmlinux_btf();
  if (!vmlinux) return false;
  const bool has = btf__find_by_name_kind(vmlinux, "bpf_uprobe_multi_link", BTF_KIND_STRUCT) > 0;
  btf__free(vmlinux);
  return has;
}

Result<int> attach_uprobe_multi(int prog_fd, const std::string& path,
                                const std::vector<uint64_t>& offsets,
                                const std::vector<uint64_t>& cookies, bool ret) {
  // union bpf_attr is larger than the part we fill; the kernel wants the rest zeroed.
  alignas(8) unsigned char attr[sizeof(union bpf_attr) > 128 ? sizeof(union bpf_attr) : 128] = {};
  LinkCreateUprobeMulti a{};
  a.prog_fd = static_cast<uint32_t>(prog_fd);
  a.attach_type = kAttachUprobeMulti;
  a.path = reinterpret_cast<uint64_t>(path.c_str());
  a.offsets = reinterpret_cast<uint64_t>(offsets.data());
  a.cookies = reinterpret_cast<uint64_t>(cookies.data());
  a.cnt = static_cast<uint32_t>(offsets.size());
  a.multi_flags = ret ? 1u : 0u;
  std::memcpy(attr, &a, sizeof(a));
  const long fd = syscall(__NR_bpf, BPF_LINK_CREATE, attr, sizeof(union bpf_attr));
  if (fd < 0) return errno_error(std::string(ret ? "return" : "entry") + " probes on " + path, errno);
  return static_cast<int>(fd);
}

}  // namespace gpuwhy::probes
