// The table behind cuGetProcAddress (CUDA 11.3+; present in every branch from 470 on).
//
// Layout found in 470, 535, 550 and 555 (docs/tables.md): an array of 32-byte records in
// .data.rel.ro, one per API name, in no particular order:
//
//   +0   const char* name           "cuMemcpyHtoDAsync"        (RELATIVE -> .rodata)
//   +8   entry*      legacy         {fn, version} list          (RELATIVE -> .data.rel.ro)
//   +16  entry*      per_thread     the same array when the API has no _ptsz/_ptds variant
//   +24  uint32_t    legacy_count, uint32_t per_thread_count
//
// and each list is an array of 16-byte entries {void* fn (RELATIVE -> .text); uint64_t
// cuda_version}, newest first. Nothing points at the record array (code reaches it with a
// RIP-relative lea), so it is found by shape: the longest run of such records.
#include <fmt/format.h>

#include "cuda/driver_tables.hpp"

namespace cudatool::cuda {
namespace {

constexpr uint64_t kRecord = 32;
constexpr uint64_t kEntry = 16;
constexpr uint32_t kMaxListEntries = 64;  // real lists hold 1..4
constexpr uint64_t kMinRecords = 16;

bool is_api_name(std::string_view s) {
  if (s.size() < 3 || s.size() > 128 || s[0] != 'c' || s[1] != 'u') return false;
  if (!((s[2] >= 'A' && s[2] <= 'Z') || (s[2] >= '0' && s[2] <= '9'))) return false;
  for (char c : s) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool in_data(const elf::SectionMap& sm, uint64_t vaddr) {
  const auto* s = sm.at(vaddr);
  return s != nullptr && !s->exec;
}

// The {u32 legacy_count, u32 per_thread_count} word of a record.
bool plausible_counts(uint64_t counts) {
  uint32_t na = static_cast<uint32_t>(counts), nb = static_cast<uint32_t>(counts >> 32);
  return na != 0 && nb != 0 && na <= kMaxListEntries && nb <= kMaxListEntries;
}

struct Candidate {
  uint64_t vaddr;
  std::string_view name;
  uint64_t legacy, per_thread;
  uint32_t n_legacy, n_per_thread;
};

std::optional<Candidate> record_at(const TableInput& in, uint64_t p) {
  const auto& rx = *in.relocs;
  const auto* n = rx.find(p);
  const auto* a = rx.find(p + 8);
  const auto* b = rx.find(p + 16);
  if (n == nullptr || a == nullptr || b == nullptr || rx.find(p + 24) != nullptr)
    return std::nullopt;
  if (!in_data(*in.sections, a->target) || !in_data(*in.sections, b->target)) return std::nullopt;
  auto counts = in.sections->u64(p + 24);
  if (!counts || !plausible_counts(*counts)) return std::nullopt;
  uint32_t na = static_cast<uint32_t>(*counts), nb = static_cast<uint32_t>(*counts >> 32);
  const auto* ns = in.sections->at(n->target);
  if (ns == nullptr || ns->exec || ns->write) return std::nullopt;
  auto name = in.sections->cstring(n->target, 128);
  if (!name || !is_api_name(*name)) return std::nullopt;
  return Candidate{p, *name, a->target, b->target, na, nb};
}

void read_list(const TableInput& in, ProcAddressTable& t, uint32_t record, const Candidate& c,
               uint64_t list, uint32_t count, ProcFlags flags) {
  const auto* sec = in.sections->at(list);
  uint64_t fit = count;
  if (sec == nullptr || sec->bytes.empty()) {
    fit = 0;
  } else if (uint64_t room = (sec->end() - list) / kEntry; room < fit) {
    fit = room;
  }
  if (fit < count && in.diag) {
    in.diag->report(make_error(
        fmt::format("cuGetProcAddress record #{} {}", record, c.name), "list",
        in.sections->offset_of(c.vaddr),
        fmt::format("{} entries at vaddr {:#x} run off {} (room for {})", count, list,
                    sec ? fmt::format("section {}", sec->name()) : std::string("every section"),
                    fit)));
  }
  // Records of a hostile file may all share one long list: bound the rows listed in all
  // (libcuda: ~630 rows for ~35 000 relocations).
  uint64_t budget = std::max<uint64_t>(uint64_t{1} << 16, 4 * in.relocs->all().size());
  if (t.rows.size() + fit > budget) {
    if (in.diag) {
      in.diag->report(
          make_error(fmt::format("cuGetProcAddress record #{} {}", record, c.name), "list",
                     in.sections->offset_of(c.vaddr),
                     fmt::format("more than {} rows in all; the rest are not listed", budget)));
    }
    fit = budget > t.rows.size() ? budget - t.rows.size() : 0;
  }
  for (uint64_t k = 0; k < fit; ++k) {
    uint64_t e = list + k * kEntry;
    ProcAddressRow row;
    row.record = record;
    row.api = c.name;
    row.flags = flags;
    row.entry_vaddr = e;
    row.cuda_version = static_cast<uint32_t>(in.sections->u64(e + 8).value_or(0));
    if (const auto* r = in.relocs->find(e)) {
      row.function = r->target;
      const auto* fs = in.sections->at(r->target);
      if ((fs == nullptr || !fs->exec) && in.diag) {
        in.diag->report(
            make_error(fmt::format("cuGetProcAddress {} v{}", c.name, row.cuda_version), "function",
                       in.sections->offset_of(e),
                       fmt::format("relocation at vaddr {:#x} points to {:#x}, {}", e, r->target,
                                   fs ? fmt::format("in non-executable {}", fs->name())
                                      : std::string("outside every section"))));
      }
      if (in.exports) row.export_name = in.exports->at(r->target);
    } else if (in.diag) {
      in.diag->report(make_error(fmt::format("cuGetProcAddress {} v{}", c.name, row.cuda_version),
                                 "function", in.sections->offset_of(e),
                                 fmt::format("entry at vaddr {:#x} has no relocation", e)));
    }
    t.rows.push_back(row);
  }
}

}  // namespace

ProcAddressTable find_procaddress_table(const TableInput& in) {
  ProcAddressTable t;
  // Runs of consecutive 32-byte records, remembered as [first, count).
  uint64_t best_start = 0, best_len = 0, runs = 0;
  uint64_t run_start = 0, run_len = 0, prev = 0;
  // The index is sorted by slot with one entry per slot, so "are p+8 and p+16 relocated and p+24
  // not" is read from the next entries, and the u32 counts are checked before anything else:
  // only the places that pass both are checked in full (record_at). ~60k relocations, ~500
  // records.
  auto all = in.relocs->all();
  for (size_t i = 0; i + 2 < all.size(); ++i) {
    const auto& r = all[i];
    if (r.where % 8 != 0 || all[i + 1].where != r.where + 8 || all[i + 2].where != r.where + 16 ||
        (i + 3 < all.size() && all[i + 3].where == r.where + 24))
      continue;
    auto counts = in.sections->u64(r.where + 24);
    if (!counts || !plausible_counts(*counts)) continue;
    if (!in_data(*in.sections, r.where) || !record_at(in, r.where)) continue;
    ++t.candidates;
    if (run_len > 0 && r.where == prev + kRecord) {
      ++run_len;
    } else {
      if (run_len > 0) ++runs;
      run_start = r.where;
      run_len = 1;
    }
    prev = r.where;
    if (run_len > best_len) {
      best_len = run_len;
      best_start = run_start;
    }
  }
  if (run_len > 0) ++runs;
  if (best_len < kMinRecords) {
    t.evidence = fmt::format(
        "not found: no run of {} or more 32-byte {{name -> \"cu…\", list, list, u32 counts}} "
        "records ({} such records seen, longest run {})",
        kMinRecords, t.candidates, best_len);
    return t;
  }
  t.found = true;
  t.vaddr = best_start;
  if (const auto* s = in.sections->at(best_start)) t.section = s->name();
  for (uint64_t i = 0; i < best_len; ++i) {
    auto c = record_at(in, best_start + i * kRecord);
    if (!c) break;  // cannot happen: the run was made of records
    uint32_t index = static_cast<uint32_t>(t.records.size());
    t.records.push_back(
        {c->vaddr, c->name, c->legacy, c->per_thread, c->n_legacy, c->n_per_thread});
    if (c->legacy == c->per_thread) {
      if (c->n_legacy != c->n_per_thread && in.diag) {
        in.diag->report(make_error(fmt::format("cuGetProcAddress record #{} {}", index, c->name),
                                   "counts", in.sections->offset_of(c->vaddr + 24),
                                   fmt::format("one list, two counts ({} and {}); using the larger",
                                               c->n_legacy, c->n_per_thread)));
      }
      read_list(in, t, index, *c, c->legacy, std::max(c->n_legacy, c->n_per_thread),
                ProcFlags::kDefault);
    } else {
      read_list(in, t, index, *c, c->legacy, c->n_legacy, ProcFlags::kLegacy);
      read_list(in, t, index, *c, c->per_thread, c->n_per_thread, ProcFlags::kPerThread);
    }
  }
  t.evidence = fmt::format(
      "longest run of 32-byte {{name -> \"cu…\", legacy list, per-thread list, u32 counts}} "
      "records in {} at {:#x}: {} records ({} record-shaped places in {} runs)",
      t.section, t.vaddr, t.records.size(), t.candidates, runs);
  return t;
}

}  // namespace cudatool::cuda
