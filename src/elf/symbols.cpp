#include "elf/symbols.hpp"

#include <fmt/format.h>

namespace cudatool::elf {
namespace {

constexpr uint64_t kSymSize = 24;
constexpr uint16_t kVersymHidden = 0x8000;
constexpr uint16_t kVersymIndexMask = 0x7fff;
// A version index is 15 bits; no file may define more slots than that.
constexpr uint32_t kMaxVersionIndex = 0x7fff;

}  // namespace

std::string symbol_type_name(uint8_t t) {
  switch (t) {
    case STT_NOTYPE:
      return "NOTYPE";
    case STT_OBJECT:
      return "OBJECT";
    case STT_FUNC:
      return "FUNC";
    case STT_SECTION:
      return "SECTION";
    case STT_FILE:
      return "FILE";
    case STT_COMMON:
      return "COMMON";
    case STT_TLS:
      return "TLS";
    case STT_GNU_IFUNC:
      return "IFUNC";
    default:
      return fmt::format("{:#x}?", t);
  }
}

std::string symbol_binding_name(uint8_t b) {
  switch (b) {
    case STB_LOCAL:
      return "LOCAL";
    case STB_GLOBAL:
      return "GLOBAL";
    case STB_WEAK:
      return "WEAK";
    case STB_GNU_UNIQUE:
      return "UNIQUE";
    default:
      return fmt::format("{:#x}?", b);
  }
}

std::string symbol_visibility_name(uint8_t v) {
  switch (v) {
    case STV_DEFAULT:
      return "DEFAULT";
    case STV_INTERNAL:
      return "INTERNAL";
    case STV_HIDDEN:
      return "HIDDEN";
    case STV_PROTECTED:
      return "PROTECTED";
    default:
      return fmt::format("{:#x}?", v);
  }
}

Result<std::vector<Symbol>> read_symbols(const ElfImage& elf, const SectionHeader& symtab,
                                         Diagnostics* diag) {
  auto bytes_or_err = elf.section_bytes(symtab);
  if (!bytes_or_err) return bytes_or_err.error();
  ByteView bytes = *bytes_or_err;
  if (symtab.sh_entsize != 0 && symtab.sh_entsize != kSymSize) {
    return make_error(describe(symtab), "sh_entsize", std::nullopt,
                      fmt::format("{} (ELF64 symbols are 24 bytes)", symtab.sh_entsize));
  }
  const SectionHeader* strtab = elf.section_at(symtab.sh_link);
  if (strtab == nullptr || strtab->sh_type != SHT_STRTAB) {
    return make_error(describe(symtab), "sh_link", std::nullopt,
                      fmt::format("{} does not name a string table", symtab.sh_link));
  }
  auto strs_or_err = elf.section_bytes(*strtab);
  if (!strs_or_err) return strs_or_err.error();
  ByteView strs = *strs_or_err;

  uint64_t count = bytes.size() / kSymSize;  // a trailing partial record is ignored, and said so
  if (bytes.size() % kSymSize != 0 && diag != nullptr) {
    diag->report(make_error(describe(symtab), "sh_size", symtab.sh_offset,
                            fmt::format("{:#x} is not a multiple of 24; last {} bytes ignored",
                                        symtab.sh_size, bytes.size() % kSymSize)));
  }
  std::vector<Symbol> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* p = bytes.data() + i * kSymSize;
    Symbol s;
    s.index = static_cast<uint32_t>(i);
    s.st_name = load_le<uint32_t>(p);
    s.st_info = p[4];
    s.st_other = p[5];
    s.st_shndx = load_le<uint16_t>(p + 6);
    s.st_value = load_le<uint64_t>(p + 8);
    s.st_size = load_le<uint64_t>(p + 16);
    if (s.st_name != 0) {
      auto n = strs.cstring(s.st_name);
      if (n) {
        s.name = *n;
      } else if (diag != nullptr) {
        diag->report(make_error(fmt::format("{} symbol [{}]", symtab.name, i), "st_name",
                                bytes.base() + i * kSymSize,
                                fmt::format("name offset {:#x} is outside {} (size {:#x}) or "
                                            "unterminated",
                                            s.st_name, strtab->name, strtab->sh_size)));
      }
    }
    out.push_back(s);
  }
  return out;
}

Result<std::vector<Symbol>> read_dynamic_symbols(const ElfImage& elf, Diagnostics* diag) {
  const SectionHeader* dynsym = elf.section_of_type(SHT_DYNSYM);
  if (dynsym == nullptr) return std::vector<Symbol>{};
  return read_symbols(elf, *dynsym, diag);
}

