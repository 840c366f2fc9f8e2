// The tables behind cuGetExportTable(&table, &uuid).
//
// Layout found in 470, 535, 550 and 555 (docs/tables.md): an array of 16-byte pairs in
// .data.rel.ro, ended by a {0, 0} pair,
//
//   +0  const CUuuid* id      (RELATIVE -> 16 bytes in .rodata)
//   +8  const void*   table   (RELATIVE -> .data.rel.ro; in a few cases .rodata)
//
// and each table is an array of 8-byte words. Most start with their own size in bytes (size
// word included: 0x58 = the size word + 10 slots); some have no size word and start with a
// function pointer (CONTEXT_LOCAL_STORAGE_INTERFACE_V0301 among them). Slots hold relocated
// function pointers, zeros, or constants.
//
// The array is found by shape (runs of such pairs) and picked by the UUIDs the community has
// named (known_export_tables()); without any known UUID the longest run is taken and the
// evidence says so.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "cuda/driver_tables.hpp"

namespace cudatool::cuda {
namespace {

constexpr uint64_t kPair = 16;
constexpr uint64_t kMaxDeclaredSize = 1 << 16;  // the largest seen is 0x1790 bytes
constexpr uint32_t kMaxUndeclaredSlots = 4096;
constexpr uint64_t kMinPairsWithoutKnown = 8;

// 16 bytes of printable ASCII and NULs are strings, not a UUID (a random UUID passes this with
// probability 1 - (96/256)^16); this keeps {string, pointer} arrays out.
bool looks_like_text(ByteView b) {
  for (uint8_t c : b.span())
    if (c != 0 && (c < 0x20 || c > 0x7e)) return false;
  return true;
}

// The sections the last pair's two words pointed into (SectionMap::at's hints).
struct PairHints {
  const elf::MappedSection* uuid = nullptr;
  const elf::MappedSection* table = nullptr;
};

// The pair whose two words the relocations `u` (at p) and `t` (at p + 8) fill.
bool is_pair(const TableInput& in, PairHints& hints, const elf::RelocTarget* u,
             const elf::RelocTarget* t, Uuid* uuid = nullptr, uint64_t* uuid_at = nullptr,
             uint64_t* table_at = nullptr) {
  if (u == nullptr || t == nullptr) return false;
  const auto* us = in.sections->at(u->target, hints.uuid);
  if (us == nullptr || us->exec) return false;
  const auto* ts = in.sections->at(t->target, hints.table);
  if (ts == nullptr || ts->exec) return false;
  auto bytes = us->bytes.sub(u->target - us->addr, 16);  // SectionMap::bytes, section known
  if (!bytes || looks_like_text(*bytes)) return false;
  if (uuid) std::copy_n(bytes->data(), 16, uuid->begin());
  if (uuid_at) *uuid_at = u->target;
  if (table_at) *table_at = t->target;
  return true;
}

struct Run {
  uint64_t start = 0;
  uint64_t len = 0;
  uint32_t known = 0;
  uint32_t rfc4122 = 0;  // UUIDs with the RFC 4122 variant bits (10xx xxxx in byte 8)
};

void read_slots(const TableInput& in, ExportTable& et, uint64_t limit, uint64_t* budget) {
  const auto* sec = in.sections->at(et.table_vaddr);
  if (sec == nullptr) return;  // reported by the caller
  et.section = sec->name();
  uint64_t end = std::min(limit, sec->end());
  const auto* r0 = in.relocs->find(et.table_vaddr);
  auto w0 = in.sections->u64(et.table_vaddr);
  std::string structure = fmt::format("export table #{} {}", et.index, format_uuid(et.uuid));
  if (r0 == nullptr && w0 && *w0 >= 8 && *w0 % 8 == 0 && *w0 <= kMaxDeclaredSize) {
    et.declared_size = *w0;
    uint64_t want = *w0 / 8;
    uint64_t room = (sec->end() - et.table_vaddr) / 8;
    if (want > room) {
      et.truncated = true;
      if (in.diag) {
        in.diag->report(make_error(
            structure, "size", in.sections->offset_of(et.table_vaddr),
            fmt::format("declared size {:#x} at vaddr {:#x} runs off section {} (ends at "
                        "{:#x}); {} slots read",
                        *w0, et.table_vaddr, sec->name(), sec->end(), room)));
      }
      want = room;
    } else if (limit != UINT64_MAX && et.table_vaddr + *w0 > limit && in.diag) {
      in.diag->report(make_error(
          structure, "size", in.sections->offset_of(et.table_vaddr),
          fmt::format("declared size {:#x} at vaddr {:#x} overlaps the next table at {:#x}", *w0,
                      et.table_vaddr, limit)));
    }
    et.slot_count = static_cast<uint32_t>(want);
  } else {
    // No size word: the table is the run of relocated words from its start, up to the next
    // table (`limit`).
    uint64_t n = 0;
    while (n < kMaxUndeclaredSlots && et.table_vaddr + (n + 1) * 8 <= end &&
           in.relocs->find(et.table_vaddr + n * 8) != nullptr)
      ++n;
    et.slot_count = static_cast<uint32_t>(n);
    if (n == 0 && w0 && *w0 != 0) et.slot_count = 1;  // a lone constant
  }
  // Many UUIDs may name one huge table in a hostile file: the slots listed in all are bounded
  // (libcuda: ~2 400 slots for ~35 000 relocations).
  if (et.slot_count > *budget) {
    if (in.diag) {
      in.diag->report(make_error(structure, "slots", in.sections->offset_of(et.table_vaddr),
                                 fmt::format("{} slots exceed what is left of the budget ({}); "
                                             "slots not listed",
                                             et.slot_count, *budget)));
    }
    return;
  }
  *budget -= et.slot_count;
  et.slots.reserve(et.slot_count);
  const KnownExportTable* k = et.known;
  const elf::MappedSection* target_hint = nullptr;
  for (uint32_t i = 0; i < et.slot_count; ++i) {
    ExportSlot s;
    s.index = i;
    s.vaddr = et.table_vaddr + uint64_t{i} * 8;
    if (k) {
      for (const auto& ks : k->slots)
        if (ks.index == i) s.known_name = ks.name;
    }
    if (i == 0 && et.declared_size) {
      s.kind = SlotKind::kSize;
      s.value = *et.declared_size;
    } else if (const auto* r = in.relocs->find(s.vaddr)) {
      s.value = r->target;
      const auto* ts = in.sections->at(r->target, target_hint);
      if (ts == nullptr) {
        s.kind = SlotKind::kNowhere;
        if (in.diag) {
          in.diag->report(make_error(
              structure, fmt::format("slot {}", i), in.sections->offset_of(s.vaddr),
              fmt::format("relocation at vaddr {:#x} points to {:#x}, outside every section",
                          s.vaddr, r->target)));
        }
      } else {
        s.kind = ts->exec ? SlotKind::kFunction : SlotKind::kData;
        s.target_section = ts->name();
        if (ts->exec && in.exports) s.export_name = in.exports->at(r->target);
      }
    } else {
      s.value = in.sections->u64(s.vaddr).value_or(0);
      s.kind = s.value == 0 ? SlotKind::kNull : SlotKind::kValue;
    }
    et.slots.push_back(s);
  }
}

}  // namespace

ExportTables find_export_tables(const TableInput& in) {
  ExportTables out;
  // Without a UUID the community knows, a run must look like generated UUIDs: at least 8
  // pairs, three in four of them with RFC 4122 variant bits (random bytes: one in four).
  auto plausible = [](const Run& r) {
    return r.known > 0 || (r.len >= kMinPairsWithoutKnown && r.rfc4122 * 4 >= r.len * 3);
  };
  // The best run is kept as each run ends (~4,000 runs on 550: kept in a vector, they grew it
  // past glibc's mmap threshold, and its reallocations and release cost a heap trim and an
  // munmap, each a TLB shootdown on the other CPU): the most known UUIDs, then the longest,
  // the first of equals.
  std::optional<Run> best;
  uint64_t run_count = 0;
  auto run_ended = [&](const Run& r) {
    ++run_count;
    if (!plausible(r)) return;
    if (!best || r.known > best->known || (r.known == best->known && r.len > best->len)) best = r;
  };
  // Pairs are 16 bytes but relocations 8 apart: a {table, next uuid} pair is pair-shaped too.
  // Track runs for both 8-byte phases separately so the two never break each other.
  Run cur[2];
  uint64_t prev[2] = {0, 0};
  // A pair needs p and p+8 relocated: with the index sorted by slot, one entry per slot, that
  // is the next entry, read before anything else is looked up.
  auto all = in.relocs->all();
  PairHints hints;
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    const auto& r = all[i];
    if (r.where % 8 != 0 || all[i + 1].where != r.where + 8) continue;
    Uuid u;
    if (!is_pair(in, hints, &r, &all[i + 1], &u)) continue;
    int ph = static_cast<int>((r.where >> 3) & 1);
    if (cur[ph].len > 0 && r.where == prev[ph] + kPair) {
      ++cur[ph].len;
    } else {
      if (cur[ph].len > 0) run_ended(cur[ph]);
      cur[ph] = Run{r.where, 1, 0};
    }
    if (find_known_export_table(u)) ++cur[ph].known;
    if ((u[8] & 0xc0) == 0x80) ++cur[ph].rfc4122;
    prev[ph] = r.where;
  }
  for (const auto& c : cur)
    if (c.len > 0) run_ended(c);
  if (!best) {
    out.evidence = fmt::format(
        "not found: no run of 16-byte {{uuid -> 16 bytes, table -> data}} pairs holding a known "
        "UUID, nor one of {} or more pairs that look like RFC 4122 UUIDs ({} runs seen)",
        kMinPairsWithoutKnown, run_count);
    return out;
  }
  out.found = true;
  out.vaddr = best->start;
  out.known_count = best->known;
  if (const auto* s = in.sections->at(best->start)) out.section = s->name();
  uint64_t after = best->start + best->len * kPair;
  auto z0 = in.sections->u64(after), z1 = in.sections->u64(after + 8);
  out.zero_terminated =
      z0 && z1 && *z0 == 0 && *z1 == 0 && !in.relocs->find(after) && !in.relocs->find(after + 8);

