// One instruction of an exported wrapper, as the dispatch decoder (dispatch.cpp) reads it: only
// what tells a forwarding stub from a body (the teardown guard's compare, a constant in eax, a
// register loaded from a RIP-relative slot, jumps, calls, returns, pushes, conditional branches),
// every other instruction being just its length.
//
// Two decoders give the same answer. The fast one reads the bytes itself (prefixes, opcode and
// ModRM from x86_length, then the operand fields, Intel SDM Vol. 2 chapter 2) and knows only the
// plain general-purpose instructions a stub is made of; for anything else it answers nothing and
// Capstone decodes the instruction, as it decodes the text of every note. Capstone alone cost
// ~3,000 host instructions per decoded instruction, most of it printing the text that only the
// notes read. tests/unit/stub_insn_test.cpp holds the fast decoder to Capstone's answer over
// every opcode, prefix and ModRM it claims; tests/integration/x86_length_test.cpp over the whole
// .text of the real drivers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/bytes.hpp"

struct cs_insn;  // <capstone/capstone.h>, included by the .cpp only

namespace cudatool::cuda {

struct StubInsn {
  enum class Kind : uint8_t {
    kOther,      // anything the dispatch decoder steps over
    kCmpRipImm,  // cmp $imm, slot(%rip): `value` the slot, `imm` the immediate
    kMovEaxImm,  // mov $imm, %eax / %rax: `imm`
    kMovRegRip,  // mov slot(%rip), %reg: `value` the slot, `reg`
    kJmp,        // jmp: `operand` says what through
    kCall,       // call: the same
    kRet,        // ret / ret $n
    kPush,       // push of anything
    kJcc,        // a conditional branch (Capstone's jump group) to `value`
  };
  // What a jmp / call goes through: a RIP-relative slot (`value`), a register (`reg`), an
  // immediate target (`value`), or any other operand (a non-RIP memory operand).
  enum class Operand : uint8_t { kNone, kRip, kReg, kImm, kOther };

  Kind kind = Kind::kOther;
  Operand operand = Operand::kNone;
  uint8_t length = 0;
  // A register as (class << 5) | number: classes 1 = low byte (al … r15b), 2 = high byte (ah …
  // bh), 3 = 16-bit, 4 = 32-bit, 5 = 64-bit; anything else (segment registers …) 0x400 + its
  // Capstone number. Only equality matters.
  uint16_t reg = 0;
  uint64_t value = 0;
  uint32_t imm = 0;

  bool operator==(const StubInsn&) const = default;
};

// The fast decoder: false when the bytes are not one of the plain instructions it knows (then
// Capstone decides), else true with exactly what Capstone would say in `out`. Pointer, length and
// an out-parameter: a 24-byte ByteView and a returned optional travel through the stack, and
// their copies stalled the dispatch decoder's loop on store forwarding.
bool decode_stub_insn_fast(const uint8_t* code, uint64_t size, uint64_t vaddr, StubInsn& out);
inline std::optional<StubInsn> decode_stub_insn_fast(ByteView code, uint64_t vaddr) {
  StubInsn s;
  if (!decode_stub_insn_fast(code.data(), code.size(), vaddr, s)) return std::nullopt;
  return s;
}

// The text of the jumps and calls a dispatch note names (call / jmp rel, and FF /2, /4 through a
// register, [register + displacement] or [rip + displacement]), exactly as Capstone prints them
// in Intel syntax; nothing for any other form (then Capstone prints it).
std::optional<std::string> stub_insn_text_fast(ByteView code, uint64_t vaddr);

// Both decoders behind one Capstone handle, opened on first need (the fast paths answer for
// every instruction and note of the six real builds' stubs: Capstone's first instruction reads
// its table of every x86 instruction, ~0.1 ms a handle). Not thread-safe: one per thread.
class StubDecoder {
 public:
  StubDecoder();
  ~StubDecoder();
  StubDecoder(const StubDecoder&) = delete;
  StubDecoder& operator=(const StubDecoder&) = delete;
  // Whether Capstone can decode x86-64: the handle, once opened; before, whether Capstone was
  // built with x86.
  [[nodiscard]] bool ok() const;

  // The fast decoder, Capstone where it answers nothing; nothing when Capstone cannot decode.
  std::optional<StubInsn> decode(ByteView code, uint64_t vaddr);
  // The same into `out`; false when Capstone cannot decode.
  bool decode(const uint8_t* code, uint64_t size, uint64_t vaddr, StubInsn& out) {
    return decode_stub_insn_fast(code, size, vaddr, out) || decode_slow(code, size, vaddr, out);
  }
  // Capstone alone (the reference the fast decoder is tested against).
  std::optional<StubInsn> decode_capstone(ByteView code, uint64_t vaddr);
  // "mnemonic operands" as Capstone prints them (Intel syntax), for notes: the fast printer's,
  // else Capstone's own.
  std::string text(ByteView code, uint64_t vaddr);
  std::string text_capstone(ByteView code, uint64_t vaddr);
  // Whether Capstone was opened (for the tests of the fast paths).
  [[nodiscard]] bool capstone_opened() const { return opened_; }
  // Instructions Capstone decoded for decode() (the fast decoder did not know them).
  [[nodiscard]] uint64_t capstone_decoded() const { return capstone_decoded_; }

 private:
  bool decode_slow(const uint8_t* code, uint64_t size, uint64_t vaddr, StubInsn& out);
  bool open();  // opens Capstone once; false when it cannot be opened

  bool opened_ = false;
  size_t handle_ = 0;  // csh
  ::cs_insn* insn_ = nullptr;
  uint64_t capstone_decoded_ = 0;
};

}  // namespace cudatool::cuda
