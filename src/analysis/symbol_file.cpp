#include "analysis/symbol_file.hpp"

#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "base/errno_error.hpp"
#include "base/hex.hpp"
#include "elf/notes.hpp"

namespace cudatool {
namespace {

constexpr uint64_t kEhdrSize = 64, kPhdrSize = 56, kShdrSize = 64, kSymSize = 24;
// Notes stay at their file offset when it is this close to where they would go anyway.
constexpr uint64_t kMaxNotePadding = 64 * 1024;

struct OutSection {
  std::string_view name;
  uint32_t type = SHT_NOBITS;
  uint64_t flags = 0, addr = 0, offset = 0, size = 0, align = 1, entsize = 0;
  uint32_t link = 0, info = 0;
  ByteView data{};                     // bytes to copy (notes)
  const std::string* owned = nullptr;  // bytes built here (.symtab, .strtab, .shstrtab)
  uint32_t name_off = 0;
  bool kept_offset = false;  // a note placed at its original offset
  uint64_t orig_offset = 0;
};

struct Sym {
  uint32_t name = 0;
  uint8_t info = 0, other = 0;
  uint16_t shndx = 0;
  uint64_t value = 0, size = 0;
};

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

uint64_t sane_align(uint64_t a) {
  if (a <= 1 || (a & (a - 1)) != 0) return 1;
  return std::min<uint64_t>(a, 64);
}

class Strings {
 public:
  Strings() { s_.push_back('\0'); }
  uint32_t add(std::string_view name) {
    if (auto nul = name.find('\0'); nul != std::string_view::npos) name = name.substr(0, nul);
    if (name.empty()) return 0;
    auto off = static_cast<uint32_t>(s_.size());
    s_.append(name);
    s_.push_back('\0');
    return off;
  }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

// The sections the symbol file copies: the allocated ones, except any named like the tables it
// writes itself (tools find the symbol table by name — perf: the first ".symtab" —, never two).
bool copied(const elf::SectionHeader& s) {
  return s.index != 0 && s.is_alloc() && s.name != ".symtab" && s.name != ".strtab" &&
         s.name != ".shstrtab";
}

// The first GNU build id among the note sections the symbol file copies, or in PT_NOTE segments
// when there are no sections.
std::optional<std::string> first_build_id(const elf::ElfImage& elf) {
  bool any_alloc = false;
  for (const auto& s : elf.sections()) {
    if (!copied(s)) continue;
    any_alloc = true;
    if (s.sh_type != SHT_NOTE || !s.in_file) continue;
    auto b = elf.section_bytes(s);
    if (!b) continue;
    for (const auto& n : elf::read_notes(*b, s.sh_addralign, "", nullptr)) {
      if (n.name == "GNU" && n.type == NT_GNU_BUILD_ID) return to_hex(n.desc);
    }
  }
  if (any_alloc) return std::nullopt;
  for (const auto& p : elf.segments()) {
    if (p.p_type != PT_NOTE || !p.in_file || p.p_filesz == 0) continue;
    auto b = elf.segment_bytes(p);
    if (!b) continue;
    for (const auto& n : elf::read_notes(*b, p.p_align, "", nullptr)) {
      if (n.name == "GNU" && n.type == NT_GNU_BUILD_ID) return to_hex(n.desc);
    }
  }
  return std::nullopt;
}

// The library's build id as a note of our own, when the allocated note sections the symbol file
// copies do not carry it (it sits in a non-allocated note, or a segment only): gdb matches the
// files by it. Empty when no note is needed.
std::string own_build_id_note(const elf::ElfImage& elf,
                              const std::optional<std::string>& build_id) {
  std::string note;
  if (!build_id || first_build_id(elf) == build_id) return note;
  auto id = parse_hex_bytes(*build_id);
  if (!id) return note;
  note.resize(16);
  auto* p = reinterpret_cast<uint8_t*>(note.data());
  store_le<uint32_t>(p, 4);
  store_le<uint32_t>(p + 4, static_cast<uint32_t>(id->size()));
  store_le<uint32_t>(p + 8, NT_GNU_BUILD_ID);
  std::memcpy(note.data() + 12, "GNU", 4);
  note.append(reinterpret_cast<const char*>(id->data()), id->size());
  note.resize(align_up(note.size(), 4), '\0');
  return note;
}

// The sections of the symbol file and where the library's section indices went.
struct SectionPlan {
  std::vector<OutSection> secs = std::vector<OutSection>(1);  // [0] is the null section
  std::vector<uint32_t> new_index;

