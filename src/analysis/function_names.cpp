#include "analysis/function_names.hpp"

#include <elf.h>

#include "analysis/driver_tables.hpp"
#include "elf/symbols.hpp"

namespace cudatool {

uint64_t add_driver_table_names(DriverImage& img, FunctionMap& map) {
  auto& tables = img.facet<DriverTables>();
  uint64_t placed = 0;
  using Kind = DriverTables::NamedFunction::Kind;
  for (const auto& n : tables.function_names(/*with_sources=*/false)) {
    switch (n.kind) {
      case Kind::kDispatch:
        placed += map.add_name(n.address, n.name + ".impl", kImplSource);
        break;
      case Kind::kProcAddress:
        placed += map.add_name(n.address, n.name, kProcAddressSource);
        break;
      case Kind::kExportTable:
        placed += map.add_name(n.address, n.name, kExportTableSource);
        break;
    }
  }
  return placed;
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
