#include "analysis/patch_plan.hpp"

#include <algorithm>
#include <optional>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "analysis/xrefs.hpp"
#include "base/glob_match.h"
#include "base/x86_length.hpp"

namespace cudatool {
namespace {

constexpr std::string_view kNames[] = {
#define CUDATOOL_X(e, name, why) name,
    CUDATOOL_UNPATCHABLE(CUDATOOL_X)
#undef CUDATOOL_X
};
constexpr std::string_view kWhy[] = {
#define CUDATOOL_X(e, name, why) why,
    CUDATOOL_UNPATCHABLE(CUDATOOL_X)
#undef CUDATOOL_X
};
constexpr uint64_t kJmpRel32 = 5;

// Calls `visit(glob, negated)` for each item of a comma-separated list.
template <class Visit>
void for_each_glob(std::string_view globs, Visit&& visit) {
  while (!globs.empty()) {
    size_t comma = globs.find(',');
    std::string_view one = globs.substr(0, comma);
    globs = comma == std::string_view::npos ? std::string_view() : globs.substr(comma + 1);
    bool negated = one.starts_with('!');
    if (negated) one.remove_prefix(1);
    visit(one, negated);
  }
}

// By every name the function has; a function without one by its fn_<hex> name (so that `fn_*`
// means the functions nothing names).
bool selected(const FunctionGlobs& globs, const FunctionMap& map, const Function& f) {
  auto names = map.names(f);
  if (names.empty()) return globs.match(FunctionMap::derived_name(f.start));
  return std::any_of(names.begin(), names.end(),
                     [&](const FunctionName& n) { return globs.match(n.name); });
}

// The bytes of the function's section from its start on, or nothing.
std::optional<ByteView> code_at(const FunctionMap& map, uint64_t start) {
  for (const auto& r : map.exec_ranges()) {
    if (start < r.start || start >= r.end) continue;
    if (r.bytes.empty()) return std::nullopt;
    return r.bytes.sub(start - r.start);
  }
  return std::nullopt;
}

// Whole instructions of at least 5 bytes from the function's start, with the fields to adjust.
// Returns the refusal when they cannot be moved.
std::optional<Unpatchable> displace(const Function& f, ByteView code, PatchSite& site) {
  uint64_t off = 0;
  while (off < kJmpRel32) {
    if (off >= f.size) return Unpatchable::kTooSmall;
    auto in = x86::decode_length(code.clamp(off, code.size()));
    if (!in) return Unpatchable::kUndecodable;
    if (in->length > f.size - off) return Unpatchable::kTooSmall;
    const bool plain = in->map == 0 && !in->vex;
    const bool rel8 = plain && (in->opcode == 0xeb || (in->opcode >= 0x70 && in->opcode <= 0x7f) ||
                                (in->opcode >= 0xe0 && in->opcode <= 0xe3));
    const bool rel32 = !in->vex && !in->rip_relative && in->addr_field_size == 4 &&
                       ((in->map == 0 && in->opcode == 0xe9) ||
                        (in->map == 1 && in->opcode >= 0x80 && in->opcode <= 0x8f));
    // A call leaves a return address inside the trampoline, where no unwind data describes it;
    // any other address field that is neither of the two kinds above is a branch too.
    const bool call = plain && in->opcode == 0xe8;
    const bool other = !in->rip_relative && in->addr_field_size != 0 && !rel32;
    if (rel8 || call || other) return Unpatchable::kShortBranch;
    if (in->rip_relative || rel32) {
      if (site.fixups >= PatchSite::kMaxFixups || in->addr_field_size != 4)
        return Unpatchable::kTooManyFixups;
      site.fix_offset[site.fixups] = static_cast<uint8_t>(off + in->addr_field_offset);
      site.fix_insn_end[site.fixups] = static_cast<uint8_t>(off + in->length);
      ++site.fixups;
    }
    off += in->length;
  }
  site.displaced = static_cast<uint8_t>(off);
  std::copy_n(code.data(), off, site.bytes.begin());
  return std::nullopt;
}

// Whether anything enters (start, start + len): another function, a jump of the function itself,
// or a reference of the index. `detail` receives the address.
std::optional<Unpatchable> entered_inside(const FunctionMap& map, const XrefIndex& x, size_t i,
                                          uint64_t start, uint64_t len, uint64_t* detail) {
  const auto fns = map.functions();
  if (i > 0 && fns[i - 1].start == start) {  // a second FDE at the same start: patched once
    *detail = start;
    return Unpatchable::kFunctionInside;
  }
  for (size_t k = i + 1; k < fns.size() && fns[k].start < start + len; ++k) {
    if (fns[k].start > start) {
      *detail = fns[k].start;
      return Unpatchable::kFunctionInside;
    }
  }
  auto targets = x.entry_window_targets();
  auto it = std::upper_bound(targets.begin(), targets.end(), start);
  if (it != targets.end() && *it < start + len) {
    *detail = *it;
    return Unpatchable::kTargetInside;
  }
  auto refs = x.refs_to(start + 1, start + len);
  if (!refs.empty()) {
    *detail = refs.front()->target;
    return Unpatchable::kTargetInside;
  }
  return std::nullopt;
}

}  // namespace

FunctionGlobs::FunctionGlobs(std::string_view list) {
  for_each_glob(
      list, [&](std::string_view g, bool neg) { (neg ? negative_ : positive_).emplace_back(g); });
  if (positive_.empty()) positive_.emplace_back("*");
}

bool FunctionGlobs::match(std::string_view name) const {
  auto any = [&](const std::vector<std::string>& gs) {
    return std::any_of(gs.begin(), gs.end(), [&](const std::string& g) {
      return glob_match(g, name, /*fold_case=*/true);
    });
  };
  return any(positive_) && !any(negative_);
}

std::string_view unpatchable_name(Unpatchable u) {
  return kNames[static_cast<size_t>(u)];
}
std::string_view unpatchable_why(Unpatchable u) {
  return kWhy[static_cast<size_t>(u)];
}

std::string check_function_globs(std::string_view globs) {
  if (globs.empty()) return "an empty list of function globs";
  std::string why;
  for_each_glob(globs, [&](std::string_view g, bool) {
    if (g.empty() && why.empty()) why = "an empty glob in the list (two commas, or a lone '!')";
  });
  if (globs.back() == ',') why = "an empty glob at the end of the list";
  return why;
}

bool function_selected(std::string_view globs, std::string_view name) {
  return FunctionGlobs(globs).match(name);
}

PatchPlan make_patch_plan(DriverImage& img, const FunctionMap& map, const XrefIndex& xrefs,
                          std::string_view globs) {
  (void)img;
  PatchPlan plan;
  plan.globs = std::string(globs);
  const FunctionGlobs g(globs);
  const auto fns = map.functions();
  plan.functions = fns.size();
  auto refuse = [&](size_t i, Unpatchable why, uint64_t detail) {
    plan.refusals.push_back({static_cast<uint32_t>(i), why, detail});
    ++plan.refused[static_cast<size_t>(why)];
  };
  for (size_t i = 0; i < fns.size(); ++i) {
    const Function& f = fns[i];
    if (!selected(g, map, f)) continue;
    ++plan.selected;
    if (is_plt_section_name(map.exec_section(f.start))) {
      refuse(i, Unpatchable::kPlt, 0);
      continue;
    }
    auto code = code_at(map, f.start);
    if (!code) {
      refuse(i, Unpatchable::kNoBytes, 0);
      continue;
    }
    PatchSite site;
    site.function = static_cast<uint32_t>(i);
    site.start = f.start;
    if (auto why = displace(f, *code, site)) {
      refuse(i, *why, 0);
      continue;
    }
    uint64_t detail = 0;
    if (auto why = entered_inside(map, xrefs, i, f.start, site.displaced, &detail)) {
      refuse(i, *why, detail);
      continue;
    }
    plan.fixups += site.fixups > 0 ? 1 : 0;
    plan.sites.push_back(site);
  }
  return plan;
}

}  // namespace cudatool
