// Container formats of Debian packages: ar(5) (the .deb wrapper) and tar (POSIX ustar with GNU
// long names and pax headers), read from memory with bounds checks. Members are views into the
// input; nothing is copied.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"

namespace cudatool {

struct ArMember {
  std::string name;  // trailing '/' and spaces removed
  ByteView data;
  uint64_t header_offset = 0;
};

// "!<arch>\n" then 60-byte member headers (name[16] mtime[12] uid[6] gid[6] mode[8] size[10]
// "`\n"), data padded to even offsets.
Result<std::vector<ArMember>> read_ar(ByteView bytes);
bool is_ar(ByteView bytes);

struct TarEntry {
  std::string name;      // path as stored, without a leading "./"
  char type = '0';       // '0' file, '2' symlink, '5' directory, …
  std::string linkname;  // symlink target
  ByteView data;         // file contents (regular files)
  uint64_t header_offset = 0;
};

// Every entry of a tar archive. Damaged headers (bad checksum, sizes past the end) end the walk
// with an error naming the entry index and offset.
Result<std::vector<TarEntry>> read_tar(ByteView bytes);

}  // namespace cudatool
