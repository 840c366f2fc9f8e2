// Printing for `cudatool explore` (docs/explore.md): the report as a text table sorted by
// consequence, as JSON (schema cudatool.explore/1, docs/json.md), and as one self-contained HTML
// page (--html: no network; styles, script and data inline, as ab's page).
#pragma once

#include <string>
#include <string_view>

#include "base/error.hpp"
#include "replay/explore.hpp"

namespace cudatool::cli {

std::string render_explore_text(const replay::ExploreReport& r);
std::string render_explore_json(const replay::ExploreReport& r);

// The page's styles and script (explore_html_page.cpp): before the data, and after it.
extern const std::string_view kExploreHtmlHead;
extern const std::string_view kExploreHtmlTail;
// Errors: the page cannot be written.
Status write_explore_html(const replay::ExploreReport& r, const std::string& path);

}  // namespace cudatool::cli
