// What the cross-reference tests compare with: objdump -d's direct calls and jumps and its
// RIP-relative lea operands, an independent C-string test on the file's bytes (located through
// readelf -S), readelf -r's relocations, and the rows of the SQLite file `cudatool index` wrote.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace cudatool::test {

struct ObjdumpXrefs {
  // Direct call/jmp/jcc whose target objdump labels <NAME@plt> (or <NAME@plt+off>), any section.
  std::map<std::string, uint64_t> plt_branches;
  uint64_t plt_branch_total = 0;
  // Direct calls in .text: (site, target).
  std::set<std::pair<uint64_t, uint64_t>> text_calls;
  // lea disp(%rip) operands: (site, target) as objdump's "# target" comment gives it.
  std::vector<std::pair<uint64_t, uint64_t>> rip_leas;
  uint64_t lines = 0;
};
// Runs `objdump -d --no-show-raw-insn -w LIB` (into a file under the test's temp dir) and parses
// it.
ObjdumpXrefs objdump_xrefs(const std::string& lib);

// The test's own reading of "a C string at address A" (docs/xrefs.md): A lies in an SHF_ALLOC
// PROGBITS section that is neither writable nor executable and is not .eh_frame/.eh_frame_hdr;
// from A to the first NUL inside that section there are 1..4096 bytes, each 0x20..0x7e, \t, \n
// or \r. Reads the file's bytes at readelf's sh_offset.
class StringOracle {
 public:
  explicit StringOracle(const std::string& lib);
  [[nodiscard]] bool is_string(uint64_t addr) const;
  [[nodiscard]] std::string text(uint64_t addr) const;

 private:
  std::string bytes_;
  std::vector<ReadelfSection> sections_;
};

// R_X86_64_RELATIVE relocations (readelf -r -W): (slot, addend).
std::vector<std::pair<uint64_t, uint64_t>> readelf_relative(const std::string& lib);

// Rows of a query on an SQLite file, every value as text ("" for NULL).
std::vector<std::vector<std::string>> sqlite_rows(const std::string& db, const std::string& sql);

// "cudatool index LIB -o <temp>/<name>.sqlite"; returns the file (asserts success).
std::string build_index(const std::string& lib, const std::string& name);

}  // namespace cudatool::test
