#include "cuda/stub_insn.hpp"

#include <capstone/capstone.h>
#include <fmt/format.h>

#include <array>
#include <string_view>

#include "base/x86_length.hpp"
#include "cuda/stub_insn_capstone.hpp"

namespace cudatool::cuda {
namespace {

using Kind = StubInsn::Kind;
using Operand = StubInsn::Operand;

enum RegClass : uint16_t { kLow8 = 1, kHigh8 = 2, kR16 = 3, kR32 = 4, kR64 = 5 };

constexpr uint16_t reg_code(RegClass c, unsigned num) {
  return static_cast<uint16_t>((c << 5) | num);
}

// The 64-bit registers by number (REX.B / REX.R the high bit), as Capstone names them.
constexpr std::array<std::string_view, 16> kReg64 = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp",
                                                     "rsi", "rdi", "r8",  "r9",  "r10", "r11",
                                                     "r12", "r13", "r14", "r15"};

// The operand fields of one instruction that x86::decode_length has measured.
struct Fields {
  const uint8_t* p;  // the instruction's first byte
  x86::Insn insn;
  uint64_t next;  // vaddr of the next instruction
  bool rex = false, rex_w = false, rex_r = false, rex_b = false;
  uint8_t mod = 0, reg = 0, rm = 0;  // ModRM, when present

