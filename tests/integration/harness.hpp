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

struct DriverBuild {
  std::string package;
  std::string version;   // upstream version, "550.163.01"
  std::string lib_path;  // <drivers dir>/libcuda.so.<version>
  std::string deb_path;  // the .deb it came from (may be absent)
};
// For readable test names in gtest output.
inline void PrintTo(const DriverBuild& b, std::ostream* os) {
  *os << b.package << " " << b.version;
}

// Every build in tools/drivers.list, located in $CUDATOOL_DRIVERS or the configured cache dir.
std::vector<DriverBuild> driver_builds();
std::string drivers_dir();

// The directory of the real captures of ../shared/data: $CUDATOOL_CAPTURES, else ../shared/data
// beside the project (or beside a worktree one level deeper), else /work/shared/data.
std::string captures_dir();
// A capture's text, decompressed (`xz -dc`, the independent tool).
std::string read_capture(const std::string& name);

// Names a test instance after the driver version: "v550_163_01".
std::string driver_test_name(const ::testing::TestParamInfo<DriverBuild>& info);

// Writes bytes to a fresh file under a per-test temporary directory; returns its path.
std::string write_temp(const std::string& name, const std::string& bytes);
std::string read_file(const std::string& path);
std::string temp_dir();

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
