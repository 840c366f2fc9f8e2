// Facet: the cross-reference index of a library — every direct call and tail jump, every
// RIP-relative lea / load / store, every pointer the dynamic relocations put in data, the PLT
// entries with the imports they jump to, and the C strings that code and data point at.
// `img.facet<XrefIndex>()` builds it once from the function map (.eh_frame) and the relocations.
//
// One linear sweep per executable section with the project's x86-64 length decoder
// (analysis/x86_length), resynchronised at every FDE start so that an instruction never straddles
// a function boundary. Cost is linear in the code size plus a few sorts (docs/xrefs.md,
// docs/PERFORMANCE.md). Nothing here prints; damage (sections without bytes, undecodable bytes)
// is counted in stats() and reported to the image's diagnostics where it is damage.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "elf/section_map.hpp"

namespace cudatool {

enum class RefKind : uint8_t {
  kCall,      // call rel32
  kTailJump,  // jmp rel32/rel8 or jcc to a place outside the function holding the jump
  kPointer,   // a relocated word in data (R_X86_64_RELATIVE, 64, GLOB_DAT, JUMP_SLOT)
  kLea,       // lea disp32(%rip): the address is taken
  kLoad,      // any other RIP-relative memory operand that reads (incl. call/jmp *x(%rip))
  kStore,     // mov to a RIP-relative memory operand (88, 89, C6, C7)
};
inline constexpr int kRefKinds = 6;
// "call", "tail_jump", "pointer", "lea", "load", "store".
std::string_view ref_kind_name(RefKind k);
// Parses the names above; false when unknown.
bool parse_ref_kind(std::string_view s, RefKind* out);

struct Ref {
  enum Flags : uint8_t {
    kConditional = 1,  // a tail jump by jcc
    kBranch = 2,       // a load whose value is called or jumped to (call/jmp *x(%rip))
  };
  uint64_t site = 0;    // the instruction's address; for kPointer the relocated slot
  uint64_t target = 0;  // the address referred to
  int32_t from = -1;    // index in FunctionMap::functions() of the function holding site; -1 none
  RefKind kind = RefKind::kCall;
  uint8_t flags = 0;
  uint8_t length = 0;  // instruction length (0 for kPointer)
};

// One stub of .plt / .plt.got / .plt.sec: `jmp *slot(%rip)` through a GOT slot that a
// JUMP_SLOT or GLOB_DAT relocation names.
struct PltEntry {
  uint64_t address = 0;  // where callers jump (an endbr64 before the jmp included)
  uint64_t got_slot = 0;
  std::string_view name;  // the relocation's symbol: "ioctl"
  std::string_view section;
};

// A GOT slot that the loader fills with a symbol's address (GLOB_DAT, JUMP_SLOT, 64).
struct GotSlot {
  uint64_t address = 0;
  std::string_view name;
  bool defined = false;  // the symbol is defined in this library
};

// A C string that a lea or a relocated pointer points at (docs/xrefs.md, "Strings"): the bytes
// from the address up to the first NUL, inside one read-only data section, 1..kMaxLength bytes,
// each printable ASCII (0x20..0x7e) or \t \n \r.
struct CString {
  static constexpr uint64_t kMaxLength = 4096;
  uint64_t address = 0;
  std::string_view text;
  std::string_view section;
};
// The string at `bytes` (a view that starts at the address and ends with its section), if the
// rule above holds.
std::optional<std::string_view> c_string_at(ByteView bytes);

struct XrefStats {
  uint64_t code_bytes = 0;    // bytes swept
  uint64_t instructions = 0;  // decoded
  uint64_t undecodable = 0;   // bytes stepped over one at a time
  uint64_t sections = 0;      // executable sections swept
  uint64_t by_kind[kRefKinds] = {};
  uint64_t plt_entries = 0;
  uint64_t strings = 0;
};

class XrefIndex {
 public:
  explicit XrefIndex(DriverImage& img);
  // The same index; `beside` runs once before the constructor returns: on the sweep's second
  // thread once that has swept its half, while this thread finishes the index (index of
  // 580.159.04: ~17 ms), or on this thread after the index where the sweep is not split. It may
  // read `img` but must not create a facet or use this index.
  XrefIndex(DriverImage& img, const std::function<void()>& beside);

