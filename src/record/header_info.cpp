// Header facts gathered at the start of a recording, and CPU placement.
#include <sched.h>
#include <sys/utsname.h>

#include <fmt/format.h>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <regex>

#include "record/recorder.hpp"

namespace cudatool::record {

Header make_header(const std::vector<std::string>& argv, const std::string& mode,
                   const std::string& devices) {
  Header h;
  h.argv = argv;
  h.mode = mode;
  h.devices = devices;
  h.recorder = "cudatool " CUDATOOL_VERSION;
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (…)".
  // $CUDATOOL_DRIVER_VERSION_FILE names another copy of that file (a container without
  // /proc/driver/nvidia, a test); the recorders also take their UVM sizes by this version.
  const char* file = std::getenv("CUDATOOL_DRIVER_VERSION_FILE");
  std::ifstream v(file != nullptr && *file != '\0' ? file : "/proc/driver/nvidia/version");
  std::string line;
  if (v && std::getline(v, line)) {
    h.driver_version_line = line;
    std::smatch m;
    static const std::regex kVersion(R"((?:^|\s)(\d+\.\d+(?:\.\d+)?)(?:\s|$))");
    if (std::regex_search(line, m, kVersion)) h.driver_version = m[1];
  }
  utsname u{};
  if (uname(&u) == 0) {
    h.host = u.nodename;
    h.kernel = u.release;
  }
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  h.start_time = buf;
  return h;
}

Result<int> choose_cpu(const std::string& spec) {
  if (spec == "any") return -1;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  if (spec == "same") {
    int cpu = sched_getcpu();
    if (cpu >= 0 && CPU_ISSET(cpu, &allowed)) return cpu;
    for (int i = 0; i < CPU_SETSIZE; ++i) {
      if (CPU_ISSET(i, &allowed)) return i;
    }
    return -1;
  }
  int cpu = -1;
  auto r = std::from_chars(spec.data(), spec.data() + spec.size(), cpu);
  if (r.ec != std::errc() || r.ptr != spec.data() + spec.size() || cpu < 0 || cpu >= CPU_SETSIZE) {
    return make_error("--cpu", "", std::nullopt,
                      fmt::format("'{}' is not \"same\", \"any\" or a CPU number", spec));
  }
  if (!CPU_ISSET(cpu, &allowed)) {
    return make_error("--cpu", "", std::nullopt,
                      fmt::format("CPU {} is not in this process's affinity mask", cpu));
  }
  return cpu;
}

void count_event(RecordSummary& s, const Event& ev) {
  ++s.by_sys[std::string(sys_name(ev.sys))];
  bool env = trace::is_environment(ev.sys);
  if (!ev.path.empty() && ev.sys != Sys::kExecve && !env) ++s.by_path[ev.path];
  if (env || ev.path.empty() || ev.sys == Sys::kExecve) return;
  ++s.device_calls;
  if (!ev.stack.empty()) ++s.with_stack;
  if (!ev.stack_error.empty()) ++s.stacks_cut;
  auto note = [&](const std::string& what, const std::string& reason) {
    auto& [n, why] = s.unrecorded[what];
    if (n++ == 0) why = reason;
  };
  for (const trace::Unrecorded& u : ev.unrecorded) note(u.what, u.why);
  // Buffers the recorder could not read (as `decode` lists them under "unrecorded").
  auto buffer = [&](const trace::Buffer& b) {
    if (!b.before_error.empty()) {
      note(b.role, b.before_error);
    } else if (!b.after_error.empty()) {
      note(b.role, b.after_error);
    }
  };
  if (ev.arg) buffer(*ev.arg);
  for (const trace::Buffer& b : ev.nested) buffer(b);
}

}  // namespace cudatool::record
