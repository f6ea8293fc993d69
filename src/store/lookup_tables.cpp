// SPDX-License-Identifier: Apache-2.0
#include "store/lookup_tables.hpp"

#include <utility>

#include "catalog/api_catalog.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::store {
namespace {

// copy_kinds.name for each CopyDir value (cudaMemcpyKind, which HIP shares).
constexpr std::pair<CopyDir, std::string_view> kCopyKinds[] = {
    {CopyDir::HostToHost, "host_to_host"},
    {CopyDir::HostToDevice, "host_to_device"},
    {CopyDir::DeviceToHost, "device_to_host"},
    {CopyDir::DeviceToDevice, "device_to_device"},
    {CopyDir::Default, "default"},
};

}  // namespace

Status fill_lookup_tables(sqlite3* db) {
  auto apis = Stmt::prepare(db, "INSERT INTO apis(id, name, family, category) VALUES (?,?,?,?)",
                            "preparing apis");
  if (!apis) return apis.error();
  for (const ApiInfo& a : api_catalog()) {
    apis->i64(1, a.id);
    apis->text(2, a.name);
    apis->text(3, family_name(a.family));
    apis->text(4, category_name(a.category));
    if (apis->run() != SQLITE_DONE) return sqlite_error(db, "writing apis");
  }

  auto kinds =
      Stmt::prepare(db, "INSERT INTO copy_kinds(id, name) VALUES (?,?)", "preparing copy_kinds");
  if (!kinds) return kinds.error();
  for (const auto& [dir, name] : kCopyKinds) {
    kinds->i64(1, static_cast<int>(dir));
    kinds->text(2, name);
    if (kinds->run() != SQLITE_DONE) return sqlite_error(db, "writing copy_kinds");
  }

  auto sys = Stmt::prepare(db, "INSERT INTO syscall_names(nr, name) VALUES (?,?)",
                           "preparing syscall_names");
  if (!sys) return sys.error();
#if defined(__x86_64__)
  // The numbers are the traced host's ABI; the BPF programs are built for x86-64 only today.
  for (const SyscallName& s : x86_64_syscall_names()) {
    sys->i64(1, s.nr);
    sys->text(2, s.name);
    if (sys->run() != SQLITE_DONE) return sqlite_error(db, "writing syscall_names");
  }
#endif
  return {};
}

}  // namespace gpuwhy::store
