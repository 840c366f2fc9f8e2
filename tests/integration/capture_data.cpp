#include "capture_data.hpp"

#include <gtest/gtest.h>
#include <lzma.h>
#include <unistd.h>

#include <regex>
#include <sstream>

#include "harness.hpp"

namespace cudatool::test {

std::string captures_dir() {
  if (const char* env = getenv("CUDATOOL_CAPTURES")) return env;
  for (std::string d : {source_dir() + "/../shared/data", source_dir() + "/../../shared/data",
                        std::string("/work/shared/data")}) {
    if (access((d + "/trace_a.jsonl.xz").c_str(), R_OK) == 0) return d;
  }
  return source_dir() + "/../shared/data";
}

std::string xz_decompress(const std::string& data) {
  lzma_stream s = LZMA_STREAM_INIT;
  EXPECT_EQ(lzma_stream_decoder(&s, UINT64_MAX, 0), LZMA_OK);
  std::string out;
  s.next_in = reinterpret_cast<const uint8_t*>(data.data());
  s.avail_in = data.size();
  char buf[1 << 16];
  lzma_ret r = LZMA_OK;
  while (r == LZMA_OK) {
    s.next_out = reinterpret_cast<uint8_t*>(buf);
    s.avail_out = sizeof buf;
    r = lzma_code(&s, LZMA_FINISH);
    out.append(buf, sizeof buf - s.avail_out);
  }
  lzma_end(&s);
  EXPECT_EQ(r, LZMA_STREAM_END) << "xz stream damaged";
  return out;
}

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
  std::string xz = read_file(captures_dir() + "/" + name);
  if (xz.empty()) {
    ADD_FAILURE() << captures_dir() << "/" << name
                  << " is missing or empty: the real captures live in ../shared/data "
                     "(or set CUDATOOL_CAPTURES)";
    return out;
  }
  std::istringstream in(xz_decompress(xz));
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
