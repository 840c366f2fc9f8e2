// The fixture libraries built by the test build cover what Debian's builds lack: a fwd-compat
// note, odd version suffixes, weak and object exports, a defined symbol version.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "fwd_compat_check.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

std::string fixture(const std::string& name) {
  return fixtures_dir() + "/" + name;
}

json cudatool_json(const std::vector<std::string>& args, int expect_status = 0) {
  std::vector<std::string> argv{cudatool_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv);
  EXPECT_EQ(r.status, expect_status) << r.err;
  return json::parse(r.out);
}

// The fixture's note is framed as libcuda 580.159.04 frames its own (readelf -n on the real
// file: owner "NVIDIA Corporation", note type 0, a descriptor ending in one NUL that Data size
// counts) and holds NVIDIA's four keys, decoded value for value.
TEST(Fixture, FwdCompatNoteMatchesReadelf) {
  std::string lib = fixture("libcuda_fixture.so.999.88.77");
  ReadelfNote rn = readelf_note(lib, ".note.cuda.fwd_compatibility");
  ASSERT_TRUE(rn.found);
  EXPECT_EQ(rn.owner, "NVIDIA Corporation");
  EXPECT_EQ(rn.type, 0);
  ASSERT_GE(rn.desc.size(), 2u);
  EXPECT_EQ(rn.desc.back(), '\0');
  EXPECT_NE(rn.desc[rn.desc.size() - 2], '\0');
  expect_note_matches_readelf(lib);
  json note = cudatool_json({"info", "--json", lib})["fwd_compat_note"];
  EXPECT_TRUE(note["other_keys"].empty()) << note.dump();
  EXPECT_TRUE(note["missing_keys"].empty()) << note.dump();
  EXPECT_FALSE(note["driver_branches"].empty());
  EXPECT_FALSE(note["device_generations"].empty());
}

// Odd but readable forms: a range "7..14", a number written as a string, a number for the CUDA
// version; keys NVIDIA does not write ("Driver", "arch") are listed, never read as its own.
TEST(Fixture, OddNoteFormsAreReadAndUnknownKeysListed) {
  std::string lib = fixture("libcuda_oddnote.so");
  expect_note_matches_readelf(lib);
  json note = cudatool_json({"info", "--json", lib})["fwd_compat_note"];
  json d = json::parse(note["raw"].get<std::string>());
  ASSERT_TRUE(d["device"].back().is_string()) << "the fixture should hold a range";
  std::string range = d["device"].back();
  auto dots = range.find("..");
  ASSERT_NE(dots, std::string::npos);
  int64_t lo = std::stoll(range.substr(0, dots)), hi = std::stoll(range.substr(dots + 2));
  EXPECT_EQ(note["device_generations"].size(), d["device"].size() - 1 + (hi - lo + 1));
  EXPECT_EQ(note["device_generations"].back(), hi);
  EXPECT_TRUE(d["CUDA version"].is_number());
  EXPECT_EQ(note["cuda_version"], d["CUDA version"].dump());
  std::set<std::string> other(note["other_keys"].begin(), note["other_keys"].end());
  EXPECT_TRUE(other.count("Driver") && other.count("arch")) << note.dump();
  RunResult text = run({cudatool_bin(), "info", lib});
  EXPECT_NE(text.out.find("other keys: \"Driver\", \"arch\""), std::string::npos) << text.out;
}

