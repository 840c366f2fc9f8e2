#include "cli/patch_plan_output.hpp"

#include <fmt/format.h>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "base/json_writer.hpp"
#include "cli/common.hpp"

namespace cudatool::cli {
namespace {

constexpr size_t kExamples = 3;

std::string percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? "-" : fmt::format("{:.1f} %", 100.0 * static_cast<double>(part) / whole);
}

}  // namespace

std::string patch_plan_text(const FunctionMap& map, const PatchPlan& plan) {
  std::string out = fmt::format(
      "{} functions in the map, {} selected by '{}': {} patched ({}), {} of them with an address "
      "field adjusted; {} not patched\n",
      plan.functions, plan.selected, plan.globs, plan.sites.size(),
      percent(plan.sites.size(), plan.selected), plan.fixups, plan.refusals.size());
  if (plan.refusals.empty()) return out;
  TextTable t({"why", "functions", "", "e.g."}, {false, true, false, false});
  const auto fns = map.functions();
  for (size_t k = 0; k < kUnpatchableKinds; ++k) {
    if (plan.refused[k] == 0) continue;
    const auto why = static_cast<Unpatchable>(k);
    std::string examples;
    size_t shown = 0;
    for (const auto& r : plan.refusals) {
      if (r.why != why || shown == kExamples) continue;
      const Function& f = fns[r.function];
      examples += fmt::format("{}{}", shown++ ? ", " : "", map.display_name(f));
      if (r.detail != 0) examples += fmt::format(" ({:#x})", r.detail);
    }
    t.add({std::string(unpatchable_name(why)), std::to_string(plan.refused[k]),
           std::string(unpatchable_why(why)), examples});
  }
  return out + t.render("  ");
}

void write_patch_plan_json(JsonWriter& w, const FunctionMap& map, const PatchPlan& plan,
                           bool list) {
  const auto fns = map.functions();
  w.kv("globs", plan.globs).kv("functions", plan.functions).kv("selected", plan.selected);
  w.kv("patched", plan.sites.size()).kv("with_fixups", plan.fixups);
  w.kv("not_patched", plan.refusals.size());
  w.key("not_patched_by_reason").begin_object();
  for (size_t k = 0; k < kUnpatchableKinds; ++k)
    w.kv(unpatchable_name(static_cast<Unpatchable>(k)), plan.refused[k]);
  w.end_object();
  if (!list) return;
  w.key("sites").begin_array();
  for (const auto& s : plan.sites) {
    w.begin_object().kv_hex("start", s.start).kv("name", map.display_name(fns[s.function]));
    w.kv("displaced", s.displaced).kv("fixups", s.fixups).end_object();
  }
  w.end_array();
  w.key("refused").begin_array();
  for (const auto& r : plan.refusals) {
    const Function& f = fns[r.function];
    w.begin_object().kv_hex("start", f.start).kv("name", map.display_name(f));
    w.kv("why", unpatchable_name(r.why));
    if (r.detail != 0)
      w.kv_hex("detail", r.detail);
    else
      w.key("detail").null();
    w.end_object();
  }
  w.end_array();
}

}  // namespace cudatool::cli
