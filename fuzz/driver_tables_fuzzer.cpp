// Fuzzes the driver-table readers of issue #9 through their facet: the relocation index, the
// cuGetProcAddress record array, the cuGetExportTable UUID array and its tables, the CUresult
// table, the Capstone-driven wrapper -> slot -> implementation walk (cycles included), export
// coverage and the function-name list. Then the function map with those names built on two
// threads (function_map_with_names) must be the one-thread map, diagnostics in the same order.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/driver_image.hpp"
#include "analysis/driver_tables.hpp"
#include "analysis/function_map.hpp"
#include "analysis/function_names.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace cudatool;

std::unique_ptr<DriverImage> open(const uint8_t* data, size_t size) {
  auto img = DriverImage::from_file(
      MappedFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz-input"), "fuzz-input");
  return img ? std::move(*img) : nullptr;
}

std::string describe(DriverImage& img, const FunctionMap& map) {
  std::string out;
  for (const auto& f : map.functions()) {
    out += std::to_string(f.start) + " " + std::to_string(f.size) + ":";
    for (const auto& n : map.names(f)) out.append(n.name).append("/").append(n.source) += ",";
    out += "\n";
  }
  for (const auto& u : map.unplaced()) out.append(u.name.name).append("@unplaced\n");
  for (const auto& e : img.diagnostics().items()) out += e.message() + "\n";
  return out + std::to_string(img.diagnostics().count());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto img = open(data, size);
  if (!img) return 0;
  auto& t = img->facet<DriverTables>();
  (void)t.procaddress();
  (void)t.export_tables();
  (void)t.errors();
  (void)t.dispatch();
  (void)t.coverage();
  (void)t.function_names();
  (void)t.relocations_walked();

  auto serial = open(data, size);
  auto threaded = open(data, size);
  FUZZ_CHECK(serial && threaded);
  FunctionMap& one = serial->facet<FunctionMap>();
  add_function_names(*serial, one);
  const FunctionMap& two = function_map_with_names(*threaded);
  FUZZ_CHECK(describe(*serial, one) == describe(*threaded, two));
  return 0;
}
