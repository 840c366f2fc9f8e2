// The driver tables against the CUDA toolkit on this machine (or the Debian CUDA 12.4 pieces
// fetched by `tools/fetch-drivers.sh --cuda-toolkit`): cuda.h's CUresult codes,
// cudaTypedefs.h's PFN_cu…_vNNNNN name/version pairs, and the export-table UUIDs libcudart asks
// for. A missing toolkit is a failure that says how to get one, never a skip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "harness.hpp"
#include "tables_oracle.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

class TablesToolkit : public ::testing::TestWithParam<DriverBuild> {
 protected:
  void SetUp() override {
    CUDATOOL_REQUIRE_BUILD(GetParam());
    ASSERT_TRUE(cuda_toolkit().ok()) << cuda_toolkit().error;
  }
  std::string lib() const { return GetParam().lib_path; }
  json tables(const std::string& kind) {
    RunResult r = run({cudatool_bin(), "tables", "--json", "--kind", kind, lib()});
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out);
  }
};

uint32_t header_cuda_version(const std::string& cuda_h) {
  std::smatch m;
  std::string text = read_file(cuda_h);
  std::regex re(R"(#define CUDA_VERSION (\d+))");
  return std::regex_search(text, m, re) ? static_cast<uint32_t>(std::stoul(m[1])) : 0;
}

// Every CUDA_ERROR_* the build knows that cuda.h also names has cuda.h's code.
TEST_P(TablesToolkit, ErrorCodesMatchCudaH) {
  const auto& tk = cuda_toolkit();
  auto header = cuda_h_errors(tk.include_dir + "/cuda.h");
  ASSERT_GT(header.size(), 50u) << "could not read the CUresult enum of " << tk.include_dir;
  json j = tables("errors");
  ASSERT_TRUE(j["errors"]["found"].get<bool>());
  std::vector<std::string> not_in_header, not_in_build;
  std::set<std::string> seen;
  size_t matched = 0;
  for (const auto& e : j["errors"]["entries"]) {
    std::string name = e["name"];
    seen.insert(name);
    auto it = header.find(name);
    if (it == header.end()) {
      not_in_header.push_back(name + "=" + std::to_string(e["code"].get<uint32_t>()));
      continue;
    }
    EXPECT_EQ(e["code"].get<uint32_t>(), it->second) << name;
    ++matched;
  }
  for (const auto& [name, code] : header)
    if (!seen.count(name)) not_in_build.push_back(name);
  EXPECT_GT(matched, 50u);
  std::cout << "[ toolkit ] " << lib() << ": " << j["errors"]["count"] << " CUresult codes, "
            << matched << " match " << tk.include_dir << "/cuda.h (" << tk.origin
            << "); not in the header:";
  for (const auto& n : not_in_header) std::cout << " " << n;
  std::cout << "; header names this build lacks:";
  for (const auto& n : not_in_build) std::cout << " " << n;
  std::cout << "\n";
}

