// Decoding of the environment events of a trace (docs/trace-format.md, "Environment events"):
// stat, file, mknod, symlink, readlink, chmod, unlink — what the program asked about the driver's
// view of the system. Internal to the decoder (decode.cpp dispatches here).
#pragma once

#include <cstdint>
#include <string>

#include "trace/decode.hpp"

namespace cudatool::trace::detail {

// Fills d.args (the facts, for --json) and d.summary (one readable line after the call name:
// "/dev/nvidiactl → char 195:255 0666 (__xstat)").
void decode_environment(const Event& ev, Decoded& d);

// "char", "dir", "file", "link", "fifo", "socket", "block"; "0x…?" for another file type.
std::string file_type_name(uint64_t st_mode);
// "R_OK|W_OK", "F_OK" for access(2)'s amode.
std::string access_mode_name(uint64_t amode);

}  // namespace cudatool::trace::detail
