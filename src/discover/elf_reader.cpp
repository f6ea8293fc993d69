// SPDX-License-Identifier: Apache-2.0
// ELF reading through libelf: SONAME, GNU build-id, defined dynamic symbols with their GNU symbol
// versions, and the PT_LOAD map that turns a symbol address into the file offset a uprobe takes.
// Files come from other people's processes and containers, so every count, index and string
// offset is checked: a corrupt or truncated file gives an Error, never a crash.
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "discover/discover.hpp"

namespace gpuwhy::discover {
namespace {

// NT_GNU_BUILD_ID and its owner, spelled out so the code does not depend on <elf.h> extras.
constexpr uint32_t kNtGnuBuildId = 3;
// Bits of a .gnu.version entry: the low 15 index the version; the top one marks it hidden ('@').
constexpr uint16_t kVersymHidden = 0x8000;
constexpr uint16_t kVersymIndexMask = 0x7fff;
// A .gnu.version_d chain longer than this is corrupt (real libraries define a few dozen).
constexpr size_t kMaxVerdefs = 1 << 16;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

class ElfHandle {
 public:
  explicit ElfHandle(Elf* e) : e_(e) {}
  ~ElfHandle() {
    if (e_ != nullptr) elf_end(e_);
  }
  ElfHandle(const ElfHandle&) = delete;
  ElfHandle& operator=(const ElfHandle&) = delete;
  Elf* get() const { return e_; }

 private:
  Elf* e_;
};

Error elf_error(const std::string& path, const std::string& what) {
  return Error{path + ": " + what + " (" + elf_errmsg(-1) + ")",
               "the file is not a valid ELF shared library (truncated or corrupt?)"};
}

std::string hex(const uint8_t* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 0xf]);
  }
  return s;
}

// A NUL-terminated string inside a string table; empty when the offset is out of range
// (elf_strptr checks the bounds and the terminator).
std::string str_at(Elf* e, size_t strtab, size_t offset) {
  const char* s = elf_strptr(e, strtab, offset);
  return s != nullptr ? std::string(s) : std::string();
}

// The GNU build-id in a note data block, or "" when it holds none.
std::string build_id_in(const Elf_Data* data) {
  if (data == nullptr || data->d_buf == nullptr) return {};
  size_t offset = 0;
  GElf_Nhdr nhdr;
  size_t name_off = 0, desc_off = 0;
  while (offset < data->d_size) {
    const size_t next =
        gelf_getnote(const_cast<Elf_Data*>(data), offset, &nhdr, &name_off, &desc_off);
    if (next == 0 || next <= offset) break;  // malformed note: stop rather than loop
    const auto* base = static_cast<const uint8_t*>(data->d_buf);
    if (nhdr.n_type == kNtGnuBuildId && nhdr.n_namesz == 4 && nhdr.n_descsz > 0 &&
        std::string_view(reinterpret_cast<const char*>(base + name_off), 4) ==
            std::string_view("GNU\0", 4)) {
      return hex(base + desc_off, nhdr.n_descsz);
    }
    offset = next;
  }
  return {};
}

struct Sections {
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* symtab = nullptr;
  Elf_Scn* versym = nullptr;
  Elf_Scn* verdef = nullptr;
  Elf_Scn* dynamic = nullptr;
  std::vector<Elf_Scn*> notes;
};

Result<Sections> find_sections(Elf* e, const std::string& path) {
  Sections s;
  size_t shnum = 0;
  if (elf_getshdrnum(e, &shnum) != 0) return elf_error(path, "cannot read section headers");
  Elf_Scn* scn = nullptr;
  size_t seen = 0;
  while ((scn = elf_nextscn(e, scn)) != nullptr && seen++ < shnum) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) return elf_error(path, "bad section header");
    switch (shdr.sh_type) {
      case SHT_DYNSYM: s.dynsym = scn; break;
      case SHT_SYMTAB: s.symtab = scn; break;
      case SHT_GNU_versym: s.versym = scn; break;
      case SHT_GNU_verdef: s.verdef = scn; break;
      case SHT_DYNAMIC: s.dynamic = scn; break;
      case SHT_NOTE: s.notes.push_back(scn); break;
      default: break;
    }
  }
  return s;
}

