// No command destroys what it reads: an output option (-o, --html, --report) that names one of
// the command's inputs — by the same path, another spelling of it, or a symbolic link to it — is
// refused with exit status 2 before anything is read or written, and the input is byte for byte
// what it was. Before, `export T -o T` died of SIGBUS (its reader's mapping truncated under it)
// and import, index, symbolize and ab --html replaced their input. Also: an output path that
// cannot be written is said at once (index used to say it after the whole sweep), import
// refuses a file that is already a trace, and `export -o - --json` keeps stdout the document.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "harness.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

class Outputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir() + "/outputs";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    trace_ = dir_ + "/a.trace";
    RunResult imp = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o",
                         trace_, "--driver-version", "580.159.04"});
    ASSERT_EQ(imp.status, 0) << imp.err;
    lib_ = dir_ + "/libxrefs.so";
    std::filesystem::copy_file(fixtures_dir() + "/xrefs/stripped/libxrefs.so", lib_);
  }

  // Every spelling of `input` as an output of argv (with "@" standing for it): refused, named,
  // and the input unchanged.
  void expect_refused(std::vector<std::string> argv, const std::string& input) {
    const std::string before = read_file(input);
    const std::string base = input.substr(input.rfind('/') + 1);
    const std::string link = dir_ + "/link-to-" + base;
    std::filesystem::remove(link);
    std::filesystem::create_symlink(input, link);
    for (const std::string& spelling : {input, dir_ + "/./" + base, link}) {
      std::vector<std::string> a = argv;
      for (std::string& s : a) {
        if (s == "@") s = spelling;
      }
      RunResult r = run(a, 120);
      SCOPED_TRACE(::testing::PrintToString(a));
      EXPECT_EQ(r.status, 2) << r.err;
      EXPECT_EQ(r.signal, 0);
      EXPECT_NE(r.err.find("is the input"), std::string::npos) << r.err;
      EXPECT_EQ(read_file(input), before) << "the input was changed";
    }
  }

  std::string dir_, trace_, lib_;
};

TEST_F(Outputs, AnOutputThatIsAnInputIsRefusedAndTheInputKept) {
  expect_refused({cudatool_bin(), "export", trace_, "-o", "@"}, trace_);
  expect_refused({cudatool_bin(), "export", trace_, "-o", "@", "--json"}, trace_);
  expect_refused({cudatool_bin(), "ab", trace_, trace_, "--html", "@"}, trace_);
  const std::string capture = dir_ + "/cap.jsonl";
  {
    std::string text = read_capture("trace_a.jsonl.xz");
    write_temp("outputs/cap.jsonl", text);
  }
  expect_refused({cudatool_bin(), "import", capture, "-o", "@"}, capture);
  expect_refused({cudatool_bin(), "index", lib_, "-o", "@"}, lib_);
  expect_refused({cudatool_bin(), "symbolize", lib_, "-o", "@"}, lib_);
}

TEST_F(Outputs, AnUnwritablePathIsSaidBeforeTheWork) {
  for (auto [out, why] : {std::pair<std::string, std::string>{"", "an empty path"},
                          {dir_, "is a directory"},
                          {dir_ + "/no/such/dir/x.sqlite", "no directory"}}) {
    RunResult r = run({cudatool_bin(), "index", lib_, "-o", out});
    EXPECT_EQ(r.status, 2) << out;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "nothing was indexed";
  }
  RunResult e = run({cudatool_bin(), "export", trace_, "-o", dir_});
  EXPECT_EQ(e.status, 2);
  EXPECT_NE(e.err.find("is a directory"), std::string::npos) << e.err;
  // A new file in an existing directory is fine.
  EXPECT_EQ(run({cudatool_bin(), "index", lib_, "-o", dir_ + "/new.sqlite"}).status, 0);
}

TEST_F(Outputs, ImportRefusesATrace) {
  const std::string out = dir_ + "/again.trace";
  RunResult r = run({cudatool_bin(), "import", trace_, "-o", out});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("already a cudatool trace"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing written";
}

TEST_F(Outputs, ExportToStdoutKeepsStdoutTheDocument) {
  RunResult r = run({cudatool_bin(), "export", trace_, "-o", "-", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json doc = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << "stdout is not one JSON document";
  EXPECT_TRUE(doc.contains("traceEvents"));
  json summary = json::parse(r.err, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.err;
  EXPECT_EQ(summary["schema"], "cudatool.export/1");
  EXPECT_EQ(summary["output"], "-");
  // Every event of the capture (no --filter): its lines, as xz -dc gives them.
  std::string text = read_capture("trace_a.jsonl.xz");
  size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_EQ(summary["exported"], lines);
  EXPECT_GE(doc["traceEvents"].size(), summary["exported"].get<size_t>());
}

}  // namespace
}  // namespace cudatool::test
