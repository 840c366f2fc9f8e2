// One facade over a whole libcuda build. The file is mapped once; every fact is computed on
// first use and kept, so a command pays only for what it asks (`info` never walks relocations,
// `exports` never touches .rodata).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "base/decompress.hpp"
#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "cuda/api_name.hpp"
#include "cuda/fwd_compat.hpp"
#include "elf/dynamic.hpp"
#include "elf/eh_pointer.hpp"
#include "elf/elf_image.hpp"
#include "elf/notes.hpp"
#include "elf/symbols.hpp"

namespace cudatool {

struct Export {
  elf::Symbol sym;
  cuda::ApiName api;
  std::string_view version;  // symbol version it is defined under, if any
};

struct Import {
  elf::Symbol sym;
  std::string_view version;  // "GLIBC_2.2.5"; "" when unversioned
  std::string_view library;  // "libc.so.6" from .gnu.version_r; "" when unknown
};

struct DriverVersion {
  std::optional<std::string> from_file_name;  // "550.163.01" from libcuda.so.550.163.01
  std::optional<std::string> from_strings;    // from version strings inside the library
  std::string strings_evidence;               // which string gave it
  bool strings_scanned = false;
  // The version to report and where it came from ("file name" / "library strings").
  [[nodiscard]] std::optional<std::string> best() const {
    return from_strings ? from_strings : from_file_name;
  }
  [[nodiscard]] std::string_view source() const {
    if (from_strings) return "library strings";
    if (from_file_name) return "file name";
    return "unknown";
  }
  [[nodiscard]] bool conflict() const {
    return from_strings && from_file_name && *from_strings != *from_file_name;
  }
};

// Largest library a compressed file may decompress to (580's libcuda is 96 MB).
inline constexpr uint64_t kMaxCompressedLibrary = 1ULL << 30;

class DriverImage {
 public:
  // Maps and checks the file. The ELF header tables must be readable; problems deeper in the
  // file are collected in diagnostics() as they are met. A Debian package (.deb) is accepted
  // too: its libcuda.so.<version> member is read in memory (resolved_path() names it); so is a
  // library compressed with xz, zstd or gzip (compression() says which), up to
  // kMaxCompressedLibrary bytes decompressed.
  static Result<std::unique_ptr<DriverImage>> open(const std::string& path);
  // For bytes that did not come from a file of their own (a .deb member, a fuzzer input).
  static Result<std::unique_ptr<DriverImage>> from_file(MappedFile file, std::string display_path);

  [[nodiscard]] const std::string& path() const { return path_; }
  // realpath() of the path (the versioned name that a libcuda.so.1 symlink points to), or
  // "<package.deb>:<member path>" for a package.
  [[nodiscard]] const std::string& resolved_path() const { return resolved_; }
  [[nodiscard]] const MappedFile& file() const { return file_; }
  // How the file on disk was compressed (kNone for a plain library or a package).
  [[nodiscard]] Compression compression() const { return compression_; }
  [[nodiscard]] const elf::ElfImage& elf() const { return elf_; }
  [[nodiscard]] ByteView bytes() const { return file_.bytes(); }
  [[nodiscard]] Diagnostics& diagnostics() { return diag_; }

  const std::optional<std::string>& build_id();
  const std::optional<elf::DebugLink>& debuglink();
  const elf::DynamicInfo& dynamic();
  const std::vector<elf::Symbol>& dynamic_symbols();
  const elf::SymbolVersions& symbol_versions();
  const std::vector<Export>& exports();
  // Whether exports() lists this dynamic symbol (defined, global, weak or unique). Readers that
  // need only the symbols (names for the function map, the dispatch stubs) test it themselves
  // and skip what exports() adds: the versions and the API-name parse of ~900 symbols.
  static bool is_export(const elf::Symbol& s);
  const std::vector<Import>& imports();
  // The note when present; nullopt when absent. A damaged note is reported in diagnostics and
  // yields nullopt plus fwd_compat_error().
  const std::optional<cuda::FwdCompatNote>& fwd_compat_note();
  [[nodiscard]] const std::optional<Error>& fwd_compat_error() const { return fwd_compat_error_; }
  const std::optional<elf::EhFrameHdr>& eh_frame_hdr();
  // Reads the version from the file name always; scans the library's strings (about 3 ms on a
  // warm 28 MB file) when `scan_strings` or when the name carries no version.
  const DriverVersion& driver_version(bool scan_strings);

  // First PT_LOAD with PF_X.
  [[nodiscard]] const elf::ProgramHeader* exec_segment() const;

  // Facets: analyses that live in their own files (function map, embedded cubins, driver
  // tables …) attach here and are built once, on first use, by `T(DriverImage&)`. A facet may
  // use other facets; it reports damage to diagnostics() rather than failing.
  template <class T>
  T& facet() {
    auto it = facets_.find(std::type_index(typeid(T)));
    if (it == facets_.end()) {
      auto p = std::make_shared<T>(*this);
      it = facets_.emplace(std::type_index(typeid(T)), p).first;
    }
    return *static_cast<T*>(it->second.get());
  }
  // A facet built elsewhere (on another thread, with its own diagnostics): kept unless one of
  // its type is already there. Returns the one kept.
  template <class T>
  T& adopt_facet(std::shared_ptr<T> p) {
    auto it = facets_.emplace(std::type_index(typeid(T)), std::move(p)).first;
    return *static_cast<T*>(it->second.get());
  }
  template <class T>
  [[nodiscard]] bool has_facet() const {
    return facets_.count(std::type_index(typeid(T))) != 0;
  }

 private:
  DriverImage() = default;

  std::string path_;
  std::string resolved_;
  MappedFile file_;
  elf::ElfImage elf_;
  Diagnostics diag_;

  std::optional<std::optional<std::string>> build_id_;
  std::optional<std::optional<elf::DebugLink>> debuglink_;
  std::optional<elf::DynamicInfo> dynamic_;
  std::optional<std::vector<elf::Symbol>> dynsyms_;
  std::optional<elf::SymbolVersions> versions_;
  std::optional<std::vector<Export>> exports_;
  std::optional<std::vector<Import>> imports_;
  std::optional<std::optional<cuda::FwdCompatNote>> fwd_compat_;
  std::optional<Error> fwd_compat_error_;
  std::optional<std::optional<elf::EhFrameHdr>> eh_frame_hdr_;
  std::optional<DriverVersion> version_;
  Compression compression_ = Compression::kNone;
  std::map<std::type_index, std::shared_ptr<void>> facets_;
};

// "550.163.01" from "libcuda.so.550.163.01" (any name ending in .so.<digits>.<digits>[.<digits>]).
std::optional<std::string> version_from_file_name(std::string_view path);
// Looks for the version strings NVIDIA builds into libcuda: "Version X. Copyright" (550+) and
// the application-profile path "nvidia-application-profiles-X-rc" (every branch seen). Returns
// the version and the string that gave it.
std::optional<std::pair<std::string, std::string>> version_from_strings(ByteView bytes);

}  // namespace cudatool
