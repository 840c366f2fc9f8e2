#include "env_check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "harness.hpp"
#include "record/env_files.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

void write(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// 256 bytes of PCI configuration space: vendor, device, then a pattern.
std::string pci_config(uint16_t vendor, uint16_t device) {
  std::string c(256, '\0');
  c[0] = static_cast<char>(vendor & 0xff);
  c[1] = static_cast<char>(vendor >> 8);
  c[2] = static_cast<char>(device & 0xff);
  c[3] = static_cast<char>(device >> 8);
  for (size_t i = 4; i < c.size(); ++i) c[i] = static_cast<char>(i * 37 + vendor);
  return c;
}

std::string str(const json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}

// The system calls glibc makes for a libc function (ptrace mode names events by them).
const std::map<std::string, std::set<std::string>>& syscalls_of() {
  static const std::map<std::string, std::set<std::string>> m = {
      {"stat", {"stat", "newfstatat", "statx"}},
      {"__xstat", {"stat", "newfstatat", "statx"}},
      {"lstat", {"lstat", "newfstatat", "statx"}},
      {"statx", {"statx"}},
      {"access", {"access", "faccessat", "faccessat2"}},
      {"open", {"open", "openat"}},
      {"fopen", {"open", "openat"}},
      {"opendir", {"open", "openat"}},
      {"scandir64", {"open", "openat"}},
      {"readlink", {"readlink", "readlinkat"}},
      {"__xmknod", {"mknod", "mknodat"}},
      {"mknod", {"mknod", "mknodat"}},
      {"mkdir", {"mkdir", "mkdirat"}},
      {"symlink", {"symlink", "symlinkat"}},
      {"chmod", {"chmod", "fchmodat"}},
      {"chown", {"chown", "fchownat"}},
      {"unlink", {"unlink", "unlinkat"}},
      {"rmdir", {"rmdir", "unlinkat"}},
  };
  return m;
}

std::string check_content(const json& e, const json& r) {
  if (!e.contains("content")) {
    if (r.contains("content")) return "content recorded for a file not opened for reading";
    return "";
  }
  if (!r.contains("content")) return "no content";
  const json& c = r["content"];
  if (str(c, "role") != "content") return "content role " + c.value("role", std::string());
  std::string want = e["content"];
  uint64_t n = want.size() / 2;
  bool longer = n > record::kEnvContentMax;
  if (longer) want.resize(2 * record::kEnvContentMax);
  if (c.value("bounded", false) != longer) return "content bounded flag";
  if (c["size"] != want.size() / 2) return "content size " + c["size"].dump();
  if (str(c, "post") != want) return "content bytes differ";
  if (c.contains("pre")) return "content has a pre side";
  return "";
}

}  // namespace

EnvTree make_env_tree(const std::string& name) {
  EnvTree t;
  t.root = temp_dir() + "/" + name;
  fs::remove_all(t.root);
  const std::string& r = t.root;
  write(r + "/proc/driver/nvidia/params",
        "ResmanDebugLevel: 4294967295\nRmLogonRC: 1\nModifyDeviceFiles: 1\nDeviceFileUID: 0\n"
        "DeviceFileGID: 0\nDeviceFileMode: 438\n");
  write(r + "/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n");
  std::string registry;
  for (int i = 0; registry.size() < 80 * 1024; ++i) {
    registry += "RmRegistryKey" + std::to_string(i) + ": " + std::to_string(i * 7919) + "\n";
  }
  write(r + "/proc/driver/nvidia/registry", registry);
  write(r + "/sys/module/nvidia/initstate", "live\n");
  struct Dev {
    const char* bus;
    const char* bdf;
    uint16_t vendor, device;
    const char* numa;
  };
  for (const Dev& d : {Dev{"pci0000:00", "0000:00:00.0", 0x8086, 0x1237, "-1\n"},
                       Dev{"pci0000:40", "0000:45:00.0", 0x10de, 0x2335, "0\n"}}) {
    std::string real = r + "/sys/devices/" + d.bus + "/" + d.bdf;
    write(real + "/config", pci_config(d.vendor, d.device));
    write(real + "/numa_node", d.numa);
    fs::create_directories(r + "/sys/bus/pci/devices");
    fs::create_symlink(std::string("../../../devices/") + d.bus + "/" + d.bdf,
                       r + "/sys/bus/pci/devices/" + d.bdf);
  }
  fs::create_directories(r + "/dev");
  write(r + "/other/file", "not the driver's\n");
  t.env = r + "/proc/driver/nvidia*," + r + "/sys/module/nvidia*," + r + "/sys/bus/pci/devices," +
          r + "/sys/bus/pci/devices/*," + r + "/dev/nvidia*";
  return t;
}

