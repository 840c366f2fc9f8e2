#include "analysis/driver_image.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstdlib>

#include "analysis/deb_input.hpp"
#include "analysis/version_strings.h"
#include "base/archive.hpp"
#include "base/decompress.hpp"
#include "base/prefault.hpp"

namespace cudatool {

std::optional<std::string> version_from_file_name(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // A compressed library keeps the name of what it holds: libcuda.so.580.159.04.xz.
  for (std::string_view ext : {".xz", ".zst", ".gz"}) {
    if (name.ends_with(ext)) name.remove_suffix(ext.size());
  }
  size_t so = name.rfind(".so.");
  if (so == std::string_view::npos) return std::nullopt;
  std::string_view tail = name.substr(so + 4);
  size_t n = nvtr_version_length(tail.data(), tail.size());
  if (n == 0 || n != tail.size()) return std::nullopt;
  return std::string(tail);
}

std::optional<std::pair<std::string, std::string>> version_from_strings(ByteView bytes) {
  // The profiles path first (every branch has it), then the copyright line (550+).
  const char* p = reinterpret_cast<const char*>(bytes.data());
  char v[NVTR_VERSION_MAX];
  if (long at = nvtr_find_version(p, bytes.size(), NVTR_VERSION_PROFILES, v); at >= 0) {
    return std::make_pair(std::string(v), fmt::format("\"nvidia-application-profiles-{}-rc\" at "
                                                      "file offset {:#x}",
                                                      v, at));
  }
  if (long at = nvtr_find_version(p, bytes.size(), NVTR_VERSION_COPYRIGHT, v); at >= 0) {
    return std::make_pair(std::string(v),
                          fmt::format("\"Version {}. Copyright\" at file offset {:#x}", v, at));
  }
  return std::nullopt;
}

Result<std::unique_ptr<DriverImage>> DriverImage::open(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  if (is_ar(f->bytes())) {
    // A Debian package: read the library member out of it, in memory.
    auto lib = extract_library_from_deb(f->bytes(), path);
    if (!lib) return lib.error();
    auto img = from_file(MappedFile::from_buffer(std::move(lib->bytes), path), path);
    if (img) (*img)->resolved_ = fmt::format("{}:{}", path, lib->member);
    return img;
  }
  Compression c = detect_compression(f->bytes());
  std::optional<MappedFile> unpacked;
  if (c != Compression::kNone) {
    // A compressed library (libcuda.so.580.159.04.xz): decompressed in memory, capped.
    auto bytes = decompress(f->bytes(), c, kMaxCompressedLibrary, path);
    if (!bytes) return bytes.error();
    unpacked = MappedFile::from_buffer(std::move(*bytes), path);
  }
  auto img = from_file(unpacked ? std::move(*unpacked) : std::move(*f), path);
  if (img) {
    char buf[PATH_MAX];
    if (realpath(path.c_str(), buf) != nullptr) (*img)->resolved_ = buf;
    (*img)->compression_ = c;
  }
  return img;
}

Result<std::unique_ptr<DriverImage>> DriverImage::from_file(MappedFile file, std::string path) {
  std::unique_ptr<DriverImage> d(new DriverImage());
  d->path_ = std::move(path);
  d->resolved_ = d->path_;
  d->file_ = std::move(file);
  auto elf = elf::ElfImage::parse(d->file_.bytes(), &d->diag_);
  if (!elf) {
    Error e = std::move(elf).take_error();
    e.structure = fmt::format("{}: {}", d->path_, e.structure);
    return e;
  }
  d->elf_ = std::move(*elf);
  return d;
}

const std::optional<std::string>& DriverImage::build_id() {
  if (!build_id_) build_id_ = elf::gnu_build_id(elf_, &diag_);
  return *build_id_;
}

const std::optional<elf::DebugLink>& DriverImage::debuglink() {
  if (!debuglink_) debuglink_ = elf::gnu_debuglink(elf_, &diag_);
  return *debuglink_;
}

const elf::DynamicInfo& DriverImage::dynamic() {
  if (!dynamic_) {
    auto d = elf::read_dynamic(elf_, &diag_);
    if (d) {
      dynamic_ = std::move(*d);
    } else {
      diag_.report(d.error());
      dynamic_.emplace();
    }
  }
  return *dynamic_;
}

const std::vector<elf::Symbol>& DriverImage::dynamic_symbols() {
  if (!dynsyms_) {
    auto s = elf::read_dynamic_symbols(elf_, &diag_);
    if (s) {
      dynsyms_ = std::move(*s);
    } else {
      diag_.report(s.error());
      dynsyms_.emplace();
    }
  }
  return *dynsyms_;
}

const elf::SymbolVersions& DriverImage::symbol_versions() {
  if (!versions_) {
    auto v = elf::SymbolVersions::read(elf_, &diag_);
    if (v) {
      versions_ = std::move(*v);
    } else {
      diag_.report(v.error());
      versions_.emplace();
    }
  }
  return *versions_;
}

const std::vector<Export>& DriverImage::exports() {
  if (!exports_) {
    exports_.emplace();
    const auto& syms = dynamic_symbols();
    const auto& vers = symbol_versions();
    exports_->reserve(syms.size());  // most dynamic symbols of libcuda are its exports
    prefault_capacity(*exports_);
    for (const auto& s : syms) {
      if (!is_export(s)) continue;
      Export e;
      e.sym = s;
      e.api = cuda::parse_api_name(s.name);
      if (auto v = vers.for_symbol(s.index)) e.version = v->name;
      exports_->push_back(e);
    }
  }
  return *exports_;
}

bool DriverImage::is_export(const elf::Symbol& s) {
  return s.defined() && s.index != 0 &&
         (s.binding() == STB_GLOBAL || s.binding() == STB_WEAK || s.binding() == STB_GNU_UNIQUE);
}

const std::vector<Import>& DriverImage::imports() {
  if (!imports_) {
    imports_.emplace();
    const auto& syms = dynamic_symbols();
    const auto& vers = symbol_versions();
    for (const auto& s : syms) {
      if (s.defined() || s.index == 0) continue;
      // An undefined LOCAL entry with no name is the null-like padding some linkers emit.
      if (s.name.empty()) continue;
      Import im;
      im.sym = s;
      if (auto v = vers.for_symbol(s.index)) {
        im.version = v->name;
        im.library = v->file;
      }
      imports_->push_back(im);
    }
  }
  return *imports_;
}

const std::optional<cuda::FwdCompatNote>& DriverImage::fwd_compat_note() {
  if (!fwd_compat_) {
    auto n = cuda::read_fwd_compat_note(elf_);
    if (n) {
      fwd_compat_ = std::move(*n);
    } else {
      fwd_compat_error_ = n.error();
      diag_.report(n.error());
      fwd_compat_.emplace();
    }
  }
  return *fwd_compat_;
}

const std::optional<elf::EhFrameHdr>& DriverImage::eh_frame_hdr() {
  if (!eh_frame_hdr_) {
    eh_frame_hdr_.emplace();
    const elf::SectionHeader* sh = elf_.section(".eh_frame_hdr");
    std::optional<ByteView> bytes;
    uint64_t vaddr = 0;
    if (sh != nullptr) {
      auto b = elf_.section_bytes(*sh);
      if (b) bytes = *b;
      vaddr = sh->sh_addr;
    } else {
      for (const auto& p : elf_.segments()) {
        if (p.p_type != PT_GNU_EH_FRAME) continue;
        auto b = elf_.segment_bytes(p);
        if (b) bytes = *b;
        vaddr = p.p_vaddr;
      }
    }
    if (bytes) {
      auto h = elf::read_eh_frame_hdr(*bytes, vaddr);
      if (h) {
        *eh_frame_hdr_ = *h;
      } else {
        diag_.report(h.error());
      }
    }
  }
  return *eh_frame_hdr_;
}

const DriverVersion& DriverImage::driver_version(bool scan_strings) {
  if (!version_ || (scan_strings && !version_->strings_scanned)) {
    DriverVersion v;
    v.from_file_name = version_from_file_name(resolved_);
    if (!v.from_file_name) v.from_file_name = version_from_file_name(path_);
    if (scan_strings || !v.from_file_name) {
      v.strings_scanned = true;
      // The strings live in .rodata; scan only it when it exists.
      ByteView where = bytes();
      if (const auto* ro = elf_.section(".rodata"); ro != nullptr && ro->in_file) {
        if (auto b = elf_.section_bytes(*ro)) where = *b;
      }
      if (auto s = version_from_strings(where)) {
        v.from_strings = s->first;
        v.strings_evidence = s->second;
      }
    }
    version_ = std::move(v);
  }
  return *version_;
}

const elf::ProgramHeader* DriverImage::exec_segment() const {
  for (const auto& p : elf_.segments()) {
    if (p.p_type == PT_LOAD && (p.p_flags & PF_X) != 0) return &p;
  }
  return nullptr;
}

}  // namespace cudatool
