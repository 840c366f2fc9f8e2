// The two renderings of an A/B comparison (`cudatool ab`): the report for people and its JSON
// twin (schema cudatool.ab/1, docs/json.md).
#pragma once

#include <string>

#include "ab/compare.hpp"
#include "ab/function_diff.hpp"

namespace cudatool::cli {

struct AbReportOptions {
  uint32_t context = 5;  // entries shown before and after the first divergence
  bool all = false;      // every divergence, grouped by kind
  // --html: the page written (JSON "html": its path, size and events decoded; null without).
  std::string html_path;
  uint64_t html_bytes = 0, html_events = 0;
  const ab::FunctionComparison* functions = nullptr;  // JSON "functions" (null: none compared)
};

std::string render_ab_text(const ab::Comparison& c, const AbReportOptions& o);
std::string render_ab_json(const ab::Comparison& c, const AbReportOptions& o);

}  // namespace cudatool::cli
