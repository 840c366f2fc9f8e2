// Finding "the system's libcuda.so.1" the way the dynamic loader would (ld.so(8), "Rules"):
// LD_LIBRARY_PATH, then /etc/ld.so.cache, then the default directories.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"

namespace cudatool {

struct LdCacheEntry {
  std::string_view key;    // soname, "libcuda.so.1"
  std::string_view value;  // path
  int32_t flags = 0;
};

// Entries of a glibc ld.so.cache in the "glibc-ld.so.cache1.1" format (optionally after the
// old "ld.so-1.7.0" table, which is skipped). Errors name the header or entry and offset.
Result<std::vector<LdCacheEntry>> parse_ld_cache(ByteView bytes);

struct FoundLibrary {
  std::string path;      // as found (often a symlink)
  std::string resolved;  // realpath of it
  std::string how;       // "LD_LIBRARY_PATH", "/etc/ld.so.cache", "default directory …"
};

// Looks for `soname` (x86-64 libc6 entries only in the cache). Nothing when absent.
std::optional<FoundLibrary> find_system_library(std::string_view soname);

}  // namespace cudatool
