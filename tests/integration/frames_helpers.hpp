// What readelf and eu-readelf say about a file's unwind tables, sections and symbols: the
// independent figures the function map, `addr` and `symbolize` are checked against.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.hpp"

namespace cudatool::test {

struct ReadelfFde {
  uint64_t offset = 0;  // in .eh_frame
  uint64_t cie = 0;     // offset of its CIE
  uint64_t start = 0, end = 0;
};
struct ReadelfFrames {
  std::vector<ReadelfFde> fdes;  // in section order
  std::vector<uint64_t> cies;    // offsets
  uint64_t terminators = 0;
};
// readelf --debug-dump=frames (binutils): "00000018 …24 0000001c FDE cie=00000000 pc=a..b".
ReadelfFrames readelf_frames(const std::string& path);

struct EuFde {
  uint64_t offset = 0;
  uint64_t start = 0, range = 0;
};
// eu-readelf --debug-dump=frames (elfutils): " [    18] FDE length=36 cie=[     0]" followed by
// "initial_location: +0x…" and "address_range: 0x…".
std::vector<EuFde> eu_readelf_fdes(const std::string& path);

const ReadelfSection* find_section(const std::vector<ReadelfSection>& s, const std::string& name);

struct ReadelfSymbol {
  uint64_t value = 0, size = 0;
  std::string type, bind, ndx, name;
};
// readelf -s -W (all symbol tables) or --dyn-syms -W; names without @version.
std::vector<ReadelfSymbol> readelf_symbols(const std::string& path, bool dynamic_only);

// Runs cudatool with args; returns the parsed JSON of stdout (null when it is not JSON), the
// exit status and stderr.
struct JsonRun {
  nlohmann::json json;
  int status = -1;
  int signal = 0;
  bool timed_out = false;
  std::string err;
};
JsonRun cudatool_json_run(const std::vector<std::string>& args, int timeout_s = 120);

uint64_t hex_field(const nlohmann::json& j);  // "0x1a2b" -> 0x1a2b
std::string fmt_hex(uint64_t v);              // 0x1a2b -> "0x1a2b"

}  // namespace cudatool::test
