// .eh_frame records built byte by byte here (LSB 5.0 "Exception Frames" layouts), covering what
// the real libcuda builds do not: every pointer encoding GNU tools emit, zPLR / S / "eh"
// augmentations, CIE version 3, 64-bit lengths, and each kind of damage.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "elf/eh_frame.hpp"

namespace cudatool::elf {
namespace {

constexpr uint64_t kVaddr = 0x10000;

class Section {
 public:
  std::vector<uint8_t> b;

  void u8(uint8_t v) { b.push_back(v); }
  void u16(uint16_t v) { raw(&v, 2); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void uleb(uint64_t v) {
    do {
      uint8_t x = v & 0x7f;
      v >>= 7;
      u8(x | (v != 0 ? 0x80 : 0));
    } while (v != 0);
  }
  void sleb(int64_t v) {
    bool more = true;
    while (more) {
      uint8_t x = v & 0x7f;
      v >>= 7;
      more = !((v == 0 && (x & 0x40) == 0) || (v == -1 && (x & 0x40) != 0));
      u8(x | (more ? 0x80 : 0));
    }
  }
  void str(const std::string& s) {
    for (char c : s) u8(static_cast<uint8_t>(c));
    u8(0);
  }
  void raw(const void* p, size_t n) {
    auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
  }
  size_t pos() const { return b.size(); }
  // Encoded pointer `value` at the current position.
  void ptr(uint8_t enc, uint64_t value) {
    if ((enc & 0x70) == kDwEhPePcrel) value -= kVaddr + pos();
    switch (enc & 0x0f) {
      case kDwEhPeAbsptr:
      case kDwEhPeUdata8:
      case kDwEhPeSdata8:
        u64(value);
        break;
      case kDwEhPeUdata4:
      case kDwEhPeSdata4:
        u32(static_cast<uint32_t>(value));
        break;
      case kDwEhPeUdata2:
      case kDwEhPeSdata2:
        u16(static_cast<uint16_t>(value));
        break;
      case kDwEhPeUleb128:
        uleb(value);
        break;
      case kDwEhPeSleb128:
        sleb(static_cast<int64_t>(value));
        break;
    }
  }
  void align4() {
    while (b.size() % 4 != 0) u8(0);  // DW_CFA_nop
  }
  // Patches the length of the record starting at `start` (32-bit form).
  void close(size_t start) {
    align4();
    uint32_t len = static_cast<uint32_t>(b.size() - start - 4);
    std::memcpy(b.data() + start, &len, 4);
  }

  // A CIE; returns its offset.
  size_t cie(const std::string& aug, uint8_t fde_enc = 0x1b, uint8_t version = 1,
             uint8_t lsda_enc = kDwEhPeOmit, uint8_t pers_enc = kDwEhPeOmit) {
    size_t start = pos();
    u32(0);
    u32(0);  // CIE id
    u8(version);
    str(aug);
    if (aug.rfind("eh", 0) == 0) u64(0x1234);
    uleb(1);
    sleb(-8);
    if (version == 1)
      u8(16);
    else
      uleb(16);
    if (!aug.empty() && (aug[0] == 'z' || aug.rfind("ehz", 0) == 0)) {
      Section data;
      data.b = {};
      size_t len_at = pos();
      u8(0);  // augmentation length, patched below (stays < 128)
      size_t data_start = pos();
      for (char ch : aug.substr(aug.find('z') + 1)) {
        if (ch == 'R') u8(fde_enc);
        if (ch == 'L') u8(lsda_enc);
        if (ch == 'P') {
          u8(pers_enc);
          ptr(pers_enc & 0x7f, 0x5000);
        }
      }
      b[len_at] = static_cast<uint8_t>(pos() - data_start);
    }
    u8(0x0c);  // DW_CFA_def_cfa r7 ofs 8
    u8(7);
    u8(8);
    close(start);
    return start;
  }
  // An FDE for [pc, pc+range) using CIE `cie` whose encodings are given again here.
  size_t fde(size_t cie_off, uint64_t pc, uint64_t range, uint8_t enc = 0x1b, bool z = true,
             uint8_t lsda_enc = kDwEhPeOmit, uint64_t lsda = 0) {
    size_t start = pos();
    u32(0);
    u32(static_cast<uint32_t>(pos() - cie_off));
    ptr(enc, pc);
    ptr(enc & 0x0f, range);
    if (z) {
      if (lsda_enc == kDwEhPeOmit) {
        uleb(0);
      } else {
        size_t len_at = pos();
        u8(0);
        size_t s = pos();
        ptr(lsda_enc, lsda);
        b[len_at] = static_cast<uint8_t>(pos() - s);
      }
    }
    u8(0x0e);  // DW_CFA_def_cfa_offset 16
    u8(16);
    close(start);
    return start;
  }
  void terminator() { u32(0); }

  EhFrame read(Diagnostics* d, std::vector<uint64_t> resync = {}, EhFrameOptions opts = {}) const {
    ByteView v(b.data(), b.size(), 0x4000);
    return EhFrame::read(
        v, kVaddr, opts, [resync] { return resync; }, d);
  }
};

std::string all(const Diagnostics& d) {
  std::string s;
  for (const auto& e : d.items()) s += e.message() + "\n";
  return s;
}

TEST(EhFrame, ZrSdata4Pcrel) {
  Section s;
  size_t c = s.cie("zR");
  s.fde(c, 0x1000, 0x40);
  s.fde(c, 0x1040, 0x18);
  s.terminator();
  Diagnostics d;
  EhFrame e = s.read(&d);
  EXPECT_TRUE(d.empty()) << all(d);
  ASSERT_EQ(e.fdes().size(), 2u);
  EXPECT_EQ(e.fdes()[0].pc_begin, 0x1000u);
  EXPECT_EQ(e.fdes()[0].pc_range, 0x40u);
  EXPECT_EQ(e.fdes()[1].pc_begin, 0x1040u);
  EXPECT_EQ(e.cies().size(), 1u);
  EXPECT_EQ(e.cies()[0].augmentation, "zR");
  EXPECT_EQ(e.cies()[0].data_alignment, -8);
  EXPECT_EQ(e.terminators().size(), 1u);
  EXPECT_EQ(e.fde_at(e.fdes()[1].offset), 1u);
}

// Every value format with every application the GNU toolchain uses for FDEs.
TEST(EhFrame, EveryPointerEncoding) {
  const uint8_t encs[] = {0x00, 0x02, 0x03, 0x04, 0x09, 0x0a, 0x0b, 0x0c, 0x01,
                          0x10, 0x12, 0x13, 0x14, 0x19, 0x1a, 0x1b, 0x1c, 0x11};
  for (uint8_t enc : encs) {
    SCOPED_TRACE(eh_encoding_name(enc));
    Section s;
    size_t c = s.cie("zR", enc);
    uint64_t pc =
        (enc & 0x0f) == kDwEhPeUdata2 || (enc & 0x0f) == kDwEhPeSdata2 ? 0x1234 : 0x401000;
    if ((enc & 0x70) == kDwEhPePcrel && ((enc & 0x0f) == 0x02 || (enc & 0x0f) == 0x0a))
      pc = kVaddr + 0x100;  // a 16-bit pc-relative offset must reach
    s.fde(c, pc, 0x77, enc);
    Diagnostics d;
    EhFrame e = s.read(&d);
    EXPECT_TRUE(d.empty()) << all(d);
    ASSERT_EQ(e.fdes().size(), 1u);
    EXPECT_EQ(e.fdes()[0].pc_begin, pc);
    EXPECT_EQ(e.fdes()[0].pc_range, 0x77u);
  }
}

TEST(EhFrame, DatarelAndTextrelUseTheirBases) {
  for (uint8_t enc : {uint8_t{0x33}, uint8_t{0x23}}) {
    Section s;
    size_t c = s.cie("zR", enc);
    s.fde(c, 0x300, 0x10, enc & 0x0f);  // written as a plain offset from the base
    EhFrameOptions o;
    o.text_base = 0x200000;
    o.data_base = 0x300000;
    Diagnostics d;
    EhFrame e = s.read(&d, {}, o);
    ASSERT_EQ(e.fdes().size(), 1u) << all(d);
    EXPECT_EQ(e.fdes()[0].pc_begin, (enc == 0x33 ? 0x300000u : 0x200000u) + 0x300);
  }
}

TEST(EhFrame, ZplrWithPersonalityAndLsda) {
  Section s;
  size_t c = s.cie("zPLR", 0x1b, 1, 0x1b, 0x9b);  // personality indirect|pcrel|sdata4
  s.fde(c, 0x2000, 0x80, 0x1b, true, 0x1b, 0x9000);
  s.fde(c, 0x2080, 0x10, 0x1b, true, 0x1b, 0);  // a null LSDA: none
  Diagnostics d;
  EhFrame e = s.read(&d);
  EXPECT_TRUE(d.empty()) << all(d);
  ASSERT_EQ(e.fdes().size(), 2u);
  EXPECT_TRUE(e.fdes()[0].has_lsda);
  EXPECT_FALSE(e.fdes()[1].has_lsda);
  EXPECT_EQ(e.cies()[0].personality, 0x5000u);
  EXPECT_EQ(e.cies()[0].personality_encoding, 0x9b);
}

TEST(EhFrame, SignalFrameVersion3AndEhAugmentation) {
  Section s;
  size_t c1 = s.cie("zRS");
  size_t c3 = s.cie("zR", 0x1b, 3);
  size_t ceh = s.cie("eh", 0x00);  // GCC 2.x: EH data pointer, absptr FDEs, no 'z'
  s.fde(c1, 0x100, 1);
  s.fde(c3, 0x200, 2);
  s.fde(ceh, 0x300, 3, 0x00, /*z=*/false);
  Diagnostics d;
  EhFrame e = s.read(&d);
  EXPECT_TRUE(d.empty()) << all(d);
  ASSERT_EQ(e.fdes().size(), 3u);
  EXPECT_TRUE(e.cies()[0].signal_frame);
  EXPECT_EQ(e.cies()[1].version, 3);
  EXPECT_EQ(e.fdes()[2].pc_begin, 0x300u);
  EXPECT_EQ(e.fdes()[2].pc_range, 3u);
}

TEST(EhFrame, SixtyFourBitLengths) {
  Section s;
  size_t c = s.pos();
  s.u32(0xffffffff);
  s.u64(0);  // patched
  s.u64(0);  // 64-bit CIE id
  s.u8(1);
  s.str("zR");
  s.uleb(1);
  s.sleb(-8);
  s.u8(16);
  s.uleb(1);
  s.u8(0x1b);
  while ((s.pos() - c) % 8 != 0) s.u8(0);
  uint64_t len = s.pos() - c - 12;
  std::memcpy(s.b.data() + c + 4, &len, 8);
  size_t f = s.pos();
  s.u32(0xffffffff);
  s.u64(0);
  s.u64(s.pos() - c);  // 64-bit CIE pointer
  s.ptr(0x1b, 0x4000);
  s.u32(0x20);
  s.uleb(0);
  while ((s.pos() - f) % 8 != 0) s.u8(0);
  len = s.pos() - f - 12;
  std::memcpy(s.b.data() + f + 4, &len, 8);
  Diagnostics d;
  EhFrame e = s.read(&d);
  EXPECT_TRUE(d.empty()) << all(d);
  ASSERT_EQ(e.fdes().size(), 1u);
  EXPECT_TRUE(e.fdes()[0].dwarf64);
  EXPECT_EQ(e.fdes()[0].pc_begin, 0x4000u);
  EXPECT_EQ(e.fdes()[0].pc_range, 0x20u);
}

TEST(EhFrame, TruncatedRecordResumesAtAKnownStart) {
  Section s;
  size_t c = s.cie("zR");
  size_t f0 = s.fde(c, 0x100, 0x10);
  size_t f1 = s.fde(c, 0x110, 0x10);
  size_t f2 = s.fde(c, 0x120, 0x10);
  uint32_t huge = 0x7fff0000;
  std::memcpy(s.b.data() + f1, &huge, 4);
  Diagnostics d;
  EhFrame e = s.read(&d, {f2, f0, f1});
  ASSERT_EQ(d.count(), 1u) << all(d);
  EXPECT_NE(all(d).find("runs past the end of the section"), std::string::npos) << all(d);
  ASSERT_EQ(e.fdes().size(), 2u);
  EXPECT_EQ(e.fdes()[1].pc_begin, 0x120u);
  EXPECT_TRUE(e.fdes()[1].resynced);
  EXPECT_EQ(e.skipped_bytes(), f2 - f1);
  // Without known starts the rest is lost, and said so.
  Diagnostics d2;
  EXPECT_EQ(s.read(&d2).fdes().size(), 1u);
  EXPECT_EQ(d2.count(), 1u);
}

TEST(EhFrame, CiePointersOutOfRange) {
  Section s;
  size_t c = s.cie("zR");
  size_t f0 = s.fde(c, 0x100, 0x10);
  size_t f1 = s.fde(c, 0x110, 0x10);
  size_t f2 = s.fde(c, 0x120, 0x10);
  uint32_t before = static_cast<uint32_t>(f0 + 4 + 100);  // before the section
  std::memcpy(s.b.data() + f0 + 4, &before, 4);
  uint32_t to_fde = static_cast<uint32_t>(f2 + 4 - f1);  // at another FDE
  std::memcpy(s.b.data() + f2 + 4, &to_fde, 4);
  Diagnostics d;
  EhFrame e = s.read(&d);
  ASSERT_EQ(e.fdes().size(), 1u);
  EXPECT_EQ(e.fdes()[0].pc_begin, 0x110u);
  EXPECT_EQ(d.count(), 2u) << all(d);
  EXPECT_NE(all(d).find("points before the start of the section"), std::string::npos);
  EXPECT_NE(all(d).find("not the start of a CIE"), std::string::npos);
  EXPECT_EQ(e.damaged(), 2u);
}

TEST(EhFrame, UnknownEncodingsAndAugmentations) {
  Section s;
  size_t bad_enc = s.cie("zR", 0x0e);  // format 0x0e is undefined
  size_t bad_aug = s.cie("xyz");       // unknown, no 'z' length: unusable
  size_t fwd = s.cie("zRX", 0x1b);     // unknown after 'z': skipped by length, usable
  size_t good = s.cie("zR");
  s.fde(bad_enc, 0x100, 1);
  s.fde(bad_aug, 0x200, 1);
  s.fde(fwd, 0x300, 1);
  s.fde(good, 0x400, 1);
  Diagnostics d;
  EhFrame e = s.read(&d);
  ASSERT_EQ(e.fdes().size(), 2u) << all(d);
  EXPECT_EQ(e.fdes()[0].pc_begin, 0x300u);
  EXPECT_EQ(e.fdes()[1].pc_begin, 0x400u);
  EXPECT_NE(all(d).find("0x0e?"), std::string::npos) << all(d);
  EXPECT_NE(all(d).find("\"xyz\""), std::string::npos) << all(d);
  EXPECT_EQ(d.count(), 4u) << all(d);  // two CIEs, and each FDE that uses one
}

TEST(EhFrame, ZeroTerminatorInTheMiddle) {
  Section s;
  size_t c = s.cie("zR");
  s.fde(c, 0x100, 0x10);
  s.terminator();
  s.terminator();  // padding after it: the same terminator
  s.fde(c, 0x110, 0x10);
  s.terminator();
  Diagnostics d;
  EhFrame e = s.read(&d);
  EXPECT_EQ(e.fdes().size(), 2u);
  EXPECT_EQ(e.terminators().size(), 2u);
  ASSERT_EQ(d.count(), 1u) << all(d);
  EXPECT_NE(all(d).find("1 FDEs follow it"), std::string::npos) << all(d);
  // Found through .eh_frame_hdr without section headers, the first terminator ends it.
  EhFrameOptions o;
  o.stop_at_terminator = true;
  Diagnostics d2;
  EXPECT_EQ(s.read(&d2, {}, o).fdes().size(), 1u);
  EXPECT_TRUE(d2.empty());
}

TEST(EhFrame, ShortRecordIsSteppedOver) {
  Section s;
  size_t c = s.cie("zR");
  s.u32(2);  // a record too short for its CIE pointer: 2 bytes follow
  s.u16(0);
  s.fde(c, 0x120, 0x10);
  Diagnostics d;
  EhFrame e = s.read(&d);
  ASSERT_EQ(e.fdes().size(), 1u) << all(d);
  EXPECT_EQ(e.fdes()[0].pc_begin, 0x120u);
  EXPECT_NE(all(d).find("too short"), std::string::npos) << all(d);
}

TEST(EhFrame, ReservedLengthEndsTheWalkWithoutKnownStarts) {
  Section s;
  size_t c = s.cie("zR");
  size_t f0 = s.fde(c, 0x100, 0x10);
  s.fde(c, 0x120, 0x10);
  uint32_t reserved = 0xfffffff3;
  std::memcpy(s.b.data() + f0, &reserved, 4);
  Diagnostics d;
  EhFrame e = s.read(&d, {f0});  // the only known start is the broken one
  EXPECT_NE(all(d).find("reserved value"), std::string::npos) << all(d);
  EXPECT_EQ(e.fdes().size(), 0u);
  EXPECT_EQ(e.skipped_bytes(), s.b.size() - f0);
}

TEST(EhFrame, EmptyAndTinyInputs) {
  for (size_t n = 0; n < 12; ++n) {
    std::vector<uint8_t> b(n, 0xab);
    Diagnostics d;
    EhFrame e = EhFrame::read(ByteView(b.data(), b.size()), 0, {}, nullptr, &d);
    EXPECT_TRUE(e.fdes().empty());
    EXPECT_EQ(d.empty(), n == 0);
  }
}

}  // namespace
}  // namespace cudatool::elf