// Every row whose API the toolkit's *Typedefs.h name has a PFN_<api>_v<version> typedef with
// the same version and per-thread-ness, unless the row is newer than the header.
TEST_P(TablesToolkit, ProcAddressRowsMatchTypedefs) {
  const auto& tk = cuda_toolkit();
  auto pfn = pfn_typedefs(tk.include_dir);
  ASSERT_GT(pfn.size(), 300u) << "could not read PFN typedefs in " << tk.include_dir;
  uint32_t header_version = header_cuda_version(tk.include_dir + "/cuda.h");
  ASSERT_GT(header_version, 10000u);
  json j = tables("procaddress");
  ASSERT_TRUE(j["procaddress"]["found"].get<bool>());
  size_t matched = 0, newer = 0;
  std::set<std::string> unnamed;
  std::vector<std::string> mismatches;
  for (const auto& r : j["procaddress"]["rows"]) {
    std::string api = r["api"];
    uint32_t v = r["cuda_version"];
    std::string flags = r["flags"];
    auto it = pfn.find(api);
    if (it == pfn.end()) {
      unnamed.insert(api);
      continue;
    }
    bool ok = flags == "per-thread" ? it->second.count({v, true}) > 0
              : flags == "legacy"   ? it->second.count({v, false}) > 0
                                  : it->second.count({v, false}) + it->second.count({v, true}) > 0;
    if (ok) {
      ++matched;
    } else if (v > header_version) {
      ++newer;
    } else {
      mismatches.push_back(api + " v" + std::to_string(v) + " " + flags);
    }
  }
  EXPECT_TRUE(mismatches.empty()) << ::testing::PrintToString(mismatches);
  EXPECT_GT(matched, j["procaddress"]["rows"].size() / 2);
  std::cout << "[ toolkit ] " << lib() << ": " << matched << " of " << j["procaddress"]["row_count"]
            << " cuGetProcAddress rows match a PFN typedef of " << tk.origin << " (CUDA_VERSION "
            << header_version << "), " << newer << " newer than the header, " << unnamed.size()
            << " APIs without typedefs:";
  for (const auto& n : unnamed) std::cout << " " << n;
  std::cout << "\n";
}

// The UUIDs libcudart asks cuGetExportTable for (found with objdump): the build provides one
// exactly when its bytes are in .rodata and a relocation points at them (readelf).
TEST_P(TablesToolkit, CudartExportTableUuids) {
  const auto& tk = cuda_toolkit();
  auto wanted = cudart_export_table_uuids(tk.cudart);
  ASSERT_GE(wanted.size(), 3u) << "found too few export-table UUIDs in " << tk.cudart
                               << "; has its code shape changed?";
  json j = tables("exporttables");
  ASSERT_TRUE(j["exporttables"]["found"].get<bool>());
  std::map<std::string, json> provided;
  for (const auto& t : j["exporttables"]["tables"]) provided[t["uuid"]] = t;

  auto rel = readelf_relocs(lib());
  std::set<uint64_t> targets;
  for (const auto& [at, to] : rel.relative) targets.insert(to);
  std::string data = read_file(lib());
  std::optional<ReadelfSection> ro;
  for (const auto& s : readelf_sections(lib()))
    if (s.name == ".rodata") ro = s;
  ASSERT_TRUE(ro);

  std::vector<std::string> has, lacks;
  for (const auto& u : wanted) {
    std::string text = uuid_text(u);
    std::string needle(reinterpret_cast<const char*>(u.data()), 16);
    bool referenced = false;
    for (size_t pos = data.find(needle, ro->offset);
         pos != std::string::npos && pos < ro->offset + ro->size;
         pos = data.find(needle, pos + 1)) {
      referenced |= targets.count(ro->addr + (pos - ro->offset)) > 0;
    }
    EXPECT_EQ(provided.count(text) > 0, referenced) << text;
    if (provided.count(text)) {
      has.push_back(text + (provided[text]["name"].is_null()
                                ? std::string()
                                : " " + provided[text]["name"].get<std::string>()));
      EXPECT_EQ(rel.relative.at(json_hex(provided[text]["entry"])),
                json_hex(provided[text]["uuid_address"]));
    } else {
      lacks.push_back(text);
    }
  }
  std::cout << "[ toolkit ] " << lib() << ": " << tk.cudart << " asks for " << wanted.size()
            << " export tables; provided (" << has.size() << "):";
  for (const auto& s : has) std::cout << " " << s << ";";
  std::cout << " lacking (" << lacks.size() << "):";
  for (const auto& s : lacks) std::cout << " " << s;
  std::cout << "\n";
}

INSTANTIATE_TEST_SUITE_P(Debian, TablesToolkit, ::testing::ValuesIn(driver_builds()),
                         driver_test_name);
// libcuda 580.159.04 from the shared test data (skipped, saying how to get it, when absent).
INSTANTIATE_TEST_SUITE_P(SharedData, TablesToolkit, ::testing::ValuesIn(shared_builds()),
                         driver_test_name);

}  // namespace
}  // namespace cudatool::test
