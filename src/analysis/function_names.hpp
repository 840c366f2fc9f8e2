// Names for the functions of a stripped libcuda beyond its exports: what the driver tables say
// (issue #9) attached to the function map (issue #3), so `functions`, `addr` and `symbolize`
// (and through it gdb and perf) name the bodies behind the exported wrappers.
#pragma once

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"

namespace cudatool {

// Sources of the names added, as FunctionMap::names() reports them.
inline constexpr std::string_view kImplSource = "implementation (dispatch)";
inline constexpr std::string_view kProcAddressSource = "cuGetProcAddress table";
inline constexpr std::string_view kExportTableSource = "export table slot";
inline constexpr std::string_view kSymtabSource = "symtab";

// Adds to `map`: "<export>.impl" for the implementation an exported wrapper forwards to (GCC's
// "name.suffix" convention, so gdb shows `cuMemAlloc_v2.impl` and `break cuMemAlloc_v2` still
// means the wrapper), the API name for functions only the cuGetProcAddress table returns, and
// "<TABLE>.<slot>" for export-table slots. Returns how many names were placed on a function.
uint64_t add_driver_table_names(DriverImage& img, FunctionMap& map);

// Adds the names of the functions of .symtab, where the file has one (an unstripped library, a
// program, a test fixture): static functions too, so that `--functions=GLOBS`, call trees and
// stacks name them as nm does. Returns how many names were placed; 0 for a stripped file.
uint64_t add_symtab_names(DriverImage& img, FunctionMap& map);

// Every name cudatool knows for the functions of `img`: the driver tables' and .symtab's.
inline uint64_t add_function_names(DriverImage& img, FunctionMap& map) {
  return add_driver_table_names(img, map) + add_symtab_names(img, map);
}

// img.facet<FunctionMap>() with add_function_names() done, the same map and diagnostics in the
// same order, sooner: when the map is not built yet, its FDEs are read on a helper thread while
// this one reads the driver tables (DriverTables::build_name_tables). Call it before any other
// thread uses `img`.
FunctionMap& function_map_with_names(DriverImage& img);

}  // namespace cudatool
