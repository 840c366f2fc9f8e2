// Printing of a patch plan (analysis/patch_plan): `functions --patch-plan`, and what
// `trace --functions` / `replay --functions` say about the functions they record.
#pragma once

#include <string>

#include "analysis/patch_plan.hpp"

namespace cudatool {
class FunctionMap;
class JsonWriter;
}  // namespace cudatool

namespace cudatool::cli {

// "35012 functions in the map, 35012 selected by '*': 33210 patched (94.9 %) …" and a table of
// the reasons the others are not, with a few examples each.
std::string patch_plan_text(const FunctionMap& map, const PatchPlan& plan);

// Members of an open JSON object: globs, counts, not_patched_by_reason; with `list`, "sites"
// ({start, name, displaced, fixups}) and "refused" ({start, name, why, detail}).
void write_patch_plan_json(JsonWriter& w, const FunctionMap& map, const PatchPlan& plan, bool list);

}  // namespace cudatool::cli
