#include "record/dev_nodes.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <string_view>

namespace cudatool::record {
namespace {

void walk(const std::string& dir, dev_t fs, int depth, std::map<std::string, DevNode>& out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || st.st_dev != fs) continue;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      out[path] = DevNode{S_ISBLK(st.st_mode), major(st.st_rdev), minor(st.st_rdev)};
    } else if (S_ISDIR(st.st_mode) && depth > 1) {
      walk(path, fs, depth - 1, out);
    }
  }
  ::closedir(d);
}

// The parent of `pid` (/proc/PID/stat, the field after the command name in parentheses), or 0.
int parent_of(int pid) {
  std::FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "re");
  if (f == nullptr) return 0;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string_view stat(buf, n);
  size_t close = stat.rfind(')');
  int ppid = 0;
  if (close == std::string_view::npos ||
      std::sscanf(std::string(stat.substr(close + 1)).c_str(), " %*c %d", &ppid) != 1) {
    return 0;
  }
  return ppid;
}

}  // namespace

std::map<std::string, DevNode> device_nodes(const std::string& dir, int max_depth) {
  std::map<std::string, DevNode> out;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) walk(dir, st.st_dev, max_depth, out);
  return out;
}

std::vector<std::pair<std::string, DevNode>> new_device_nodes(
    const std::map<std::string, DevNode>& before, const std::map<std::string, DevNode>& after) {
  std::vector<std::pair<std::string, DevNode>> out;
  for (const auto& [path, node] : after) {
    if (!before.contains(path)) out.emplace_back(path, node);
  }
  return out;
}

bool seen_by_ancestors(const std::string& path) {
  size_t start = path.find_first_not_of('/');
  std::string rel = start == std::string::npos ? "." : path.substr(start);
  for (int pid = parent_of(::getpid()); pid > 0; pid = parent_of(pid)) {
    int root = ::open(fmt::format("/proc/{}/root", pid).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) break;  // not ours to read (init, another user): what was seen so far decides
    struct stat st {};
    int rc = ::fstatat(root, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW);
    int err = errno;
    ::close(root);
    if (rc != 0 && err == ENOENT) return false;  // a /dev of this process's own
    if (rc != 0) break;
  }
  return true;
}

}  // namespace cudatool::record
