// Which functions of a library can be entered through a patched prologue, and why the others
// cannot: the plan the in-process function recorder (record/funcrec) installs.
//
// A function is patched as uftrace patches one: the first whole instructions, at least 5 bytes,
// are moved to a trampoline and replaced by `jmp rel32` to it. That is safe when
//   - the moved bytes lie inside the function (its FDE), are whole instructions the length decoder
//     reads, and work at another address: no rel8 branch, call, loop or jrcxz among them; a
//     RIP-relative operand or a jmp/jcc rel32 is moved with its 32-bit field adjusted (the
//     trampoline lies within ±2 GiB);
//   - no code jumps into them past their first byte: no reference of the cross-reference index
//     (calls, tail jumps from other functions, lea, relocated pointers) and no jump of the
//     function itself (XrefIndex::entry_window_targets) lands there, and no other function starts
//     there.
// Functions are selected by name: every name the function map carries (exports, `*.impl`,
// cuGetProcAddress names, export-table slots), or for a function without one its `fn_<hex>` name,
// against a comma-separated list of case-insensitive globs, a leading `!` excluding
// (`cu*,!cuGetProcAddress*`; `fn_*`: the functions nothing names).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cudatool {

class DriverImage;
class FunctionMap;
class XrefIndex;

// Why a selected function is not patched; one list gives the enum, its count and its names.
#define CUDATOOL_UNPATCHABLE(X)                                                                   \
  X(kPlt, "plt", "a PLT stub section (tracers name foo@plt themselves)")                          \
  X(kNoBytes, "no_bytes", "its section has no file bytes")                                        \
  X(kTooSmall, "too_small", "shorter than the 5 bytes of a jmp rel32")                            \
  X(kUndecodable, "undecodable", "its first bytes are not instructions the decoder reads")        \
  X(kShortBranch, "short_branch", "a rel8 branch, call, loop or jrcxz in its first bytes")        \
  X(kTooManyFixups, "too_many_fixups", "more than 2 address fields to adjust in its first bytes") \
  X(kFunctionInside, "function_inside", "another function starts inside its first bytes")         \
  X(kTargetInside, "target_inside", "code jumps or refers into its first bytes")
enum class Unpatchable : uint8_t {
#define CUDATOOL_X(e, name, why) e,
  CUDATOOL_UNPATCHABLE(CUDATOOL_X)
#undef CUDATOOL_X
};
inline constexpr size_t kUnpatchableKinds = 0
#define CUDATOOL_X(e, name, why) +1
    CUDATOOL_UNPATCHABLE(CUDATOOL_X)
#undef CUDATOOL_X
    ;
std::string_view unpatchable_name(Unpatchable u);  // "too_small", …
std::string_view unpatchable_why(Unpatchable u);   // the sentence above

struct PatchSite {
  static constexpr size_t kMaxDisplaced = 20;  // 4 + one 15-byte instruction + 1 spare
  static constexpr size_t kMaxFixups = 2;
  uint32_t function = 0;  // index in FunctionMap::functions()
  uint64_t start = 0;     // ELF virtual address
  uint8_t displaced = 0;  // bytes moved to the trampoline: whole instructions, >= 5
  uint8_t fixups = 0;
  // Offsets in the displaced bytes of a 32-bit field relative to the end of its instruction
  // (a RIP-relative disp32, a jmp/jcc rel32), and that instruction's end.
  std::array<uint8_t, kMaxFixups> fix_offset{};
  std::array<uint8_t, kMaxFixups> fix_insn_end{};
  std::array<uint8_t, kMaxDisplaced> bytes{};  // the original bytes, checked before patching
};

struct PatchRefusal {
  uint32_t function = 0;
  Unpatchable why = Unpatchable::kTooSmall;
  uint64_t detail = 0;  // kTargetInside: the address jumped to; kFunctionInside: that start
};

struct PatchPlan {
  std::string globs;                                  // as given ("*" when all)
  uint64_t functions = 0;                             // in the map
  uint64_t selected = 0;                              // matched by the globs
  std::vector<PatchSite> sites;                       // by start
  std::vector<PatchRefusal> refusals;                 // by function
  std::array<uint64_t, kUnpatchableKinds> refused{};  // by Unpatchable
  uint64_t fixups = 0;                                // sites with at least one field adjusted
};

// Checks GLOBS: a non-empty comma-separated list, no empty item. Returns why not, "" when fine.
std::string check_function_globs(std::string_view globs);
// GLOBS parsed once: any positive glob matches (case-insensitive) and no `!` glob does; a list
// of only `!` globs selects everything else.
class FunctionGlobs {
 public:
  explicit FunctionGlobs(std::string_view list);
  [[nodiscard]] bool match(std::string_view name) const;

 private:
  std::vector<std::string> positive_, negative_;
};
// Whether a name is selected by GLOBS (any positive glob matches and no `!` glob does; a list of
// only `!` globs selects everything else).
bool function_selected(std::string_view globs, std::string_view name);

// The plan for the functions of `map` selected by `globs`, with branch targets from `xrefs`.
PatchPlan make_patch_plan(DriverImage& img, const FunctionMap& map, const XrefIndex& xrefs,
                          std::string_view globs);

}  // namespace cudatool
