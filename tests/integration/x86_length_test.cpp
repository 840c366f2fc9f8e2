// The x86-64 length decoder used for address-masked fingerprints, and the dispatch decoder's fast
// path built on it (cuda/stub_insn), must agree with Capstone (an independent disassembler) on
// every instruction of the real drivers' .text.
#include <capstone/capstone.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "base/mapped_file.hpp"
#include "base/x86_length.hpp"
#include "cuda/stub_insn_capstone.hpp"
#include "elf/elf_image.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

class X86Length : public ::testing::TestWithParam<DriverBuild> {};

TEST_P(X86Length, AgreesWithCapstoneOnWholeText) {
  CUDATOOL_REQUIRE_BUILD(GetParam());
  auto f = MappedFile::open(GetParam().lib_path);
  ASSERT_TRUE(f.ok());
  auto elf = elf::ElfImage::parse(f->bytes());
  ASSERT_TRUE(elf.ok());
  const auto* text = elf->section(".text");
  ASSERT_NE(text, nullptr);
  ByteView code = *elf->section_bytes(*text);

  csh cs;
  ASSERT_EQ(cs_open(CS_ARCH_X86, CS_MODE_64, &cs), CS_ERR_OK);
  cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
  cs_insn* insn = cs_malloc(cs);
  uint64_t off = 0, agreed = 0, rel = 0, cs_invalid = 0, mismatches = 0;
  uint64_t stub_claimed = 0, stub_mismatches = 0;
  while (off < code.size()) {
    const uint8_t* p = code.data() + off;
    size_t left = code.size() - off;
    uint64_t addr = text->sh_addr + off;
    bool ok = cs_disasm_iter(cs, &p, &left, &addr, insn);
    auto mine = x86::decode_length(*code.sub(off));
    auto stub = cuda::decode_stub_insn_fast(*code.sub(off), text->sh_addr + off);
    if (stub) {
      ++stub_claimed;
      if (!ok || !(*stub == cuda::stub_insn_from_capstone(cs, *insn))) {
        if (++stub_mismatches <= 10) {
          ADD_FAILURE() << "stub decoder at " << std::hex << text->sh_addr + off << std::dec
                        << ": kind " << int(stub->kind) << " length " << int(stub->length)
                        << ", capstone "
                        << (ok ? std::string(insn->mnemonic) + " " + insn->op_str
                               : std::string("cannot decode"));
        }
      }
    }
    if (!ok) {  // bytes Capstone cannot decode (data, padding): step one byte, like objdump
      ++cs_invalid;
      off += 1;
      continue;
    }
    if (!mine || mine->length != insn->size) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << "at " << std::hex << text->sh_addr + off << ": capstone " << std::dec
                      << insn->size << " bytes (" << insn->mnemonic << " " << insn->op_str
                      << "), mine " << (mine ? int(mine->length) : -1);
      }
    } else {
      ++agreed;
      // The address field found must be exactly Capstone's displacement/immediate of a
      // RIP-relative operand or a rel32 branch.
      const cs_x86& x = insn->detail->x86;
      bool rip = false;
      for (int k = 0; k < x.op_count; ++k) {
        if (x.operands[k].type == X86_OP_MEM && x.operands[k].mem.base == X86_REG_RIP) rip = true;
      }
      if (rip) {
        EXPECT_EQ(mine->addr_field_offset, x.encoding.disp_offset)
            << std::hex << text->sh_addr + off;
        EXPECT_EQ(mine->addr_field_size, 4);
        ++rel;
      }
      if (mine->addr_field_size != 0 && !rip) {
        // A rel32 branch: Capstone reports it as the immediate.
        EXPECT_EQ(mine->addr_field_offset, x.encoding.imm_offset)
            << std::hex << text->sh_addr + off;
        EXPECT_EQ(x.encoding.imm_size, 4);
        ++rel;
      }
    }
    off += insn->size;
  }
  cs_free(insn, 1);
  cs_close(&cs);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(stub_mismatches, 0u);
  EXPECT_GT(stub_claimed, agreed / 2);
  EXPECT_GT(agreed, code.size() / 8);
  RecordProperty("instructions", std::to_string(agreed));
  RecordProperty("address_fields", std::to_string(rel));
  std::cout << GetParam().version << ": " << agreed << " instructions agree, " << rel
            << " address fields, " << cs_invalid << " bytes Capstone could not decode; "
            << stub_claimed << " decoded by the stub decoder's fast path\n";
}

INSTANTIATE_TEST_SUITE_P(Debian, X86Length, ::testing::ValuesIn(driver_builds()), driver_test_name);
// libcuda 580.159.04 from the shared test data (skipped, saying how to get it, when absent).
INSTANTIATE_TEST_SUITE_P(SharedData, X86Length, ::testing::ValuesIn(shared_builds()),
                         driver_test_name);

}  // namespace
}  // namespace cudatool::test
