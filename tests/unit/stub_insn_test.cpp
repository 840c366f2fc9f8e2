// The dispatch decoder's fast path (cuda/stub_insn) must say exactly what Capstone says about
// every instruction it does not hand to Capstone: same length, same kind, same slot, immediate,
// register and target. Checked over every opcode of the one- and two-byte maps with every ModRM
// byte, under the prefixes a stub uses; prefixes it leaves to Capstone must make it answer
// nothing. (tests/integration/x86_length_test.cpp checks the same over the real drivers' .text.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <tuple>
#include <vector>

#include "cuda/stub_insn.hpp"

namespace cudatool::cuda {
namespace {

using Kind = StubInsn::Kind;
using Operand = StubInsn::Operand;

std::string describe(const std::vector<uint8_t>& b) {
  std::string s;
  for (uint8_t x : b) s += fmt::format("{:02x} ", x);
  return s;
}

std::optional<StubInsn> fast(const std::vector<uint8_t>& b, uint64_t at = 0x1000) {
  return decode_stub_insn_fast(ByteView(b.data(), b.size()), at);
}

TEST(StubInsn, StubInstructions) {
  // cmpl $0x321cba00, 0x10(%rip): the teardown guard of every stub.
  auto cmp = fast({0x81, 0x3d, 0x10, 0, 0, 0, 0x00, 0xba, 0x1c, 0x32});
  ASSERT_TRUE(cmp);
  EXPECT_EQ(cmp->kind, Kind::kCmpRipImm);
  EXPECT_EQ(cmp->length, 10);
  EXPECT_EQ(cmp->value, 0x1000u + 10 + 0x10);
  EXPECT_EQ(cmp->imm, 0x321cba00u);
  // call *-0x20(%rip) (580's stubs) and jmp *%rax.
  auto call = fast({0xff, 0x15, 0xe0, 0xff, 0xff, 0xff});
  ASSERT_TRUE(call);
  EXPECT_EQ(call->kind, Kind::kCall);
  EXPECT_EQ(call->operand, Operand::kRip);
  EXPECT_EQ(call->value, 0x1000u + 6 - 0x20);
  auto jmp = fast({0xff, 0xe0});
  ASSERT_TRUE(jmp);
  EXPECT_EQ(jmp->kind, Kind::kJmp);
  EXPECT_EQ(jmp->operand, Operand::kReg);
  // mov $4, %eax; ret: a retired entry point.
  auto mov = fast({0xb8, 4, 0, 0, 0});
  ASSERT_TRUE(mov);
  EXPECT_EQ(mov->kind, Kind::kMovEaxImm);
  EXPECT_EQ(mov->imm, 4u);
  ASSERT_TRUE(fast({0xc3}));
  EXPECT_EQ(fast({0xc3})->kind, Kind::kRet);
  // mov 0x8(%rip), %rax loads the register jmp *%rax then goes through.
  auto load = fast({0x48, 0x8b, 0x05, 8, 0, 0, 0});
  ASSERT_TRUE(load);
  EXPECT_EQ(load->kind, Kind::kMovRegRip);
  EXPECT_EQ(load->reg, jmp->reg);
  EXPECT_EQ(load->value, 0x1000u + 7 + 8);
  // Left to Capstone: a lock prefix, an AVX instruction.
  EXPECT_FALSE(fast({0xf0, 0x48, 0xff, 0x05, 0, 0, 0, 0}));
  EXPECT_FALSE(fast({0xc5, 0xf8, 0x77}));
}

TEST(StubInsn, FastDecoderAgreesWithCapstoneOnEveryEncodingItDecodes) {
  StubDecoder cs;
  ASSERT_TRUE(cs.ok());
  // F3 and F0 only for the few instructions bodies use after them (rep stos, movss, lock
  // cmpxchg…); what the fast decoder claims under them is checked like the rest.
  const std::vector<std::vector<uint8_t>> prefixes = {
      {},     {0x66},       {0x40}, {0x41},       {0x44}, {0x48},       {0x49},
      {0x4c}, {0x66, 0x48}, {0xf3}, {0xf3, 0x48}, {0xf0}, {0xf0, 0x48}, {0xf3, 0x41}};
  // Prefixes the fast decoder must leave to Capstone (REX before 66 is ignored by the CPU; a 66
  // after F3 or F0 is not a stub's).
  const std::vector<std::vector<uint8_t>> refused = {
      {0xf2}, {0x67}, {0x2e}, {0x3e}, {0x64}, {0x48, 0x66}, {0xf3, 0x66}, {0xf0, 0x66}};
  // After the ModRM byte: a SIB byte (base 5 with mod 0 takes a disp32), then displacement and
  // immediate bytes with their sign bits set, so sign extension shows.
  const std::vector<uint8_t> tail = {0x25, 0x88, 0x99, 0xaa, 0xfb, 0xcc, 0xdd, 0xee,
                                     0xff, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85};
  uint64_t claimed = 0, mismatches = 0;
  std::set<std::tuple<std::vector<uint8_t>, int, int>> reported;
  for (int map = 0; map < 2; ++map) {
    for (int op = 0; op < 256; ++op) {
      for (int modrm = 0; modrm < 256; ++modrm) {
        std::vector<uint8_t> body;
        if (map == 1) body.push_back(0x0f);
        body.push_back(static_cast<uint8_t>(op));
        body.push_back(static_cast<uint8_t>(modrm));
        body.insert(body.end(), tail.begin(), tail.end());
        for (const auto& r : refused) {
          std::vector<uint8_t> b = r;
          b.insert(b.end(), body.begin(), body.end());
          if (fast(b) && !(b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa))
            ADD_FAILURE() << "claimed with a prefix left to Capstone: " << describe(b);
        }
        for (const auto& pre : prefixes) {
          std::vector<uint8_t> b = pre;
          b.insert(b.end(), body.begin(), body.end());
          auto mine = fast(b, 0x7ff0);
          if (!mine) continue;
          ++claimed;
          auto ref = cs.decode_capstone(ByteView(b.data(), b.size()), 0x7ff0);
          if (!ref || !(*ref == *mine)) {
            // One report per opcode and prefix set.
            if (++mismatches <= 200 && reported.insert({pre, map, op}).second) {
              ADD_FAILURE() << describe(b) << "(" << cs.text(ByteView(b.data(), b.size()), 0x7ff0)
                            << "): capstone "
                            << (ref ? fmt::format("kind {} len {} op {} reg {:#x} value {:#x} "
                                                  "imm {:#x}",
                                                  int(ref->kind), ref->length, int(ref->operand),
                                                  ref->reg, ref->value, ref->imm)
                                    : std::string("cannot decode"))
                            << "; fast kind " << int(mine->kind) << " len " << int(mine->length)
                            << " op " << int(mine->operand) << " reg " << mine->reg << " value "
                            << mine->value << " imm " << mine->imm;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
  const std::vector<uint8_t> endbr64 = {0xf3, 0x0f, 0x1e, 0xfa};
  EXPECT_EQ(fast(endbr64), cs.decode_capstone(ByteView(endbr64.data(), endbr64.size()), 0x1000));
  // The one- and two-byte instructions of a stub and of the bodies it reaches: hundreds of
  // opcodes times 256 ModRM bytes.
  EXPECT_GT(claimed, 100'000u);
}

// The note printer against Capstone's own text: call / jmp rel32 and rel8 forward and back, and
// FF with every ModRM byte under no REX and REX with every bit (B, X, R, W), with displacements of
// both signs, of 0 and of one digit. What it does not print (SIB, other FF forms) is Capstone's; a
// decoder that only printed notes never opens Capstone.
TEST(StubInsn, NoteTextIsCapstones) {
  StubDecoder cs;
  ASSERT_TRUE(cs.ok());
  const std::vector<std::vector<uint8_t>> prefixes = {{},     {0x41}, {0x48}, {0x49},
                                                      {0x40}, {0x42}, {0x44}, {0x4f}};
  const std::vector<std::vector<uint8_t>> tails = {
      {0x88, 0x99, 0xaa, 0xfb}, {0x08, 0, 0, 0},    {0x10, 0, 0, 0}, {0, 0, 0, 0},
      {0xf8, 0xff, 0xff, 0xff}, {0x09, 0x01, 0, 0}, {0x0a, 0, 0, 0}, {0xf7, 0xff, 0xff, 0xff}};
  uint64_t printed = 0, mismatches = 0;
  auto check = [&](const std::vector<uint8_t>& b) {
    auto mine = stub_insn_text_fast(ByteView(b.data(), b.size()), 0x7ff0);
    if (!mine) return;
    ++printed;
    std::string ref = cs.text_capstone(ByteView(b.data(), b.size()), 0x7ff0);
    if (*mine != ref && ++mismatches <= 50) {
      ADD_FAILURE() << describe(b) << ": capstone \"" << ref << "\", fast \"" << *mine << "\"";
    }
  };
  for (const auto& pre : prefixes) {
    for (const auto& tail : tails) {
      for (uint8_t op : {0xe8, 0xe9, 0xeb}) {
        std::vector<uint8_t> b = pre;
        b.push_back(op);
        b.insert(b.end(), tail.begin(), tail.end());
        check(b);
      }
      for (int modrm = 0; modrm < 256; ++modrm) {
        std::vector<uint8_t> b = pre;
        b.push_back(0xff);
        b.push_back(static_cast<uint8_t>(modrm));
        b.insert(b.end(), tail.begin(), tail.end());
        check(b);
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
  // 8 prefixes x 8 tails x (3 rel forms + the 58 FF ModRM bytes of /2 and /4 without a SIB).
  EXPECT_EQ(printed, 3904u);
  StubDecoder fresh;
  const std::vector<uint8_t> call = {0xff, 0x50, 0x10};
  EXPECT_EQ(fresh.text(ByteView(call.data(), call.size()), 0x1000), "call qword ptr [rax + 0x10]");
  EXPECT_FALSE(fresh.capstone_opened());
}

}  // namespace
}  // namespace cudatool::cuda
