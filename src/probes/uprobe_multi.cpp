// SPDX-License-Identifier: Apache-2.0
#include "probes/uprobe_multi.hpp"

#include <bpf/btf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace gpuwhy::probes {
namespace {

// The link_create part of union bpf_attr as Linux 6.6+ lays it out for uprobe_multi (a session
// link, 6.13+, uses the same fields with attach_type BPF_TRACE_UPROBE_SESSION and no flags); the
// installed UAPI header (Linux 6.1) has neither.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;  // kAttachUprobeMulti or kAttachUprobeSession
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;  // BPF_F_UPROBE_MULTI_RETURN = 1 (uprobe_multi only; 0 for a session)
  uint32_t pid;          // 0: every process
  uint32_t pad;
};
static_assert(sizeof(LinkCreateUprobeMulti) == 64);

Result<int> create_link(int prog_fd, uint32_t attach_type, uint32_t multi_flags,
                        const std::string& path, const std::vector<uint64_t>& offsets,
                        const std::vector<uint64_t>& cookies, std::string_view what) {
  // union bpf_attr is larger than the part we fill; the kernel wants the rest zeroed.
  alignas(8) unsigned char attr[sizeof(union bpf_attr) > 128 ? sizeof(union bpf_attr) : 128] = {};
  LinkCreateUprobeMulti a{};
  a.prog_fd = static_cast<uint32_t>(prog_fd);
  a.attach_type = attach_type;
  a.path = reinterpret_cast<uint64_t>(path.c_str());
  a.offsets = reinterpret_cast<uint64_t>(offsets.data());
  a.cookies = reinterpret_cast<uint64_t>(cookies.data());
  a.cnt = static_cast<uint32_t>(offsets.size());
  a.multi_flags = multi_flags;
  std::memcpy(attr, &a, sizeof(a));
  const long fd = syscall(__NR_bpf, BPF_LINK_CREATE, attr, sizeof(union bpf_attr));
  if (fd < 0) return errno_error(std::string(what) + " probes on " + path, errno);
  return static_cast<int>(fd);
}

}  // namespace

namespace {

// What the running kernel's BTF says about uprobe links. Read once per process: loading and
// parsing vmlinux BTF costs ~8 ms, and trace's start-up and check ask both questions.
struct UprobeLinks {
  bool multi = false;
  bool session = false;
};

UprobeLinks read_uprobe_links() {
  UprobeLinks u;
  btf* vmlinux = btf__load_vmlinux_btf();
  if (!vmlinux) return u;
  u.multi = btf__find_by_name_kind(vmlinux, "bpf_uprobe_multi_link", BTF_KIND_STRUCT) > 0;
  bool attach_type = false;
  const int id = btf__find_by_name_kind(vmlinux, "bpf_attach_type", BTF_KIND_ENUM);
  if (const btf_type* t = id > 0 ? btf__type_by_id(vmlinux, static_cast<uint32_t>(id)) : nullptr) {
    const struct btf_enum* e = btf_enum(t);
    for (uint16_t i = 0; i < btf_vlen(t) && !attach_type; ++i)
      attach_type = std::string_view(btf__name_by_offset(vmlinux, e[i].name_off)) ==
                        "BPF_TRACE_UPROBE_SESSION" &&
                    static_cast<uint32_t>(e[i].val) == kAttachUprobeSession;
  }
  // The kprobe sessions of 6.10 brought the kfunc; the attach type is what says uprobes have them.
  const bool kfunc = btf__find_by_name_kind(vmlinux, "bpf_session_is_return", BTF_KIND_FUNC) > 0;
  u.session = attach_type && kfunc;
  btf__free(vmlinux);
  return u;
}

const UprobeLinks& uprobe_links() {
  static const UprobeLinks u = read_uprobe_links();
  return u;
}

}  // namespace

bool kernel_has_uprobe_multi() { return uprobe_links().multi; }

bool kernel_has_uprobe_session() { return uprobe_links().session; }

Result<int> attach_uprobe_multi(int prog_fd, const std::string& path,
                                const std::vector<uint64_t>& offsets,
                                const std::vector<uint64_t>& cookies, bool ret) {
  return create_link(prog_fd, kAttachUprobeMulti, ret ? 1u : 0u, path, offsets, cookies,
                     ret ? "return" : "entry");
}

Result<int> attach_uprobe_session(int prog_fd, const std::string& path,
                                  const std::vector<uint64_t>& offsets,
                                  const std::vector<uint64_t>& cookies) {
  return create_link(prog_fd, kAttachUprobeSession, 0, path, offsets, cookies, "session");
}

}  // namespace gpuwhy::probes
