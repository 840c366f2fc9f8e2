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
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "cuda/driver_tables.hpp"
#include "cuda/stub_insn.hpp"

namespace cudatool::cuda {
namespace {

constexpr int kMaxSteps = 40;  // instructions per path (580 stubs re-push up to 10 stack arguments)
constexpr int kMaxBranches = 2;    // conditional-branch targets tried
constexpr uint32_t kMaxChain = 4;  // wrappers behind wrappers
// The value every guarded stub of 470…580 compares its guard word with (tables --json: the
// guard_value of each dispatch entry).
constexpr uint32_t kTeardownGuard = 0x321cba00;

struct PathResult {
  WrapperKind kind = WrapperKind::kOther;
  uint64_t slot = 0;
  std::optional<uint64_t> guard_vaddr;
  std::optional<uint32_t> guard_value;
  std::optional<uint32_t> constant;
  uint32_t hops = 0;
  bool framed = false;  // the path began with a frame prologue
  // Why the path is not a stub, written out (note()) only for the path that is kept: most first
  // paths of 580's stubs end at the error path's call, and Capstone's text of it costs more
  // than decoding the whole stub.
  enum class Note : uint8_t {
    kNone,
    kOutside,
    kLoop,
    kUndecodable,
    kBodyCall,
    kBeforeSlot,
    kReturns,
    kBodyPush,
    kNoSlot
  };
  Note why = Note::kNone;
  uint64_t at = 0;     // the instruction (or address) the note names
  uint64_t frame = 0;  // kBodyCall: the prologue's first push
};

// The instruction's text as Capstone prints it, for a note.
std::string insn_text(const TableInput& in, StubDecoder& dis, uint64_t pc) {
  const auto* sec = in.sections->at(pc);
  if (sec == nullptr) return "(outside every section)";
  return dis.text(sec->bytes.clamp(pc - sec->addr, 16), pc);
}

std::string note(const PathResult& r, const TableInput& in, StubDecoder& dis) {
  using Note = PathResult::Note;
  switch (r.why) {
    case Note::kNone:
      return {};
    case Note::kOutside:
      return fmt::format("reaches {:#x}, outside executable code", r.at);
    case Note::kLoop:
      return fmt::format("loops back to {:#x}", r.at);
    case Note::kUndecodable:
      return fmt::format("undecodable bytes at {:#x}", r.at);
    case Note::kBodyCall:
      return fmt::format(
          "a function body (push at {:#x}, then {} at {:#x} without the "
          "teardown guard), not a forwarding stub",
          r.frame, insn_text(in, dis, r.at), r.at);
    case Note::kBeforeSlot:
      return fmt::format("{} at {:#x} before any slot", insn_text(in, dis, r.at), r.at);
    case Note::kReturns:
      return fmt::format("returns at {:#x} without dispatching", r.at);
    case Note::kBodyPush:
      return fmt::format("a function body ({} at {:#x}), not a forwarding stub",
                         insn_text(in, dis, r.at), r.at);
    case Note::kNoSlot:
      return fmt::format("no slot within {} instructions", kMaxSteps);
  }
  return {};
}

using Loaded = std::array<std::pair<uint16_t, uint64_t>, 4>;  // reg <- [rip+x], newest first

// A jmp or call on a stub's path: the slot it goes through (r.kind, r.slot) or why the path
// ends there (r.why) — nullopt, the path is done — or the target of a direct jmp to follow.
std::optional<uint64_t> jump_or_call(const StubInsn& insn, uint64_t pc, const Loaded& loaded,
                                     std::optional<uint64_t> frame_at, PathResult& r) {
  using Kind = StubInsn::Kind;
  using Operand = StubInsn::Operand;
  bool call = insn.kind == Kind::kCall;
  bool through_pointer = insn.operand == Operand::kRip || insn.operand == Operand::kReg;
  if (through_pointer && frame_at && r.guard_value != kTeardownGuard) {
    r.why = PathResult::Note::kBodyCall;
    r.at = pc;
    r.frame = *frame_at;
    return std::nullopt;
  }
  if (insn.operand == Operand::kRip) {
    r.kind = call ? WrapperKind::kSlotCall : WrapperKind::kSlotJump;
    r.slot = insn.value;
    return std::nullopt;
  }
  if (insn.operand == Operand::kReg) {
    for (const auto& [reg, at] : loaded) {
      if (reg == insn.reg && at != 0) {
        r.kind = call ? WrapperKind::kSlotCall : WrapperKind::kSlotJump;
        r.slot = at;
        return std::nullopt;
      }
    }
  }
  if (!call && insn.operand == Operand::kImm) return insn.value;
  r.why = PathResult::Note::kBeforeSlot;
  r.at = pc;
  return std::nullopt;
}

// Follows one path from `pc`; conditional-branch targets are appended to `branches`.
PathResult follow(const TableInput& in, StubDecoder& dis, uint64_t pc, uint64_t* counter,
                  std::vector<uint64_t>& branches) {
  using Kind = StubInsn::Kind;
  PathResult r;
  std::optional<uint32_t> eax;
  Loaded loaded{};
  std::array<uint64_t, kMaxSteps> visited;  // one per step: no allocation per path
  size_t n_visited = 0;
  uint64_t highest = 0;  // of visited: a pc above it (straight-line code) was not visited
  std::optional<uint64_t> frame_at;  // the first push of a prologue
  const elf::MappedSection* sec = nullptr;
  for (int step = 0; step < kMaxSteps; ++step) {
    sec = in.sections->at(pc, sec);
    if (sec == nullptr || !sec->exec || sec->bytes.empty()) {
      r.why = PathResult::Note::kOutside;
      r.at = pc;
      return r;
    }
    if ((n_visited > 0 && pc <= highest) && std::find(visited.begin(), visited.begin() + n_visited,
                                                      pc) != visited.begin() + n_visited) {
      r.why = PathResult::Note::kLoop;
      r.at = pc;
      return r;
    }
    visited[n_visited++] = pc;
    highest = std::max(highest, pc);
    const ByteView code = sec->bytes.clamp(pc - sec->addr, 16);
    StubInsn insn;
    if (!dis.decode(code.data(), code.size(), pc, insn)) {
      r.why = PathResult::Note::kUndecodable;
      r.at = pc;
      return r;
    }
    ++*counter;
    switch (insn.kind) {
      case Kind::kOther:
        break;
      case Kind::kCmpRipImm:
        r.guard_vaddr = insn.value;
        r.guard_value = insn.imm;
        break;
      case Kind::kMovEaxImm:
        eax = insn.imm;
        break;
      case Kind::kMovRegRip:
        std::rotate(loaded.rbegin(), loaded.rbegin() + 1, loaded.rend());
        loaded[0] = {insn.reg, insn.value};
        break;
      case Kind::kJmp:
      case Kind::kCall: {
        std::optional<uint64_t> next = jump_or_call(insn, pc, loaded, frame_at, r);
        if (!next) return r;
        pc = *next;
        ++r.hops;
        continue;
      }
      case Kind::kRet:
        if (eax) {
          r.kind = WrapperKind::kConstant;
          r.constant = eax;
        } else {
          r.why = PathResult::Note::kReturns;
          r.at = pc;
        }
        return r;
      case Kind::kPush:
        // A prologue before the guard (580.159.04); after the teardown guard, the caller's
        // stack arguments pushed again for the call (push 0x20(%rbp), or mov 0x18(%rbp),%eax;
        // push %rax for a narrowed one); after any other guard, a body.
        if (r.guard_vaddr && r.guard_value != kTeardownGuard) {
          r.why = PathResult::Note::kBodyPush;
          r.at = pc;
          return r;
        }
        if (!frame_at) frame_at = pc;
        r.framed = true;
        break;
      case Kind::kJcc:
        branches.push_back(insn.value);
        break;
    }
    pc += insn.length;
  }
  r.why = PathResult::Note::kNoSlot;
  return r;
}

PathResult decode_wrapper(const TableInput& in, StubDecoder& dis, uint64_t address,
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

DispatchResolver::DispatchResolver(const TableInput& in,
                                   std::span<const ExportedFunction> functions)
    : in_(in), functions_(functions), entries_(functions.size()), damage_(functions.size()) {}

void DispatchResolver::resolve_some() {
  if (next_.load(std::memory_order_relaxed) >= functions_.size()) return;  // all taken
  StubDecoder dis;
  if (!dis.ok()) {
    no_disassembler_ = true;
    return;
  }
  uint64_t decoded = 0;
  constexpr size_t kBatch = 8;
  for (;;) {
    size_t first = next_.fetch_add(kBatch, std::memory_order_relaxed);
    if (first >= functions_.size()) break;
    for (size_t i = first; i < std::min(first + kBatch, functions_.size()); ++i)
      resolve(dis, i, &decoded);
  }
  instructions_ += decoded;
}

void DispatchResolver::resolve(StubDecoder& dis, size_t i, uint64_t* decoded) {
  const TableInput& in = in_;
  const ExportedFunction& f = functions_[i];
  DispatchEntry& e = entries_[i];
  auto report = [&](Error err) { damage_[i].push_back(std::move(err)); };
  e.export_name = f.name;
  e.wrapper = f.address;
  PathResult p = decode_wrapper(in, dis, f.address, decoded);
  e.kind = p.kind;
  e.guard_vaddr = p.guard_vaddr;
  e.guard_value = p.guard_value;
  e.constant = p.constant;
  e.hops = p.hops;
  e.note = note(p, in, dis);
  e.slot = p.slot;
  if (p.kind != WrapperKind::kSlotJump && p.kind != WrapperKind::kSlotCall) return;
  std::vector<uint64_t> chain{f.address};
  uint64_t slot = p.slot;
  auto structure = [&] { return fmt::format("dispatch {}", f.name); };
  for (uint32_t depth = 0;; ++depth) {
    const auto* rel = in.relocs->find(slot);
    if (rel == nullptr) {
      e.note = fmt::format("slot {:#x} has no relocation (filled at run time)", slot);
      break;
    }
    uint64_t target = rel->target;
    const auto* ts = in.sections->at(target);
    if (ts == nullptr || !ts->exec) {
      // A guarded libcuda stub whose slot holds no code, or a pointer to nowhere, is damage;
      // an ordinary function that jumps through a data pointer is just not a stub.
      if (ts == nullptr || e.guard_vaddr) {
        report(make_error(structure(), "slot", in.sections->offset_of(slot),
                          fmt::format("relocation at vaddr {:#x} points to {:#x}, {}", slot, target,
                                      ts ? fmt::format("in non-executable {}", ts->name())
                                         : std::string("outside every section"))));
      }
      e.note = fmt::format("slot {:#x} points to {:#x}, not code", slot, target);
      break;
    }
    if (std::find(chain.begin(), chain.end(), target) != chain.end()) {
      if (e.guard_vaddr) {
        report(make_error(
            structure(), "slot", in.sections->offset_of(slot),
            fmt::format("dispatch cycle: slot {:#x} leads back to {:#x} after {} wrapper(s)", slot,
                        target, chain.size())));
      }
      e.note = fmt::format("cycle back to {:#x}", target);
      break;
    }
    e.implementation = target;
    e.implementation_section = ts->name();
    if (depth + 1 >= kMaxChain) break;
    // A slot may land on another forwarding stub (a wrapper behind a wrapper).
    std::vector<uint64_t> unused;
    PathResult again = follow(in, dis, target, decoded, unused);
    if (again.kind != WrapperKind::kSlotJump) break;
    chain.push_back(target);
    ++e.hops;
    slot = again.slot;
    e.implementation = 0;
  }
}

DispatchMap DispatchResolver::finish() {
  DispatchMap m;
  if (no_disassembler_) {
    m.error = "Capstone could not open an x86-64 disassembler";
    if (in_.diag) in_.diag->report(make_error("dispatch", "", std::nullopt, m.error));
    return m;
  }
  m.instructions = instructions_;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const DispatchEntry& e = entries_[i];
    // The dispatch table is made of the slots the loader fills; a slot filled at run time (a
    // pointer in .bss) is not part of it.
    if ((e.kind == WrapperKind::kSlotJump || e.kind == WrapperKind::kSlotCall) &&
        in_.relocs->find(e.slot) != nullptr) {
      lo = std::min(lo, e.slot);
      hi = std::max(hi, e.slot);
    }
    if (in_.diag)
      for (auto& err : damage_[i]) in_.diag->report(std::move(err));
  }
  m.entries = std::move(entries_);
  if (lo <= hi) {
    m.slot_lo = lo;
    m.slot_hi = hi;
    if (const auto* s = in_.sections->at(lo)) m.slot_section = s->name();
    m.relocated_slots_in_range = in_.relocs->range(lo, hi + 8).size();
  }
  return m;
}

DispatchMap resolve_dispatch(const TableInput& in, std::span<const ExportedFunction> functions) {
  DispatchResolver r(in, functions);
  r.resolve_some();
  return r.finish();
}

}  // namespace cudatool::cuda