  for (uint64_t i = 0; i < best->len; ++i) {
    ExportTable et;
    et.index = static_cast<uint32_t>(i);
    et.entry_vaddr = best->start + i * kPair;
    is_pair(in, hints, in.relocs->find(et.entry_vaddr), in.relocs->find(et.entry_vaddr + 8),
            &et.uuid, &et.uuid_vaddr, &et.table_vaddr);
    et.known = find_known_export_table(et.uuid);
    out.tables.push_back(std::move(et));
  }
  // A table without a size word ends where the next one (or the UUID array) begins.
  std::vector<uint64_t> starts;
  starts.reserve(out.tables.size() + 1);
  for (const auto& t : out.tables) starts.push_back(t.table_vaddr);
  starts.push_back(out.vaddr);
  std::sort(starts.begin(), starts.end());
  uint64_t budget = std::max<uint64_t>(uint64_t{1} << 16, 8 * in.relocs->all().size());
  for (auto& et : out.tables) {
    auto next = std::upper_bound(starts.begin(), starts.end(), et.table_vaddr);
    uint64_t limit = next == starts.end() ? UINT64_MAX : *next;
    read_slots(in, et, limit, &budget);
  }
  out.evidence = fmt::format(
      "run of 16-byte {{uuid -> .rodata, table -> data}} pairs in {} at {:#x}: {} tables, {} of "
      "them with a UUID named by the community{} ({} candidate runs)",
      out.section, out.vaddr, out.tables.size(), out.known_count,
      out.zero_terminated ? ", ended by a {0, 0} pair" : ", not ended by a {0, 0} pair", run_count);
  return out;
}

}  // namespace cudatool::cuda
