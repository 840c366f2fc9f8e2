// What an environment file or directory holds, read by the recorder right after the traced
// program opened it (procfs and sysfs generate their content at read time): its stat answer,
// the bytes of a regular file (bounded), the sorted names of a directory. The preload shim does
// the same in C (src/record/preload/env_calls.c), with the same bounds.
#pragma once

#include <cstdint>
#include <string>

#include "trace/event.hpp"

namespace cudatool::record {

// The recorder reads at most this much of an environment file (the content buffer is `bounded`
// when the file is longer) and of a directory's names (the rest is noted in `unrecorded`).
inline constexpr uint64_t kEnvContentMax = 64u << 10;
inline constexpr uint64_t kEnvNamesMax = 256u << 10;

// Fills `ev` (a file event) from what `path` names: has_stat/mode/rdev/st_size; for a regular
// file, when `want_content` (the program opened it for reading), `content` (role "content", the
// bytes in `after`, `after_error` when they could not be read); for a directory, `entries`. Only
// regular files and directories are opened: opening a FIFO or a device node has effects of its
// own. `path` may be a /proc/PID/fd/N link (then the file the program opened is read).
void read_env_object(const std::string& path, bool want_content, trace::Event& ev);

// The open(2) flags allow reading (not O_WRONLY, not O_PATH).
bool env_open_reads(uint64_t flags);

}  // namespace cudatool::record
