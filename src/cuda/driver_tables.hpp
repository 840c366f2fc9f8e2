// libcuda's internal routing tables, recovered from the file alone (see docs/tables.md for the
// layout of each table in each driver branch and how it was found):
//
//  - procaddress: the table behind cuGetProcAddress: API name -> {function, CUDA version} lists,
//    one for the legacy default stream and one for the per-thread default stream;
//  - export tables: the {UUID, table} pairs behind cuGetExportTable, and each table's slots;
//  - dispatch: each exported wrapper -> the slot it jumps through -> the implementation;
//  - errors: the CUresult {code, CUDA_ERROR_* name, description} records behind
//    cuGetErrorName / cuGetErrorString.
//
// Every table is found from the dynamic relocations first: they are arrays of pointers in
// .data.rel.ro whose values exist only as R_X86_64_RELATIVE addends. Disassembly (stub_insn.hpp:
// a small decoder, Capstone behind it) is used only for the wrappers, where no data says which
// slot a wrapper jumps through. Parsers never print; damage (a table running off its section, a
// relocation pointing nowhere, a dispatch cycle) is reported to the Diagnostics sink and parsing
// goes on.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "elf/reloc_index.hpp"
#include "elf/section_map.hpp"

namespace cudatool::cuda {

// Exported functions by address (several names may share one address; the first added wins
// for naming, all are kept for lookups by name).
class ExportNames {
 public:
  void add(uint64_t address, std::string_view name);
  void finish();  // sorts; call once after the last add()
  [[nodiscard]] std::string_view at(uint64_t address) const;  // "" when none
  [[nodiscard]] const std::vector<std::pair<uint64_t, std::string_view>>& all() const {
    return by_address_;
  }

