#include "replay_support.hpp"

#include <dirent.h>
#include <unistd.h>

#include <atomic>

namespace cudatool::test {

ReplayRun replay(const std::string& trace, const std::vector<std::string>& extra,
                 const std::vector<std::string>& command, int timeout_s) {
  static std::atomic<int> n{0};
  std::string report = temp_dir() + "/replay-report-" + std::to_string(getpid()) + "-" +
                       std::to_string(n++) + ".json";
  std::vector<std::string> argv{cudatool_bin(), "replay", trace};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--json", "--report", report, "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  ReplayRun r;
  r.run = run(argv, timeout_s);
  std::string text = read_file(report);
  if (!text.empty()) r.report = nlohmann::json::parse(text, nullptr, false);
  unlink(report.c_str());
  return r;
}

std::string cuda_probe_bin() {
  return std::string(CUDATOOL_BUILD_DIR) + "/cuda_probe";
}

std::set<std::string> host_nvidia_nodes() {
  std::set<std::string> out;
  for (const char* dir : {"/dev", "/dev/char"}) {
    DIR* d = opendir(dir);
    if (d == nullptr) continue;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("nvidia", 0) == 0 || n.rfind("195:", 0) == 0)
        out.insert(std::string(dir) + "/" + n);
    }
    closedir(d);
  }
  return out;
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  size_t at = 0;
  while (at < out.size()) {
    size_t nl = out.find('\n', at);
    if (nl == std::string::npos) nl = out.size();
    auto j = nlohmann::json::parse(out.substr(at, nl - at), nullptr, false);
    if (!j.is_discarded() && j.is_object()) v.push_back(std::move(j));
    at = nl + 1;
  }
  return v;
}

std::vector<nlohmann::json> deviations(const nlohmann::json& report, const std::string& kind) {
  std::vector<nlohmann::json> out;
  if (!report.is_object()) return out;
  for (const auto& d : report["deviations"]) {
    if (d["kind"] == kind) out.push_back(d);
  }
  return out;
}

}  // namespace cudatool::test
