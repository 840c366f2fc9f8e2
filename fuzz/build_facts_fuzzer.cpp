// Fuzzes everything `delta` and `history` gather from one library (exports, imports, note,
// function map with fingerprints and table names, embedded images, driver tables), then a delta
// of the input against itself, which must report no interface change.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/build_facts.hpp"
#include "analysis/delta.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  auto img = DriverImage::from_file(
      MappedFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz"), "fuzz");
  if (!img) return 0;
  BuildFacts f = collect_facts(**img);
  Delta d = compute_delta(f, f);
  if (!d.interface_unchanged()) __builtin_trap();
  if (d.functions && (d.functions->added != 0 || d.functions->removed != 0)) __builtin_trap();
  return 0;
}