  [[nodiscard]] int64_t tail_i8() const { return static_cast<int8_t>(p[insn.length - 1]); }
  [[nodiscard]] int64_t tail_i32() const {
    return static_cast<int32_t>(load_le<uint32_t>(p + insn.length - 4));
  }
  // A RIP-relative memory operand's address (the disp32 is where x86_length found it).
  [[nodiscard]] uint64_t rip_target() const {
    return next + static_cast<uint64_t>(static_cast<int64_t>(
                      static_cast<int32_t>(load_le<uint32_t>(p + insn.addr_field_offset))));
  }
  [[nodiscard]] uint64_t rel_target(int64_t rel) const { return next + static_cast<uint64_t>(rel); }
};

// What may follow the 66 and REX prefixes the fast decoder reads: another prefix (a second 66, a
// REX that is not last, lock, rep, an address-size or segment override) or a VEX / EVEX escape
// are left to Capstone. One table lookup per instruction instead of sixteen compares.
constexpr std::array<bool, 256> kLeftToCapstone = [] {
  std::array<bool, 256> t{};
  for (int b = 0x40; b <= 0x4f; ++b) t[b] = true;
  for (int b : {0x66, 0xc4, 0xc5, 0x62, 0xf0, 0xf2, 0xf3, 0x67, 0x2e, 0x3e, 0x26, 0x36, 0x64, 0x65})
    t[b] = true;
  return t;
}();

StubInsn make(Kind k, const Fields& f) {
  StubInsn s;
  s.kind = k;
  s.length = f.insn.length;
  return s;
}

// jmp / call through FF /2, FF /4: a register, a RIP-relative slot or another memory operand.
StubInsn indirect(Kind k, const Fields& f) {
  StubInsn s = make(k, f);
  if (f.mod == 3) {
    s.operand = Operand::kReg;
    s.reg = reg_code(kR64, f.rm | (f.rex_b ? 8u : 0u));
  } else if (f.insn.rip_relative) {
    s.operand = Operand::kRip;
    s.value = f.rip_target();
  } else {
    s.operand = Operand::kOther;
  }
  return s;
}

// mov slot(%rip), %reg (8A: byte register, 8B: by REX.W and 66).
std::optional<StubInsn> mov_load(const Fields& f) {
  if (!f.insn.rip_relative) return make(Kind::kOther, f);
  StubInsn s = make(Kind::kMovRegRip, f);
  s.value = f.rip_target();
  unsigned num = f.reg | (f.rex_r ? 8u : 0u);
  if (f.insn.opcode == 0x8a) {
    if (f.insn.opsize16) return std::nullopt;
    // Without a REX prefix, byte registers 4..7 are ah, ch, dh, bh (SDM Vol. 2 §2.2.1.2).
    s.reg = !f.rex && num >= 4 ? reg_code(kHigh8, num - 4) : reg_code(kLow8, num);
  } else {
    s.reg = reg_code(f.rex_w ? kR64 : f.insn.opsize16 ? kR16 : kR32, num);
  }
  return s;
}

// cmp $imm, r/m (80 /7, 81 /7, 83 /7): Capstone's immediate, sign-extended, as 32 bits.
std::optional<StubInsn> compare(const Fields& f) {
  if (!f.insn.rip_relative) return make(Kind::kOther, f);
  if (f.insn.opsize16) return std::nullopt;
  StubInsn s = make(Kind::kCmpRipImm, f);
  s.value = f.rip_target();
  // 80 compares a byte: Capstone keeps its immediate unsigned; 83's is sign-extended.
  s.imm = f.insn.opcode == 0x80   ? f.p[f.insn.length - 1]
          : f.insn.opcode == 0x81 ? static_cast<uint32_t>(f.tail_i32())
                                  : static_cast<uint32_t>(f.tail_i8());
  return s;
}

// One-byte opcode map (SDM Vol. 2 Table A-2), the plain general-purpose instructions only.
std::optional<StubInsn> one_byte(const Fields& f) {
  const uint8_t op = f.insn.opcode;
  const bool o16 = f.insn.opsize16;
  if (op < 0x40) return make(Kind::kOther, f);  // ALU rows (x86_length rejected x6/x7)
  if (op >= 0x50 && op <= 0x57) return o16 ? std::nullopt : std::optional(make(Kind::kPush, f));
  if (op >= 0x58 && op <= 0x5f) return o16 ? std::nullopt : std::optional(make(Kind::kOther, f));
  if (op >= 0x70 && op <= 0x7f) {
    if (o16) return std::nullopt;
    StubInsn s = make(Kind::kJcc, f);
    s.value = f.rel_target(f.tail_i8());
    return s;
  }
  if ((op >= 0x84 && op <= 0x89) || (op >= 0x90 && op <= 0x99) || op == 0xa8 || op == 0xa9 ||
      (op >= 0xb0 && op <= 0xb7) || op == 0x63 || op == 0x69 || op == 0x6b || op == 0xc9 ||
      op == 0xcc)
    return make(Kind::kOther, f);
  switch (op) {
    case 0x68:
    case 0x6a:
      return o16 ? std::nullopt : std::optional(make(Kind::kPush, f));
    case 0x80:
    case 0x81:
    case 0x83:
      return f.reg == 7 ? compare(f) : std::optional(make(Kind::kOther, f));
    case 0x8a:
    case 0x8b:
      return mov_load(f);
    case 0x8d:  // lea: a register operand is undefined
      return f.mod == 3 ? std::nullopt : std::optional(make(Kind::kOther, f));
    case 0xc0:
    case 0xc1:
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3:  // shifts; /6 is an undocumented alias
      return f.reg == 6 ? std::nullopt : std::optional(make(Kind::kOther, f));
    case 0xc2:
    case 0xc3:
      return o16 ? std::nullopt : std::optional(make(Kind::kRet, f));
    case 0xc6:
      return f.reg == 0 ? std::optional(make(Kind::kOther, f)) : std::nullopt;
    case 0xc7: {
      if (f.reg != 0) return std::nullopt;  // C7 F8 is xbegin
      // mov $imm32, %eax (or %rax, sign-extended: the same low 32 bits).
      if (f.mod != 3 || f.rm != 0 || f.rex_b || o16) return make(Kind::kOther, f);
      StubInsn s = make(Kind::kMovEaxImm, f);
      s.imm = static_cast<uint32_t>(f.tail_i32());
      return s;
    }
    case 0xe8:
    case 0xe9:
    case 0xeb: {
      if (o16) return std::nullopt;
      StubInsn s = make(op == 0xe8 ? Kind::kCall : Kind::kJmp, f);
      s.operand = Operand::kImm;
      s.value = f.rel_target(op == 0xeb ? f.tail_i8() : f.tail_i32());
      return s;
    }
    case 0xf6:
    case 0xf7:
      return f.reg == 1 ? std::nullopt : std::optional(make(Kind::kOther, f));
    case 0xfe:
      return f.reg <= 1 ? std::optional(make(Kind::kOther, f)) : std::nullopt;
    case 0xff:
      if (f.reg <= 1) return make(Kind::kOther, f);
      if (o16) return std::nullopt;
      if (f.reg == 2) return indirect(Kind::kCall, f);
      if (f.reg == 4) return indirect(Kind::kJmp, f);
      if (f.reg == 6) return make(Kind::kPush, f);
      return std::nullopt;  // far call / jmp, undefined
    default:
      break;
  }
  if (op >= 0xb8 && op <= 0xbf) {
    // B8+r: mov $imm32, %r32; with REX.W Capstone calls it movabs (a 64-bit immediate).
    unsigned num = (op & 7u) | (f.rex_b ? 8u : 0u);
    if (f.rex_w || o16 || num != 0) return make(Kind::kOther, f);
    StubInsn s = make(Kind::kMovEaxImm, f);
    s.imm = static_cast<uint32_t>(f.tail_i32());
    return s;
  }
  return std::nullopt;
}

// The SSE and MMX data moves of function bodies (no immediate): movups / movupd, movaps /
// movapd, movd / movq, movq / movdqa, pxor; with 66 only, punpcklqdq / punpckhqdq. Bodies a
// dispatch path reaches save and clear vector registers with them; Capstone's first
// instruction costs ~0.1 ms (its table of every x86 instruction is read once per handle).
constexpr bool is_sse_move(uint8_t op, bool o16) {
  return op == 0x10 || op == 0x11 || op == 0x28 || op == 0x29 || op == 0x6e || op == 0x7e ||
         op == 0x6f || op == 0x7f || op == 0xef || (o16 && (op == 0x6c || op == 0x6d));
}

// After an F3 (rep) or F0 (lock) prefix, the few instructions bodies use: rep stos / movs;
// movss, movq, movdqu; lock cmpxchg and xadd on memory. All others are left to Capstone.
bool rep_or_lock_known(uint8_t prefix, const x86::Insn& insn) {
  const uint8_t op = insn.opcode;
  if (prefix == 0xf3) {
    if (insn.map == 0) return op == 0xa4 || op == 0xa5 || op == 0xaa || op == 0xab;
    return op == 0x10 || op == 0x11 || op == 0x6f || op == 0x7f || op == 0x7e;
  }
  return insn.map == 1 && (op == 0xb0 || op == 0xb1 || op == 0xc0 || op == 0xc1) &&
         insn.has_modrm && (insn.modrm >> 6) != 3;
}

// Two-byte opcode map (0F xx, SDM Vol. 2 Table A-3): nop, cmov, jcc, setcc, imul, movzx/movsx.
std::optional<StubInsn> two_byte(const Fields& f) {
  const uint8_t op = f.insn.opcode;
  if (op >= 0x80 && op <= 0x8f) {
    if (f.insn.opsize16) return std::nullopt;
    StubInsn s = make(Kind::kJcc, f);
    s.value = f.rel_target(f.tail_i32());
    return s;
  }
  // nop r/m: Capstone decodes only the memory forms.
  if (op == 0x1f)
    return f.reg == 0 && f.mod != 3 ? std::optional(make(Kind::kOther, f)) : std::nullopt;
  if ((op >= 0x40 && op <= 0x4f) || (op >= 0x90 && op <= 0x9f) || op == 0xaf || op == 0xb6 ||
      op == 0xb7 || op == 0xbe || op == 0xbf || is_sse_move(op, f.insn.opsize16))
    return make(Kind::kOther, f);
  return std::nullopt;
}

// Capstone's register as StubInsn::reg (by its name, so the two decoders' numbers agree).
uint16_t reg_from_capstone(csh h, x86_reg r) {
  static constexpr std::array<std::string_view, 16> k32 = {
      "eax", "ecx", "edx",  "ebx",  "esp",  "ebp",  "esi",  "edi",
      "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"};
  static constexpr std::array<std::string_view, 16> k16 = {
      "ax",  "cx",  "dx",   "bx",   "sp",   "bp",   "si",   "di",
      "r8w", "r9w", "r10w", "r11w", "r12w", "r13w", "r14w", "r15w"};
  static constexpr std::array<std::string_view, 16> k8 = {
      "al",  "cl",  "dl",   "bl",   "spl",  "bpl",  "sil",  "dil",
      "r8b", "r9b", "r10b", "r11b", "r12b", "r13b", "r14b", "r15b"};
  static constexpr std::array<std::string_view, 4> k8h = {"ah", "ch", "dh", "bh"};
  const char* c = cs_reg_name(h, r);
  std::string_view name = c ? c : "";
  auto find = [&](const auto& names, RegClass cls) -> std::optional<uint16_t> {
    for (unsigned i = 0; i < names.size(); ++i)
      if (names[i] == name) return reg_code(cls, i);
    return std::nullopt;
  };
  for (auto v :
       {find(kReg64, kR64), find(k32, kR32), find(k16, kR16), find(k8, kLow8), find(k8h, kHigh8)})
    if (v) return *v;
  return static_cast<uint16_t>(0x400 + r);
}

bool is_rip_mem(const cs_x86_op& op) {
  return op.type == X86_OP_MEM && op.mem.base == X86_REG_RIP && op.mem.index == X86_REG_INVALID;
}

uint64_t rip_target(const cs_insn& insn, const cs_x86_op& op) {
  return insn.address + insn.size + static_cast<uint64_t>(op.mem.disp);
}

}  // namespace

