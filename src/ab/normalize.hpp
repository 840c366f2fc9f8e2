// Normalisation of one trace for A/B comparison (docs/ab.md): every event becomes a compact record
// whose values that merely differ between identical runs are replaced by symbols —
//
//   RM handles  → names by order of creation under their parent, per client ("c0/2/1");
//                 clients by order of creation ("c0"); handles never created in the trace by
//                 order of first use ("?3")
//   pointers    → the recorded buffer or device mapping they point into ("params+0x10",
//                 "map2@/dev/nvidiactl#1+0x40"), else a name by first appearance ("va7")
//   fds         → device path and order of opening ("/dev/nvidiactl#1")
//   GPU identity → UUIDs, PCI locations, gpuIds, board ids, serials by order of first appearance
//                 ("gpu#0", "gpu#0.pci": ab/identity.hpp)
//   threads     → roles by order of first call
//   times, seq  → dropped
//
// and fields known to vary between identical runs are masked by rule (ab/rules.hpp). Each event
// keeps its normalised argument images (member bytes, symbols out of line) so that a divergence
// can name the members that differ, and hashes: `key` (which call: alignment may pair two events
// with the same key), `input` (the call, its objects and its input bytes: what was asked),
// `shape` (everything compared but which names the symbols are) and `full` (everything compared).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ab/identity.hpp"
#include "base/error.hpp"
#include "rm/tables.hpp"
#include "trace/decode.hpp"
#include "trace/event.hpp"

namespace cudatool::trace {
class TraceReader;  // trace/trace_file.hpp
}  // namespace cudatool::trace

