// Fuzzes the glob check of exports --filter and trace --devices/--env (src/base/glob_check.hpp):
// any bytes, as one glob and as a comma-separated list. A list is refused when one of its globs
// is, and only then.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/glob_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)cudatool::glob_problem(text);
  bool any_bad = false;
  for (size_t start = 0; start <= text.size();) {
    size_t comma = text.find(',', start);
    std::string_view one =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    any_bad |= !one.empty() && cudatool::glob_problem(one).has_value();
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (cudatool::glob_list_problem(text).has_value() != any_bad) __builtin_trap();
  return 0;
}