StubInsn stub_insn_from_capstone(csh h, const cs_insn& insn) {
  StubInsn s;
  s.length = static_cast<uint8_t>(insn.size);
  const cs_x86& x = insn.detail->x86;
  const cs_x86_op* op = x.operands;
  switch (insn.id) {
    case X86_INS_CMP:
      if (x.op_count == 2 && is_rip_mem(op[0]) && op[1].type == X86_OP_IMM) {
        s.kind = Kind::kCmpRipImm;
        s.value = rip_target(insn, op[0]);
        s.imm = static_cast<uint32_t>(op[1].imm);
      }
      break;
    case X86_INS_MOV:
      if (x.op_count == 2 && op[0].type == X86_OP_REG && op[1].type == X86_OP_IMM &&
          (op[0].reg == X86_REG_EAX || op[0].reg == X86_REG_RAX)) {
        s.kind = Kind::kMovEaxImm;
        s.imm = static_cast<uint32_t>(op[1].imm);
      } else if (x.op_count == 2 && op[0].type == X86_OP_REG && is_rip_mem(op[1])) {
        s.kind = Kind::kMovRegRip;
        s.value = rip_target(insn, op[1]);
        s.reg = reg_from_capstone(h, op[0].reg);
      }
      break;
    case X86_INS_JMP:
    case X86_INS_CALL:
      s.kind = insn.id == X86_INS_CALL ? Kind::kCall : Kind::kJmp;
      s.operand = Operand::kOther;
      if (x.op_count == 1 && is_rip_mem(op[0])) {
        s.operand = Operand::kRip;
        s.value = rip_target(insn, op[0]);
      } else if (x.op_count == 1 && op[0].type == X86_OP_REG) {
        s.operand = Operand::kReg;
        s.reg = reg_from_capstone(h, op[0].reg);
      } else if (x.op_count == 1 && op[0].type == X86_OP_IMM) {
        s.operand = Operand::kImm;
        s.value = static_cast<uint64_t>(op[0].imm);
      }
      break;
    case X86_INS_RET:
      s.kind = Kind::kRet;
      break;
    case X86_INS_PUSH:
      s.kind = Kind::kPush;
      break;
    default: {
      bool is_jcc = false;
      for (uint8_t g = 0; g < insn.detail->groups_count; ++g)
        is_jcc |= insn.detail->groups[g] == X86_GRP_JUMP;
      if (is_jcc && x.op_count == 1 && op[0].type == X86_OP_IMM) {
        s.kind = Kind::kJcc;
        s.value = static_cast<uint64_t>(op[0].imm);
      }
      break;
    }
  }
  return s;
}

