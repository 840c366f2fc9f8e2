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

#include <array>
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

// The opcode tables decode_length reads (Intel SDM Vol. 2, Appendix A).
namespace detail {

// Immediate kinds (SDM A.2.2 operand codes).
enum Imm : uint8_t {
  kNone = 0,
  kIb,      // 1 byte
  kIw,      // 2 bytes
  kIz,      // 2 with operand-size prefix, else 4
  kIv,      // 8 with REX.W, else like Iz (B8+r mov)
  kIwIb,    // ENTER: 2 + 1
  kRel32,   // 4-byte branch displacement (call/jmp/jcc); 2 with 66 (not used in 64-bit code)
  kMoffs,   // A0-A3: 8 bytes (4 with address-size prefix)
  kGroup3,  // F6/F7: ib/iz only when ModRM.reg is 0 or 1 (TEST)
};

struct Op {
  bool valid = false;
  bool modrm = false;
  Imm imm = kNone;
  bool imm_is_byte_group3 = false;  // F6 (ib) vs F7 (iz) for kGroup3
};

using Map = std::array<Op, 256>;

constexpr Op M(Imm i = kNone) {
  return Op{true, true, i, false};
}
constexpr Op N(Imm i = kNone) {
  return Op{true, false, i, false};
}
constexpr Op X() {
  return Op{};
}

constexpr Map make_one_byte() {
  Map m{};
  for (int b = 0; b < 0x40; b += 8) {  // ALU ops: 0x00..0x3f in groups of 8
    m[b + 0] = M();
    m[b + 1] = M();
    m[b + 2] = M();
    m[b + 3] = M();
    m[b + 4] = N(kIb);
    m[b + 5] = N(kIz);
    m[b + 6] = X();  // push/pop seg, invalid in 64-bit mode; 26/2E/36/3E are prefixes
    m[b + 7] = X();
  }
  m[0x0f] = X();  // escape, handled separately
  for (int b = 0x50; b <= 0x5f; ++b) m[b] = N();
  m[0x63] = M();
  m[0x68] = N(kIz);
  m[0x69] = M(kIz);
  m[0x6a] = N(kIb);
  m[0x6b] = M(kIb);
  for (int b = 0x6c; b <= 0x6f; ++b) m[b] = N();
  for (int b = 0x70; b <= 0x7f; ++b) m[b] = N(kIb);  // jcc rel8: position-independent
  m[0x80] = M(kIb);
  m[0x81] = M(kIz);
  m[0x83] = M(kIb);
  for (int b = 0x84; b <= 0x8f; ++b) m[b] = M();
  for (int b = 0x90; b <= 0x9f; ++b) m[b] = N();
  m[0x9a] = X();
  for (int b = 0xa0; b <= 0xa3; ++b) m[b] = N(kMoffs);
  for (int b = 0xa4; b <= 0xa7; ++b) m[b] = N();
  m[0xa8] = N(kIb);
  m[0xa9] = N(kIz);
  for (int b = 0xaa; b <= 0xaf; ++b) m[b] = N();
  for (int b = 0xb0; b <= 0xb7; ++b) m[b] = N(kIb);
  for (int b = 0xb8; b <= 0xbf; ++b) m[b] = N(kIv);
  m[0xc0] = M(kIb);
  m[0xc1] = M(kIb);
  m[0xc2] = N(kIw);
  m[0xc3] = N();
  m[0xc6] = M(kIb);
  m[0xc7] = M(kIz);
  m[0xc8] = N(kIwIb);
  m[0xc9] = N();
  m[0xca] = N(kIw);
  m[0xcb] = N();
  m[0xcc] = N();
  m[0xcd] = N(kIb);
  m[0xcf] = N();
  for (int b = 0xd0; b <= 0xd3; ++b) m[b] = M();
  m[0xd7] = N();
  for (int b = 0xd8; b <= 0xdf; ++b) m[b] = M();  // x87
  for (int b = 0xe0; b <= 0xe7; ++b) m[b] = N(kIb);
  m[0xe8] = N(kRel32);
  m[0xe9] = N(kRel32);
  m[0xeb] = N(kIb);
  for (int b = 0xec; b <= 0xef; ++b) m[b] = N();
  m[0xf1] = N();
  m[0xf4] = N();
  m[0xf5] = N();
  m[0xf6] = Op{true, true, kGroup3, true};
  m[0xf7] = Op{true, true, kGroup3, false};
  for (int b = 0xf8; b <= 0xfd; ++b) m[b] = N();
  m[0xfe] = M();
  m[0xff] = M();
  return m;
}

constexpr Map make_two_byte() {  // 0F xx
  Map m{};
  for (int b = 0; b < 256; ++b) m[b] = M();  // most of the map takes ModRM and no immediate
  m[0x04] = X();
  m[0x05] = N();  // syscall
  m[0x06] = N();
  m[0x07] = N();
  m[0x08] = N();
  m[0x09] = N();
  m[0x0a] = X();
  m[0x0b] = N();  // ud2
  m[0x0c] = X();
  m[0x0e] = N();
  m[0x0f] = M(kIb);  // 3DNow!: ModRM then an opcode byte
  for (int b = 0x24; b <= 0x27; ++b) m[b] = X();
  for (int b = 0x30; b <= 0x37; ++b) m[b] = N();
  m[0x38] = X();  // escapes, handled separately
  m[0x3a] = X();
  for (int b = 0x39; b <= 0x3f; ++b) {
    if (b != 0x3a) m[b] = X();
  }
  for (int b = 0x70; b <= 0x73; ++b) m[b] = M(kIb);
  m[0x77] = N();  // emms
  m[0x7a] = X();
  m[0x7b] = X();
  for (int b = 0x80; b <= 0x8f; ++b) m[b] = N(kRel32);
  m[0xa0] = N();
  m[0xa1] = N();
  m[0xa2] = N();
  m[0xa4] = M(kIb);
  m[0xa6] = X();
  m[0xa7] = X();
  m[0xa8] = N();
  m[0xa9] = N();
  m[0xaa] = N();
  m[0xac] = M(kIb);
  m[0xba] = M(kIb);
  m[0xc2] = M(kIb);
  m[0xc4] = M(kIb);
  m[0xc5] = M(kIb);
  m[0xc6] = M(kIb);
  for (int b = 0xc8; b <= 0xcf; ++b) m[b] = N();  // bswap
  return m;
}

inline constexpr Map kOneByte = make_one_byte();
inline constexpr Map kTwoByte = make_two_byte();

// VEX/EVEX map 1 (0F) opcodes that carry an ib.
constexpr bool vex_map1_has_ib(uint8_t op) {
  return (op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 || op == 0xc5 || op == 0xc6;
}

inline bool is_legacy_prefix(uint8_t b) {
  switch (b) {
    case 0xf0:
    case 0xf2:
    case 0xf3:
    case 0x2e:
    case 0x36:
    case 0x3e:
    case 0x26:
    case 0x64:
    case 0x65:
    case 0x66:
    case 0x67:
      return true;
    default:
      return false;
  }
}

struct ModrmResult {
  bool ok = false;
  uint8_t size = 0;  // modrm + sib + disp
  bool rip_relative = false;
  uint8_t disp_offset = 0;  // within the modrm group
};

inline ModrmResult decode_modrm(const uint8_t* p, uint64_t avail) {
  ModrmResult r;
  if (avail < 1) return r;
  uint8_t modrm = p[0];
  uint8_t mod = modrm >> 6, rm = modrm & 7;
  uint8_t n = 1;
  uint8_t disp = 0;
  if (mod != 3 && rm == 4) {
    if (avail < 2) return r;
    uint8_t base = p[1] & 7;
    n = 2;
    if (mod == 0 && base == 5) disp = 4;
  }
  if (mod == 1) disp = 1;
  if (mod == 2) disp = 4;
  if (mod == 0 && rm == 5) {  // no SIB: RIP-relative (EIP-relative with 67) in 64-bit mode
    disp = 4;
    r.rip_relative = true;
  }
  r.disp_offset = n;
  r.size = n + disp;
  if (r.size > avail) return r;
  r.ok = true;
  return r;
}

}  // namespace detail

// Decodes one instruction at the start of `code`. Nothing when the bytes are not a valid
// instruction in 64-bit mode or run past the end. Defined here, inline, so that its callers' loops
// (the dispatch decoder: ~15,000 instructions per `functions`, the cross-reference sweep: all of
// .text) keep the result in registers instead of unpacking a returned struct field by field.
[[gnu::always_inline]] inline std::optional<Insn> decode_length(ByteView code) {
  using namespace detail;  // NOLINT(google-build-using-namespace): the tables above
  const uint8_t* p = code.data();
  const uint64_t n = code.size() < 15 ? code.size() : 15;  // architectural maximum length
  uint64_t i = 0;
  bool opsize16 = false, addr32 = false, rex_w = false;
  while (i < n && is_legacy_prefix(p[i])) {
    if (p[i] == 0x66) opsize16 = true;
    if (p[i] == 0x67) addr32 = true;
    ++i;
  }
  if (i < n && (p[i] & 0xf0) == 0x40) {
    rex_w = (p[i] & 0x08) != 0;
    ++i;
  }
  if (i >= n) return std::nullopt;

  Insn insn;
  uint8_t b = p[i];
  Op op;
  int vex_map = 0;
  uint8_t opcode = 0;
  if (b == 0xc4 || b == 0xc5 || b == 0x62) {
    // VEX (C4: 2 payload bytes, C5: 1) or EVEX (62: 3 payload bytes). In 64-bit mode these are
    // always prefixes, never LES/LDS/BOUND.
    uint64_t payload = b == 0xc5 ? 1 : b == 0xc4 ? 2 : 3;
    if (i + 1 + payload >= n) return std::nullopt;  // payload and the opcode byte must fit
    vex_map = b == 0xc5 ? 1 : (p[i + 1] & (b == 0x62 ? 0x07 : 0x1f));
    if (b == 0xc4 && (p[i + 2] & 0x80) != 0) rex_w = true;
    i += 1 + payload;
    opcode = p[i++];
    insn.vex = true;
    if (vex_map < 1 || vex_map > 6 || vex_map == 4) return std::nullopt;
    op = M();
    if (vex_map == 3) op.imm = kIb;
    if (vex_map == 1 && vex_map1_has_ib(opcode)) op.imm = kIb;
    if (vex_map == 1 && opcode == 0x77 && b != 0x62) op = N();  // vzeroupper/vzeroall
  } else if (b == 0x0f) {
    ++i;
    if (i >= n) return std::nullopt;
    opcode = p[i++];
    if (opcode == 0x38 || opcode == 0x3a) {
      if (i >= n) return std::nullopt;
      vex_map = opcode == 0x38 ? 2 : 3;
      opcode = p[i++];  // third opcode byte
      op = M(vex_map == 3 ? kIb : kNone);
    } else {
      vex_map = 1;
      op = kTwoByte[opcode];
    }
  } else {
    opcode = b;
    ++i;
    op = kOneByte[opcode];
  }
  if (!op.valid) return std::nullopt;

  insn.opcode = opcode;
  insn.map = static_cast<uint8_t>(vex_map);
  insn.opsize16 = opsize16;
  if (op.modrm) {
    ModrmResult mr = decode_modrm(p + i, n - i);
    if (!mr.ok) return std::nullopt;
    insn.has_modrm = true;
    insn.modrm = p[i];
    if (mr.rip_relative) {
      insn.addr_field_offset = static_cast<uint8_t>(i + mr.disp_offset);
      insn.addr_field_size = 4;
      insn.rip_relative = true;
    }
    uint8_t reg = (p[i] >> 3) & 7;
    i += mr.size;
    if (op.imm == kGroup3) op.imm = reg <= 1 ? (op.imm_is_byte_group3 ? kIb : kIz) : kNone;
  } else if (op.imm == kGroup3) {
    return std::nullopt;
  }

  uint64_t imm = 0;
  switch (op.imm) {
    case kNone:
      break;
    case kIb:
      imm = 1;
      break;
    case kIw:
      imm = 2;
      break;
    case kIz:
      imm = opsize16 ? 2 : 4;
      break;
    case kIv:
      imm = rex_w ? 8 : (opsize16 ? 2 : 4);
      break;
    case kIwIb:
      imm = 3;
      break;
    case kRel32:
      imm = opsize16 ? 2 : 4;
      if (!opsize16) {
        insn.addr_field_offset = static_cast<uint8_t>(i);
        insn.addr_field_size = 4;
      }
      break;
    case kMoffs:
      imm = addr32 ? 4 : 8;
      break;
    case kGroup3:
      break;
  }
  i += imm;
  if (i > n) return std::nullopt;
  insn.length = static_cast<uint8_t>(i);
  return insn;
}

// XXH3 64-bit hash of `code` with every address-dependent field replaced by zeros; decoding stops
// at the first undecodable byte, whose remainder is hashed as is. `insns` receives the number
// of instructions decoded.
uint64_t masked_fingerprint(ByteView code, uint64_t* insns = nullptr);

}  // namespace cudatool::x86