  // A section reference that still points at a section here, else 0.
  [[nodiscard]] uint32_t remap(uint32_t old) const {
    return old < new_index.size() ? new_index[old] : 0u;
  }
};

void add_own_note(SectionPlan& plan, const std::string& note) {
  if (note.empty()) return;
  OutSection o;
  o.name = ".note.gnu.build-id";
  o.type = SHT_NOTE;
  o.align = 4;
  o.data = ByteView(reinterpret_cast<const uint8_t*>(note.data()), note.size());
  o.size = note.size();
  o.orig_offset = ~uint64_t{0};  // never "kept"
  plan.secs.push_back(o);
}

// Every SHF_ALLOC section at its address.
void copy_alloc_sections(const elf::ElfImage& elf, SectionPlan& plan) {
  plan.new_index.assign(elf.sections().size(), 0);
  for (const auto& s : elf.sections()) {
    if (!copied(s)) continue;
    OutSection o{.name = s.name,
                 .flags = s.sh_flags,
                 .addr = s.sh_addr,
                 .offset = s.sh_offset,
                 .size = s.sh_size,
                 .align = s.sh_addralign,
                 .entsize = s.sh_entsize,
                 .link = s.sh_link,
                 .info = s.sh_info,
                 .orig_offset = s.sh_offset};
    if (s.sh_type == SHT_NOTE && s.in_file) {
      if (auto b = elf.section_bytes(s)) {
        o.type = SHT_NOTE;
        o.data = *b;
      }
    }
    plan.new_index[s.index] = static_cast<uint32_t>(plan.secs.size());
    plan.secs.push_back(o);
  }
}

// No section headers: describe the segments instead, so that symbols have a home.
void sections_from_segments(const elf::ElfImage& elf, SectionPlan& plan) {
  for (const auto& p : elf.segments()) {
    OutSection o;
    if (p.p_type == PT_LOAD) {
      o.name = (p.p_flags & PF_X) != 0 ? ".text" : ".data";
      o.flags = SHF_ALLOC | ((p.p_flags & PF_X) != 0 ? SHF_EXECINSTR : 0) |
                ((p.p_flags & PF_W) != 0 ? SHF_WRITE : 0);
      o.size = p.p_memsz;
    } else if (p.p_type == PT_NOTE && p.in_file && p.p_filesz > 0) {
      auto b = elf.segment_bytes(p);
      if (!b) continue;
      o.type = SHT_NOTE;
      o.data = *b;
      o.size = b->size();
      o.flags = SHF_ALLOC;
      o.name = ".note";
      for (const auto& n : elf::read_notes(*b, p.p_align, "PT_NOTE", nullptr)) {
        if (n.name == "GNU" && n.type == NT_GNU_BUILD_ID) o.name = ".note.gnu.build-id";
      }
    } else {
      continue;
    }
    o.addr = p.p_vaddr;
    o.offset = o.orig_offset = p.p_offset;
    o.align = p.p_align;
    plan.secs.push_back(o);
  }
}

Result<SectionPlan> plan_sections(const elf::ElfImage& elf, const std::string& own_note) {
  SectionPlan plan;
  add_own_note(plan, own_note);
  copy_alloc_sections(elf, plan);
  if (plan.secs.size() == 1) sections_from_segments(elf, plan);
  // Keep section references that still point at a section here; others become 0.
  for (size_t i = 1; i < plan.secs.size(); ++i) {
    plan.secs[i].link = plan.remap(plan.secs[i].link);
    if ((plan.secs[i].flags & SHF_INFO_LINK) != 0)
      plan.secs[i].info = plan.remap(plan.secs[i].info);
  }
  if (plan.secs.size() + 3 >= SHN_LORESERVE) {
    return make_error("symbol file", "e_shnum", std::nullopt,
                      fmt::format("the library has {} allocated sections; a symbol file with "
                                  "that many needs extended section numbering, not supported",
                                  plan.secs.size() - 1));
  }
  return plan;
}

// Address -> section index, for symbols (TLS sections hold offsets, not addresses).
class SectionLookup {
 public:
  explicit SectionLookup(const std::vector<OutSection>& secs) : secs_(secs) {
    for (uint32_t i = 1; i < secs.size(); ++i) {
      if ((secs[i].flags & SHF_TLS) == 0 && secs[i].size > 0)
        by_addr_.emplace_back(secs[i].addr, i);
    }
    std::sort(by_addr_.begin(), by_addr_.end());
  }

