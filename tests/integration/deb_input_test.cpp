// A .deb gives the same facts as the library extracted from it (by dpkg-deb, an independent tool).
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "harness.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

class DebInput : public ::testing::TestWithParam<DriverBuild> {};

TEST_P(DebInput, SameFactsAsExtractedLibrary) {
  const DriverBuild& b = GetParam();
  ASSERT_EQ(access(b.deb_path.c_str(), R_OK), 0)
      << b.deb_path << " missing: run tools/fetch-drivers.sh";
  // Extract with dpkg-deb, independently of cudatool.
  std::string dir = temp_dir() + "/deb-" + b.version;
  RunResult x = sh("rm -rf " + dir + " && mkdir -p " + dir + " && dpkg-deb -x " + b.deb_path + " " +
                   dir + " && find " + dir + " -type f -name 'libcuda.so.*'");
  ASSERT_EQ(x.status, 0) << x.err;
  std::string lib = x.out.substr(0, x.out.find('\n'));
  ASSERT_FALSE(lib.empty());
  for (std::string cmd : {"info", "exports", "imports"}) {
    RunResult from_deb = run({cudatool_bin(), cmd, "--json", b.deb_path});
    RunResult from_lib = run({cudatool_bin(), cmd, "--json", lib});
    ASSERT_EQ(from_deb.status, 0) << from_deb.err;
    ASSERT_EQ(from_lib.status, 0) << from_lib.err;
    json d = json::parse(from_deb.out), l = json::parse(from_lib.out);
    // Only where the bytes came from may differ.
    for (json* j : {&d, &l}) {
      j->erase("path");
      if (j->contains("file")) {
        (*j)["file"].erase("path");
        (*j)["file"].erase("resolved_path");
      }
    }
    EXPECT_EQ(d, l) << cmd;
  }
  RunResult info = run({cudatool_bin(), "info", "--json", b.deb_path});
  json j = json::parse(info.out);
  EXPECT_EQ(j["driver_version"]["from_file_name"], b.version);
  EXPECT_NE(j["file"]["resolved_path"].get<std::string>().find(".deb:usr/lib/"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Debian, DebInput, ::testing::ValuesIn(driver_builds()), driver_test_name);

TEST(DebInputErrors, DamagedPackages) {
  std::string deb = read_file(driver_builds().at(0).deb_path);
  ASSERT_GT(deb.size(), 4096u);
  struct Case {
    std::string name, bytes, mention;
  };
  std::string bad_tar = deb;
  // Flip bytes deep inside the compressed data.tar: the decompressor must say it is damaged.
  for (size_t i = deb.size() / 2; i < deb.size() / 2 + 64; ++i)
    bad_tar[i] = static_cast<char>(~bad_tar[i]);
  std::vector<Case> cases = {
      {"truncated-header", deb.substr(0, 70), "ar member"},
      {"truncated-data", deb.substr(0, deb.size() / 2), "past the end"},
      {"damaged-xz", bad_tar, "damaged"},
      {"only-magic", "!<arch>\n", "without a data.tar"},
  };
  for (const auto& c : cases) {
    RunResult r = run({cudatool_bin(), "info", write_temp(c.name + ".deb", c.bytes)}, 60);
    EXPECT_EQ(r.status, 2) << c.name << ": " << r.err;
    EXPECT_EQ(r.signal, 0) << c.name;
    EXPECT_NE(r.err.find(c.mention), std::string::npos) << c.name << ": " << r.err;
  }
}

}  // namespace
}  // namespace cudatool::test
