// What a new user meets in the first hour (issue #35): the command list without arguments, the
// README's cuda_probe, compressed libraries, bad globs and filters that select nothing, errors
// under --json, and output options that would replace a file of another kind.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "harness.hpp"
#include "replay_support.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

std::string fixture_libcuda() {
  return fixtures_dir() + "/libcuda_fixture.so.999.88.77";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// The commands of one group of `cudatool --help` (CLI11's listing: a group title line ending in
// ':', then one indented line per command).
std::set<std::string> help_group(const std::string& help, const std::string& title_start) {
  std::set<std::string> names;
  bool in = false;
  for (const std::string& l : lines_of(help)) {
    if (!l.empty() && l[0] != ' ') in = l.rfind(title_start, 0) == 0;
    std::smatch m;
    if (in && std::regex_match(l, m, std::regex(R"(\s+([a-z]+)\s.*)"))) names.insert(m[1]);
  }
  return names;
}

TEST(FirstHour, NoArgumentsListsTheCommandsByGroupWithWhereToReadMore) {
  RunResult r = run({cudatool_bin()});
  EXPECT_EQ(r.status, 2) << "usage: a command is missing";
  RunResult help = run({cudatool_bin(), "--help"});
  ASSERT_EQ(help.status, 0) << help.err;
  std::set<std::string> want_static = help_group(help.out, "Static");
  std::set<std::string> want_dynamic = help_group(help.out, "Dynamic");
  ASSERT_GE(want_static.size(), 10u) << help.out;
  ASSERT_GE(want_dynamic.size(), 5u) << help.out;
  // Every command once, under its group's heading, with a document of this tree to read.
  std::set<std::string>* group = nullptr;
  std::set<std::string> got_static, got_dynamic;
  for (const std::string& l : lines_of(r.out)) {
    if (l.rfind("Static", 0) == 0) group = &got_static;
    if (l.rfind("Dynamic", 0) == 0) group = &got_dynamic;
    std::smatch m;
    if (group == nullptr ||
        !std::regex_match(l, m, std::regex(R"(  ([a-z]+)  +(\S.*\S)  +(\S+))"))) {
      continue;
    }
    EXPECT_TRUE(group->insert(m[1]).second) << "listed twice: " << l;
    EXPECT_TRUE(std::filesystem::exists(source_dir() + "/" + m[3].str()))
        << m[3] << " (where to read more about " << m[1] << ") is not in the tree";
  }
  EXPECT_EQ(got_static, want_static) << r.out;
  EXPECT_EQ(got_dynamic, want_dynamic) << r.out;
  EXPECT_NE(r.out.find("--help"), std::string::npos) << r.out;
}

// README.md runs build/cuda_probe: the default build makes it, and every example names it so.
TEST(FirstHour, CudaProbeIsBuiltAndTheReadmeRunsItFromTheBuild) {
  struct stat st {};
  ASSERT_EQ(::stat(cuda_probe_bin().c_str(), &st), 0) << cuda_probe_bin();
  EXPECT_TRUE(st.st_mode & S_IXUSR);
  RunResult r = run({cuda_probe_bin(), "/nonexistent/libcuda.so.1", "init"});
  EXPECT_EQ(r.status, 3) << "cuda_probe exits 3 when the library cannot be loaded\n" << r.err;
  std::ifstream readme(source_dir() + "/README.md");
  int runs = 0;
  for (std::string l; std::getline(readme, l);) {
    if (l.rfind("$ ", 0) != 0 || l.find("cuda_probe") == std::string::npos) continue;
    ++runs;
    EXPECT_TRUE(std::regex_search(l, std::regex(R"((^|\s)build/cuda_probe\s)"))) << l;
  }
  EXPECT_GT(runs, 0);
}

// Decompresses `path` with the tool and compares info and exports with the plain file.
void expect_same_as_plain(const std::string& plain, const std::string& packed,
                          const std::string& format) {
  SCOPED_TRACE(packed);
  for (const char* cmd : {"info", "exports"}) {
    RunResult a = run({cudatool_bin(), cmd, "--json", plain}, 300);
    RunResult b = run({cudatool_bin(), cmd, "--json", packed}, 300);
    ASSERT_EQ(a.status, 0) << a.err;
    ASSERT_EQ(b.status, 0) << b.err;
    json ja = json::parse(a.out), jb = json::parse(b.out);
    if (std::string(cmd) == "info") {
      EXPECT_EQ(jb["file"]["compression"], format);
      EXPECT_EQ(jb["file"]["size"], std::filesystem::file_size(plain));
      for (json* j : {&ja, &jb}) (*j).erase("file");
    }
    ja.erase("path");
    jb.erase("path");
    EXPECT_EQ(ja, jb) << cmd;
  }
}

TEST(FirstHour, CompressedLibrariesAreReadInMemory) {
  std::string dir = temp_dir() + "/compressed";
  std::filesystem::create_directories(dir);
  std::string plain = dir + "/libcuda_fixture.so.999.88.77";
  std::filesystem::copy_file(fixture_libcuda(), plain);
  for (auto [tool, ext, format] :
       {std::tuple{"xz", ".xz", "xz"}, {"zstd", ".zst", "zstd"}, {"gzip", ".gz", "gzip"}}) {
    RunResult c = run({tool, "-k", "-q", plain});
    ASSERT_EQ(c.status, 0) << tool << ": " << c.err;
    expect_same_as_plain(plain, plain + ext, format);
  }
  // The version still comes from the name, without the compression suffix.
  RunResult i = run({cudatool_bin(), "info", plain + ".zst"});
  EXPECT_NE(i.out.find("999.88.77 (from file name"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("decompressed in memory from zstd"), std::string::npos) << i.out;
  // A damaged stream is one clear error, exit 2.
  std::string xz = read_file(plain + ".xz");
  std::string cut = write_temp("cut.so.xz", xz.substr(0, xz.size() / 2));
  RunResult bad = run({cudatool_bin(), "info", cut});
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("cut.so.xz"), std::string::npos) << bad.err;
}

// NVIDIA's 580.159.04 as the shared data holds it (.xz) against the unpacked copy.
TEST(FirstHour, The580XzIsReadAsItIs) {
  std::vector<DriverBuild> shared = shared_builds();
  ASSERT_FALSE(shared.empty());
  const DriverBuild& b = shared.front();
  CUDATOOL_REQUIRE_BUILD(b);
  expect_same_as_plain(b.lib_path, shared_data_dir(b.xz_name) + "/" + b.xz_name, "xz");
}

TEST(FirstHour, ExportsRefusesABadGlobAndSaysWhenNothingMatches) {
  RunResult r = run({cudatool_bin(), "exports", "--filter", "[", fixture_libcuda()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("never closed"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  json all = json::parse(run({cudatool_bin(), "exports", "--json", fixture_libcuda()}).out);
  r = run({cudatool_bin(), "exports", "--filter", "cuNoSuchCall*", fixture_libcuda()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(
      r.err.find("matches none of the " + std::to_string(all["count"].get<int>()) + " exports"),
      std::string::npos)
      << r.err;
  // Case is the usual typo: say what matches ignoring it.
  std::string name = all["exports"][0]["name"];
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  r = run({cudatool_bin(), "exports", "--filter", upper, fixture_libcuda()});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.err.find("match ignoring case, e.g. " + name), std::string::npos) << r.err;
}

// --arch with no architecture of the file: a malformed value is refused, a well-formed one the
// file lacks is said; both with the architectures the file has (as --summary lists them).
TEST(FirstHour, CubinsArchSaysWhatTheBuildHas) {
  const DriverBuild b = driver_builds().back();
  CUDATOOL_REQUIRE_BUILD(b);
  RunResult s = run({cudatool_bin(), "cubins", "--summary", "--json", b.lib_path}, 300);
  ASSERT_EQ(s.status, 0) << s.err;
  std::set<std::string> archs;
  json summary = json::parse(s.out);  // alive while iterating
  for (const auto& row : summary["by_arch"]) archs.insert(row["arch"]);
  ASSERT_FALSE(archs.empty()) << s.out;
  auto expect_lists = [&](const std::string& err) {
    for (const auto& a : archs) {
      if (a.empty() || a == "sm_?") continue;
      EXPECT_TRUE(std::regex_search(err, std::regex("[ ,]" + a + "( |$|\\n)"))) << a << ": " << err;
    }
  };
  RunResult r = run({cudatool_bin(), "cubins", "--arch", "bogus", b.lib_path}, 300);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--arch bogus: not an architecture"), std::string::npos) << r.err;
  expect_lists(r.err);
  EXPECT_EQ(r.out, "");
  r = run({cudatool_bin(), "cubins", "--arch", "sm_1", b.lib_path}, 300);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no image for architecture sm_1;"), std::string::npos) << r.err;
  expect_lists(r.err);
}

// Under --json an error is one JSON object on stdout, with the exit status kept; the text line
// stays on stderr. Without --json stdout stays empty.
TEST(FirstHour, ErrorsUnderJsonAreOneObjectOnStdout) {
  std::vector<std::vector<std::string>> cases = {
      {"info", "--json", "/nonexistent/libcuda.so.1"},
      {"exports", "--json", "--filter", "[", fixture_libcuda()},
      {"import", "--json", "/nonexistent.jsonl", "-o", temp_dir() + "/never.jsonl"},
      {"decode", "--json", "/nonexistent.jsonl"},
      {"info", "--json", "--no-such-option", fixture_libcuda()},
      {"no-such-command", "--json"},
  };
  for (std::vector<std::string> c : cases) {
    std::string line;
    for (const auto& w : c) line += w + " ";
    SCOPED_TRACE(line);
    c.insert(c.begin(), cudatool_bin());
    RunResult r = run(c);
    EXPECT_EQ(r.status, 2) << r.err;
    json j = json::parse(r.out);  // exactly one document
    ASSERT_TRUE(j.contains("error")) << r.out;
    const json& e = j["error"];
    EXPECT_EQ(e["exit_status"], r.status);
    EXPECT_EQ(e["command"], c[1]);
    // The message is the text of the stderr line.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex("cudatool: error: ([^\\n]*)"))) << r.err;
    EXPECT_EQ(e["message"], m[1].str());
    EXPECT_TRUE(e["reason"].is_string() && !e["reason"].get<std::string>().empty()) << r.out;
    c.erase(std::find(c.begin(), c.end(), "--json"));
    RunResult text = run(c);
    EXPECT_EQ(text.status, r.status);
    EXPECT_EQ(text.out, "");
  }
  // A parser's error keeps its parts.
  std::string notelf = write_temp("not-elf.so", "#!/bin/sh\n");
  RunResult r = run({cudatool_bin(), "info", "--json", notelf});
  json e = json::parse(r.out)["error"];
  EXPECT_NE(e["structure"].get<std::string>().find("not-elf.so"), std::string::npos) << r.out;
  // Success: the command's own document, no error object.
  r = run({cudatool_bin(), "info", "--json", fixture_libcuda()});
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(json::parse(r.out).contains("error"));
}

// Copies `from` to a fresh temporary file named `name`.
std::string copy_to_temp(const std::string& from, const std::string& name) {
  return write_temp(name, read_file(from));
}

// An output option does not replace an existing file of another kind without --force; a file of
// its own kind is replaced.
TEST(FirstHour, OutputsDoNotReplaceAFileOfAnotherKind) {
  std::string lib = copy_to_temp(fixture_libcuda(), "copy.so");
  std::string before = read_file(lib);
  auto refused = [&](std::vector<std::string> argv, const std::string& kind) {
    SCOPED_TRACE(argv[0]);
    argv.insert(argv.begin(), cudatool_bin());
    RunResult r = run(argv);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("exists and is an ELF file"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not " + kind + "; pass --force"), std::string::npos) << r.err;
    EXPECT_TRUE(read_file(lib) == before) << "the file was changed";
  };
  std::string trace = temp_dir() + "/a.jsonl";
  ASSERT_EQ(run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", trace,
                 "--driver-version", "580.159.04"})
                .status,
            0);
  refused({"index", fixture_libcuda(), "-o", lib}, "an SQLite database");
  refused({"import", captures_dir() + "/trace_a.jsonl.xz", "-o", lib}, "a cudatool trace");
  refused({"trace", "-o", lib, "--", "true"}, "a cudatool trace");
  refused({"symbolize", fixture_libcuda(), "-o", lib}, "a symbol file");
  refused({"export", trace, "--format", "perfetto", "-o", lib}, "a JSON file");
  refused({"ab", trace, trace, "--html", lib}, "an HTML page");
  refused({"replay", trace, "-o", lib, "--", "true"}, "a cudatool trace");
  refused({"replay", trace, "--report", lib, "--", "true"}, "a text file");
  // --force replaces it; then it is the output's own kind and is replaced without.
  RunResult r = run({cudatool_bin(), "index", fixture_libcuda(), "-o", lib, "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_file(lib).substr(0, 16), std::string("SQLite format 3\0", 16));
  r = run({cudatool_bin(), "index", fixture_libcuda(), "-o", lib});
  EXPECT_EQ(r.status, 0) << r.err;
  std::string sym = temp_dir() + "/fixture.debug";
  for (int i = 0; i < 2; ++i) {
    r = run({cudatool_bin(), "symbolize", fixture_libcuda(), "-o", sym});
    EXPECT_EQ(r.status, 0) << i << ": " << r.err;
  }
  std::string a2 = temp_dir() + "/a2.jsonl";
  for (int i = 0; i < 2; ++i) {
    r = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", a2 + ".zst"});
    EXPECT_EQ(r.status, 0) << i << ": " << r.err;
  }
  // An empty file is no loss.
  std::string empty = write_temp("empty.out", "");
  r = run({cudatool_bin(), "index", fixture_libcuda(), "-o", empty});
  EXPECT_EQ(r.status, 0) << r.err;
}

}  // namespace
}  // namespace cudatool::test
