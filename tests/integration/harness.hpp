// Shared helpers for integration tests: run a command and capture its output and exit status,
// find the real driver builds, and parse readelf/eu-readelf output (the independent tools whose
// figures cudatool must match).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json_fwd.hpp>

namespace cudatool::test {

struct RunResult {
  std::string out;
  std::string err;
  int status = -1;  // exit status when the process exited
  int signal = 0;   // terminating signal, 0 if it exited
  bool timed_out = false;
};

// Runs argv (no shell) with a wall-clock limit; stdout and stderr captured separately.
RunResult run(const std::vector<std::string>& argv, int timeout_s = 120);
// Runs through /bin/sh -c.
RunResult sh(const std::string& command, int timeout_s = 120);

// Path of the built cudatool binary, fixtures dir, source dir.
std::string cudatool_bin();
std::string fixtures_dir();
std::string source_dir();

// Fixture programs and libraries (tests/fixtures).
std::string nv_client_bin();      // talks to /dev/nvidia* as libcuda does (nv_client.c)
std::string env_client_bin();     // the environment calls libcuda makes (env_client.c)
std::string funcrec_lib();        // the function-recording library (funcrec/libfr_fixture.so)
std::string funcrec_probe_bin();  // its driver program (funcrec/fr_probe)

// Hexadecimal numbers as cudatool prints them ("0x1f"; the prefix is optional).
uint64_t hex_value(const std::string& s);
// A JSON member that must be a hexadecimal string ("0x1f"); throws on anything else.
uint64_t json_hex(const nlohmann::json& v);
// A JSON member that is a number or a hexadecimal string.
uint64_t json_uint(const nlohmann::json& v);

struct DriverBuild {
  std::string package;   // the Debian package; "" for a build from the shared test data
  std::string version;   // upstream version, "550.163.01"
  std::string lib_path;  // <drivers dir>/libcuda.so.<version>, or where a shared one is unpacked
  std::string deb_path;  // the .deb it came from (may be absent; "" for a shared build)
  std::string xz_name;   // shared builds: the file in the shared data directory
};
// For readable test names in gtest output.
inline void PrintTo(const DriverBuild& b, std::ostream* os) {
  *os << b.package << " " << b.version;
}

// Every build in tools/drivers.list, located in $CUDATOOL_DRIVERS or the configured cache dir.
std::vector<DriverBuild> driver_builds();
std::string drivers_dir();
// The cached Debian build of `version`'s libcuda, or "" when it is not among driver_builds().
std::string driver_lib(const std::string& version);

// Real builds that no archive serves and that may not be committed (NVIDIA's binaries): today
// libcuda 580.159.04, the only 570+ build at hand, read as libcuda.so.580.159.04.xz from the
// shared data directory and unpacked into this build tree (<build>/real-data) on first use.
std::vector<DriverBuild> shared_builds();
// $CUDATOOL_SHARED_DATA when set (then only there), else ../shared/data beside the source tree
// (or beside a worktree one level deeper) when it holds the file; "" when none does.
std::string shared_data_dir(const std::string& file);

// Whether a build can be tested: a Debian build must be in the cache (else a failure saying how
// to fetch it); a shared build is unpacked once per build tree (xz -d, then an atomic rename;
// reused while newer than the .xz) or, when the shared data directory lacks it, skipped with
// a message that starts with "SKIPPED:" and says how to get it.
struct BuildReadiness {
  bool ready = false;
  bool skip = false;
  std::string message;
};
BuildReadiness prepare_build(const DriverBuild& b);
// In SetUp() or a test body: fails, skips (shared builds only) or goes on.
#define CUDATOOL_REQUIRE_BUILD(build)                                                 \
  do {                                                                                \
    ::cudatool::test::BuildReadiness ready_ = ::cudatool::test::prepare_build(build); \
    if (ready_.skip) GTEST_SKIP() << ready_.message;                                  \
    ASSERT_TRUE(ready_.ready) << ready_.message;                                      \
  } while (0)

// The directory of the real captures: $CUDATOOL_CAPTURES, else tests/data/captures in the
// source tree (they ship with the project).
std::string captures_dir();
// A capture's text, decompressed (`xz -dc`, the independent tool).
std::string read_capture(const std::string& name);

// Names a test instance after the driver version: "v550_163_01".
std::string driver_test_name(const ::testing::TestParamInfo<DriverBuild>& info);

// Writes bytes to a fresh file under a per-test temporary directory; returns its path.
std::string write_temp(const std::string& name, const std::string& bytes);
std::string read_file(const std::string& path);
std::string temp_dir();

// The share of the rounds of the randomised and exhaustive bad-input tests to run: all by
// default; CUDATOOL_TEST_ROUNDS (a fraction, 0 < x <= 1), set by the ASan+UBSan test preset
// (CMakePresets.json, docs/DEVELOPING.md), runs the first rounds of the same seeds there — each
// round starts a sanitized cudatool (~0.3 s), and the fuzz targets cover the same parsers
// in-process. test_rounds(n): how many of n rounds (at least 1); test_sample(i): whether the
// i-th of an exhaustive series (every truncation) is run.
int test_rounds(int n);
bool test_sample(size_t i);

// The first note of a section as readelf -n -W prints it: owner, "Data size", the type (the
// number of "Unknown note type: (0x…)"; -1 when readelf names the type) and the descriptor bytes
// of "description data: 7b 22 …". found is false when readelf shows no such section.
struct ReadelfNote {
  bool found = false;
  std::string owner;
  uint64_t data_size = 0;
  int64_t type = -1;
  std::string desc;
};
ReadelfNote readelf_note(const std::string& path, const std::string& section);

// readelf -S -W, one entry per section except the NULL one.
struct ReadelfSection {
  int index = 0;
  std::string name, type, flags;
  uint64_t addr = 0, offset = 0, size = 0;
  [[nodiscard]] bool nobits() const { return type == "NOBITS"; }
};
std::vector<ReadelfSection> readelf_sections(const std::string& path);
// readelf -S -W: section name -> size.
std::map<std::string, uint64_t> readelf_section_sizes(const std::string& path);

}  // namespace cudatool::test
