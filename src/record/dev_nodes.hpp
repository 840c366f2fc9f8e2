// The device nodes of a /dev tree, so that `trace` can say when the traced program made some
// (libcuda, run as root on a machine without the NVIDIA driver, mknods /dev/nvidiactl, and the
// node stays after the trace). Read before and after the recording, by the recorder's process.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cudatool::record {

struct DevNode {
  bool block = false;  // a block device, else a character device
  unsigned major = 0, minor = 0;
};

// The character and block devices under `dir` ("/dev"), by path, on the filesystem of `dir`
// only (not /dev/pts, /dev/shm or other mounts below it), at most `max_depth` directories deep.
// Symbolic links are not followed. An unreadable directory adds nothing.
std::map<std::string, DevNode> device_nodes(const std::string& dir, int max_depth = 3);

// The nodes of `after` that `before` lacks.
std::vector<std::pair<std::string, DevNode>> new_device_nodes(
    const std::map<std::string, DevNode>& before, const std::map<std::string, DevNode>& after);

// Whether the processes this one descends from see `path` too (through /proc/PID/root, from the
// parent up to the first one that cannot be read, init included): a node made in a private mount
// namespace whose /dev is its own is not seen by the process that made the namespace. True when
// none of them can be read: the node is then taken to be the machine's.
bool seen_by_ancestors(const std::string& path);

}  // namespace cudatool::record