Status read_segments(Elf* e, const std::string& path, ElfInfo& info) {
  size_t phnum = 0;
  if (elf_getphdrnum(e, &phnum) != 0) return elf_error(path, "cannot read program headers");
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(e, static_cast<int>(i), &ph) == nullptr) {
      return elf_error(path, "bad program header");
    }
    if (ph.p_type == PT_LOAD) {
      info.load_segments.push_back(
          {ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz, (ph.p_flags & PF_X) != 0});
    } else if (ph.p_type == PT_NOTE && info.build_id.empty()) {
      // Program-header notes survive section-header stripping; 8-aligned notes use the wider
      // header layout.
      const Elf_Type type = ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
      info.build_id = build_id_in(elf_getdata_rawchunk(e, ph.p_offset, ph.p_filesz, type));
    }
  }
  return {};
}

std::string read_soname(Elf* e, Elf_Scn* dynamic) {
  GElf_Shdr shdr;
  if (dynamic == nullptr || gelf_getshdr(dynamic, &shdr) == nullptr) return {};
  Elf_Data* data = elf_getdata(dynamic, nullptr);
  const size_t entsize = gelf_fsize(e, ELF_T_DYN, 1, EV_CURRENT);
  if (data == nullptr || entsize == 0) return {};
  for (size_t i = 0; i < data->d_size / entsize; ++i) {
    GElf_Dyn dyn;
    if (gelf_getdyn(data, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL) break;
    if (dyn.d_tag == DT_SONAME) return str_at(e, shdr.sh_link, dyn.d_un.d_val);
  }
  return {};
}

// Version index -> name, from .gnu.version_d (the versions this file defines).
std::unordered_map<uint16_t, std::string> read_verdefs(Elf* e, Elf_Scn* verdef) {
  std::unordered_map<uint16_t, std::string> names;
  GElf_Shdr shdr;
  if (verdef == nullptr || gelf_getshdr(verdef, &shdr) == nullptr) return names;
  Elf_Data* data = elf_getdata(verdef, nullptr);
  if (data == nullptr) return names;
  size_t offset = 0;
  for (size_t n = 0; n < kMaxVerdefs; ++n) {
    GElf_Verdef vd;
    if (gelf_getverdef(data, static_cast<int>(offset), &vd) == nullptr) break;
    GElf_Verdaux aux;
    if (vd.vd_cnt > 0 && offset + vd.vd_aux <= std::numeric_limits<int>::max() &&
        gelf_getverdaux(data, static_cast<int>(offset + vd.vd_aux), &aux) != nullptr) {
      names[vd.vd_ndx] = str_at(e, shdr.sh_link, aux.vda_name);
    }
    if (vd.vd_next == 0 || offset + vd.vd_next > std::numeric_limits<int>::max()) break;
    offset += vd.vd_next;
  }
  return names;
}

Status read_symbols(Elf* e, const std::string& path, const Sections& s, ElfInfo& info) {
  if (s.dynsym == nullptr) {
    return Error{path + ": no dynamic symbol table",
                 "not a shared library, or its section headers were stripped"};
  }
  GElf_Shdr shdr;
  if (gelf_getshdr(s.dynsym, &shdr) == nullptr) return elf_error(path, "bad .dynsym header");
  Elf_Data* syms = elf_getdata(s.dynsym, nullptr);
  if (syms == nullptr) return elf_error(path, "cannot read .dynsym");
  // Never divide by the file's own sh_entsize: a corrupt 0 would crash us.
  const size_t symsize = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
  if (symsize == 0) return elf_error(path, "unknown ELF class");
  const size_t count = syms->d_size / symsize;

  Elf_Data* versyms = s.versym != nullptr ? elf_getdata(s.versym, nullptr) : nullptr;
  const auto verdefs = read_verdefs(e, s.verdef);

  info.dynamic_symbols.reserve(count);
  for (size_t i = 1; i < count; ++i) {  // entry 0 is the reserved null symbol
    GElf_Sym sym;
    if (gelf_getsym(syms, static_cast<int>(i), &sym) == nullptr) break;
    if (sym.st_shndx == SHN_UNDEF) continue;
    ElfSymbol out;
    out.name = str_at(e, shdr.sh_link, sym.st_name);
    if (out.name.empty()) continue;
    out.vaddr = sym.st_value;
    out.size = sym.st_size;
    // STT_GNU_IFUNC is left out on purpose: its address is the resolver, which runs once at
    // load time, so a probe there would never see the calls.
    out.is_function = GELF_ST_TYPE(sym.st_info) == STT_FUNC;
    out.is_weak = GELF_ST_BIND(sym.st_info) == STB_WEAK;
    GElf_Versym vs = 0;
    if (versyms != nullptr && gelf_getversym(versyms, static_cast<int>(i), &vs) != nullptr) {
      const uint16_t index = vs & kVersymIndexMask;
      out.default_version = (vs & kVersymHidden) == 0;
      // 0 = local, 1 = global: unversioned. Higher indexes name a version this file defines.
      if (index > 1) {
        const auto it = verdefs.find(index);
        if (it != verdefs.end()) out.version = it->second;
      }
    }
    if (GELF_ST_TYPE(sym.st_info) != STT_TLS && sym.st_shndx != SHN_ABS) {
      out.file_offset = file_offset_of(info.load_segments, sym.st_value).value_or(0);
    }
    info.dynamic_symbols.push_back(std::move(out));
  }
  return {};
}

// The defined functions of .symtab, for symbolizing addresses: name, address and size.
void read_symtab_functions(Elf* e, Elf_Scn* symtab, ElfInfo& info) {
  GElf_Shdr shdr;
  if (symtab == nullptr || gelf_getshdr(symtab, &shdr) == nullptr) return;
  Elf_Data* syms = elf_getdata(symtab, nullptr);
  const size_t symsize = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
  if (syms == nullptr || symsize == 0) return;
  const size_t count = syms->d_size / symsize;
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(syms, static_cast<int>(i), &sym) == nullptr) break;
    if (sym.st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
    ElfSymbol out;
    out.name = str_at(e, shdr.sh_link, sym.st_name);
    if (out.name.empty()) continue;
    out.vaddr = sym.st_value;
    out.size = sym.st_size;
    out.is_function = true;
    info.symtab_functions.push_back(std::move(out));
  }
}

}  // namespace