  // The section holding address `a`, or 0.
  [[nodiscard]] uint32_t of(uint64_t a) const {
    auto it = std::upper_bound(by_addr_.begin(), by_addr_.end(), std::make_pair(a, ~uint32_t{0}));
    // Sections rarely overlap; look at a few predecessors only, so that hostile layouts
    // cannot make this quadratic.
    for (int step = 0; step < 4 && it != by_addr_.begin(); ++step) {
      --it;
      const OutSection& s = secs_[it->second];
      if (a - s.addr < s.size) return it->second;
    }
    return 0;
  }

 private:
  const std::vector<OutSection>& secs_;
  std::vector<std::pair<uint64_t, uint32_t>> by_addr_;
};

struct SymbolTable {
  Strings strtab;
  std::vector<Sym> syms = std::vector<Sym>(1);
  uint32_t first_global = 0;
};

// Locals: every function under each of its names but the export name, or its derived name.
void add_function_symbols(const FunctionMap& map, const SectionPlan& plan,
                          const SectionLookup& section_of, SymbolTable& t, SymbolFileStats& st) {
  for (const auto& f : map.functions()) {
    uint32_t shndx = section_of.of(f.start);
    if (shndx == 0) {
      ++st.unplaced;
      continue;
    }
    if (is_plt_section_name(plan.secs[shndx].name)) {
      ++st.plt_skipped;
      continue;
    }
    bool exported = false, other = false;
    for (const auto& n : map.names(f)) {
      if (n.source == "export") {
        exported = true;
        continue;
      }
      uint32_t name = t.strtab.add(n.name);
      if (name == 0) continue;
      t.syms.push_back({.name = name,
                        .info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC),
                        .other = STV_DEFAULT,
                        .shndx = static_cast<uint16_t>(shndx),
                        .value = f.start,
                        .size = f.size});
      ++st.other_names;
      other = true;
    }
    if (!exported && !other) {
      t.syms.push_back({.name = t.strtab.add(FunctionMap::derived_name(f.start)),
                        .info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC),
                        .other = STV_DEFAULT,
                        .shndx = static_cast<uint16_t>(shndx),
                        .value = f.start,
                        .size = f.size});
      ++st.derived;
    }
  }
}

// Globals: the exports, in the section their own header names when it is copied.
void add_export_symbols(DriverImage& img, const SectionPlan& plan, const SectionLookup& section_of,
                        SymbolTable& t, SymbolFileStats& st) {
  t.first_global = static_cast<uint32_t>(t.syms.size());
  for (const auto& e : img.exports()) {
    const elf::Symbol& s = e.sym;
    uint16_t shndx = 0;
    if (s.st_shndx == SHN_ABS) {
      shndx = SHN_ABS;
    } else if (s.st_shndx < SHN_LORESERVE && plan.remap(s.st_shndx) != 0) {
      shndx = static_cast<uint16_t>(plan.remap(s.st_shndx));
    } else if (uint32_t by = section_of.of(s.st_value); by != 0 && s.type() != STT_TLS) {
      shndx = static_cast<uint16_t>(by);
    }
    uint32_t name = t.strtab.add(s.name);
    if (shndx == 0 || name == 0) {
      ++st.unplaced;
      continue;
    }
    t.syms.push_back({.name = name,
                      .info = s.st_info,
                      .other = s.st_other,
                      .shndx = shndx,
                      .value = s.st_value,
                      .size = s.st_size});
    ++st.exported;
  }
}

std::string encode_symbols(const std::vector<Sym>& syms) {
  std::string symtab(syms.size() * kSymSize, '\0');
  for (size_t i = 0; i < syms.size(); ++i) {
    auto* p = reinterpret_cast<uint8_t*>(symtab.data() + i * kSymSize);
    store_le<uint32_t>(p, syms[i].name);
    p[4] = syms[i].info;
    p[5] = syms[i].other;
    store_le<uint16_t>(p + 6, syms[i].shndx);
    store_le<uint64_t>(p + 8, syms[i].value);
    store_le<uint64_t>(p + 16, syms[i].size);
  }
  return symtab;
}

// Appends .symtab, .strtab and .shstrtab (names every section into `shstr`); returns the index
// of .shstrtab.
uint16_t add_table_sections(std::vector<OutSection>& secs, const std::string& symtab,
                            const SymbolTable& t, Strings& shstr) {
  const auto symtab_index = static_cast<uint32_t>(secs.size());
  secs.push_back(OutSection{.name = ".symtab",
                            .type = SHT_SYMTAB,
                            .align = 8,
                            .entsize = kSymSize,
                            .link = symtab_index + 1,
                            .info = t.first_global,
                            .owned = &symtab});
  secs.push_back(OutSection{.name = ".strtab", .type = SHT_STRTAB, .owned = &t.strtab.str()});
  secs.push_back(OutSection{.name = ".shstrtab", .type = SHT_STRTAB});
  for (auto& s : secs) s.name_off = shstr.add(s.name);
  secs.back().owned = &shstr.str();
  return static_cast<uint16_t>(secs.size() - 1);
}

// Layout: header, program headers, notes (at their own offsets when possible), tables.
// Returns the offset of the section headers.
uint64_t lay_out(std::vector<OutSection>& secs, uint64_t phnum) {
  uint64_t cur = kEhdrSize + phnum * kPhdrSize;
  for (auto& s : secs) {
    if (s.type == SHT_NOTE) {
      uint64_t a = sane_align(s.align);
      if (s.orig_offset >= cur && s.orig_offset - cur <= kMaxNotePadding &&
          s.orig_offset % a == 0) {
        s.offset = s.orig_offset;
        s.kept_offset = true;
      } else {
        s.offset = align_up(cur, a);
      }
      s.size = s.data.size();
      cur = s.offset + s.size;
    } else if (s.owned != nullptr) {
      s.offset = align_up(cur, sane_align(s.align));
      s.size = s.owned->size();
      cur = s.offset + s.size;
    }
  }
  return align_up(cur, 8);
}

// ELF header: the library's identity, our tables.
void write_elf_header(uint8_t* p, const elf::ElfImage& elf, uint64_t phnum, uint64_t shoff,
                      size_t shnum, uint16_t shstrndx) {
  const auto& h = elf.header();
  std::memcpy(p, elf.file().data(), EI_NIDENT);
  store_le<uint16_t>(p + 16, h.e_type);
  store_le<uint16_t>(p + 18, h.e_machine);
  store_le<uint32_t>(p + 20, h.e_version);
  store_le<uint64_t>(p + 24, h.e_entry);
  store_le<uint64_t>(p + 32, phnum > 0 ? kEhdrSize : 0);
  store_le<uint64_t>(p + 40, shoff);
  store_le<uint32_t>(p + 48, h.e_flags);
  store_le<uint16_t>(p + 52, kEhdrSize);
  store_le<uint16_t>(p + 54, phnum > 0 ? kPhdrSize : 0);
  store_le<uint16_t>(p + 56, static_cast<uint16_t>(phnum));
  store_le<uint16_t>(p + 58, kShdrSize);
  store_le<uint16_t>(p + 60, static_cast<uint16_t>(shnum));
  store_le<uint16_t>(p + 62, shstrndx);
}

// How many file bytes a program header keeps: the program header table itself and the notes
// that kept their offsets; nothing else.
uint64_t kept_filesz(const elf::ProgramHeader& ph, uint64_t phnum,
                     const std::vector<OutSection>& secs, uint64_t total) {
  uint64_t filesz = 0;
  if (ph.p_type == PT_PHDR && ph.p_offset == kEhdrSize && ph.p_filesz == phnum * kPhdrSize) {
    filesz = ph.p_filesz;
  } else if (ph.p_type == PT_LOAD) {
    // Still holds the notes that kept their offsets (as objcopy --only-keep-debug does).
    for (const auto& s : secs) {
      if (s.type != SHT_NOTE || !s.kept_offset || s.offset < ph.p_offset) continue;
      uint64_t end = s.offset + s.size - ph.p_offset;
      if (end <= ph.p_filesz) filesz = std::max(filesz, end);
    }
  } else if (ph.p_type == PT_NOTE) {
    bool all_kept = ph.p_filesz > 0;
    for (const auto& s : secs) {
      if (s.type != SHT_NOTE) continue;
      bool inside = s.orig_offset >= ph.p_offset && s.orig_offset - ph.p_offset < ph.p_filesz;
      if (inside && !s.kept_offset) all_kept = false;
    }
    if (all_kept && ph.p_offset <= total && ph.p_filesz <= total - ph.p_offset)
      filesz = ph.p_filesz;
  }
  return filesz;
}

// Program headers: as in the library, without file bytes but those kept_filesz keeps.
void write_program_headers(uint8_t* p, const elf::ElfImage& elf, uint64_t phnum,
                           const std::vector<OutSection>& secs, uint64_t total) {
  const auto& segs = elf.segments();
  for (uint64_t i = 0; i < phnum; ++i) {
    const auto& ph = segs[i];
    uint64_t filesz = kept_filesz(ph, phnum, secs, total);
    // LOAD segments keep their offsets: perf places symbols with p_vaddr - p_offset. Others
    // without file bytes point inside the file, where readers expect an offset to be.
    uint64_t offset = ph.p_offset;
    if (ph.p_type != PT_LOAD && filesz == 0) offset = std::min(offset, total);
    uint8_t* q = p + kEhdrSize + i * kPhdrSize;
    store_le<uint32_t>(q, ph.p_type);
    store_le<uint32_t>(q + 4, ph.p_flags);
    store_le<uint64_t>(q + 8, offset);
    store_le<uint64_t>(q + 16, ph.p_vaddr);
    store_le<uint64_t>(q + 24, ph.p_paddr);
    store_le<uint64_t>(q + 32, filesz);
    store_le<uint64_t>(q + 40, ph.p_memsz);
    store_le<uint64_t>(q + 48, ph.p_align);
  }
}

// Section contents (notes and our tables) and the section headers.
void write_sections(uint8_t* p, const std::vector<OutSection>& secs, uint64_t shoff) {
  for (size_t i = 0; i < secs.size(); ++i) {
    const OutSection& s = secs[i];
    if (s.type == SHT_NOTE && !s.data.empty()) {
      std::memcpy(p + s.offset, s.data.data(), s.data.size());
    } else if (s.owned != nullptr && !s.owned->empty()) {
      std::memcpy(p + s.offset, s.owned->data(), s.owned->size());
    }
    if (i == 0) continue;
    uint8_t* q = p + shoff + i * kShdrSize;
    store_le<uint32_t>(q, s.name_off);
    store_le<uint32_t>(q + 4, s.type);
    store_le<uint64_t>(q + 8, s.flags);
    store_le<uint64_t>(q + 16, s.addr);
    store_le<uint64_t>(q + 24, s.offset);
    store_le<uint64_t>(q + 32, s.size);
    store_le<uint32_t>(q + 40, s.link);
    store_le<uint32_t>(q + 44, s.info);
    store_le<uint64_t>(q + 48, s.align);
    store_le<uint64_t>(q + 56, s.entsize);
  }
}

}  // namespace