namespace cudatool::ab {

// What a symbol stands for.
enum class SymKind : uint8_t {
  kHandle,    // RM handle (object, client or never-created)
  kPointer,   // user address: buffer, mapping or first-appearance name, plus `delta`
  kFd,        // file descriptor
  kIdentity,  // a GPU's UUID, PCI location, gpuId, board id or serial (ab/identity.hpp)
};

// A member whose raw value was replaced by a symbol; its bytes in the image are zero.
struct Subst {
  uint32_t offset = 0;  // in the buffer
  uint8_t width = 0;    // bytes (4 for handles and fds, 8 for pointers, 16 or 40 for UUIDs …)
  SymKind kind = SymKind::kHandle;
  uint64_t base = 0;   // symbol id, comparable between traces (see Names)
  uint64_t delta = 0;  // pointers: offset from the named base
  uint64_t raw = 0;    // the value in the trace, for display
};

// Which buffer of an event an image comes from. kCall: the members of the system call itself
// (open flags and path, mmap addr/len/prot/flags/offset, …), laid out by call_layout().
// kContent (v2): an environment file's bytes, or a directory's names (one per line).
enum class Role : uint8_t { kCall, kArg, kParams, kXfer, kRights, kOther, kContent };
std::string_view role_name(Role r);

struct CallMember {
  std::string_view name;
  uint32_t offset;
  uint32_t size;  // 0: to the end of the image (a path)
};
std::span<const CallMember> call_layout(trace::Sys s);

// One side (before or after the call) of one buffer, normalised.
struct NormBuffer {
  Role role = Role::kArg;
  // kOther: a buffer behind a pointer member of the parameters, by the branch's pointer rule
  // ("params.grInfoList"; "params.opsBuffer[].pCpuVA" for every element of an array); "" else.
  std::string_view member;
  bool after = false;
  bool unreadable = false;                  // the recorder could not read it
  const rm::StructEntry* layout = nullptr;  // members known; null: compared byte by byte
  bool array = false;                       // the buffer is an array of `layout`
  uint64_t recorded = 0;                    // bytes the trace holds
  uint64_t compared = 0;                    // bytes compared (image length)
  uint64_t bytes = 0;                       // offset of the image in NormalizedTrace::bytes
  uint64_t subst = 0;                       // first symbol in NormalizedTrace::substs
  uint32_t subst_count = 0;
};

// Bytes left out of the comparison, by reason (for the report and docs/ab.md).
struct MaskCounts {
  uint64_t compared = 0;     // bytes compared (member bytes and unknown layouts)
  uint64_t padding = 0;      // bytes between and after members of a known layout
  uint64_t beyond_size = 0;  // bytes past the size the call uses (bounded UVM reads)
  uint64_t unsized = 0;      // bounded reads of calls whose size is not known
  uint64_t by_rule = 0;      // members masked by a rule of ab/rules.cpp
  uint64_t handles = 0, pointers = 0, fds = 0;  // members replaced by symbols
  uint64_t identities = 0;                      // GPU identity values replaced by symbols
  // NormalizeOptions::capture_view: what was left out because an imported capture cannot hold
  // it — allocation parameters RM sized by the class (calls), buffers behind pointer members
  // (buffers), UVM arguments cut at the capture's bound (calls; their bytes in `beyond_size`).
  uint64_t capture_params = 0, capture_pointers = 0, capture_uvm = 0;
};

struct NormEvent {
  uint64_t seq = 0;
  int32_t tid = 0;
  uint32_t thread = 0;  // role (NormalizedTrace::thread_tids)
  uint32_t index = 0;   // position in the trace (0-based, in file order)
  trace::Sys sys = trace::Sys::kUnknown;
  rm::Device device = rm::Device::kUnknown;
  uint64_t request = 0;
  uint32_t nr = 0;        // escape number or UVM ioctl number (XFER: the inner escape)
  std::string_view call;  // "NV_ESC_RM_CONTROL", "UVM_FREE", "open", "" when unknown
  std::optional<uint32_t> cmd, cls, status;
  // Handles of the call (after normalisation) for display: client and object (hObject,
  // hObjectNew, hObjectOld, …); 0 when absent.
  uint64_t h_client = 0, h_parent = 0, h_object = 0;
  uint64_t fd = 0;       // symbol of the event's fd (0: none)
  int64_t ret = 0;       // literal return value (0 when `ret_sym` is set)
  uint64_t ret_sym = 0;  // open/dup: the new fd's symbol; mmap: the mapping's symbol
  int32_t err = 0;
  uint64_t key = 0;     // which call
  uint64_t input = 0;   // which call, on which names, with which input bytes: what was asked
  uint64_t shape = 0;   // everything compared but the names symbols stand for
  uint64_t full = 0;    // everything compared
  uint64_t buffer = 0;  // first buffer in NormalizedTrace::buffers
  uint32_t buffer_count = 0;
  const rm::Tables* tables = nullptr;
  uint32_t api = 0;  // the CUDA API call in progress: index into NormalizedTrace::api_names
  // Environment events: 1 + the index of the path in NormalizedTrace::env_paths; 0 for the rest.
  uint32_t env_path = 0;
};

struct GpuIdentity {
  std::optional<uint32_t> pci_id;  // vendor << 16 | device, from NV_ESC_CARD_INFO
  std::string name;                // NV2080_CTRL_CMD_GPU_GET_NAME_STRING, when traced
};

// A GPU identity value the trace holds, named by its kind and ordinal (identity_name): "gpu#0" is
// GPU-5b57e3bf-3ef8-9827-e2df-30d462191363, "gpu#0.pci" is 0000:00:06.0.
struct IdentitySeen {
  IdentityKind kind;
  uint32_t ordinal;
  std::string text;
};

// One normalised trace. Symbol ids are hashes of the symbol's definition (kind, parent, ordinal,
// path …), so equal names in two traces have equal ids.
struct NormalizedTrace {
  std::string path;
  trace::Header header;
  std::optional<trace::Trailer> trailer;
  Diagnostics diagnostics;
  bool truncated = false;
  const rm::Tables* tables = nullptr;
  bool exact_branch = false;  // the tables are of the driver's own major version
  // For a trace whose header names no driver version: the version of the libcuda its module
  // records say the program loaded (trace/loaded_libcuda.hpp), which chose the tables; "" else.
  std::string libcuda_version;
  GpuIdentity gpu;
  std::vector<IdentitySeen> identities;  // in order of first appearance
  std::vector<NormEvent> events;
  std::vector<NormBuffer> buffers;
  std::vector<uint8_t> bytes;
  std::vector<Subst> substs;
  // Thread roles: processes in the order they first appear, in each its main thread (tid = pid)
  // and then its other threads in the order the kernel created them (ascending tid), so that
  // threads whose first calls race get the same role in two runs.
  std::vector<int32_t> thread_tids;                 // role → tid
  std::vector<int32_t> thread_pids;                 // role → pid
  std::unordered_map<uint64_t, std::string> names;  // symbol id → display name
  MaskCounts masks;
  // Names of CUDA API calls (NormalizeOptions::api_namer); [0] is "", for events it did not name.
  std::vector<std::string> api_names{std::string()};
  // The paths of the environment events (NormEvent::env_path), each once.
  std::vector<std::string> env_paths;

