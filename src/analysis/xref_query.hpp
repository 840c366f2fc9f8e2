// Questions asked of the cross-reference index (analysis/xrefs.hpp): what a name or address on a
// command line stands for, what lies at an address, and the shortest call chains between two
// functions. Names come from the function map — exports, and what add_driver_table_names() adds
// (dispatch implementations, cuGetProcAddress-only functions, export-table slots) — and from
// the PLT and GOT; data slots are named after the driver-table row that holds them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/driver_image.hpp"
#include "analysis/xrefs.hpp"
#include "base/error.hpp"

namespace cudatool {

// What TARGET on a command line stands for.
struct XrefTarget {
  enum class Kind : uint8_t { kFunction, kImport, kAddress };
  Kind kind = Kind::kAddress;
  std::string input;
  std::string name;           // how to show it: "cuCtxCreate_v2", "ioctl@plt", "0x1a6cff8"
  int32_t function = -1;      // kFunction: the function; kAddress: the function holding it, if any
  uint64_t address = 0;       // function start, first PLT entry, or the address itself
  uint64_t end = 0;           // kFunction: its end; otherwise address + 1
  std::vector<uint64_t> plt;  // kImport: its PLT entries
  std::vector<uint64_t> slots;  // kImport: GOT slots that hold its address
};

// Resolves, in this order: "NAME@plt" (an import's PLT entry), a function name (any name the map
// carries, or fn_<hex>), an import name, an address ("0x…"). Errors say what was tried.
Result<XrefTarget> resolve_xref_target(const XrefIndex& x, std::string_view text);

// Every reference to the target: into the function's range, to the import's PLT entries and GOT
// slots (the PLT stubs' own loads of their slots left out), or to the address. By target, site.
std::vector<const Ref*> references_to(const XrefIndex& x, const XrefTarget& t);

// Names of data: the driver-table rows (dispatch slots, cuGetProcAddress entries, export-table
// slots, CUresult records), exported objects, GOT slots. Built from the DriverTables facet.
class DataNames {
 public:
  explicit DataNames(DriverImage& img);
  // The name of the slot or object at exactly `addr`, or "".
  [[nodiscard]] std::string_view at(uint64_t addr) const;

 private:
  std::unordered_map<uint64_t, std::string> names_;
};

// What lies at an address, for printing a reference's target (or a pointer's slot).
struct AddressInfo {
  enum class Kind : uint8_t { kFunction, kPlt, kString, kGot, kData, kNone };
  Kind kind = Kind::kNone;
  std::string name;             // function / import / slot name; "" when none
  uint64_t offset = 0;          // from the start of the function (kFunction)
  std::string_view section;     // "" when no section holds it
  uint64_t section_offset = 0;  // addr - the section's start
  const CString* string = nullptr;
};
std::string_view address_kind_name(AddressInfo::Kind k);  // "function", "plt", "string", …
AddressInfo describe_address(const XrefIndex& x, const DataNames* names, uint64_t addr);

// Shortest call chains (docs/xrefs.md, "Paths"). Nodes are functions and PLT entries. Direct
// edges: calls and tail jumps. Pointer edges: a function takes the address of a function (lea,
// or a load of it), or of a data object whose relocated words point at functions (up to the
// next address code refers to, at most kTableWindow bytes): how dispatch slots, vtables and
// callback tables are reached. Pointer edges are used only when no direct chain exists.
struct PathStep {
  int64_t from = -1;  // node: function index, or functions().size() + PLT entry index
  int64_t to = -1;
  const Ref* ref = nullptr;  // the reference of `from` that makes the step
  bool pointer = false;      // a pointer edge
  uint64_t slot = 0;         // pointer edge through a data object: the slot holding the pointer
};
struct PathResult {
  bool found = false;
  bool through_pointer = false;  // no direct chain; each chain has a pointer step
  uint32_t length = 0;           // steps per chain
  uint64_t shortest_count = 0;   // chains of that length (capped at kCountCap)
  std::vector<std::vector<PathStep>> chains;
  static constexpr uint64_t kCountCap = 1000000;
};
inline constexpr uint64_t kTableWindow = 4096;
PathResult shortest_paths(const XrefIndex& x, const XrefTarget& from, const XrefTarget& to,
                          size_t max_chains);
// "fn_1234", "ioctl@plt": the name of a path node.
std::string node_name(const XrefIndex& x, int64_t node);

}  // namespace cudatool
