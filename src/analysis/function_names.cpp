#include "analysis/function_names.hpp"

#include <elf.h>

#include "analysis/driver_tables.hpp"
#include "elf/symbols.hpp"

namespace cudatool {

namespace {

// The driver tables' names into the map, in function_names()' order, straight from its parts.
uint64_t place_names(FunctionMap& map, DriverTables::NameParts parts) {
  size_t total = 0;
  for (const auto& p : parts) total += p.size();
  map.expect_names(total);
  uint64_t placed = 0;
  using Kind = DriverTables::NamedFunction::Kind;
  std::string impl;
  DriverTables::merge_in_address_order(parts, [&](const DriverTables::NamedFunction& n) {
    switch (n.kind) {
      case Kind::kDispatch:
        impl.assign(n.name).append(".impl");
        placed += map.add_name(n.address, impl, kImplSource);
        break;
      case Kind::kProcAddress:
        placed += map.add_name(n.address, n.name, kProcAddressSource);
        break;
      case Kind::kExportTable:
        placed += map.add_name(n.address, n.name, kExportTableSource);
        break;
    }
  });
  return placed;
}

}  // namespace

uint64_t add_driver_table_names(DriverImage& img, FunctionMap& map) {
  return place_names(map, img.facet<DriverTables>().function_name_parts(/*with_sources=*/false));
}

FunctionMap& function_map_with_names(DriverImage& img) {
  if (img.has_facet<FunctionMap>()) {
    FunctionMap& map = img.facet<FunctionMap>();
    add_function_names(img, map);
    return map;
  }
  // What the map's builder reads of `img` that is computed on first use, computed now; it then
  // reads only what no longer changes, and reports to its own diagnostics, placed where
  // building the map on this thread would have put them: after the search table's damage (read
  // first) and before the dynamic symbols' (read last, to name the exports).
  img.eh_frame_hdr();
  const size_t at = img.diagnostics().items().size();
  img.dynamic_symbols();
  Diagnostics map_diag;
  std::shared_ptr<FunctionMap> built;
  auto& tables = img.facet<DriverTables>();
  tables.build_name_tables([&] { built = std::make_shared<FunctionMap>(img, map_diag); });
  img.diagnostics().insert(at, map_diag);
  FunctionMap& map = img.adopt_facet(std::move(built));
  place_names(map, tables.function_name_parts(/*with_sources=*/false));
  add_symtab_names(img, map);
  return map;
}

uint64_t add_symtab_names(DriverImage& img, FunctionMap& map) {
  const auto* sh = img.elf().section_of_type(SHT_SYMTAB);
  if (sh == nullptr) return 0;
  auto syms = elf::read_symbols(img.elf(), *sh, nullptr);
  if (!syms) return 0;
  uint64_t placed = 0;
  for (const auto& s : *syms) {
    if (s.type() == STT_FUNC && s.defined() && s.st_value != 0 && !s.name.empty()) {
      placed += map.add_name(s.st_value, s.name, kSymtabSource);
    }
  }
  return placed;
}

}  // namespace cudatool
