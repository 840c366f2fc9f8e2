#include "record/env_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>

#include "record/tracee_memory.hpp"

namespace cudatool::record {
namespace {

void read_names(int fd, trace::Event& ev) {
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    close(fd);
    return;
  }
  uint64_t bytes = 0;
  bool truncated = false;
  ev.has_entries = true;
  errno = 0;
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (bytes + name.size() + 1 > kEnvNamesMax) {
      truncated = true;
      continue;
    }
    bytes += name.size() + 1;
    ev.entries.emplace_back(name);
  }
  int err = errno;
  closedir(d);
  std::sort(ev.entries.begin(), ev.entries.end());
  if (truncated) {
    ev.unrecorded.push_back({"entries", "more names than the recorder's bound of 256 KiB"});
  } else if (err != 0) {
    ev.unrecorded.push_back({"entries", "the directory could not be read to its end"});
  }
}

void read_bytes(int fd, trace::Event& ev) {
  trace::Buffer& b = ev.content.emplace();
  b.role = "content";
  b.after.resize(kEnvContentMax + 1);
  uint64_t got = 0;
  int err = 0;
  while (got <= kEnvContentMax) {
    ssize_t r = read(fd, b.after.data() + got, kEnvContentMax + 1 - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      err = errno;
      break;
    }
    if (r == 0) break;
    got += static_cast<uint64_t>(r);
  }
  if (got > kEnvContentMax) {
    got = kEnvContentMax;
    b.bounded = true;
  }
  b.after.resize(got);
  b.size = got;
  if (got == 0 && err != 0) b.after_error = errno_name(err);
  close(fd);
}

}  // namespace

bool env_open_reads(uint64_t flags) {
  return (flags & O_ACCMODE) != O_WRONLY && (flags & O_PATH) == 0;
}

void read_env_object(const std::string& path, bool want_content, trace::Event& ev) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (want_content) {
      trace::Buffer& b = ev.content.emplace();
      b.role = "content";
      b.after_error = errno_name(errno);
    }
    return;
  }
  ev.mode = st.st_mode;
  ev.rdev = st.st_rdev;
  ev.st_size = static_cast<uint64_t>(st.st_size);
  ev.has_stat = true;
  bool dir = S_ISDIR(st.st_mode);
  if (!dir && !(want_content && S_ISREG(st.st_mode))) return;
  int fd =
      open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (dir ? O_DIRECTORY : 0));
  if (fd < 0) {
    if (!dir) {
      trace::Buffer& b = ev.content.emplace();
      b.role = "content";
      b.after_error = errno_name(errno);
    }
    return;
  }
  if (dir) {
    read_names(fd, ev);
  } else {
    read_bytes(fd, ev);
  }
}

}  // namespace cudatool::record
