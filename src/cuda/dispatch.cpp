// Exported wrapper -> slot -> implementation. This is the one place where data cannot decide:
// which slot a wrapper jumps through is written only in its instructions. Every exported driver
// API entry point of 470…555 is a 3-instruction stub (docs/tables.md):
//
//   cmpl  $0x321cba00, guard(%rip)   ; the driver has been torn down?
//   je    1f                         ;   -> mov $4, %eax; ret (CUDA_ERROR_DEINITIALIZED)
//   jmp   *slot(%rip)                ; slot in .data, R_X86_64_RELATIVE -> the implementation
//
// sometimes with an argument-narrowing instruction (movzx) before the jmp. In 580.159.04 the stub
// has a frame and reports errors after the call (objdump -d of cuMemAlloc_v2):
//
//   push %rbp; mov %rsp,%rbp; push %r12; sub $0x8,%rsp
//   cmpl  $0x321cba00, guard(%rip); je 1f
//   call  *slot(%rip)                ; then: error code → name lookup, logging, return
//
// so a frame prologue is stepped over, but a slot reached after one counts only when the
// teardown guard (cmpl $0x321cba00) came first: an ordinary function also has a frame, and may
// compare a global and call through a pointer. The decoder follows
// straight-line code and direct jumps for a few instructions, tries the other side of a
// conditional branch when the straight line ends without a slot, and follows a slot that lands
// on another such wrapper (bounded, with cycle detection).
#include <capstone/capstone.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "cuda/driver_tables.hpp"

namespace cudatool::cuda {
namespace {

constexpr int kMaxSteps = 40;  // instructions per path (580 stubs re-push up to 10 stack arguments)
constexpr int kMaxBranches = 2;    // conditional-branch targets tried
constexpr uint32_t kMaxChain = 4;  // wrappers behind wrappers
// The value every guarded stub of 470…580 compares its guard word with (tables --json: the
// guard_value of each dispatch entry).
constexpr uint32_t kTeardownGuard = 0x321cba00;

class Disassembler {
 public:
  Disassembler() {
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle_) != CS_ERR_OK) return;
    cs_option(handle_, CS_OPT_DETAIL, CS_OPT_ON);
    insn_ = cs_malloc(handle_);
    ok_ = insn_ != nullptr;
  }
  ~Disassembler() {
    if (insn_) cs_free(insn_, 1);
    if (handle_) cs_close(&handle_);
  }
  Disassembler(const Disassembler&) = delete;
  Disassembler& operator=(const Disassembler&) = delete;
  [[nodiscard]] bool ok() const { return ok_; }
  // Decodes one instruction at vaddr from `code` (bytes starting at vaddr).
  const cs_insn* decode(ByteView code, uint64_t vaddr) {
    const uint8_t* p = code.data();
    size_t n = code.size();
    uint64_t a = vaddr;
    if (!cs_disasm_iter(handle_, &p, &n, &a, insn_)) return nullptr;
    return insn_;
  }

 private:
  csh handle_ = 0;
  cs_insn* insn_ = nullptr;
  bool ok_ = false;
};

struct PathResult {
  WrapperKind kind = WrapperKind::kOther;
  uint64_t slot = 0;
  std::optional<uint64_t> guard_vaddr;
  std::optional<uint32_t> guard_value;
  std::optional<uint32_t> constant;
  uint32_t hops = 0;
  bool framed = false;  // the path began with a frame prologue
  std::string note;
};

bool is_rip_mem(const cs_x86_op& op) {
  return op.type == X86_OP_MEM && op.mem.base == X86_REG_RIP && op.mem.index == X86_REG_INVALID;
}

bool is_eax(x86_reg r) {
  return r == X86_REG_EAX || r == X86_REG_RAX;
}

