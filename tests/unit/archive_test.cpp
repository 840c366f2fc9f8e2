#include <gtest/gtest.h>

#include <string>

#include "base/archive.hpp"
#include "base/decompress.hpp"

namespace cudatool {
namespace {

std::string tar_header(const std::string& name, char type, size_t size,
                       const std::string& link = "") {
  std::string h(512, '\0');
  h.replace(0, name.size(), name);
  std::snprintf(h.data() + 100, 8, "%07o", 0644);
  std::snprintf(h.data() + 124, 12, "%011zo", size);
  h[156] = type;
  h.replace(157, link.size(), link);
  h.replace(257, 6, std::string("ustar\0", 6));
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h.data() + 148, 8, "%06o", sum);
  return h;
}

std::string pad(std::string s) {
  s.append((512 - s.size() % 512) % 512, '\0');
  return s;
}

TEST(Tar, ReadsFilesLinksAndLongNames) {
  std::string long_name(150, 'n');
  std::string t = tar_header("./usr/lib/libcuda.so.1", '2', 0, "libcuda.so.550.1.2");
  t += tar_header("./usr/lib/libcuda.so.550.1.2", '0', 5) + pad("hello");
  t += tar_header("././@LongLink", 'L', long_name.size() + 1) + pad(long_name + '\0');
  t += tar_header("short", '0', 0);
  t += std::string(1024, '\0');
  auto e = read_tar(ByteView(t));
  ASSERT_TRUE(e.ok()) << e.error().message();
  ASSERT_EQ(e->size(), 3u);
  EXPECT_EQ((*e)[0].type, '2');
  EXPECT_EQ((*e)[0].linkname, "libcuda.so.550.1.2");
  EXPECT_EQ((*e)[1].name, "usr/lib/libcuda.so.550.1.2");
  EXPECT_EQ((*e)[1].data.chars(), "hello");
  EXPECT_EQ((*e)[2].name, long_name);
}

TEST(Tar, RejectsBadChecksumAndLyingSize) {
  std::string t = tar_header("f", '0', 5) + pad("hello");
  std::string bad = t;
  bad[0] = 'g';
  EXPECT_FALSE(read_tar(ByteView(bad)).ok());
  std::string lying = tar_header("f", '0', 1u << 30) + pad("hello");
  auto r = read_tar(ByteView(lying));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("past the end"), std::string::npos);
}

TEST(Ar, ReadsMembersAndRejectsDamage) {
  std::string a = "!<arch>\n";
  auto member = [&](const std::string& name, const std::string& data) {
    char h[61];
    std::snprintf(h, sizeof h, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name.c_str(), "0", "0", "0",
                  "100644", data.size());
    a += std::string(h, 60) + data + (data.size() % 2 ? "\n" : "");
  };
  member("debian-binary", "2.0\n");
  member("data.tar", "abc");
  auto m = read_ar(ByteView(a));
  ASSERT_TRUE(m.ok()) << m.error().message();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ((*m)[1].name, "data.tar");
  EXPECT_EQ((*m)[1].data.chars(), "abc");
  EXPECT_FALSE(read_ar(ByteView(a.substr(0, a.size() - 3))).ok());
  EXPECT_FALSE(read_ar(ByteView(std::string_view("garbage!"))).ok());
}

TEST(Decompress, CapStopsBombs) {
  // 64 KiB of zeros, zstd-compressed by the system tool, would be tiny; use raw "none" instead.
  std::string big(1 << 16, '\0');
  auto r = decompress(ByteView(big), Compression::kNone, 1024, "test");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("cap"), std::string::npos);
  EXPECT_EQ(detect_compression(ByteView(std::string_view("\xfd"
                                                         "7zXZ\0\0",
                                                         7))),
            Compression::kXz);
  EXPECT_EQ(detect_compression(ByteView(std::string_view("\x28\xb5\x2f\xfd"))), Compression::kZstd);
  EXPECT_FALSE(decompress(ByteView(std::string_view("\x28\xb5\x2f\xfdjunk")), Compression::kZstd,
                          1 << 20, "t")
                   .ok());
  EXPECT_FALSE(decompress(ByteView(std::string_view("\xfd"
                                                    "7zXZ\0junk",
                                                    10)),
                          Compression::kXz, 1 << 20, "t")
                   .ok());
  EXPECT_FALSE(
      decompress(ByteView(std::string_view("\x1f\x8bjunk")), Compression::kGzip, 1 << 20, "t")
          .ok());
}

}  // namespace
}  // namespace cudatool
