// Checking a trace's environment events against what env_client (tests/fixtures/envtrace) says it
// did, and the fake tree it looks at. The trace is read with nlohmann/json, independently of
// cudatool's own reader.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cudatool::test {

// A fake copy of the driver's view of the system under temp_dir()/NAME:
//   proc/driver/nvidia/{params, version, registry (80 KiB: longer than the recorders' bound)}
//   sys/module/nvidia/initstate
//   sys/devices/pci0000:00/0000:00:00.0/{config, numa_node}   (an Intel host bridge)
//   sys/devices/pci0000:40/0000:45:00.0/{config, numa_node}   (an H200: vendor 0x10de)
//   sys/bus/pci/devices/<bdf> -> ../../../devices/…/<bdf>     (symlinks, as in sysfs)
//   dev/                                                       (empty: nvidiactl is missing)
//   other/file                                                 (outside --env)
struct EnvTree {
  std::string root;
  std::string env;  // the --env globs that select the four families under root
};
EnvTree make_env_tree(const std::string& name);

// The kinds of environment events ("stat", "file", "mknod", …).
bool is_env_sys(const std::string& sys);

// Why recorded event `r` is not the call env_client printed as `e` ("" when it is). `mode` is
// the recorder's ("ptrace" names calls by their system call, preload by the libc function).
std::string env_mismatch(const nlohmann::json& e, const nlohmann::json& r, const std::string& mode);

// Pairs every printed environment call with one recorded environment event and the other way
// round; one message per call left without a partner (empty: the trace holds exactly the calls
// made).
std::vector<std::string> match_env_exactly(const std::vector<nlohmann::json>& printed,
                                           const std::vector<nlohmann::json>& recorded,
                                           const std::string& mode);

}  // namespace cudatool::test
