#include "elf/reloc_index.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/prefault.hpp"
#include "elf/relocations.hpp"

namespace cudatool::elf {

RelocIndex RelocIndex::build(const ElfImage& elf, std::span<const Symbol> dynsyms,
                             Diagnostics* diag) {
  RelocIndex ix;
  // One allocation for all tables (.rela.dyn, then .rela.plt): growing the vector table by
  // table copied ~1.4 MB on 580 and touched every page of it twice.
  uint64_t total = 0;
  for (const auto& sh : elf.sections()) {
    if (sh.sh_type != SHT_RELA || !sh.is_alloc()) continue;
    if (auto table = RelaTable::from_section(elf, sh)) total += table->size();
  }
  ix.entries_.reserve(total);
  prefault_capacity(ix.entries_);
  // ld sorts RELATIVE entries by offset (-z combreloc) and .rela.plt follows: the entries are
  // checked for order as they are read, and sorted only when they are not.
  bool sorted = true;
  // Two relocations of one slot: the loader applies both, the last one wins. Keep the last and
  // say so: a table read through such a slot is suspect.
  uint64_t dups = 0;
  uint64_t first_dup = ~uint64_t{0};  // the lowest slot relocated twice
  auto note_dup = [&](uint64_t where) {
    ++dups;
    first_dup = std::min(first_dup, where);
  };
  for (const auto& sh : elf.sections()) {
    if (sh.sh_type != SHT_RELA || !sh.is_alloc()) continue;
    auto table = RelaTable::from_section(elf, sh);
    if (!table) {
      if (diag) diag->report(table.error());
      continue;
    }
    if (table->bytes().size() % 24 != 0 && diag) {
      diag->report(make_error(describe(sh), "sh_size", sh.sh_offset,
                              fmt::format("{:#x} is not a multiple of 24; the last {} bytes are "
                                          "ignored",
                                          sh.sh_size, table->bytes().size() % 24)));
    }
    uint64_t n = table->size();
    ix.walked_ += n;
    for (uint64_t i = 0; i < n; ++i) {
      Rela r = table->at(i);
      RelocTarget t{r.r_offset, 0};
      switch (r.type) {
        case R_X86_64_RELATIVE:
          t.target = static_cast<uint64_t>(r.r_addend);
          ++ix.relative_;
          break;
        case R_X86_64_64:
        case R_X86_64_GLOB_DAT:
        case R_X86_64_JUMP_SLOT: {
          if (r.sym == 0 || r.sym >= dynsyms.size() || !dynsyms[r.sym].defined()) {
            ++ix.unresolved_;  // imports: the slot holds another object's address
            continue;
          }
          int64_t add = r.type == R_X86_64_64 ? r.r_addend : 0;
          t.target = dynsyms[r.sym].st_value + static_cast<uint64_t>(add);
          break;
        }
        default:
          ++ix.unresolved_;  // TLS, IRELATIVE…: not a plain address
          continue;
      }
      // While the entries come in order, a second relocation of a slot replaces the first here.
      if (sorted && !ix.entries_.empty()) {
        RelocTarget& last = ix.entries_.back();
        if (t.where == last.where) {
          note_dup(t.where);
          last = t;
          continue;
        }
        sorted = t.where > last.where;
      }
      ix.entries_.push_back(t);
    }
  }
  if (!sorted) {
    // A stable sort keeps the relocations of one slot in the order the loader applies them.
    auto by_where = [](const RelocTarget& a, const RelocTarget& b) { return a.where < b.where; };
    std::stable_sort(ix.entries_.begin(), ix.entries_.end(), by_where);
    size_t out = 0;
    for (size_t i = 0; i < ix.entries_.size(); ++i) {
      if (out > 0 && ix.entries_[out - 1].where == ix.entries_[i].where) {
        note_dup(ix.entries_[i].where);
        ix.entries_[out - 1] = ix.entries_[i];
        continue;
      }
      ix.entries_[out++] = ix.entries_[i];
    }
    ix.entries_.resize(out);
  }
  if (dups > 0 && diag) {
    diag->report(make_error("dynamic relocations", "r_offset", std::nullopt,
                            fmt::format("{} slots are relocated more than once (first at vaddr "
                                        "{:#x}); the last relocation of each is used",
                                        dups, first_dup)));
  }
  ix.build_buckets();
  return ix;
}

void RelocIndex::build_buckets() {
  buckets_.clear();
  if (entries_.empty()) return;
  base_ = entries_.front().where;
  uint64_t span = entries_.back().where - base_;
  // At most max(4096, n/4) buckets whatever the spread of offsets; on libcuda (pointer slots
  // 8 bytes apart over ~1 MiB) a lookup searches the 4-8 entries of one bucket. Fresh pages are
  // what costs here (~1 µs each on the 2-vCPU guest): n buckets (140 KiB of them on 550) made
  // `functions` 0.04-0.11 ms slower than n/4 on 535-580, and 4n slower still; the ~8,000
  // lookups of a run cost less than the pages.
  uint64_t cap = std::max<uint64_t>(4096, entries_.size() / 4);
  shift_ = 3;
  while (shift_ < 63 && (span >> shift_) + 2 > cap) ++shift_;
  size_t nb = static_cast<size_t>((span >> shift_) + 2);
  buckets_.reserve(nb);
  prefault_capacity(buckets_);
  buckets_.assign(nb, static_cast<uint32_t>(entries_.size()));
  for (size_t i = entries_.size(); i-- > 0;) {
    buckets_[(entries_[i].where - base_) >> shift_] = static_cast<uint32_t>(i);
  }
  // Empty buckets point at the next non-empty one.
  for (size_t b = nb - 1; b-- > 0;) buckets_[b] = std::min(buckets_[b], buckets_[b + 1]);
}

size_t RelocIndex::lower_bound(uint64_t where) const {
  if (entries_.empty() || where <= base_) return 0;
  uint64_t b = (where - base_) >> shift_;
  if (b + 1 >= buckets_.size()) return entries_.size();
  auto first = entries_.begin() + buckets_[b];
  auto last = entries_.begin() + buckets_[b + 1];
  return static_cast<size_t>(
      std::lower_bound(first, last, where,
                       [](const RelocTarget& e, uint64_t w) { return e.where < w; }) -
      entries_.begin());
}

const RelocTarget* RelocIndex::find(uint64_t where) const {
  size_t i = lower_bound(where);
  if (i < entries_.size() && entries_[i].where == where) return &entries_[i];
  return nullptr;
}

std::span<const RelocTarget> RelocIndex::range(uint64_t lo, uint64_t hi) const {
  if (hi <= lo) return {};
  size_t a = lower_bound(lo);
  size_t b = lower_bound(hi);
  return std::span<const RelocTarget>(entries_).subspan(a, b - a);
}

}  // namespace cudatool::elf
