// x86-64 instruction length decoding, and where each instruction keeps an address-dependent
// field (a rel32 branch target, a RIP-relative disp32). Enough to fingerprint a function's bytes
// with addresses masked, so the same code at another address in another build matches.
//
// Opcode maps: Intel SDM Vol. 2, Appendix A ("Opcode Map"), legacy, VEX (C4/C5) and EVEX (62)
// encodings in 64-bit mode. This is a length decoder, not a disassembler: beyond the sizes of
// prefixes, opcode, ModRM/SIB, displacement and immediate it keeps only the opcode byte, its map
// and the ModRM byte, which is what the cross-reference sweep (analysis/xrefs) needs to tell a
// call from a jump, a lea from a load.
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
  // The opcode byte and its map: 0 one-byte (legacy), 1 0F, 2 0F 38, 3 0F 3A; VEX/EVEX
  // encodings carry their map field (1..6) and set `vex`.
  uint8_t opcode = 0;
  uint8_t map = 0;
  bool vex = false;
  bool has_modrm = false;
  uint8_t modrm = 0;          // valid when has_modrm
  bool rip_relative = false;  // the addr field is a RIP-relative disp32 (else a rel32 branch)
  bool opsize16 = false;      // a 66 prefix
};

// Decodes one instruction at the start of `code`. Nothing when the bytes are not a valid
// instruction in 64-bit mode or run past the end.
std::optional<Insn> decode_length(ByteView code);

// XXH3 64-bit hash of `code` with every address-dependent field replaced by zeros; decoding stops
// at the first undecodable byte, whose remainder is hashed as is. `insns` receives the number
// of instructions decoded.
uint64_t masked_fingerprint(ByteView code, uint64_t* insns = nullptr);

}  // namespace cudatool::x86
