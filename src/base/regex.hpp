// Regular expressions a user types (xrefs --string /RE/, replay --bisect --fails-if): POSIX
// extended syntax through the C library's regcomp/regexec (glibc adds \w, \s, \b, \<, \>), which
// matches by simulating the automaton rather than by backtracking: a pattern such as ^(\w+\s?)*$
// or ^(.*)*z$ takes polynomial time in the text, where std::regex takes exponential time on it,
// and recursion deep as the text (a crash on a long program output).
#pragma once

#include <regex.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/error.hpp"

namespace cudatool {

class PosixRegex {
 public:
  // An error names the pattern and says what is wrong with it (regerror's words).
  static Result<PosixRegex> compile(const std::string& pattern, bool ignore_case = false);
  // Whether the pattern matches somewhere in `text` (which may hold NULs; no copy is made).
  // A search that fails costs up to the square of the text's length (every start position is
  // tried): meant for short texts such as a string of a library.
  [[nodiscard]] bool search(std::string_view text) const;
  // Whether it matches within one of the lines of `text` (as grep -E reads a file): linear in
  // the text for lines of bounded length, whatever the text's size.
  [[nodiscard]] bool search_lines(std::string_view text) const;

 private:
  struct Free {
    void operator()(regex_t* r) const;
  };
  std::unique_ptr<regex_t, Free> re_;
};

}  // namespace cudatool
