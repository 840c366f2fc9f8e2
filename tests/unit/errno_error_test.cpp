#include "base/errno_error.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace cudatool {
namespace {

TEST(ErrnoError, NamesTheActionAndTheSystemsText) {
  EXPECT_EQ(errno_text("cannot open", ENOENT),
            std::string("cannot open: ") + std::strerror(ENOENT));
  EXPECT_EQ(errno_text("", EACCES), std::string(std::strerror(EACCES)));
}

TEST(ErrnoError, IsAnErrorOnThePath) {
  Error e = errno_error("/no/such", "cannot stat", ENOENT);
  EXPECT_EQ(e.structure, "/no/such");
  EXPECT_TRUE(e.field.empty());
  EXPECT_FALSE(e.offset.has_value());
  EXPECT_EQ(e.message(), std::string("/no/such: cannot stat: ") + std::strerror(ENOENT));
}

}  // namespace
}  // namespace cudatool