namespace {

// decode_stub_insn_fast's body, inlined into it so that no optional is returned through memory.
[[gnu::always_inline]] inline std::optional<StubInsn> fast(const uint8_t* p, uint64_t n,
                                                           uint64_t vaddr) {
  const ByteView code(p, n);
  // endbr64 (F3 0F 1E FA), the one F3-prefixed instruction of a stub.
  if (n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) {
    StubInsn s;
    s.length = 4;
    return s;
  }
  // Prefixes: an F3 or F0 (then only rep_or_lock_known()), or one 66; then a REX; any other
  // prefix is left to Capstone.
  uint64_t i = 0;
  const uint8_t rep_or_lock = n > 0 && (p[0] == 0xf3 || p[0] == 0xf0) ? p[0] : 0;
  if (rep_or_lock != 0) {
    ++i;
  } else if (i < n && p[i] == 0x66) {
    ++i;
  }
  Fields f{p, {}, 0};
  if (i < n && (p[i] & 0xf0) == 0x40) {
    f.rex = true;
    f.rex_w = (p[i] & 8) != 0;
    f.rex_r = (p[i] & 4) != 0;
    f.rex_b = (p[i] & 1) != 0;
    ++i;
  }
  // 66 with REX.W: REX.W wins, but x86_length sizes a 66-prefixed immediate as 16 bits; only
  // the SSE moves, which have no immediate, are kept.
  const bool o16_rex_w = f.rex_w && rep_or_lock == 0 && i > 0 && p[0] == 0x66;
  if (i >= n || kLeftToCapstone[p[i]]) return std::nullopt;
  auto insn = x86::decode_length(code);
  if (!insn || insn->vex || insn->map > 1) return std::nullopt;
  if (o16_rex_w && !(insn->map == 1 && is_sse_move(insn->opcode, true))) return std::nullopt;
  if (rep_or_lock != 0) {
    if (!rep_or_lock_known(rep_or_lock, *insn)) return std::nullopt;
    StubInsn s;
    s.length = insn->length;
    return s;  // kOther
  }
  f.insn = *insn;
  f.next = vaddr + insn->length;
  if (insn->has_modrm) {
    f.mod = insn->modrm >> 6;
    f.reg = (insn->modrm >> 3) & 7;
    f.rm = insn->modrm & 7;
  }
  return insn->map == 0 ? one_byte(f) : two_byte(f);
}

}  // namespace