// Follows one path from `pc`; conditional-branch targets are appended to `branches`.
PathResult follow(const TableInput& in, Disassembler& dis, uint64_t pc, uint64_t* counter,
                  std::vector<uint64_t>& branches) {
  PathResult r;
  std::optional<uint32_t> eax;
  std::array<std::pair<x86_reg, uint64_t>, 4> loaded{};  // reg <- [rip+x], most recent first
  std::vector<uint64_t> visited;
  std::optional<uint64_t> frame_at;  // the first push of a prologue
  for (int step = 0; step < kMaxSteps; ++step) {
    const auto* sec = in.sections->at(pc);
    if (sec == nullptr || !sec->exec || sec->bytes.empty()) {
      r.note = fmt::format("reaches {:#x}, outside executable code", pc);
      return r;
    }
    if (std::find(visited.begin(), visited.end(), pc) != visited.end()) {
      r.note = fmt::format("loops back to {:#x}", pc);
      return r;
    }
    visited.push_back(pc);
    const cs_insn* insn = dis.decode(sec->bytes.clamp(pc - sec->addr, 16), pc);
    if (insn == nullptr) {
      r.note = fmt::format("undecodable bytes at {:#x}", pc);
      return r;
    }
    ++*counter;
    uint64_t next = insn->address + insn->size;
    const cs_x86& x = insn->detail->x86;
    const cs_x86_op* op = x.operands;
    switch (insn->id) {
      case X86_INS_ENDBR64:
      case X86_INS_NOP:
        break;
      case X86_INS_CMP:
        if (x.op_count == 2 && is_rip_mem(op[0]) && op[1].type == X86_OP_IMM) {
          r.guard_vaddr = next + static_cast<uint64_t>(op[0].mem.disp);
          r.guard_value = static_cast<uint32_t>(op[1].imm);
        }
        break;
      case X86_INS_MOV:
        if (x.op_count == 2 && op[0].type == X86_OP_REG && op[1].type == X86_OP_IMM &&
            is_eax(op[0].reg)) {
          eax = static_cast<uint32_t>(op[1].imm);
        } else if (x.op_count == 2 && op[0].type == X86_OP_REG && is_rip_mem(op[1])) {
          std::rotate(loaded.rbegin(), loaded.rbegin() + 1, loaded.rend());
          loaded[0] = {op[0].reg, next + static_cast<uint64_t>(op[1].mem.disp)};
        }
        break;
      case X86_INS_JMP:
      case X86_INS_CALL: {
        bool call = insn->id == X86_INS_CALL;
        bool through_pointer = x.op_count == 1 && (is_rip_mem(op[0]) || op[0].type == X86_OP_REG);
        if (through_pointer && frame_at && r.guard_value != kTeardownGuard) {
          r.note = fmt::format(
              "a function body (push at {:#x}, then {} {} at {:#x} without the "
              "teardown guard), not a forwarding stub",
              *frame_at, insn->mnemonic, insn->op_str, insn->address);
          return r;
        }
        if (x.op_count == 1 && is_rip_mem(op[0])) {
          r.kind = call ? WrapperKind::kSlotCall : WrapperKind::kSlotJump;
          r.slot = next + static_cast<uint64_t>(op[0].mem.disp);
          return r;
        }
        if (x.op_count == 1 && op[0].type == X86_OP_REG) {
          for (const auto& [reg, at] : loaded) {
            if (reg == op[0].reg && at != 0) {
              r.kind = call ? WrapperKind::kSlotCall : WrapperKind::kSlotJump;
              r.slot = at;
              return r;
            }
          }
        }
        if (!call && x.op_count == 1 && op[0].type == X86_OP_IMM) {
          pc = static_cast<uint64_t>(op[0].imm);
          ++r.hops;
          continue;
        }
        r.note = fmt::format("{} {} at {:#x} before any slot", insn->mnemonic, insn->op_str,
                             insn->address);
        return r;
      }
      case X86_INS_RET:
        if (eax) {
          r.kind = WrapperKind::kConstant;
          r.constant = eax;
        } else {
          r.note = fmt::format("returns at {:#x} without dispatching", insn->address);
        }
        return r;
      case X86_INS_PUSH:
        // A prologue before the guard (580.159.04); after the teardown guard, the caller's
        // stack arguments pushed again for the call (push 0x20(%rbp), or mov 0x18(%rbp),%eax;
        // push %rax for a narrowed one); after any other guard, a body.
        if (r.guard_vaddr && r.guard_value != kTeardownGuard) {
          r.note = fmt::format("a function body ({} {} at {:#x}), not a forwarding stub",
                               insn->mnemonic, insn->op_str, insn->address);
          return r;
        }
        if (!frame_at) frame_at = insn->address;
        r.framed = true;
        break;
      default: {
        bool is_jcc = false;
        for (uint8_t g = 0; g < insn->detail->groups_count; ++g)
          is_jcc |= insn->detail->groups[g] == X86_GRP_JUMP;
        if (is_jcc && x.op_count == 1 && op[0].type == X86_OP_IMM)
          branches.push_back(static_cast<uint64_t>(op[0].imm));
        break;
      }
    }
    pc = next;
  }
  r.note = fmt::format("no slot within {} instructions", kMaxSteps);
  return r;
}

