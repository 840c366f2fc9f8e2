// Fuzzes the known-differences parser of `ab --expect FILE` (src/ab/known.cpp): the input as a
// file's text, each spec it accepts matched against member and call names made from the input;
// every spec accepted parses again alone, and an accepted member or call never holds a space.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ab/known.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool::ab;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto known = parse_known_text(text, "known.txt");
  if (!known) return 0;
  std::vector<std::string_view> names{"NV_ESC_RM_CONTROL", "NV2080_CTRL_CMD_GR_GET_TPC_MASK",
                                      text.substr(0, 40)};
  size_t n = 0;
  for (const KnownDifference& k : *known) {
    FUZZ_CHECK(k.call.find(' ') == std::string::npos && k.member.find(' ') == std::string::npos);
    auto again = parse_known(k.spec, "again");
    FUZZ_CHECK(again.ok());
    n += known_member_matches(k.member, "params.grInfoList[3].data");
    n += known_member_matches(k.member, text.substr(0, 64));
    n += known_call_matches(k.call, names);
  }
  return n == SIZE_MAX ? 1 : 0;
}