std::optional<uint64_t> file_offset_of(const std::vector<LoadSegment>& segments, uint64_t vaddr) {
  for (const auto& seg : segments) {
    // Only the file-backed part: the rest of mem_size is zero-filled .bss with no file offset.
    if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.file_size) {
      return vaddr - seg.vaddr + seg.file_offset;
    }
  }
  return std::nullopt;
}

Result<ElfInfo> read_elf(const std::string& path, ElfRead what) {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });

  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return errno_error("cannot open " + path);
  // ELF_C_READ, not ELF_C_READ_MMAP: reading through pread turns a file truncated under us into
  // an error instead of a SIGBUS, and only the sections we ask for are read (libnccl is 200 MB).
  ElfHandle elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
  if (elf.get() == nullptr) return elf_error(path, "not an ELF file");
  if (elf_kind(elf.get()) != ELF_K_ELF) {
    return Error{path + ": not an ELF file", "give the path of a shared library"};
  }
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf.get(), &ehdr) == nullptr) return elf_error(path, "bad ELF header");

  ElfInfo info;
  info.machine = ehdr.e_machine;
  if (auto st = read_segments(elf.get(), path, info); !st) return st.error();
  auto sections = find_sections(elf.get(), path);
  if (!sections) return sections.error();
  if (info.build_id.empty()) {
    for (Elf_Scn* scn : sections->notes) {
      info.build_id = build_id_in(elf_getdata(scn, nullptr));
      if (!info.build_id.empty()) break;
    }
  }
  info.soname = read_soname(elf.get(), sections->dynamic);
  if (what == ElfRead::WithSymtab) {
    read_symtab_functions(elf.get(), sections->symtab, info);
    if (sections->dynsym == nullptr) return info;  // an executable: its .symtab is enough
  }
  if (auto st = read_symbols(elf.get(), path, *sections, info); !st) return st.error();
  return info;
}

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t offset, size_t len) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return errno_error("cannot open " + path);
  std::vector<uint8_t> buf(len);
  size_t got = 0;
  while (got < len) {
    const ssize_t n =
        ::pread(fd.get(), buf.data() + got, len - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error("cannot read " + path);
    if (n == 0) break;  // end of file
    got += static_cast<size_t>(n);
  }
  buf.resize(got);
  return buf;
}

}  // namespace gpuwhy::discover
