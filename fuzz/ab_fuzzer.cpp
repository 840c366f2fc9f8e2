// Fuzzes `ab` end to end below the command line (src/ab/): two traces from one input (split at
// the first "\n=====B=====\n"), each read, normalised (handles, pointers, fds, layouts), aligned,
// compared, and every divergence described — field names, values, summaries, byte fates — and the
// verdict made (first divergence with consequences, answers without, aftermath, early end) and
// written as text. B is normalised as an imported capture holds its calls (capture_view) when
// bit 1 of the input size is set; bit 2 hides known differences (--ignore).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ab/verdict.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool::ab;
  std::string_view all(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSep = "\n=====B=====\n";
  size_t cut = all.find(kSep);
  std::string a(all.substr(0, cut));
  std::string b(cut == std::string_view::npos ? all : all.substr(cut + kSep.size()));
  auto na = normalize_memory(std::move(a), "a");
  NormalizeOptions ob;
  ob.capture_view = (size & 2) != 0;
  auto nb = normalize_memory(std::move(b), "b", ob);
  if (!na || !nb) return 0;
  CompareOptions o;
  o.align.max_dp_cells = 1 << 16;  // small budget: anchors and the greedy walk are fuzzed too
  if ((size & 4) != 0) {           // known differences (--ignore): a call, a member
    for (std::string_view spec : {"NV_ESC_RM_FREE", "params.*", "status"}) {
      auto k = parse_known(spec, "--ignore");
      FUZZ_CHECK(k.ok());
      o.known.push_back(std::move(*k));
    }
  }
  Comparison c = compare(**na, **nb, o);
  size_t n = 0;
  for (const Divergence& d : c.divergences) {
    if (d.a != kNone) n += summarize(c.namer_a(), (*na)->events[d.a]).size();
    if (d.b != kNone) n += summarize(c.namer_b(), (*nb)->events[d.b]).size();
    for (const FieldDiff& f : d.fields) n += f.field.size() + f.a.size() + f.b.size();
  }
  Verdict v = make_verdict(c);
  for (const std::string& l : verdict_lines(c, v, (size & 1) != 0)) n += l.size();
  n += count_line(v).size();
  if (v.early_end) {
    FUZZ_CHECK(v.early_end->not_made <= v.early_end->remaining);
    FUZZ_CHECK(v.first != nullptr);
  }
  for (size_t k = 0; k < v.counts.size(); ++k) FUZZ_CHECK(v.shown[k] <= v.counts[k]);
  // The first divergence has consequences; the answers listed under it (all, without one) none.
  if (v.first == nullptr) FUZZ_CHECK(v.quiet.size() == c.divergences.size());
  if (v.first != nullptr) FUZZ_CHECK(has_consequence(c, v, *v.first));
  for (const Divergence* d : v.quiet) FUZZ_CHECK(d->answer && !has_consequence(c, v, *d));
  for (const Divergence& d : c.divergences) n += not_made(v, d);
  const NormalizedTrace& t = **na;
  for (uint32_t e = 0; e < t.events.size() && e < 64; ++e) {
    for (uint32_t k = 0; k < t.events[e].buffer_count; ++k) {
      const NormBuffer& nb2 = t.buffers[t.events[e].buffer + k];
      for (uint64_t off = 0; off < nb2.recorded && off < 256; off += 7) {
        n += static_cast<size_t>(byte_fate(t, e, nb2.role, nb2.after, off));
      }
    }
  }
  return n == SIZE_MAX ? 1 : 0;
}
