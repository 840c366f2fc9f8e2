#include "analysis/function_names.hpp"

#include "analysis/driver_tables.hpp"

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

}  // namespace cudatool
