// Fuzzes the driver-table readers of issue #9 through their facet: the relocation index, the
// cuGetProcAddress record array, the cuGetExportTable UUID array and its tables, the CUresult
// table, the Capstone-driven wrapper -> slot -> implementation walk (cycles included), export
// coverage and the function-name list.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/driver_image.hpp"
#include "analysis/driver_tables.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  auto img = DriverImage::from_file(
      MappedFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz-input"), "fuzz-input");
  if (!img) return 0;
  auto& t = (**img).facet<DriverTables>();
  (void)t.procaddress();
  (void)t.export_tables();
  (void)t.errors();
  (void)t.dispatch();
  (void)t.coverage();
  (void)t.function_names();
  (void)t.relocations_walked();
  return 0;
}
