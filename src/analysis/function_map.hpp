// The function map of a stripped library, from its unwind data: every FDE of .eh_frame is one
// function (start, size), cross-checked against the binary-search table of .eh_frame_hdr, with
// every name known for it (exports now; names from other analyses are added with add_name()).
// A facet of DriverImage: `img.facet<FunctionMap>()` builds it once.
//
// Cost is linear in the number of FDEs plus one sort: .eh_frame is walked once, the search
// table is compared with the sorted map in one pass, exports are placed by binary search.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "base/string_arena.hpp"
#include "elf/eh_frame.hpp"

namespace cudatool {

class DriverImage;
namespace elf {
class ElfImage;
}  // namespace elf

struct Function {
  uint64_t start = 0;
  uint64_t size = 0;
  uint64_t fde = 0;           // section offset of the FDE in .eh_frame (readelf's first column)
  int32_t name_list = -1;     // FunctionMap's own index of the names (see names())
  bool in_hdr_table = false;  // its FDE is listed in .eh_frame_hdr's search table
  bool resynced = false;      // found only by resuming the walk at a search-table entry
  bool has_lsda = false;      // has a language-specific data area (C++ exception tables)
  // One past the last byte; saturates instead of wrapping on hostile ranges.
  [[nodiscard]] uint64_t end() const { return size > ~start ? ~uint64_t{0} : start + size; }
  [[nodiscard]] bool contains(uint64_t a) const { return a >= start && a < end(); }
};

// A name for a function and who gave it: "export" (the dynamic symbol table); later analyses
// use their own source ("driver_table:cuGetProcAddress", …). Both views point into storage
// owned by the FunctionMap.
struct FunctionName {
  std::string_view name;
  std::string_view source;
};
inline constexpr std::string_view kExportSource = "export";

// An executable range no FDE covers.
struct Gap {
  enum class Kind { kPadding, kCode, kNoBytes };
  uint64_t start = 0;
  uint64_t end = 0;
  std::string_view section;  // the executable section it lies in
  Kind kind = Kind::kCode;   // padding: only NOP forms, int3 or zero bytes
  [[nodiscard]] uint64_t size() const { return end - start; }
};
std::string_view gap_kind_name(Gap::Kind k);  // "padding", "code", "no bytes"

// A section of PLT stubs (".plt", ".plt.got", ".plt.sec", ".iplt"): its FDE covers stubs that the
// debuggers and tracers name themselves (foo@plt), not one function.
bool is_plt_section_name(std::string_view section);

// Where .eh_frame and the search table agree or not.
struct HdrCheck {
  bool present = false;               // .eh_frame_hdr (or PT_GNU_EH_FRAME) was found and read
  bool has_table = false;             // it carries a search table
  std::optional<uint64_t> fde_count;  // the header's fde_count
  uint64_t entries = 0;               // table entries read
  uint64_t eh_frame_ptr = 0;          // where the header says .eh_frame is
  std::vector<Error> disagreements;   // the first kMaxKept
  uint64_t disagreement_count = 0;
  [[nodiscard]] bool agrees() const { return present && has_table && disagreement_count == 0; }
  static constexpr size_t kMaxKept = 200;
};

class FunctionMap {
 public:
  explicit FunctionMap(DriverImage& img);
  // Reporting damage to `diag` instead of img.diagnostics(), for a map built on another thread
  // (named_function_map): it reads img.elf(), and img.eh_frame_hdr() and img.dynamic_symbols(),
  // which must then be computed already.
  FunctionMap(DriverImage& img, Diagnostics& diag);

  // Sorted by start (then by FDE offset).
  [[nodiscard]] std::span<const Function> functions() const { return functions_; }
  // The innermost function containing `addr`, or null. Binary search.
  [[nodiscard]] const Function* find(uint64_t addr) const;
  // The function starting exactly at `start`, or null.
  [[nodiscard]] const Function* at(uint64_t start) const;
  // Executable ranges that no FDE covers, in address order (computed on each call). With
  // `classify`, each gap's bytes are read to tell padding from code; without, kind is kNoBytes.
  [[nodiscard]] std::vector<Gap> gaps(bool classify = true) const;
  // Count and total size of the gaps, without storing or classifying them.
  [[nodiscard]] std::pair<uint64_t, uint64_t> gap_totals() const;
  // The executable section holding addr ("" when none).
  [[nodiscard]] std::string_view exec_section(uint64_t addr) const;

