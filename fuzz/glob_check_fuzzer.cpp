// Fuzzes the glob check of exports --filter and trace --devices/--env (src/base/glob_check.hpp):
// any bytes, as one glob and as a comma-separated list. A list is refused when one of its globs
// is, and only then. Made absolute (absolute_glob_list), every entry of a list starts with '/'
// or a wildcard, and as many entries are left as the list had non-empty ones.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/glob_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)cudatool::glob_problem(text);
  bool any_bad = false;
  size_t entries = 0;
  for (size_t start = 0; start <= text.size();) {
    size_t comma = text.find(',', start);
    std::string_view one =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    any_bad |= !one.empty() && cudatool::glob_problem(one).has_value();
    entries += !one.empty();
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (cudatool::glob_list_problem(text).has_value() != any_bad) __builtin_trap();
  std::string abs = cudatool::absolute_glob_list(text, "/home/u/w");
  size_t made = 0;
  for (size_t start = 0; start <= abs.size() && !abs.empty();) {
    size_t comma = abs.find(',', start);
    std::string_view one =
        std::string_view(abs).substr(start, comma == std::string::npos ? comma : comma - start);
    ++made;
    if (one.empty() || (one[0] != '/' && one[0] != '*' && one[0] != '?' && one[0] != '[')) {
      __builtin_trap();
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  // A comma inside an entry cannot appear (entries were split at commas), so the count holds.
  if (made != entries) __builtin_trap();
  return 0;
}
