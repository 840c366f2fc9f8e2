// Facet: libcuda's routing tables (cuGetProcAddress, cuGetExportTable, wrapper dispatch,
// CUresult strings) for one DriverImage, each built on first use from the Relocations facet.
//
//   auto& t = img.facet<DriverTables>();
//   for (const auto& row : t.procaddress().rows) …
//   for (const auto& f : t.function_names()) …   // names for the function map / symbolizer
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/driver_image.hpp"
#include "base/string_arena.hpp"
#include "cuda/driver_tables.hpp"

namespace cudatool {

class DriverTables {
 public:
  explicit DriverTables(DriverImage& img);

  const cuda::ProcAddressTable& procaddress();
  const cuda::ExportTables& export_tables();
  const cuda::DispatchMap& dispatch();
  const cuda::ErrorTable& errors();

  // Every exported function whose name starts with "cu": is it what some cuGetProcAddress row
  // returns, and if not, why not.
  struct ApiCoverage {
    std::string_view name;
    uint64_t address = 0;
    bool in_procaddress = false;
    std::string via;     // covered: "cuMemAlloc v3020 default" (the first row returning it)
    std::string reason;  // not covered: why
  };
  const std::vector<ApiCoverage>& coverage();

  // Names this facet gives to functions that have no symbol of their own, for the function map
  // and the symbolizer: (address, name, source). Sorted by address; an address may carry more
  // than one name (an implementation shared by several exports).
  //   {0x291d40, "cuMemAlloc_v2", "impl via dispatch"}              body behind an export
  //   {0x…,      "cuFoo",        "procaddress cuFoo v12000 per-thread"}  returned, not exported
  //   {0x…,      "CUDART_INTERFACE.get_module_from_cubin", "export table 6bd5fb6c-… slot 1"}
  //   {0x…,      "etbl_2c8e0ad8_3", "export table 2c8e0ad8-… slot 3"}  unnamed slot
  // The strings live as long as this facet.
  struct NamedFunction {
    enum class Kind : uint8_t { kDispatch, kProcAddress, kExportTable };
    uint64_t address = 0;
    std::string_view name;
    std::string_view source;
    Kind kind = Kind::kDispatch;
  };
  // Without sources (`source` left empty) for callers that only place the names: formatting
  // ~2,700 of them was a tenth of `functions` on 580.
  std::vector<NamedFunction> function_names(bool with_sources = true);
  // function_names()' three parts before the merge: merge_in_address_order(parts, visit) then
  // gives the same names in the same order without building the vector (`functions` would only
  // copy it into the map: ~60 µs on 550).
  using NameParts = std::array<std::vector<NamedFunction>, 3>;
  NameParts function_name_parts(bool with_sources = true);
  // function_names()' last step: parts, each sorted by address, merged in address order; at one
  // address the parts' order and each part's own order are kept, and the same (address, name)
  // is kept once.
  static std::vector<NamedFunction> merge_in_address_order(
      std::span<const std::vector<NamedFunction>> parts);
  static void merge_in_address_order(std::span<const std::vector<NamedFunction>> parts,
                                     const std::function<void(const NamedFunction&)>& visit);

  // dispatch(), procaddress() and export_tables() built at once, on two threads: a helper runs
  // `alongside` (the caller's own work, which must touch neither this facet nor anything of
  // the image that is computed on first use) while this thread builds the relocation index;
  // each table then goes to whichever thread comes for it first, and both share the dispatch
  // stubs. Damage is reported as if the three were built one after the other, in that order.
  void build_name_tables(const std::function<void()>& alongside = {});

  // Relocation entries read to build the index (all RELA tables, all types).
  uint64_t relocations_walked();

 private:
  cuda::TableInput input();
  // The exported functions in executable sections: what dispatch() decodes.
  std::vector<cuda::ExportedFunction> exported_code(const cuda::TableInput& in);
  // function_names()' three parts, each sorted by address (equal addresses in table order).
  std::vector<NamedFunction> dispatch_names(bool with_sources);
  std::vector<NamedFunction> procaddress_names(bool with_sources);
  std::vector<NamedFunction> export_table_names(bool with_sources);

  DriverImage& img_;
  cuda::ExportNames names_;
  bool names_ready_ = false;
  std::optional<cuda::ProcAddressTable> procaddress_;
  std::optional<cuda::ExportTables> export_tables_;
  std::optional<cuda::DispatchMap> dispatch_;
  std::optional<cuda::ErrorTable> errors_;
  std::optional<std::vector<ApiCoverage>> coverage_;
  StringArena names_made_;  // function_names()' export-table names and sources
  // The last two parts without sources, made by build_name_tables() on the thread that read
  // the table, beside the other thread's work (they were a tenth of `functions`, after it).
  std::optional<std::vector<NamedFunction>> procaddress_names_, export_table_names_;
};

}  // namespace cudatool