bool decode_stub_insn_fast(const uint8_t* code, uint64_t size, uint64_t vaddr, StubInsn& out) {
  auto s = fast(code, size, vaddr);
  if (!s) return false;
  // Member by member: a struct copy loaded the fields just stored one by one as a 16-byte
  // vector, a store-forwarding stall on every instruction.
  out.kind = s->kind;
  out.operand = s->operand;
  out.length = s->length;
  out.reg = s->reg;
  out.value = s->value;
  out.imm = s->imm;
  return true;
}

namespace {

// A number as Capstone's Intel printer writes it: decimal up to 9, else 0x and hex digits.
std::string capstone_number(uint64_t v) {
  return v > 9 ? fmt::format("{:#x}", v) : fmt::format("{}", v);
}

}  // namespace

std::optional<std::string> stub_insn_text_fast(ByteView code, uint64_t vaddr) {
  const uint8_t* p = code.data();
  const uint64_t n = code.size();
  uint64_t i = 0;
  bool rex_b = false;
  if (i < n && (p[i] & 0xf0) == 0x40) rex_b = (p[i++] & 1) != 0;
  if (i >= n) return std::nullopt;
  const uint8_t op = p[i++];
  if (op == 0xe8 || op == 0xe9) {
    if (n - i < 4) return std::nullopt;
    const auto rel = static_cast<int32_t>(load_le<uint32_t>(p + i));
    const uint64_t target = vaddr + i + 4 + static_cast<uint64_t>(static_cast<int64_t>(rel));
    return fmt::format("{} {}", op == 0xe8 ? "call" : "jmp", capstone_number(target));
  }
  if (op == 0xeb) {
    if (n - i < 1) return std::nullopt;
    const uint64_t target =
        vaddr + i + 1 + static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(p[i])));
    return fmt::format("jmp {}", capstone_number(target));
  }
  if (op != 0xff || i >= n) return std::nullopt;
  const uint8_t modrm = p[i++];
  const unsigned mod = modrm >> 6, reg = (modrm >> 3) & 7, rm = modrm & 7;
  if (reg != 2 && reg != 4) return std::nullopt;
  const std::string_view verb = reg == 2 ? "call" : "jmp";
  if (mod == 3) return fmt::format("{} {}", verb, kReg64[rm | (rex_b ? 8u : 0u)]);
  if (rm == 4) return std::nullopt;  // a SIB byte: left to Capstone
  int64_t disp = 0;
  std::string_view base;
  if (mod == 0 && rm == 5) {
    if (n - i < 4) return std::nullopt;
    disp = static_cast<int32_t>(load_le<uint32_t>(p + i));
    base = "rip";
  } else {
    base = kReg64[rm | (rex_b ? 8u : 0u)];
    if (mod == 1) {
      if (n - i < 1) return std::nullopt;
      disp = static_cast<int8_t>(p[i]);
    } else if (mod == 2) {
      if (n - i < 4) return std::nullopt;
      disp = static_cast<int32_t>(load_le<uint32_t>(p + i));
    }
  }
  std::string mem = fmt::format("{} qword ptr [{}", verb, base);
  if (disp > 0) mem += " + " + capstone_number(static_cast<uint64_t>(disp));
  if (disp < 0) mem += " - " + capstone_number(static_cast<uint64_t>(-disp));
  return mem + "]";
}