PathResult decode_wrapper(const TableInput& in, Disassembler& dis, uint64_t address,
                          uint64_t* counter) {
  std::vector<uint64_t> branches;
  PathResult first = follow(in, dis, address, counter, branches);
  if (first.kind == WrapperKind::kSlotJump || first.kind == WrapperKind::kSlotCall) return first;
  // The straight line ended at a guard's error return: the slot may be on the other side of the
  // guard's branch (a jne-shaped stub). Without a guard this is a real function, not a stub.
  if (!first.guard_vaddr) return first;
  for (int i = 0; i < kMaxBranches && i < static_cast<int>(branches.size()); ++i) {
    std::vector<uint64_t> more;
    PathResult alt = follow(in, dis, branches[static_cast<size_t>(i)], counter, more);
    if (alt.kind == WrapperKind::kSlotJump || alt.kind == WrapperKind::kSlotCall) {
      if (!alt.guard_vaddr) {
        alt.guard_vaddr = first.guard_vaddr;
        alt.guard_value = first.guard_value;
      }
      // Behind a frame, only the teardown guard makes a stub (see the top of this file).
      if (first.framed && alt.guard_value != kTeardownGuard) continue;
      return alt;
    }
  }
  return first;
}

}  // namespace

DispatchMap resolve_dispatch(const TableInput& in, std::span<const ExportedFunction> functions) {
  DispatchMap m;
  Disassembler dis;
  if (!dis.ok()) {
    m.error = "Capstone could not open an x86-64 disassembler";
    return m;
  }
  uint64_t lo = UINT64_MAX, hi = 0;
  m.entries.reserve(functions.size());
  for (const auto& f : functions) {
    DispatchEntry e;
    e.export_name = f.name;
    e.wrapper = f.address;
    PathResult p = decode_wrapper(in, dis, f.address, &m.instructions);
    e.kind = p.kind;
    e.guard_vaddr = p.guard_vaddr;
    e.guard_value = p.guard_value;
    e.constant = p.constant;
    e.hops = p.hops;
    e.note = std::move(p.note);
    e.slot = p.slot;
    if (p.kind == WrapperKind::kSlotJump || p.kind == WrapperKind::kSlotCall) {
      // The dispatch table is made of the slots the loader fills; a slot filled at run time
      // (a pointer in .bss) is not part of it.
      if (in.relocs->find(p.slot) != nullptr) {
        lo = std::min(lo, p.slot);
        hi = std::max(hi, p.slot);
      }
      std::vector<uint64_t> chain{f.address};
      uint64_t slot = p.slot;
      for (uint32_t depth = 0;; ++depth) {
        const auto* rel = in.relocs->find(slot);
        std::string structure = fmt::format("dispatch {}", f.name);
        if (rel == nullptr) {
          e.note = fmt::format("slot {:#x} has no relocation (filled at run time)", slot);
          break;
        }
        uint64_t target = rel->target;
        const auto* ts = in.sections->at(target);
        if (ts == nullptr || !ts->exec) {
          // A guarded libcuda stub whose slot holds no code, or a pointer to nowhere, is damage;
          // an ordinary function that jumps through a data pointer is just not a stub.
          if (in.diag && (ts == nullptr || e.guard_vaddr)) {
            in.diag->report(make_error(
                structure, "slot", in.sections->offset_of(slot),
                fmt::format("relocation at vaddr {:#x} points to {:#x}, {}", slot, target,
                            ts ? fmt::format("in non-executable {}", ts->name())
                               : std::string("outside every section"))));
          }
          e.note = fmt::format("slot {:#x} points to {:#x}, not code", slot, target);
          break;
        }
        if (std::find(chain.begin(), chain.end(), target) != chain.end()) {
          if (in.diag && e.guard_vaddr) {
            in.diag->report(make_error(
                structure, "slot", in.sections->offset_of(slot),
                fmt::format("dispatch cycle: slot {:#x} leads back to {:#x} after {} wrapper(s)",
                            slot, target, chain.size())));
          }
          e.note = fmt::format("cycle back to {:#x}", target);
          break;
        }
        e.implementation = target;
        e.implementation_section = ts->name();
        if (depth + 1 >= kMaxChain) break;
        // A slot may land on another forwarding stub (a wrapper behind a wrapper).
        std::vector<uint64_t> unused;
        PathResult again = follow(in, dis, target, &m.instructions, unused);
        if (again.kind != WrapperKind::kSlotJump) break;
        chain.push_back(target);
        ++e.hops;
        slot = again.slot;
        e.implementation = 0;
      }
    }
    m.entries.push_back(std::move(e));
  }
  if (lo <= hi) {
    m.slot_lo = lo;
    m.slot_hi = hi;
    if (const auto* s = in.sections->at(lo)) m.slot_section = s->name();
    m.relocated_slots_in_range = in.relocs->range(lo, hi + 8).size();
  }
  return m;
}

}  // namespace cudatool::cuda
