// Facet: the kernel-ABI surface of a libcuda build, from the file alone — every escape, RM control
// command, allocation class and UVM ioctl whose constant the library's code passes toward its
// ioctl paths (docs/abi.md). `img.facet<AbiSurface>()` builds it from the cross-reference index
// and the tables of the build's kernel-driver branch (rm::choose_branch of its version, as
// `decode` chooses for a trace).
//
// Evidence: the immediate of a `mov $imm32` (to a register or to memory) and the 32-bit words of a
// constant loaded from read-only data (a 16-byte vector move or a 4/8-byte mov: how a compiler
// initialises several members of a structure at once), in every function of the map. A value is a
// request when the branch's tables know it: an `_IOWR('F', nr, size)` word of a known escape, a
// control id, a class id below 0x10000, a UVM request moved into the request argument (%esi) of a
// direct ioctl call (high) or of a direct call of a function that reaches one (medium: a wrapper's
// argument), a control id whose interface alone the tables know (the unpublished GSS-legacy
// commands). Zero is no evidence; a 64-bit immediate counts as its two 32-bit halves. A function
// "reaches an ioctl" when a chain of direct calls and tail jumps leads from it to a call of
// ioctl@plt (or through its GOT slot). Nothing is dropped: weak evidence carries a confidence and
// its reason instead.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/driver_image.hpp"
#include "rm/tables.hpp"

namespace cudatool {

// The kinds of request, in the order the surface lists them (one list: names from it).
#define CUDATOOL_ABI_KINDS(X) \
  X(kEscape, "escape")        \
  X(kControl, "control")      \
  X(kClass, "class")          \
  X(kUvm, "uvm")
enum class AbiKind : uint8_t {
#define CUDATOOL_X(e, n) e,
  CUDATOOL_ABI_KINDS(CUDATOOL_X)
#undef CUDATOOL_X
};
std::string_view abi_kind_name(AbiKind k);
bool parse_abi_kind(std::string_view s, AbiKind* out);

enum class AbiConfidence : uint8_t {
  kHigh,    // a value no ordinary integer is likely to be, in a function that reaches an ioctl
  kMedium,  // a 16-bit id (0x1000..0xffff) in such a function
  kLow,     // a small value, or no call path to an ioctl: `reason` says which
};
std::string_view abi_confidence_name(AbiConfidence c);  // "high", "medium", "low"

struct AbiUse {
  int32_t function = -1;     // FunctionMap index of the function holding the site
  uint64_t site = 0;         // the instruction
  bool table = false;        // a word of a constant the instruction loads from read-only data
  bool request_arg = false;  // moved into %esi before a direct ioctl call (UVM requests)
  bool reaches = false;      // the function reaches an ioctl call
  // A UVM request moved into %esi before a direct call of a function that reaches ioctl (a
  // wrapper's request argument: libcuda's UVM wrappers take (fd, request, params)).
  bool call_arg = false;
};

struct AbiRequest {
  AbiKind kind = AbiKind::kEscape;
  uint32_t value = 0;  // escape: its number (_IOC_NR); control, class, UVM: the id
  std::string_view name;
  std::vector<uint32_t> request_codes;  // escape: the ioctl words seen (their _IOC_SIZE varies)
  std::vector<AbiUse> uses;             // by site
  AbiConfidence confidence = AbiConfidence::kLow;
  std::string_view reason;  // "" when high
  [[nodiscard]] bool reaches() const;
  [[nodiscard]] size_t function_count() const;
};

struct AbiStats {
  uint64_t ioctl_call_sites = 0;    // direct calls of ioctl (PLT entry or GOT slot)
  uint64_t ioctl_callers = 0;       // functions holding one
  uint64_t reaching_functions = 0;  // functions with a call path to one (callers included)
  uint64_t immediates = 0;          // mov immediates and vector words looked at
};

class AbiSurface {
 public:
  explicit AbiSurface(DriverImage& img);

  [[nodiscard]] const rm::Tables& tables() const { return *choice_.tables; }
  [[nodiscard]] const rm::BranchChoice& branch() const { return choice_; }
  [[nodiscard]] const std::optional<std::string>& driver_version() const { return version_; }
  // Sorted by (kind, value).
  [[nodiscard]] std::span<const AbiRequest> requests() const { return requests_; }
  [[nodiscard]] const AbiRequest* find(AbiKind kind, uint32_t value) const;
  [[nodiscard]] const AbiStats& stats() const { return stats_; }

 private:
  rm::BranchChoice choice_;
  std::optional<std::string> version_;
  std::vector<AbiRequest> requests_;
  AbiStats stats_;
};

// The request a raw value stands for in `t`, if any, as the surface classifies an immediate
// (`request_arg`: the value is the request argument of a direct ioctl call). A value can be more
// than one kind (a class id that is also an NV0000 control id); `out` receives each.
struct AbiCandidate {
  AbiKind kind;
  uint32_t value;
  uint32_t request_code;  // escape: the ioctl word; else 0
};
void classify_abi_value(const rm::Tables& t, uint64_t v, bool request_arg,
                        std::vector<AbiCandidate>& out);

// The name of a request in a branch ("NV_ESC_RM_CONTROL", "NV2080_CTRL_CMD_GPU_GET_INFO_V2"), ""
// when the branch does not know it.
std::string_view abi_request_name(const rm::Tables& t, AbiKind kind, uint32_t value);

}  // namespace cudatool
