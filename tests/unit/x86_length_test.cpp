#include <gtest/gtest.h>

#include <vector>

#include "base/x86_length.hpp"

namespace cudatool::x86 {
namespace {

struct Case {
  std::vector<uint8_t> bytes;
  int length;
  int addr_offset;  // -1: no address field
};

TEST(X86Length, HandPickedEncodings) {
  // Lengths from the Intel SDM encodings (and checked against `objdump -d` by hand).
  std::vector<Case> cases = {
      {{0xe8, 1, 2, 3, 4}, 5, 1},                                 // call rel32
      {{0x0f, 0x84, 1, 2, 3, 4}, 6, 2},                           // je rel32
      {{0x74, 0x10}, 2, -1},                                      // je rel8
      {{0x48, 0x8d, 0x05, 1, 2, 3, 4}, 7, 3},                     // lea rax,[rip+disp32]
      {{0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, -1},             // movabs rax, imm64
      {{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, 6, -1},              // nopw 0(rax,rax,1)
      {{0xf3, 0x0f, 0x1e, 0xfa}, 4, -1},                          // endbr64
      {{0xc5, 0xf8, 0x77}, 3, -1},                                // vzeroupper
      {{0xc4, 0xe3, 0x79, 0x0f, 0xc1, 0x08}, 6, -1},              // vpalignr xmm0,xmm0,xmm1,8
      {{0x62, 0xf1, 0x7c, 0x48, 0x10, 0x05, 1, 2, 3, 4}, 10, 6},  // vmovups zmm0,[rip+d32]
      {{0xf6, 0xc1, 0x01}, 3, -1},                                // test cl, 1
      {{0xf7, 0xd8}, 2, -1},                                      // neg eax (no immediate)
      {{0x66, 0x81, 0xfa, 0x34, 0x12}, 5, -1},                    // cmp dx, 0x1234
      {{0xc8, 0x10, 0x00, 0x01}, 4, -1},                          // enter 16, 1
      {{0x8b, 0x04, 0x25, 1, 2, 3, 4}, 7, -1},                    // mov eax,[abs32] (SIB, no base)
      {{0x0f, 0x3a, 0x0f, 0xc1, 0x08}, 5, -1},                    // palignr mm0,mm1,8
      {{0xa1, 1, 2, 3, 4, 5, 6, 7, 8}, 9, -1},                    // mov eax, moffs64
  };
  for (const auto& c : cases) {
    auto d = decode_length(ByteView(c.bytes.data(), c.bytes.size()));
    ASSERT_TRUE(d.has_value()) << "case of length " << c.length;
    EXPECT_EQ(d->length, c.length);
    if (c.addr_offset < 0) {
      EXPECT_EQ(d->addr_field_size, 0);
    } else {
      EXPECT_EQ(d->addr_field_offset, c.addr_offset);
      EXPECT_EQ(d->addr_field_size, 4);
    }
  }
}

TEST(X86Length, RejectsTruncatedAndInvalid) {
  std::vector<std::vector<uint8_t>> bad = {
      {},
      {0xe8, 1, 2},
      {0x0f},
      {0x06},
      {0x66, 0x66},
      {0xc4, 0xe3},
      {0x48, 0x8d, 0x05, 1},
      std::vector<uint8_t>(16, 0x66),  // more than 15 bytes of prefixes
  };
  for (const auto& b : bad) EXPECT_FALSE(decode_length(ByteView(b.data(), b.size())).has_value());
}

TEST(X86Length, FingerprintIgnoresAddresses) {
  std::vector<uint8_t> a = {0x55, 0xe8, 1, 0, 0, 0, 0x48, 0x8d, 0x05, 9, 9, 9, 9, 0x5d, 0xc3};
  std::vector<uint8_t> b = {0x55, 0xe8, 7, 7, 0, 0, 0x48, 0x8d, 0x05, 1, 2, 3, 4, 0x5d, 0xc3};
  std::vector<uint8_t> c = {0x55, 0xe8, 1, 0, 0, 0, 0x48, 0x8d, 0x0d, 9, 9, 9, 9, 0x5d, 0xc3};
  uint64_t n = 0;
  EXPECT_EQ(masked_fingerprint(ByteView(a.data(), a.size()), &n),
            masked_fingerprint(ByteView(b.data(), b.size())));
  EXPECT_EQ(n, 5u);
  EXPECT_NE(masked_fingerprint(ByteView(a.data(), a.size())),
            masked_fingerprint(ByteView(c.data(), c.size())));  // other register: other code
}

}  // namespace
}  // namespace cudatool::x86
