// glob_problem(): the globs that exports --filter and trace --devices/--env refuse.
#include <fnmatch.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/glob_check.hpp"

namespace cudatool {
namespace {

TEST(GlobCheck, WellFormedGlobsPass) {
  for (const char* p : {"cuMem*", "*_ptsz", "cu?tx*", "[abc]*", "[!a-z]x", "[^0-9]", "[]]", "[]a]",
                        "\\[literal", "/dev/nvidia*", "a\\*b", "[a\\]]"}) {
    EXPECT_EQ(glob_problem(p), std::nullopt) << p;
  }
}

TEST(GlobCheck, MalformedGlobsAreNamed) {
  auto why = glob_problem("[");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("'[' at character 1"), std::string::npos) << *why;
  why = glob_problem("cuCtx[Create");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("character 6"), std::string::npos) << *why;
  why = glob_problem("[z-a]");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("'z-a'"), std::string::npos) << *why;
  why = glob_problem("abc\\");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("quotes nothing"), std::string::npos) << *why;
  EXPECT_TRUE(glob_problem(""));
}

// What is refused as an unclosed set is what fnmatch(3) takes literally: such a pattern matches
// only its own text, so a typo would have selected nothing.
TEST(GlobCheck, UnclosedSetsAreWhatFnmatchTakesLiterally) {
  for (const char* p : {"[", "cu[Ctx", "ab[!c", "x[y"}) {
    ASSERT_TRUE(glob_problem(p)) << p;
    EXPECT_EQ(fnmatch(p, p, 0), 0) << p;
    EXPECT_NE(fnmatch(p, "cuCtx", 0), 0) << p;
  }
}

TEST(GlobCheck, ListsNameTheBadGlob) {
  EXPECT_EQ(glob_list_problem("/dev/nvidia*,/tmp/x/*"), std::nullopt);
  auto why = glob_list_problem("/dev/nvidia*,/tmp/[x");
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("'/tmp/[x': ", 0), 0u) << *why;
  EXPECT_EQ(glob_list_problem("/dev/nvidia*,"), std::nullopt);  // empty entries are skipped
}

TEST(GlobCheck, ListEntriesSkipEmptyOnes) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(glob_list_entries("/dev/nvidia*,,/tmp/x/*,"), (V{"/dev/nvidia*", "/tmp/x/*"}));
  EXPECT_EQ(glob_list_entries(""), V{});
  EXPECT_EQ(glob_list_entries(",,"), V{});
  EXPECT_EQ(glob_list_entries("a"), V{"a"});
}

// A tracer matches absolute paths: a relative glob is taken from the directory given.
TEST(GlobCheck, RelativeGlobsAreTakenFromTheDirectory) {
  EXPECT_EQ(absolute_glob_list("dev/*", "/home/u"), "/home/u/dev/*");
  EXPECT_EQ(absolute_glob_list("./fake/nvidia*,../x/[ab]", "/home/u/w"),
            "/home/u/w/fake/nvidia*,/home/u/x/[ab]");
  EXPECT_EQ(absolute_glob_list("/dev/nvidia*,,*uvm*,?x,[a]b", "/home/u"),
            "/dev/nvidia*,*uvm*,?x,[a]b");
  EXPECT_EQ(absolute_glob_list("", "/home/u"), "");
  // The result matches what the relative glob meant.
  EXPECT_EQ(fnmatch(absolute_glob_list("dev/*", "/tmp/t").c_str(), "/tmp/t/dev/nvidiactl", 0), 0);
}

}  // namespace
}  // namespace cudatool
