// base/short_key.hpp: keys of up to 7 bytes as integers for a switch; the length keeps a key
// with a NUL apart from its prefix, and longer keys all map to kLongKey.
#include "base/short_key.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace cudatool {
namespace {

TEST(ShortKey, DistinctKeysAreDistinctIntegers) {
  const std::string with_nul("seq\0", 4);
  std::set<uint64_t> seen;
  for (std::string_view k :
       {std::string_view(""), std::string_view("t"), std::string_view("tid"),
        std::string_view("seq"), std::string_view(with_nul), std::string_view("sys"),
        std::string_view("pre"), std::string_view("post"), std::string_view("content")}) {
    EXPECT_NE(short_key(k), kLongKey) << k;
    EXPECT_TRUE(seen.insert(short_key(k)).second) << k;
  }
  EXPECT_NE(short_key("seq"), short_key(with_nul));
  EXPECT_NE(short_key("t"), short_key(std::string_view("t\0\0", 3)));
}

TEST(ShortKey, LongKeysAreOneValueThatNoShortKeyHas) {
  for (std::string_view k : {"sized_by", "stack_ref", "stack_error", "unrecorded"}) {
    EXPECT_EQ(short_key(k), kLongKey) << k;
  }
  // The largest short key: seven 0xff bytes and the length 7 in the top byte.
  EXPECT_NE(short_key("\xff\xff\xff\xff\xff\xff\xff"), kLongKey);
  static_assert(short_key("seq") == (0x716573ull | (3ull << 56)));
}

}  // namespace
}  // namespace cudatool