namespace {

// .gnu.version_r: a chain of Elf64_Verneed {vn_version u16, vn_cnt u16, vn_file u32,
// vn_aux u32, vn_next u32}, each with a chain of Elf64_Vernaux {vna_hash u32, vna_flags u16,
// vna_other u16, vna_name u32, vna_next u32}. Offsets are relative to each record.
Status read_verneed(const ElfImage& elf, Diagnostics* diag,
                    std::vector<SymbolVersions::Need>& out) {
  const SectionHeader* vr = elf.section_of_type(SHT_GNU_verneed);
  if (vr == nullptr) return Status::success();
  auto report = [&](Error e) {
    if (diag != nullptr) diag->report(std::move(e));
  };
  auto b = elf.section_bytes(*vr);
  if (!b) return b.error();
  const SectionHeader* strtab = elf.section_at(vr->sh_link);
  auto strs = strtab != nullptr ? elf.section_bytes(*strtab) : Result<ByteView>(ByteView());
  if (!strs) return strs.error();
  uint64_t off = 0;
  // Each record is at least 16 bytes, which bounds the walk even if vn_next loops.
  for (uint64_t n = 0; n <= b->size() / 16; ++n) {
    Cursor c(*b, off);
    c.skip(2);
    uint16_t cnt = c.u16();
    uint32_t file = c.u32();
    uint32_t aux = c.u32();
    uint32_t next = c.u32();
    if (!c.ok()) {
      report(make_error(fmt::format("{} entry #{}", vr->name, n), "", b->base() + off,
                        "record runs past the end of the section"));
      break;
    }
    SymbolVersions::Need need;
    if (auto f = strs->cstring(file)) need.file = *f;
    uint64_t aoff = off + aux;
    for (uint32_t k = 0; k < cnt && k <= b->size() / 16; ++k) {
      Cursor a(*b, aoff);
      SymbolVersions::Need::Aux x;
      x.hash = a.u32();
      x.flags = a.u16();
      x.other = a.u16();
      uint32_t name = a.u32();
      uint32_t anext = a.u32();
      if (!a.ok()) {
        report(make_error(fmt::format("{} entry #{} aux #{}", vr->name, n, k), "", b->base() + aoff,
                          "record runs past the end of the section"));
        break;
      }
      if (auto s = strs->cstring(name)) x.name = *s;
      need.versions.push_back(x);
      if (anext == 0) break;
      aoff += anext;
    }
    out.push_back(std::move(need));
    if (next == 0) break;
    off += next;
  }
  return Status::success();
}

// .gnu.version_d: Elf64_Verdef {vd_version u16, vd_flags u16, vd_ndx u16, vd_cnt u16,
// vd_hash u32, vd_aux u32, vd_next u32}; the first Verdaux {vda_name u32, vda_next u32} names it.
Status read_verdef(const ElfImage& elf, Diagnostics* diag, std::vector<SymbolVersions::Def>& out) {
  const SectionHeader* vd = elf.section_of_type(SHT_GNU_verdef);
  if (vd == nullptr) return Status::success();
  auto report = [&](Error e) {
    if (diag != nullptr) diag->report(std::move(e));
  };
  auto b = elf.section_bytes(*vd);
  if (!b) return b.error();
  const SectionHeader* strtab = elf.section_at(vd->sh_link);
  auto strs = strtab != nullptr ? elf.section_bytes(*strtab) : Result<ByteView>(ByteView());
  if (!strs) return strs.error();
  uint64_t off = 0;
  for (uint64_t n = 0; n <= b->size() / 20; ++n) {
    Cursor c(*b, off);
    c.skip(2);
    SymbolVersions::Def d;
    d.flags = c.u16();
    d.index = c.u16();
    c.skip(2 + 4);
    uint32_t aux = c.u32();
    uint32_t next = c.u32();
    Cursor a(*b, off + aux);
    uint32_t name = a.u32();
    if (!c.ok() || !a.ok()) {
      report(make_error(fmt::format("{} entry #{}", vd->name, n), "", b->base() + off,
                        "record runs past the end of the section"));
      break;
    }
    if (auto s = strs->cstring(name)) d.name = *s;
    out.push_back(d);
    if (next == 0) break;
    off += next;
  }
  return Status::success();
}

}  // namespace

Result<SymbolVersions> SymbolVersions::read(const ElfImage& elf, Diagnostics* diag) {
  SymbolVersions v;
  if (const SectionHeader* vs = elf.section_of_type(SHT_GNU_versym)) {
    auto b = elf.section_bytes(*vs);
    if (!b) return b.error();
    v.versym_ = *b;
  }
  if (Status st = read_verneed(elf, diag, v.needs_); !st.ok()) return st.error();
  if (Status st = read_verdef(elf, diag, v.defs_); !st.ok()) return st.error();

  for (size_t i = 0; i < v.needs_.size(); ++i) {
    for (size_t k = 0; k < v.needs_[i].versions.size(); ++k) {
      uint32_t idx = v.needs_[i].versions[k].other & kVersymIndexMask;
      if (idx >= v.by_index_.size()) v.by_index_.resize(std::min(idx, kMaxVersionIndex) + 1);
      v.by_index_[idx].need = static_cast<int32_t>(i);
      v.by_index_[idx].aux = static_cast<int32_t>(k);
    }
  }
  for (size_t i = 0; i < v.defs_.size(); ++i) {
    uint32_t idx = v.defs_[i].index & kVersymIndexMask;
    if (idx >= v.by_index_.size()) v.by_index_.resize(std::min(idx, kMaxVersionIndex) + 1);
    v.by_index_[idx].def = static_cast<int32_t>(i);
  }
  return v;
}

std::optional<VersionRef> SymbolVersions::for_symbol(uint32_t sym_index) const {
  auto raw = versym_.read<uint16_t>(uint64_t{sym_index} * 2);
  if (!raw) return std::nullopt;
  uint16_t idx = *raw & kVersymIndexMask;
  if (idx <= 1 || idx >= by_index_.size()) return std::nullopt;  // 0 local, 1 global: unversioned
  const Slot& s = by_index_[idx];
  VersionRef r;
  r.hidden = (*raw & kVersymHidden) != 0;
  if (s.need >= 0) {
    const Need& n = needs_[s.need];
    r.file = n.file;
    r.name = n.versions[s.aux].name;
    return r;
  }
  if (s.def >= 0) {
    r.name = defs_[s.def].name;
    r.is_definition = true;
    return r;
  }
  return std::nullopt;
}

}  // namespace cudatool::elf
