// x86-64 instruction length decoding, and where each instruction keeps an address-dependent
// field (a rel32 branch target, a RIP-relative disp32). Enough to fingerprint a function's bytes
// with addresses masked, so the same code at another address in another build matches.
//
// Opcode maps: Intel SDM Vol. 2, Appendix A ("Opcode Map"), legacy, VEX (C4/C5) and EVEX (62)
// encodings in 64-bit mode. This is a length decoder, not a disassembler: it classifies
// nothing beyond the sizes of prefixes, opcode, ModRM/SIB, displacement and immediate.
#pragma once

#include <cstdint>
#include <optional>

#include "base/bytes.hpp"

namespace cudatool::x86 {

struct Insn {
  uint8_t length = 0;
  // Offset (within the instruction) and size of a field whose value depends on where the code
  // is placed: rel32 of call/jmp/jcc, or the disp32 of a RIP-relative operand. 0 when none.
  uint8_t addr_field_offset = 0;
  uint8_t addr_field_size = 0;
};

// Decodes one instruction at the start of `code`. Nothing when the bytes are not a valid
// instruction in 64-bit mode or run past the end.
std::optional<Insn> decode_length(ByteView code);

// XXH3 64-bit hash of `code` with every address-dependent field replaced by zeros; decoding stops
// at the first undecodable byte, whose remainder is hashed as is. `insns` receives the number
// of instructions decoded.
uint64_t masked_fingerprint(ByteView code, uint64_t* insns = nullptr);

}  // namespace cudatool::x86
