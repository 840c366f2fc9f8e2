#include "base/regex.hpp"

#include <fmt/format.h>

namespace cudatool {

void PosixRegex::Free::operator()(regex_t* r) const {
  regfree(r);
  delete r;
}

Result<PosixRegex> PosixRegex::compile(const std::string& pattern, bool ignore_case) {
  PosixRegex out;
  auto* r = new regex_t;
  int rc = regcomp(r, pattern.c_str(), REG_EXTENDED | REG_NOSUB | (ignore_case ? REG_ICASE : 0));
  if (rc != 0) {
    char why[256];
    regerror(rc, r, why, sizeof why);
    delete r;  // regcomp frees what it allocated when it fails
    return make_error(fmt::format("/{}/", pattern), "", std::nullopt,
                      fmt::format("not a regular expression (POSIX extended): {}", why));
  }
  out.re_.reset(r);
  return out;
}

bool PosixRegex::search(std::string_view text) const {
  regmatch_t m[1];
  m[0].rm_so = 0;
  m[0].rm_eo = static_cast<regoff_t>(text.size());
  // REG_STARTEND: the text is [rm_so, rm_eo), not a C string.
  return regexec(re_.get(), text.empty() ? "" : text.data(), 1, m, REG_STARTEND) == 0;
}

bool PosixRegex::search_lines(std::string_view text) const {
  while (true) {
    size_t nl = text.find('\n');
    if (search(text.substr(0, nl))) return true;
    if (nl == std::string_view::npos) return false;
    text.remove_prefix(nl + 1);
  }
}

}  // namespace cudatool