  [[nodiscard]] std::string name(uint64_t sym) const;
  // "params+0x10", "c0/2", "/dev/nvidiactl#1", "0x0".
  [[nodiscard]] std::string describe(const Subst& s) const;
};

// Names the CUDA API call in progress when an event was made ("cuDevicePrimaryCtxRetain"), or
// nothing. The recorder's call stacks and the trace's module map are what can answer it; ab/ only
// asks.
using ApiNamer = std::function<std::optional<std::string>(const trace::Event&)>;

struct NormalizeOptions {
  // Apply the rules of ab/rules.cpp for members that vary between identical runs. Off only to
  // show that each rule is needed.
  bool rules = true;
  // Name the GPU's identity values (ab/identity.cpp) gpu#0 …; off only to show each row is needed.
  bool identity = true;
  // Made once per trace from its header (where a module map would be), then asked for each
  // event; unset (the default) or returning an empty ApiNamer: no event is named.
  std::function<ApiNamer(const trace::Header&)> api_namer;
  // Or made from the trace's reader (normalize_file, normalize_memory; it takes precedence): a
  // namer that follows the module records the reader has read so far (trace::make_api_namer).
  std::function<ApiNamer(const trace::TraceReader&)> reader_api_namer;
  // Normalise a call as an imported capture holds it, to compare a recording with one (ab,
  // docs/ab.md): leave out what the capture format does not record — the parameters of an RM
  // alloc with paramsSize 0 (RM sizes them by the class), the buffers behind pointer members, the
  // bytes of a UVM argument past the capture's bound of 256 (and a status beyond them) — and
  // count them in MaskCounts::capture_*. normalize_pair sets it where the other trace is an import.
  bool capture_view = false;
  // Whether a trace with header `self` is normalised with capture_view to be compared with one
  // with header `other`: when the other is an imported capture and it is not.
  static bool capture_view_against(const trace::Header& self, const trace::Header& other);
  // normalize_events: the version of the libcuda the trace's module records name, for a header
  // without a driver version (normalize_file and normalize_memory find it themselves).
  std::string libcuda_version;
};

class Normalizer {
 public:
  Normalizer(NormalizedTrace& out, const rm::Tables& tables, const NormalizeOptions& options = {});
  ~Normalizer();
  Normalizer(const Normalizer&) = delete;
  Normalizer& operator=(const Normalizer&) = delete;
  void add(const trace::Event& ev);

  struct State;  // handle, fd, mapping and address tables (normalize.cpp)

 private:
  NormalizedTrace& out_;
  std::unique_ptr<State> st_;
};

// What normalisation did with one recorded byte of an event's buffer (for tests and docs/ab.md):
// compared as it is, part of a member renamed to a symbol (a changed value shows where the name
// is used: at once, unless this occurrence is the one that defines the name), padding of a known
// layout, past the size the call uses, masked by a rule, or not in the trace at all.
enum class ByteFate : uint8_t {
  kCompared,
  kRenamed,
  kPadding,
  kBeyondSize,
  kMaskedByRule,
  kNotRecorded,
};
std::string_view byte_fate_name(ByteFate f);
ByteFate byte_fate(const NormalizedTrace& t, uint32_t event, Role role, bool after,
                   uint64_t offset);

// Reads and normalises a whole trace file. Errors: unreadable, not a trace, newer format.
// Damaged lines are reported in `diagnostics` and skipped.
Result<std::unique_ptr<NormalizedTrace>> normalize_file(const std::string& path,
                                                        const NormalizeOptions& options = {});
// Both traces of a comparison, read and normalised at the same time, one thread each; a
// recording compared with an imported capture is normalised with NormalizeOptions::capture_view.
struct NormalizedPair {
  Result<std::unique_ptr<NormalizedTrace>> a = Error{}, b = Error{};
};
NormalizedPair normalize_pair(const std::string& path_a, const std::string& path_b,
                              const NormalizeOptions& options = {});
// The same over trace bytes in memory (fuzzing), `name` standing for the file.
Result<std::unique_ptr<NormalizedTrace>> normalize_memory(std::string bytes, std::string name,
                                                          const NormalizeOptions& options = {});
// The same over events in memory (tests).
std::unique_ptr<NormalizedTrace> normalize_events(const trace::Header& header,
                                                  const std::vector<trace::Event>& events,
                                                  const NormalizeOptions& options = {});

}  // namespace cudatool::ab
