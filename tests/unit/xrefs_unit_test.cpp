// The pieces of the cross-reference index that are pure logic: which instruction facts the
// length decoder keeps for the sweep, the C-string rule, the kind names. The index as a whole is
// checked against objdump and readelf in tests/integration/xrefs_*_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/xrefs.hpp"
#include "base/x86_length.hpp"

namespace cudatool {
namespace {

struct Facts {
  std::vector<uint8_t> bytes;
  uint8_t opcode, map;
  bool vex, rip, modrm;
  uint8_t reg;  // ModRM.reg when modrm
};

TEST(XrefsDecoder, KeepsOpcodeMapAndModrm) {
  // Encodings from the Intel SDM, vol. 2 (CALL, JMP, Jcc, LEA, MOV, CMP, VMOVUPS).
  const std::vector<Facts> cases = {
      {{0xe8, 1, 2, 3, 4}, 0xe8, 0, false, false, false, 0},                  // call rel32
      {{0xe9, 1, 2, 3, 4}, 0xe9, 0, false, false, false, 0},                  // jmp rel32
      {{0xeb, 0x10}, 0xeb, 0, false, false, false, 0},                        // jmp rel8
      {{0x0f, 0x85, 1, 2, 3, 4}, 0x85, 1, false, false, false, 0},            // jne rel32
      {{0x48, 0x8d, 0x05, 1, 2, 3, 4}, 0x8d, 0, false, true, true, 0},        // lea rax,[rip+d]
      {{0x48, 0x89, 0x05, 1, 2, 3, 4}, 0x89, 0, false, true, true, 0},        // mov [rip+d],rax
      {{0xff, 0x25, 1, 2, 3, 4}, 0xff, 0, false, true, true, 4},              // jmp *[rip+d]
      {{0xff, 0x15, 1, 2, 3, 4}, 0xff, 0, false, true, true, 2},              // call *[rip+d]
      {{0xc7, 0x05, 1, 2, 3, 4, 9, 0, 0, 0}, 0xc7, 0, false, true, true, 0},  // movl $9,[rip+d]
      {{0x0f, 0x38, 0x00, 0xc1}, 0x00, 2, false, false, true, 0},             // pshufb mm0,mm1
      {{0x62, 0xf1, 0x7c, 0x48, 0x10, 0x05, 1, 2, 3, 4}, 0x10, 1, true, true, true, 0},
  };
  for (const auto& c : cases) {
    auto d = x86::decode_length(ByteView(c.bytes.data(), c.bytes.size()));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->length, c.bytes.size());
    EXPECT_EQ(d->opcode, c.opcode) << int(c.bytes[0]);
    EXPECT_EQ(d->map, c.map) << int(c.bytes[0]);
    EXPECT_EQ(d->vex, c.vex) << int(c.bytes[0]);
    EXPECT_EQ(d->rip_relative, c.rip) << int(c.bytes[0]);
    EXPECT_EQ(d->has_modrm, c.modrm) << int(c.bytes[0]);
    if (c.modrm) {
      EXPECT_EQ((d->modrm >> 3) & 7, c.reg) << int(c.bytes[0]);
    }
  }
}

std::optional<std::string_view> str(const std::string& s) {
  return c_string_at(ByteView(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

TEST(XrefsStrings, TheCStringRule) {
  EXPECT_EQ(str(std::string("out of memory\0x", 15)), "out of memory");
  EXPECT_EQ(str(std::string("a\tb\nc\r\0", 7)), "a\tb\nc\r");
  EXPECT_EQ(str(std::string("d\0", 2)), "d");              // one byte is a string
  EXPECT_FALSE(str(std::string("\0abc", 4)).has_value());  // the empty string is not
  EXPECT_FALSE(str("no terminator").has_value());          // the NUL must be in the section
  EXPECT_FALSE(str(std::string("\x94O\xae\xff\0", 5)).has_value());  // a jump table
  EXPECT_FALSE(str(std::string("esc\x1b[0m\0", 8)).has_value());     // control byte
  std::string longest(CString::kMaxLength, 'x');
  EXPECT_EQ(str(longest + std::string(1, '\0'))->size(), CString::kMaxLength);
  EXPECT_FALSE(str(longest + "x" + std::string(1, '\0')).has_value());
}

TEST(XrefsKinds, NamesRoundTrip) {
  for (int k = 0; k < kRefKinds; ++k) {
    RefKind out{};
    ASSERT_TRUE(parse_ref_kind(ref_kind_name(static_cast<RefKind>(k)), &out));
    EXPECT_EQ(static_cast<int>(out), k);
  }
  RefKind out{};
  EXPECT_FALSE(parse_ref_kind("jump", &out));
}

}  // namespace
}  // namespace cudatool
