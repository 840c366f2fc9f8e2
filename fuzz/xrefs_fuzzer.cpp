// Fuzzes the cross-reference index builder (the XrefIndex facet: PLT, GOT, the sweep of every
// executable section, relocated pointers, strings), the queries on it (targets, references,
// --from, shortest paths, address descriptions) and the SQLite writer, on whole libraries.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/driver_image.hpp"
#include "analysis/xref_query.hpp"
#include "analysis/xref_sqlite.hpp"
#include "analysis/xrefs.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  auto img = DriverImage::from_file(
      MappedFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz-input"), "fuzz-input");
  if (!img) return 0;
  DriverImage& d = **img;
  const XrefIndex& x = d.facet<XrefIndex>();
  const auto fns = x.map().functions();
  size_t pointers = 0;
  for (const Ref& r : x.refs()) {
    FUZZ_CHECK(r.from < 0 || static_cast<size_t>(r.from) < fns.size());
    FUZZ_CHECK(r.from < 0 || fns[static_cast<size_t>(r.from)].contains(r.site));
    FUZZ_CHECK((r.kind == RefKind::kPointer) == (r.length == 0));
    pointers += r.kind == RefKind::kPointer;
  }
  FUZZ_CHECK(x.pointers().size() == pointers);
  for (size_t i = 1; i < x.strings().size(); ++i)
    FUZZ_CHECK(x.strings()[i - 1].address < x.strings()[i].address);
  for (const auto& s : x.strings()) {
    FUZZ_CHECK(!s.text.empty() && s.text.size() <= CString::kMaxLength);
    FUZZ_CHECK(x.string_at(s.address) == &s);
  }
  for (const auto& p : x.plt()) FUZZ_CHECK(x.plt_at(p.address) != nullptr);
  // Queries on the first functions and imports.
  DataNames names(d);
  size_t asked = 0;
  for (size_t i = 0; i < fns.size() && asked < 8; ++i, ++asked) {
    for (const Ref* r : x.refs_from(static_cast<int32_t>(i))) {
      FUZZ_CHECK(r->from == static_cast<int32_t>(i));
      (void)describe_address(x, &names, r->target);
    }
    for (const Ref* r : x.refs_to(fns[i].start, fns[i].end())) {
      FUZZ_CHECK(fns[i].contains(r->target) || r->target == fns[i].start);
    }
  }
  if (!fns.empty()) {
    auto from = resolve_xref_target(x, FunctionMap::derived_name(fns.front().start));
    FUZZ_CHECK(from.ok());
    for (const auto& p : x.plt()) {
      auto to = resolve_xref_target(x, std::string(p.name) + "@plt");
      FUZZ_CHECK(to.ok());
      auto res = shortest_paths(x, *from, *to, 3);
      for (const auto& c : res.chains) FUZZ_CHECK(c.size() == res.length);
      break;
    }
    (void)references_to(x, *from);
  }
  (void)resolve_xref_target(x, "0x1000");
  (void)write_xref_database(d, ":memory:");
  return 0;
}
