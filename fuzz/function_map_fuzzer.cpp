// Fuzzes what `functions`, `addr` and `symbolize` do with a whole library: the FunctionMap
// facet (.eh_frame_hdr search table, .eh_frame, exports, gaps, lookups) and the symbol-file
// writer, whose output must itself be a readable ELF file with the symbols it claims.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "analysis/symbol_file.hpp"
#include "elf/symbols.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  auto img = DriverImage::from_file(
      MappedFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz-input"), "fuzz-input");
  if (!img) return 0;
  DriverImage& d = **img;
  FunctionMap& map = d.facet<FunctionMap>();
  auto fns = map.functions();
  for (size_t i = 1; i < fns.size(); ++i) FUZZ_CHECK(fns[i].start >= fns[i - 1].start);
  for (const auto& f : fns) {
    const Function* hit = map.find(f.start);
    FUZZ_CHECK(f.size == 0 || (hit != nullptr && hit->contains(f.start)));
    FUZZ_CHECK(map.at(f.start) != nullptr);
    (void)map.display_name(f);
    if (&f - fns.data() > 64) break;
  }
  (void)map.find(0);
  (void)map.find(~uint64_t{0});
  auto gaps = map.gaps(true);
  auto totals = map.gap_totals();
  FUZZ_CHECK(totals.first == gaps.size());
  for (const auto& g : gaps) FUZZ_CHECK(g.end > g.start && map.find(g.start) == nullptr);
  map.add_name(fns.empty() ? 0 : fns.front().start, "fuzz_name", "fuzz");
  (void)map.named_by_source();

  SymbolFileStats st;
  auto out = build_symbol_file(d, map, &st);
  if (!out) return 0;
  // The symbol file must parse, and hold the symbols it says it has.
  ByteView v(out->data(), out->size());
  Diagnostics diag;
  auto elf = elf::ElfImage::parse(v, &diag);
  FUZZ_CHECK(elf.ok());
  const auto* symtab = elf->section(".symtab");
  FUZZ_CHECK(symtab != nullptr && symtab->sh_type == SHT_SYMTAB);
  auto syms = elf::read_symbols(*elf, *symtab, &diag);
  FUZZ_CHECK(syms.ok() && syms->size() == st.symbols + 1);
  FUZZ_CHECK(diag.empty());
  FUZZ_CHECK(!d.build_id() || elf::gnu_build_id(*elf, nullptr) == d.build_id());
  return 0;
}