  // Every reference, code references in address order, then the relocated pointers by slot.
  [[nodiscard]] std::span<const Ref> refs() const { return refs_; }
  // References whose target lies in [lo, hi), by target then site.
  [[nodiscard]] std::vector<const Ref*> refs_to(uint64_t lo, uint64_t hi) const;
  // Indices into refs(), by target then site.
  [[nodiscard]] std::span<const uint32_t> by_target() const { return by_target_; }
  // References made by function `index` (FunctionMap order), by site.
  [[nodiscard]] std::vector<const Ref*> refs_from(int32_t index) const;
  // The relocated pointers (kPointer references), by slot; those with lo <= slot < hi.
  [[nodiscard]] std::span<const Ref> pointers() const {
    return std::span<const Ref>(refs_).subspan(pointer_begin_);
  }
  [[nodiscard]] std::span<const Ref> pointers_in(uint64_t lo, uint64_t hi) const;
  // The smallest referenced address greater than `addr` (code or data targets), or ~0.
  [[nodiscard]] uint64_t next_target_after(uint64_t addr) const;
  // Targets of the jumps a function makes into its own first kEntryWindow bytes, past its first
  // byte (a loop back to the second instruction): refs() leaves jumps inside a function out, and
  // a patched prologue (analysis/patch_plan) must not be entered in the middle. Sorted, unique.
  static constexpr uint64_t kEntryWindow = 32;
  [[nodiscard]] std::span<const uint64_t> entry_window_targets() const { return entry_targets_; }

  [[nodiscard]] const std::vector<PltEntry>& plt() const { return plt_; }
  // The PLT entry starting at addr, or null.
  [[nodiscard]] const PltEntry* plt_at(uint64_t addr) const;
  [[nodiscard]] const std::vector<GotSlot>& got() const { return got_; }
  [[nodiscard]] const GotSlot* got_at(uint64_t addr) const;

  // Strings referenced by lea or by relocated pointers, by address.
  [[nodiscard]] const std::vector<CString>& strings() const { return strings_; }
  [[nodiscard]] const CString* string_at(uint64_t addr) const;

  [[nodiscard]] const FunctionMap& map() const { return *map_; }
  // The SHF_ALLOC section holding addr (null when none).
  [[nodiscard]] const elf::MappedSection* section_at(uint64_t addr) const {
    return sections_->at(addr);
  }
  [[nodiscard]] const XrefStats& stats() const { return stats_; }

 private:
  void read_got(DriverImage& img);
  void find_plt();
  // What the sweep of one piece of code found (pieces are swept on two threads when allowed).
  struct SweepPart {
    std::vector<Ref> refs;
    std::vector<uint64_t> entry_targets;
    uint64_t instructions = 0, undecodable = 0;
  };
  void sweep(const FunctionMap::ExecRange& r, SweepPart& out) const;
  // A section at least this large is swept by two threads (when two CPUs may be used).
  static constexpr uint64_t kParallelSweepBytes = uint64_t{1} << 20;
  // The sweep's second thread and what it found; defined in xrefs.cpp.
  struct SecondSweep;
  // Sweeps `ranges`, the second part on `second`'s thread when split; true when that thread
  // runs `beside` after its part.
  bool sweep_all(const std::vector<FunctionMap::ExecRange>& ranges, SecondSweep& second,
                 const std::function<void()>& beside);
  void add_pointers(DriverImage& img);
  void find_strings(DriverImage& img);

  const FunctionMap* map_ = nullptr;
  const elf::SectionMap* sections_ = nullptr;
  void sort_by_target();

  std::vector<Ref> refs_;
  size_t pointer_begin_ = 0;            // refs_[pointer_begin_..] are the kPointer ones, by slot
  std::vector<uint32_t> by_target_;     // indices into refs_
  std::vector<uint32_t> by_from_;       // indices into refs_ with from >= 0, by (from, site)
  std::vector<uint32_t> from_offsets_;  // function i's references: by_from_[off[i], off[i+1])
  std::vector<PltEntry> plt_;
  std::vector<GotSlot> got_;
  std::vector<CString> strings_;
  std::vector<uint64_t> entry_targets_;
  XrefStats stats_;
};

}  // namespace cudatool