std::string build_id_debug_path(std::string_view id) {
  if (id.size() < 3) return fmt::format(".build-id/{}.debug", id);
  return fmt::format(".build-id/{}/{}.debug", id.substr(0, 2), id.substr(2));
}

Result<std::vector<uint8_t>> build_symbol_file(DriverImage& img, const FunctionMap& map,
                                               SymbolFileStats* stats) {
  const elf::ElfImage& elf = img.elf();
  SymbolFileStats st;
  st.build_id = img.build_id();

  const std::string own_note = own_build_id_note(elf, st.build_id);
  auto planned = plan_sections(elf, own_note);
  if (!planned) return planned.error();
  SectionPlan& plan = *planned;

  // Symbols: locals (functions without an export name), then globals (the exports).
  SymbolTable table;
  {
    const SectionLookup section_of(plan.secs);
    add_function_symbols(map, plan, section_of, table, st);
    add_export_symbols(img, plan, section_of, table, st);
  }
  st.symbols = table.syms.size() - 1;
  const std::string symtab = encode_symbols(table.syms);
  Strings shstr;
  const uint16_t shstrndx = add_table_sections(plan.secs, symtab, table, shstr);

  const auto& segs = elf.segments();
  const uint64_t phnum = segs.size() < PN_XNUM ? segs.size() : 0;
  const uint64_t shoff = lay_out(plan.secs, phnum);
  const uint64_t total = shoff + plan.secs.size() * kShdrSize;
  std::vector<uint8_t> out(total, 0);
  write_elf_header(out.data(), elf, phnum, shoff, plan.secs.size(), shstrndx);
  write_program_headers(out.data(), elf, phnum, plan.secs, total);
  write_sections(out.data(), plan.secs, shoff);
  st.sections = plan.secs.size();
  if (stats != nullptr) *stats = st;
  return out;
}

Status write_file_atomic(const std::string& path, std::span<const uint8_t> bytes, bool make_dirs) {
  namespace fs = std::filesystem;
  fs::path target(path);
  if (make_dirs && target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
      return make_error(target.parent_path().string(), "", std::nullopt,
                        fmt::format("cannot create directory: {}", ec.message()));
    }
  }
  std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return errno_error(path, "cannot create", errno);
  }
  const uint8_t* d = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t w = ::write(fd, d, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return errno_error(path, "cannot write", err);
    }
    d += w;
    left -= static_cast<size_t>(w);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return errno_error(path, "cannot write", err);
  }
  return Status::success();
}

bool link_file_atomic(const std::string& existing, const std::string& path) {
  std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  ::unlink(tmp.c_str());
  if (::link(existing.c_str(), tmp.c_str()) != 0) return false;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace cudatool
