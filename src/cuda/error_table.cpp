// The CUresult table behind cuGetErrorName / cuGetErrorString.
//
// Layout found in 470, 535, 550 and 555 (docs/tables.md): an array of 24-byte records in
// .data.rel.ro, sorted by code, no terminator,
//
//   +0   uint64_t    code        (CUresult, zero-extended; no relocation)
//   +8   const char* name        "CUDA_ERROR_INVALID_VALUE"   (RELATIVE -> .rodata)
//   +16  const char* description "invalid argument"           (RELATIVE -> .rodata)
//
// found as the longest run of such records whose names start with "CUDA_".
#include <fmt/format.h>

#include <set>

#include "cuda/driver_tables.hpp"

namespace cudatool::cuda {
namespace {

constexpr uint64_t kRecord = 24;
constexpr uint64_t kMinRecords = 8;

std::optional<ErrorEntry> record_at(const TableInput& in, uint64_t p) {
  if (in.relocs->find(p) != nullptr) return std::nullopt;
  const auto* n = in.relocs->find(p + 8);
  const auto* d = in.relocs->find(p + 16);
  if (n == nullptr || d == nullptr) return std::nullopt;
  auto code = in.sections->u64(p);
  if (!code || *code > UINT32_MAX) return std::nullopt;
  const auto* ns = in.sections->at(n->target);
  if (ns == nullptr || ns->exec || ns->write) return std::nullopt;
  auto name = in.sections->cstring(n->target, 128);
  if (!name || name->size() < 6 || name->substr(0, 5) != "CUDA_") return std::nullopt;
  auto desc = in.sections->cstring(d->target, 1024);
  if (!desc) return std::nullopt;
  return ErrorEntry{p, static_cast<uint32_t>(*code), *name, *desc};
}

}  // namespace

ErrorTable find_error_table(const TableInput& in) {
  ErrorTable t;
  uint64_t best_start = 0, best_len = 0, run_start = 0, run_len = 0, prev = 0, seen = 0;
  for (const auto& r : in.relocs->all()) {
    // The name pointer is the first relocated field of a record.
    if (r.where < 8 || (r.where - 8) % 8 != 0) continue;
    uint64_t p = r.where - 8;
    if (!record_at(in, p)) continue;
    ++seen;
    if (run_len > 0 && p == prev + kRecord) {
      ++run_len;
    } else {
      run_start = p;
      run_len = 1;
    }
    prev = p;
    if (run_len > best_len) {
      best_len = run_len;
      best_start = run_start;
    }
  }
  if (best_len < kMinRecords) {
    t.evidence = fmt::format(
        "not found: no run of {} or more 24-byte {{code, name -> \"CUDA_…\", description}} "
        "records ({} such records seen, longest run {})",
        kMinRecords, seen, best_len);
    return t;
  }
  t.found = true;
  t.vaddr = best_start;
  if (const auto* s = in.sections->at(best_start)) t.section = s->name();
  std::set<uint32_t> codes;
  std::set<std::string_view> names;
  for (uint64_t i = 0; i < best_len; ++i) {
    auto e = record_at(in, best_start + i * kRecord);
    if (!e) break;
    if (in.diag && (!codes.insert(e->code).second || !names.insert(e->name).second)) {
      in.diag->report(
          make_error(fmt::format("CUresult record #{} {}", i, e->name), "code",
                     in.sections->offset_of(e->vaddr),
                     fmt::format("code {} or name repeats an earlier record", e->code)));
    }
    t.entries.push_back(*e);
  }
  t.evidence = fmt::format(
      "longest run of 24-byte {{code, name -> \"CUDA_…\", description}} records in {} at "
      "{:#x}: {} records ({} record-shaped places)",
      t.section, t.vaddr, t.entries.size(), seen);
  return t;
}

}  // namespace cudatool::cuda