// Damaged notes: the error names the section, the field, the reason and the descriptor's file
// offset (readelf -S: the section's offset + the 12-byte header + the name padded to 4), and
// everything else is still reported.
TEST(Fixture, DamagedNoteIsReportedNotFatal) {
  struct Case {
    const char* lib;
    const char* says;
  };
  for (const Case& c : {Case{"libcuda_badnote.so", "descriptor: descriptor is not valid JSON"},
                        Case{"libcuda_badrange.so", "device[1]: range \"14..7\" runs backwards"}}) {
    SCOPED_TRACE(c.lib);
    RunResult r = run({cudatool_bin(), "info", "--json", fixture(c.lib)});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(".note.cuda.fwd_compatibility: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    uint64_t desc = 0;
    for (const auto& sec : readelf_sections(fixture(c.lib)))
      if (sec.name == ".note.cuda.fwd_compatibility") desc = sec.offset + 12 + 20;
    ASSERT_NE(desc, 0u);
    if (std::string(c.lib) == "libcuda_badrange.so") {
      char at[64];
      std::snprintf(at, sizeof at, "(at file offset %#llx)", static_cast<unsigned long long>(desc));
      EXPECT_NE(r.err.find(at), std::string::npos) << r.err;
    }
    json info = json::parse(r.out);
    EXPECT_EQ(info["fwd_compat_note"]["status"], "damaged");
    EXPECT_NE(info["fwd_compat_note"]["error"].get<std::string>().find(c.says), std::string::npos);
    EXPECT_GT(info["exports"]["total"].get<int>(), 10);  // the rest is still reported
  }
}

TEST(Fixture, AbsentNote) {
  json info = cudatool_json({"info", "--json", fixture("libcuda_plain.so")});
  EXPECT_EQ(info["fwd_compat_note"]["status"], "absent");
  EXPECT_TRUE(info["debuglink"].is_null());
}

TEST(Fixture, ApiNamingOfOddSuffixes) {
  json ex = cudatool_json({"exports", "--json", fixture("libcuda_fixture.so.999.88.77")});
  std::map<std::string, json> by_name;
  for (const auto& e : ex["exports"]) by_name[e["name"]] = e;
  auto check = [&](const std::string& name, const std::string& base, json version, json variant,
                   const std::string& domain) {
    ASSERT_EQ(by_name.count(name), 1u) << name;
    const json& e = by_name[name];
    EXPECT_EQ(e["base"], base) << name;
    EXPECT_EQ(e["api_version"], version) << name;
    EXPECT_EQ(e["variant"], variant) << name;
    EXPECT_EQ(e["domain"], domain) << name;
  };
  check("cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync", 2, "ptsz", "Memcpy");
  check("cuMemcpy3D_v2_ptds", "cuMemcpy3D", 2, "ptds", "Memcpy");
  check("cuCtxCreate_v4", "cuCtxCreate", 4, nullptr, "Ctx");
  check("cuCtxCreate", "cuCtxCreate", nullptr, nullptr, "Ctx");
  check("cuOddCall_v12", "cuOddCall", 12, nullptr, "Odd");
  check("cuNotAVersion_vX", "cuNotAVersion_vX", nullptr, nullptr, "Not");
  check("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", nullptr, nullptr, "PrimaryCtx");
  check("cuGetProcAddress_v2", "cuGetProcAddress", 2, nullptr, "EntryPoint");
  check("cuLaunchKernel_ptsz", "cuLaunchKernel", nullptr, "ptsz", "Launch");
  check("cudbgInjectionPath", "cudbgInjectionPath", nullptr, nullptr, "cudbg");
  check("fixture_not_cuda", "fixture_not_cuda", nullptr, nullptr, "other");
  EXPECT_EQ(by_name["cuWeakEntry"]["binding"], "WEAK");
  EXPECT_EQ(by_name["cudbgDebuggerInitialized"]["type"], "OBJECT");
  // The defined version node, as readelf shows it (cuFixtureVersioned@@CUDA_FIXTURE_1.0).
  RunResult r = run({"readelf", "--dyn-syms", "-W", fixture("libcuda_fixture.so.999.88.77")});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(cuFixtureVersioned@@?(\S+))")));
  EXPECT_EQ(by_name["cuFixtureVersioned"]["symbol_version"], m[1].str());
  EXPECT_FALSE(by_name.count("helper"));  // static helper is not exported
}

TEST(Fixture, FilterAndSummary) {
  std::string lib = fixture("libcuda_fixture.so.999.88.77");
  json ex = cudatool_json({"exports", "--json", "--filter", "cuCtxCreate*", lib});
  EXPECT_EQ(ex["count"], 4);
  json sum = cudatool_json({"exports", "--summary", "--json", "--filter", "*_ptsz", lib});
  EXPECT_EQ(sum["exports"], 4);
  ASSERT_EQ(sum["by_variant"].size(), 1u);
  EXPECT_EQ(sum["by_variant"][0]["variant"], "ptsz");
}

TEST(Fixture, DriverVersionSources) {
  json info =
      cudatool_json({"info", "--json", "--scan-version", fixture("libcuda_fixture.so.999.88.77")});
  EXPECT_EQ(info["driver_version"]["from_file_name"], "999.88.77");
  EXPECT_EQ(info["driver_version"]["from_strings"], "999.88.77");
  // The SONAME symlink resolves to the versioned name.
  json via_link = cudatool_json({"info", "--json", fixture("libcuda_fixture.so.1")});
  EXPECT_EQ(via_link["driver_version"]["from_file_name"], "999.88.77");
  EXPECT_EQ(via_link["driver_version"]["source"], "file name");
}

TEST(Fixture, Sha256MatchesSha256sum) {
  std::string lib = fixture("libcuda_fixture.so.999.88.77");
  json info = cudatool_json({"info", "--json", "--sha256", lib});
  RunResult r = run({"sha256sum", lib});
  EXPECT_EQ(info["file"]["sha256"], r.out.substr(0, 64));
  EXPECT_FALSE(cudatool_json({"info", "--json", lib})["file"].contains("sha256"));
}

TEST(Fixture, SystemLibraryLookupSaysWhichFile) {
  // With LD_LIBRARY_PATH pointing at a directory holding a libcuda.so.1, that one is used.
  std::string dir = temp_dir() + "/ldpath";
  ASSERT_EQ(system(("mkdir -p " + dir + " && cp " + fixture("libcuda_fixture.so.999.88.77") + " " +
                    dir + "/libcuda.so.1")
                       .c_str()),
            0);
  RunResult r = sh("LD_LIBRARY_PATH=" + dir + " " + cudatool_bin() + " info --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("found via LD_LIBRARY_PATH"), std::string::npos) << r.err;
  EXPECT_EQ(json::parse(r.out)["file"]["path"], dir + "/libcuda.so.1");
}

}  // namespace
}  // namespace cudatool::test
