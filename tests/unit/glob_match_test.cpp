// The one glob matcher (src/base/glob_match.h), as C++ reaches it: case-folding for the --filter
// language and the stack resolver's API library, and the case-sensitive C entry points of the
// recorders and shims, each against fnmatch(3) (FNM_CASEFOLD for the first); lengths, not NULs,
// bound pattern and text.
#include <fnmatch.h>
#include <gtest/gtest.h>

#include <random>
#include <span>
#include <string>

#include "base/glob_match.h"

namespace cudatool {
namespace {

TEST(GlobMatch, FoldCaseWithSetsAndRanges) {
  EXPECT_TRUE(glob_match("nv_esc_*", "NV_ESC_RM_CONTROL", true));
  EXPECT_FALSE(glob_match("nv_esc_*", "NV_ESC_RM_CONTROL"));
  EXPECT_TRUE(glob_match("*control", "NV_ESC_RM_CONTROL", true));
  EXPECT_TRUE(glob_match("/dev/nvidia[0-9]", "/dev/nvidia3", true));
  EXPECT_FALSE(glob_match("/dev/nvidia[!0-9]", "/dev/nvidia3", true));
  EXPECT_TRUE(glob_match("/dev/nvidia[^0-9]*", "/dev/nvidiactl", true));
  EXPECT_TRUE(glob_match("[a-c]", "B", true));
  EXPECT_TRUE(glob_match("a?c", "ABC", true));
  EXPECT_FALSE(glob_match("a?c", "AC", true));
  EXPECT_TRUE(glob_match("[", "[", true));  // an unclosed set is a plain '['
  EXPECT_TRUE(glob_match("*a*a*a*a*b", std::string(40, 'a') + "b", true));
  EXPECT_FALSE(glob_match("*a*a*a*a*b", std::string(40, 'a'), true));
}

// Random patterns built from well-formed pieces (an unterminated '[' is implementation-defined)
// over texts of `alphabet`: the matcher answers as fnmatch(3) with `fnm_flags` does. `match`
// is the entry point under test.
template <class Match>
void agrees_with_fnmatch(std::span<const char* const> pieces, std::string_view alphabet,
                         int fnm_flags, unsigned seed, Match match) {
  std::mt19937 rng(seed);
  int matched = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string p, s;
    for (unsigned n = rng() % 6; n > 0; --n) p += pieces[rng() % pieces.size()];
    for (unsigned n = rng() % 7; n > 0; --n) s.push_back(alphabet[rng() % alphabet.size()]);
    bool want = fnmatch(p.c_str(), s.c_str(), fnm_flags) == 0;
    ASSERT_EQ(match(p, s), want) << "pattern '" << p << "' string '" << s << "'";
    matched += want;
  }
  EXPECT_GT(matched, 1000);  // both outcomes were exercised
}

// The C entry point of the recorders and shims (--devices, --env).
TEST(GlobMatch, AgreesWithFnmatch) {
  const char* pieces[] = {"a",    "b",     "/",    "-",    "*",   "?",   "[ab]",
                          "[!a]", "[a-b]", "[]a]", "[^b]", "\\*", "\\[", "[*?]"};
  agrees_with_fnmatch(pieces, "ab/-[]*?", 0, 7, [](const std::string& p, const std::string& s) {
    return nvtr_glob_match(p.c_str(), s.c_str()) != 0;
  });
}

// Case folding (--filter, --api-lib) against FNM_CASEFOLD.
TEST(GlobMatch, FoldCaseAgreesWithFnmatchCasefold) {
  const char* pieces[] = {"a",     "B",     "/",    "-",    "*",   "?",   "[aB]", "[!a]",
                          "[a-b]", "[A-B]", "[]a]", "[^b]", "\\*", "\\A", "[*?]"};
  agrees_with_fnmatch(
      pieces, "aAbB/-[]*?", FNM_CASEFOLD, 11,
      [](const std::string& p, const std::string& s) { return glob_match(p, s, true); });
}

TEST(GlobMatch, BoundedByLengthsNotNuls) {
  std::string_view pattern("ab*", 2);  // "ab", the '*' outside the view
  EXPECT_TRUE(glob_match(pattern, "ab"));
  EXPECT_FALSE(glob_match(pattern, "abc"));
  std::string text("a\0b", 3);
  EXPECT_TRUE(glob_match("a?b", text));
  EXPECT_FALSE(glob_match("a", text));
}

TEST(GlobMatch, ListMatchesAnyOfItsGlobs) {
  EXPECT_TRUE(nvtr_glob_list_match("/dev/nvidia*,/tmp/fake/*", "/tmp/fake/nvidiactl"));
  EXPECT_FALSE(nvtr_glob_list_match("/dev/nvidia*,/tmp/fake/*", "/dev/null"));
  EXPECT_FALSE(nvtr_glob_list_match(",,", "/dev/null"));  // empty globs match nothing
  EXPECT_FALSE(nvtr_glob_list_match("", ""));
}

}  // namespace
}  // namespace cudatool