StubDecoder::StubDecoder() = default;

bool StubDecoder::open() {
  if (opened_) return insn_ != nullptr;
  opened_ = true;
  csh h = 0;
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) return false;
  handle_ = h;
  cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
  insn_ = cs_malloc(h);
  return insn_ != nullptr;
}

bool StubDecoder::ok() const {
  return opened_ ? insn_ != nullptr : cs_support(CS_ARCH_X86);
}

StubDecoder::~StubDecoder() {
  if (insn_) cs_free(insn_, 1);
  if (handle_) {
    csh h = handle_;
    cs_close(&h);
  }
}

std::optional<StubInsn> StubDecoder::decode(ByteView code, uint64_t vaddr) {
  StubInsn s;
  if (!decode(code.data(), code.size(), vaddr, s)) return std::nullopt;
  return s;
}

bool StubDecoder::decode_slow(const uint8_t* code, uint64_t size, uint64_t vaddr, StubInsn& out) {
  ++capstone_decoded_;
  auto s = decode_capstone(ByteView(code, size), vaddr);
  if (!s) return false;
  out = *s;
  return true;
}

std::optional<StubInsn> StubDecoder::decode_capstone(ByteView code, uint64_t vaddr) {
  if (!open()) return std::nullopt;
  const uint8_t* p = code.data();
  size_t n = code.size();
  uint64_t a = vaddr;
  if (insn_ == nullptr || !cs_disasm_iter(handle_, &p, &n, &a, insn_)) return std::nullopt;
  return stub_insn_from_capstone(handle_, *insn_);
}

std::string StubDecoder::text(ByteView code, uint64_t vaddr) {
  if (auto t = stub_insn_text_fast(code, vaddr)) return std::move(*t);
  return text_capstone(code, vaddr);
}

std::string StubDecoder::text_capstone(ByteView code, uint64_t vaddr) {
  if (!open()) return "(undecodable)";
  const uint8_t* p = code.data();
  size_t n = code.size();
  uint64_t a = vaddr;
  if (insn_ == nullptr || !cs_disasm_iter(handle_, &p, &n, &a, insn_)) return "(undecodable)";
  return std::string(insn_->mnemonic) + " " + insn_->op_str;
}

}  // namespace cudatool::cuda
