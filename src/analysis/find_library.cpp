#include "analysis/find_library.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#include "base/mapped_file.hpp"

namespace cudatool {
namespace {

constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";
constexpr std::string_view kOldMagic = "ld.so-1.7.0";
constexpr uint64_t kNewHeaderSize = 48;  // magic[20] nlibs len_strings flags pad[3] ext unused[3]
constexpr uint64_t kNewEntrySize = 24;   // flags key value osversion hwcap
constexpr uint64_t kOldEntrySize = 12;   // flags key value
// flags: FLAG_ELF_LIBC6 (3) | FLAG_X8664_LIB64 (0x0300), from glibc's sysdeps/generic/ldconfig.h
constexpr int32_t kX8664Libc6 = 0x0303;

bool is_file(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string real(const std::string& p) {
  char buf[PATH_MAX];
  if (realpath(p.c_str(), buf) != nullptr) return buf;
  return p;
}

}  // namespace

Result<std::vector<LdCacheEntry>> parse_ld_cache(ByteView b) {
  uint64_t start = 0;
  if (b.size() >= kOldMagic.size() && b.chars().substr(0, kOldMagic.size()) == kOldMagic) {
    auto n = b.read<uint32_t>(kOldMagic.size() + 1);  // magic is padded to 12 bytes
    if (!n) return make_error("ld.so.cache old header", "nlibs", 12, "truncated");
    uint64_t table = uint64_t{*n} * kOldEntrySize;
    if (table > b.size() - 16) {
      return make_error("ld.so.cache old header", "nlibs", 12,
                        fmt::format("{} entries exceed the file size {}", *n, b.size()));
    }
    start = (16 + table + 7) & ~uint64_t{7};
  }
  auto rest = b.sub(start);
  if (!rest || rest->size() < kNewHeaderSize ||
      rest->chars().substr(0, kNewMagic.size()) != kNewMagic) {
    return make_error("ld.so.cache header", "magic", start, "not a glibc-ld.so.cache1.1 file");
  }
  Cursor c(*rest, kNewMagic.size());
  uint32_t nlibs = c.u32();
  if (uint64_t{nlibs} > (rest->size() - kNewHeaderSize) / kNewEntrySize) {
    return make_error(
        "ld.so.cache header", "nlibs", start + 20,
        fmt::format("{} entries of 24 bytes exceed the file size {}", nlibs, b.size()));
  }
  std::vector<LdCacheEntry> out;
  out.reserve(nlibs);
  for (uint32_t i = 0; i < nlibs; ++i) {
    Cursor e(*rest, kNewHeaderSize + uint64_t{i} * kNewEntrySize);
    LdCacheEntry x;
    x.flags = e.s32();
    uint32_t key = e.u32();
    uint32_t value = e.u32();
    // In the new format string offsets are relative to the start of the new-format header.
    auto k = rest->cstring(key);
    auto v = rest->cstring(value);
    if (!k || !v) {
      return make_error(fmt::format("ld.so.cache entry [{}]", i), k ? "value" : "key",
                        start + kNewHeaderSize + uint64_t{i} * kNewEntrySize,
                        "string offset outside the file or unterminated");
    }
    x.key = *k;
    x.value = *v;
    out.push_back(x);
  }
  return out;
}

std::optional<FoundLibrary> find_system_library(std::string_view soname) {
  std::string name(soname);
  if (const char* env = std::getenv("LD_LIBRARY_PATH"); env != nullptr && *env != '\0') {
    std::string paths(env);
    size_t pos = 0;
    while (pos <= paths.size()) {
      size_t end = paths.find_first_of(":;", pos);
      if (end == std::string::npos) end = paths.size();
      std::string_view dir = std::string_view(paths).substr(pos, end - pos);
      // An empty element means the current directory (ld.so(8)).
      std::string p = fmt::format("{}/{}", dir.empty() ? std::string_view(".") : dir, name);
      if (is_file(p)) return FoundLibrary{p, real(p), "LD_LIBRARY_PATH"};
      pos = end + 1;
    }
  }
  if (auto cache = MappedFile::open("/etc/ld.so.cache")) {
    auto entries = parse_ld_cache(cache->bytes());
    if (entries) {
      for (const auto& e : *entries) {
        if (e.key == soname && e.flags == kX8664Libc6) {
          std::string p(e.value);
          if (is_file(p)) return FoundLibrary{p, real(p), "/etc/ld.so.cache"};
        }
      }
    }
  }
  for (const char* dir : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                          "/usr/lib64", "/lib", "/usr/lib"}) {
    std::string p = fmt::format("{}/{}", dir, name);
    if (is_file(p)) return FoundLibrary{p, real(p), fmt::format("default directory {}", dir)};
  }
  return std::nullopt;
}

}  // namespace cudatool
