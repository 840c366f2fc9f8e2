// Fuzzes the kernel-ABI surface (the AbiSurface facet: ioctl sinks, the reversed call graph, the
// immediate and constant sweep of every function), the layouts of its requests and the comparison
// of a surface with itself, on whole libraries.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/abi_layout.hpp"
#include "analysis/abi_surface.hpp"
#include "analysis/driver_image.hpp"
#include "analysis/xrefs.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  auto img = DriverImage::from_file(
      MappedFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz-input"), "fuzz-input");
  if (!img) return 0;
  DriverImage& d = **img;
  const AbiSurface& s = d.facet<AbiSurface>();
  const size_t functions = d.facet<XrefIndex>().map().functions().size();
  FUZZ_CHECK(s.stats().reaching_functions <= functions);
  FUZZ_CHECK(s.stats().ioctl_callers <= s.stats().reaching_functions);
  const AbiRequest* prev = nullptr;
  for (const AbiRequest& r : s.requests()) {
    FUZZ_CHECK(!r.uses.empty());
    FUZZ_CHECK(s.find(r.kind, r.value) == &r);
    FUZZ_CHECK(prev == nullptr || prev->kind < r.kind ||
               (prev->kind == r.kind && prev->value < r.value));
    for (const AbiUse& u : r.uses) {
      FUZZ_CHECK(u.function >= 0 && static_cast<size_t>(u.function) < functions);
    }
    FUZZ_CHECK((r.confidence == AbiConfidence::kHigh) == r.reason.empty());
    AbiLayout l = abi_layout(s.tables(), r.kind, r.value);
    (void)l.simple();
    prev = &r;
  }
  AbiDiff diff = diff_abi(s, s);
  FUZZ_CHECK(diff.added.empty() && diff.removed.empty() && diff.changed.empty());
  FUZZ_CHECK(diff.common == s.requests().size());
  return 0;
}