  // Names. add_name() attaches a name to the function starting exactly at `start` (a copy of
  // both strings is kept); when none starts there it is kept in unplaced() and false is
  // returned. Adding the same (name, source) twice keeps one. Names added in address order
  // are placed fastest. A span from names() holds until the next add_name().
  bool add_name(uint64_t start, std::string_view name, std::string_view source);
  // Room for `more` names to come, mapped now (base/prefault.hpp): ~5,000 names on 550.
  void expect_names(size_t more);
  [[nodiscard]] std::span<const FunctionName> names(const Function& f) const;
  // The first name, or the derived one.
  [[nodiscard]] std::string display_name(const Function& f) const;
  // "fn_<hex start>": what a function without a known name is called.
  static std::string derived_name(uint64_t start);
  struct Unplaced {
    uint64_t address = 0;
    FunctionName name;
  };
  [[nodiscard]] const std::vector<Unplaced>& unplaced() const { return unplaced_; }
  [[nodiscard]] uint64_t named_functions() const { return name_lists_.size(); }
  // How many functions each source names, by source.
  [[nodiscard]] std::vector<std::pair<std::string, uint64_t>> named_by_source() const;

  // Where the data came from.
  [[nodiscard]] bool has_eh_frame() const { return eh_frame_found_; }
  // "section [17] .eh_frame" or "PT_GNU_EH_FRAME eh_frame_ptr"
  [[nodiscard]] const std::string& eh_frame_source() const { return eh_frame_source_; }
  [[nodiscard]] const elf::EhFrame& eh_frame() const { return eh_frame_; }
  [[nodiscard]] const HdrCheck& hdr_check() const { return hdr_; }
  // FDEs whose range lies outside every executable section.
  [[nodiscard]] uint64_t outside_exec() const { return outside_exec_; }
  // Pairs of functions whose ranges overlap.
  [[nodiscard]] uint64_t overlaps() const { return overlaps_; }

  struct ExecRange {
    uint64_t start = 0, end = 0;
    std::string_view name;
    ByteView bytes;  // empty when the section has no file bytes
  };
  [[nodiscard]] const std::vector<ExecRange>& exec_ranges() const { return exec_; }

 private:
  // .eh_frame_hdr's search table, decoded entry by entry (it may be large: nothing is copied
  // unless the slow path of the cross-check needs it).
  struct Table {
    ByteView bytes;
    uint8_t enc = 0;
    unsigned entry_size = 0;  // of one (initial location, FDE address) pair
    uint64_t vaddr = 0;       // of the table's first byte
    uint64_t hdr_vaddr = 0;   // datarel base
    uint64_t count = 0;
    [[nodiscard]] std::pair<uint64_t, uint64_t> entry(uint64_t i) const;
  };

  // build()'s phases, in order.
  void build(DriverImage& img, Diagnostics& diag);
  void find_exec_ranges(const elf::ElfImage& elf);
  Table read_hdr_table(DriverImage& img);
  void read_fdes(DriverImage& img, Diagnostics& diag, const Table& table, ByteView& eh_bytes,
                 uint64_t& eh_vaddr);
  void sort_and_place();
  void name_exports(DriverImage& img);
  void check_against_table(const Table& table, uint64_t eh_vaddr, uint64_t eh_size);
  template <class Visit>
  void for_each_gap(Visit&& visit) const;
  // End of the furthest-reaching function among functions_[0..i].
  [[nodiscard]] uint64_t reach(size_t i) const {
    return max_end_.empty() ? functions_[i].end() : max_end_[i];
  }

  std::vector<Function> functions_;
  // max end() over functions_[0..i]; only built when FDE ranges overlap (else ends ascend).
  std::vector<uint64_t> max_end_;
  // Each named function's names: a run of name_store_. A list grows in place when it is the
  // last run, else it moves to the end (names come by address, a function's all at once, so
  // that is rare); no allocation per function.
  struct NameList {
    uint32_t offset = 0;
    uint32_t count = 0;
  };
  std::vector<NameList> name_lists_;
  std::vector<FunctionName> name_store_;
  // Where add_name() last found its function: names come in address order, so the next one is
  // usually at or just after it.
  size_t name_hint_ = 0;
  [[nodiscard]] size_t lower_bound_from_hint(uint64_t start) const;
  // Storage of name and source strings.
  std::string_view intern(std::string_view s) { return strings_.intern(s); }
  StringArena strings_;
  std::vector<std::string_view> sources_;
  std::vector<Unplaced> unplaced_;
  std::vector<ExecRange> exec_;
  elf::EhFrame eh_frame_;
  HdrCheck hdr_;
  std::string eh_frame_source_;
  bool eh_frame_found_ = false;
  uint64_t outside_exec_ = 0;
  uint64_t overlaps_ = 0;
};

}  // namespace cudatool