bool is_env_sys(const std::string& sys) {
  static const std::set<std::string> k = {"stat",     "file",  "mknod", "symlink",
                                          "readlink", "chmod", "unlink"};
  return k.count(sys) != 0;
}

std::string env_mismatch(const json& e, const json& r, const std::string& mode) {
  if (r["sys"] != e["sys"]) return "sys";
  if (r["pid"] != e["pid"] || r["tid"] != e["tid"]) return "pid/tid";
  if (str(r, "path") != str(e, "path")) return "path " + r.value("path", std::string());
  std::string op = str(e, "op"), rop = str(r, "op");
  bool ptrace = mode == "ptrace";
  if (!ptrace && rop != op) return "op " + rop;
  if (ptrace) {
    auto it = syscalls_of().find(op);
    if (it == syscalls_of().end() || it->second.count(rop) == 0) return "op " + rop;
  }
  int64_t ret = e["ret"], rret = r.value("ret", int64_t{0});
  // fopen, opendir and scandir return a FILE*, a DIR* or a count: ptrace mode sees the fd.
  bool pointer_call = op == "fopen" || op == "opendir" || op == "scandir64";
  if (ptrace && pointer_call ? (ret >= 0) != (rret >= 0) : ret != rret) {
    return "ret " + std::to_string(rret);
  }
  if (r.value("errno", 0) != e.value("errno", 0)) return "errno " + r.value("errno", json()).dump();
  std::string sys = e["sys"];
  bool ok = ret >= 0;
  for (const char* k : {"mode", "rdev"}) {
    if (e.contains(k) && (!r.contains(k) || json_uint(r[k]) != json_uint(e[k]))) {
      return std::string(k) + " " + (r.contains(k) ? r[k].dump() : "absent");
    }
  }
  if (e.contains("size") && r.value("size", json()) != e["size"]) {
    return "size " + r.value("size", json()).dump();
  }
  if (sys == "stat" && ok && op != "access" && !r.contains("size")) return "no stat answer";
  if (sys == "file") {
    if (!r.contains("flags") || json_uint(r["flags"]) != json_uint(e["flags"])) return "flags";
    if (std::string m = check_content(e, r); !m.empty()) return m;
    if (e.contains("entries") != r.contains("entries")) return "entries present";
    if (e.contains("entries") && r["entries"] != e["entries"]) {
      return "entries " + r["entries"].dump();
    }
  } else if (!ptrace && r.contains("flags") && json_uint(r["flags"]) != 0) {
    return "flags " + r["flags"].dump();  // the fixture passes no AT_* flags
  }
  if (e.contains("target") && r.value("target", json()) != e["target"]) {
    return "target " + r.value("target", json()).dump();
  }
  for (const char* k : {"uid", "gid"}) {
    if (e.contains(k) && r.value(k, json()) != e[k]) return k;
  }
  if ((sys == "symlink" || sys == "readlink") && ok && !r.contains("target")) return "no target";
  return "";
}

std::vector<std::string> match_env_exactly(const std::vector<json>& printed,
                                           const std::vector<json>& recorded,
                                           const std::string& mode) {
  std::vector<json> rec;
  for (const auto& r : recorded) {
    if (is_env_sys(r["sys"].get<std::string>())) rec.push_back(r);
  }
  std::vector<bool> used(rec.size(), false);
  std::vector<std::string> problems;
  for (const auto& e : printed) {
    std::string closest;
    bool found = false;
    for (size_t i = 0; i < rec.size() && !found; ++i) {
      if (used[i]) continue;
      std::string m = env_mismatch(e, rec[i], mode);
      if (m.empty()) {
        used[i] = true;
        found = true;
      } else if (m != "sys" && m != "pid/tid" && m.rfind("path", 0) != 0 && closest.empty()) {
        closest = m + " in " + rec[i].dump().substr(0, 400);
      }
    }
    if (!found) {
      problems.push_back("not recorded: " + e.dump().substr(0, 400) +
                         (closest.empty() ? "" : "\n   closest: " + closest));
    }
  }
  for (size_t i = 0; i < rec.size(); ++i) {
    if (!used[i]) problems.push_back("recorded but not made: " + rec[i].dump().substr(0, 400));
  }
  return problems;
}

}  // namespace cudatool::test