 private:
  std::vector<std::pair<uint64_t, std::string_view>> by_address_;
};

struct TableInput {
  const elf::SectionMap* sections = nullptr;
  const elf::RelocIndex* relocs = nullptr;
  const ExportNames* exports = nullptr;
  Diagnostics* diag = nullptr;
};

// ---- cuGetProcAddress ---------------------------------------------------------------------

// Which cuGetProcAddress flags a row answers. A record whose two lists are one array answers
// every flag ("default"); otherwise the legacy list answers CU_GET_PROC_ADDRESS_LEGACY_STREAM
// (and DEFAULT in a legacy-stream program), the per-thread list
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.
enum class ProcFlags : uint8_t { kDefault, kLegacy, kPerThread };
std::string_view proc_flags_name(ProcFlags f);  // "default", "legacy", "per-thread"

struct ProcAddressRecord {
  uint64_t vaddr = 0;
  std::string_view api;  // the name a caller passes: "cuMemAlloc"
  uint64_t legacy_list = 0;
  uint64_t per_thread_list = 0;
  uint32_t legacy_count = 0;
  uint32_t per_thread_count = 0;
};

struct ProcAddressRow {
  uint32_t record = 0;  // index into ProcAddressTable::records
  std::string_view api;
  uint32_t cuda_version = 0;  // the row applies from this CUDA version (3020 = CUDA 3.2)
  ProcFlags flags = ProcFlags::kDefault;
  uint64_t entry_vaddr = 0;
  uint64_t function = 0;         // 0 when the entry holds no relocated pointer (reported)
  std::string_view export_name;  // "" when the function is not exported
};

struct ProcAddressTable {
  bool found = false;
  uint64_t vaddr = 0;
  std::string_view section;
  std::vector<ProcAddressRecord> records;
  std::vector<ProcAddressRow> rows;
  uint64_t candidates = 0;  // record-shaped places seen, in all runs
  std::string evidence;     // how it was found, for people
};

ProcAddressTable find_procaddress_table(const TableInput& in);

// ---- cuGetExportTable ---------------------------------------------------------------------

using Uuid = std::array<uint8_t, 16>;
// "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9": the 16 bytes in memory order, 8-4-4-4-12 (the form
// ZLUDA and the issue use; note that libcuda's own CU_DEFINE_UUID writes the first three groups
// as little-endian integers, so tools that print a GUID struct show 6cfbd56b-f45b-4ae7-…).
std::string format_uuid(const Uuid& u);
std::optional<Uuid> parse_uuid(std::string_view text);

struct KnownSlot {
  uint32_t index = 0;
  std::string_view name;
};
struct KnownExportTable {
  Uuid uuid{};
  std::string_view name;    // "CUDART_INTERFACE"
  std::string_view source;  // who named it
  std::span<const KnownSlot> slots;
};
std::span<const KnownExportTable> known_export_tables();
const KnownExportTable* find_known_export_table(const Uuid& u);

enum class SlotKind : uint8_t {
  kSize,      // slot 0 of a table that starts with its size in bytes
  kFunction,  // relocated pointer into an executable section
  kData,      // relocated pointer into a data section
  kNull,      // zero, no relocation
  kValue,     // non-zero, no relocation (a constant)
  kNowhere,   // relocated pointer that lands in no section (reported)
};
std::string_view slot_kind_name(SlotKind k);

struct ExportSlot {
  uint32_t index = 0;  // word index from the table start (slot 0 is the size word, if any)
  uint64_t vaddr = 0;
  SlotKind kind = SlotKind::kNull;
  uint64_t value = 0;               // the pointer (target) or the raw word
  std::string_view target_section;  // for kFunction / kData
  std::string_view export_name;     // when the target is an exported function
  std::string_view known_name;      // community name of this slot, if any
};

struct ExportTable {
  uint32_t index = 0;  // position in the UUID array
  Uuid uuid{};
  uint64_t entry_vaddr = 0;  // the {uuid*, table*} pair
  uint64_t uuid_vaddr = 0;
  uint64_t table_vaddr = 0;
  std::string_view section;
  std::optional<uint64_t> declared_size;  // bytes, from the size word; nullopt: no size word
  uint32_t slot_count = 0;                // words in the table, size word included
  bool truncated = false;                 // the declared size ran off its section (reported)
  std::vector<ExportSlot> slots;
  const KnownExportTable* known = nullptr;
};

struct ExportTables {
  bool found = false;
  uint64_t vaddr = 0;  // the UUID array
  std::string_view section;
  bool zero_terminated = false;  // a {0, 0} pair follows the last entry
  std::vector<ExportTable> tables;
  uint32_t known_count = 0;
  std::string evidence;
};

ExportTables find_export_tables(const TableInput& in);

// ---- CUresult strings ---------------------------------------------------------------------

struct ErrorEntry {
  uint64_t vaddr = 0;
  uint32_t code = 0;
  std::string_view name;  // "CUDA_ERROR_INVALID_VALUE"
  std::string_view description;
};
struct ErrorTable {
  bool found = false;
  uint64_t vaddr = 0;
  std::string_view section;
  std::vector<ErrorEntry> entries;
  std::string evidence;
  [[nodiscard]] const ErrorEntry* by_code(uint32_t code) const;
};
ErrorTable find_error_table(const TableInput& in);

// ---- wrappers -> implementations ----------------------------------------------------------

enum class WrapperKind : uint8_t {
  kSlotJump,  // jmp *slot(%rip): the body is whatever the slot holds
  kSlotCall,  // call *slot(%rip) (then more work)
  kConstant,  // returns a constant without dispatching (a retired entry point)
  kOther,     // anything else: a real body, or not decodable
};
std::string_view wrapper_kind_name(WrapperKind k);

struct DispatchEntry {
  std::string_view export_name;
  uint64_t wrapper = 0;
  WrapperKind kind = WrapperKind::kOther;
  std::optional<uint64_t> guard_vaddr;  // cmpl $magic, guard(%rip) before the jump
  std::optional<uint32_t> guard_value;
  uint64_t slot = 0;            // where the implementation's address is kept
  uint64_t implementation = 0;  // 0 when unknown
  std::string_view implementation_section;
  std::optional<uint32_t> constant;  // kConstant: the value returned
  uint32_t hops = 0;                 // tail jumps and chained wrappers followed
  std::string note;                  // why kOther, or what went wrong
};

struct ExportedFunction {
  uint64_t address = 0;
  std::string_view name;
};

struct DispatchMap {
  std::vector<DispatchEntry> entries;  // one per exported function, in the order given
  uint64_t slot_lo = 0, slot_hi = 0;   // the slots used, [lo, hi]
  std::string_view slot_section;
  uint64_t relocated_slots_in_range = 0;  // relocations inside [lo, hi]: the dispatch table
  uint64_t instructions = 0;              // decoded
  std::string error;                      // set when the disassembler could not start
};

DispatchMap resolve_dispatch(const TableInput& in, std::span<const ExportedFunction> functions);

class StubDecoder;

// resolve_dispatch() shared by threads: each calls resolve_some(), which takes the next entries
// no thread has taken (its own disassembler) until none is left; then one calls finish(), which
// reports the damage met (and a disassembler that would not start, in `error` too) to in.diag in
// the order of `functions`, as one thread would.
class DispatchResolver {
 public:
  DispatchResolver(const TableInput& in, std::span<const ExportedFunction> functions);
  void resolve_some();
  DispatchMap finish();

 private:
  void resolve(StubDecoder& dis, size_t i, uint64_t* decoded);

  TableInput in_;
  std::span<const ExportedFunction> functions_;
  std::vector<DispatchEntry> entries_;
  std::vector<std::vector<Error>> damage_;  // per entry
  std::atomic<size_t> next_{0};
  std::atomic<uint64_t> instructions_{0};
  std::atomic<bool> no_disassembler_{false};
};

}  // namespace cudatool::cuda
