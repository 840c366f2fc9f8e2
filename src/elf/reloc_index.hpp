// A vaddr -> relocation index over the dynamic RELA tables: "which pointer does the loader write
// at this address?". libcuda's data tables (cuGetProcAddress records, cuGetExportTable UUID
// tables, the dispatch slots, the CUresult strings) are arrays of pointers whose values exist
// only as R_X86_64_RELATIVE addends (x86-64 psABI, "Relocation Types"): reading them needs this
// index, built once per image.
//
// Built from every SHT_RELA section that is SHF_ALLOC (.rela.dyn, .rela.plt): entries are kept
// sorted by r_offset with the address they make the slot hold (RELATIVE: B + A, kept as A;
// 64 / GLOB_DAT / JUMP_SLOT against a defined symbol: S + A). A coarse bucket table over
// r_offset makes find() O(1) on real files; a hostile spread of offsets only makes the buckets
// coarser, never the table larger than the entries.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/error.hpp"
#include "elf/elf_image.hpp"
#include "elf/symbols.hpp"

namespace cudatool::elf {

// 16 bytes: the index holds one per relocation (58k on 580.159.04); the relocation's type is not
// kept (every reader only asks which address a slot holds).
struct RelocTarget {
  uint64_t where = 0;   // r_offset: the slot the loader writes
  uint64_t target = 0;  // the address the slot holds after relocation (load base 0)
};

class RelocIndex {
 public:
  RelocIndex() = default;
  // `dynsyms` resolves symbol-relative types (may be empty: those entries are then counted in
  // unresolved() and left out). Damaged tables and duplicate slots are reported to `diag`.
  static RelocIndex build(const ElfImage& elf, std::span<const Symbol> dynsyms, Diagnostics* diag);

  // The relocation that writes `where`, or null.
  [[nodiscard]] const RelocTarget* find(uint64_t where) const;
  // The entries with lo <= where < hi, in order.
  [[nodiscard]] std::span<const RelocTarget> range(uint64_t lo, uint64_t hi) const;
  [[nodiscard]] std::span<const RelocTarget> all() const { return entries_; }

  // RELA entries read (every type, every table): what the index cost to build.
  [[nodiscard]] uint64_t walked() const { return walked_; }
  [[nodiscard]] uint64_t relative_count() const { return relative_; }
  [[nodiscard]] uint64_t unresolved() const { return unresolved_; }

 private:
  void build_buckets();
  [[nodiscard]] size_t lower_bound(uint64_t where) const;

  std::vector<RelocTarget> entries_;
  // bucket b holds the index of the first entry with (where - base_) >> shift_ >= b.
  std::vector<uint32_t> buckets_;
  uint64_t base_ = 0;
  uint32_t shift_ = 3;
  uint64_t walked_ = 0;
  uint64_t relative_ = 0;
  uint64_t unresolved_ = 0;
};

}  // namespace cudatool::elf
