// `cudatool ab --html FILE`: the comparison as one self-contained page (no network: the styles,
// the script and the data are inline) — the two runs side by side in the merged order, divergences
// highlighted, every call expandable to its decoded members (trace::decode_event) and the members
// that differ, the first divergence in view on open, and a filter box (docs/ab.md).
#pragma once

#include <string>
#include <string_view>

#include "ab/compare.hpp"
#include "base/error.hpp"

namespace cudatool::cli {

// The page's script and styles (ab_html_page.cpp): the text before the data, and after it.
extern const std::string_view kAbHtmlHead;
extern const std::string_view kAbHtmlTail;

struct AbHtmlStats {
  uint64_t bytes = 0;   // size of the page
  uint64_t events = 0;  // events decoded (both traces)
};

// Re-reads both traces (their files, c.a->path and c.b->path: the decoded members come from the
// raw events, which normalisation does not keep), decodes every event with the tables the
// comparison used, and writes the page to `path`. Errors: a trace that cannot be read again, a
// page that cannot be written.
Result<AbHtmlStats> write_ab_html(const ab::Comparison& c, const std::string& path);

}  // namespace cudatool::cli
