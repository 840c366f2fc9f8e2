#include "capture_data.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "harness.hpp"

namespace cudatool::test {

std::string capture_driver_version() {
  std::string readme = read_file(captures_dir() + "/README.md");
  std::smatch m;
  if (std::regex_search(readme, m, std::regex(R"(kernel driver ([0-9]+\.[0-9]+(\.[0-9]+)?))"))) {
    return m[1];
  }
  return "";
}

std::vector<nlohmann::json> capture_lines(const std::string& name) {
  std::vector<nlohmann::json> out;
  std::istringstream in(read_capture(name));  // a test failure, and "", when it cannot be read
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

ControlNaming control_naming(const rm::Tables& t, uint32_t cmd) {
  if (t.find_control(cmd) != nullptr) return ControlNaming::kNamed;
  constexpr uint32_t kGssLegacyMask = 0x8000;  // RM_GSS_LEGACY_MASK, rmapi_deprecated.h
  bool interface_published = false;
  for (const rm::Tables& b : rm::all_branches()) {
    for (const rm::CtrlEntry& e : b.controls()) interface_published |= (e.id >> 8) == (cmd >> 8);
  }
  if ((cmd & kGssLegacyMask) != 0 || !interface_published) return ControlNaming::kUnpublished;
  return ControlNaming::kMissing;
}

}  // namespace cudatool::test
