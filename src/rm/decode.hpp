// Byte-level decoders of the NVIDIA kernel ABI: one trace event (trace/event.hpp, the shared
// contract) in, a structured description out — the escape or UVM call by name, the members of
// its argument structure (handles, class and control command by name, status by name), the
// nested parameter structure of RM control/alloc calls and, for unknown calls, a hex dump sized
// by the request.
//
// Every ioctl decoder has one signature and is chosen by the device and the ioctl type and
// number; layouts (offsets and sizes of members) come from the generated tables of the driver
// branch, so the same code decodes every branch. Decoders never fail: what does not fit is
// reported in Decoded::notes and the rest is decoded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rm/tables.hpp"
#include "trace/event.hpp"

namespace cudatool {
class JsonWriter;
}

namespace cudatool::rm {

enum class Device : uint8_t {
  kUnknown,      // not an NVIDIA device path (or none recorded)
  kControl,      // /dev/nvidiactl
  kGpu,          // /dev/nvidia0, /dev/nvidia1, …
  kUvm,          // /dev/nvidia-uvm
  kUvmTools,     // /dev/nvidia-uvm-tools
  kModeset,      // /dev/nvidia-modeset
  kCaps,         // /dev/nvidia-caps/*, /dev/nvidia-caps-imex-channels/*
  kOtherNvidia,  // another /dev/nvidia* node (nvswitch, nvlink, …)
};
Device classify_device(std::string_view path);
std::string_view device_name(Device d);  // "nvidiactl", "gpu", "uvm", …

// How a value is shown.
enum class ValueKind : uint8_t {
  kHex,      // 0x1f
  kDec,      // 31
  kSigned,   // -1
  kHandle,   // 0xc1d00033 (an RM object handle)
  kClass,    // NV01_ROOT_CLIENT / 0xabcd?
  kControl,  // NV2080_CTRL_CMD_GPU_GET_INFO_V2 / 0x20808159? (NV2080_CTRL_GPU_LEGACY_…)
  kStatus,   // NV_OK / 0x1234?
  kChar,     // '2'
  kString,   // "580.159.04" (text holds it)
  kBytes,    // hex digits (text holds them)
  kList,     // [a, b, …] (items hold the elements; total counts all of them)
  kStruct,   // {m=…, …} (items hold the members)
};

struct Field {
  // User-provided, so that value-initialisation (emplace_back()) runs the member initialisers
  // instead of first zeroing the whole object (a `rep stos` that cost 7% of `decode`).
  Field() noexcept {}  // NOLINT(modernize-use-equals-default)

  std::string_view name;  // member name; "" for list elements
  ValueKind kind = ValueKind::kHex;
  uint64_t value = 0;
  std::string_view symbol;  // name of the value (class, control, status), "" when unknown
  // kControl: without a symbol, the interface when known; with a symbol that no header define
  // gives (rm::kCtrlNameFromNvoc), RM's handler for the command.
  std::string_view category;
  std::string text;          // kString / kBytes payload
  std::vector<Field> items;  // kList elements / kStruct members
  uint64_t total = 0;        // kList: elements the source holds (items may keep fewer)
};

// A buffer behind a pointer member of the parameters (nested role "params.<member>"), decoded
// element by element by the rule that made the recorder read it (rm/tables.hpp PointerRule).
struct Pointee {
  std::string role;            // "params.grInfoList", "params.opsBuffer[3].pCpuVA"
  std::string_view elem_type;  // "NV2080_CTRL_GR_INFO"; "" for bytes or text
  bool known = false;          // a pointer rule of the branch names the role
  Field value;                 // kList of elements, kString, or kBytes
};

struct Decoded {
  Device device = Device::kUnknown;
  trace::Sys sys = trace::Sys::kUnknown;
  uint64_t request = 0;
  uint8_t ioc_type = 0;   // _IOC_TYPE ('F' = 0x46 for RM), 0 for UVM
  uint32_t nr = 0;        // escape number (_IOC_NR) or UVM ioctl number
  uint32_t ioc_size = 0;  // _IOC_SIZE of the request (0 for UVM)
  std::string_view call;  // "NV_ESC_RM_CONTROL", "UVM_MAP_EXTERNAL_ALLOCATION", "mmap"; "" unknown
  bool known = false;     // the call was recognised
  std::string_view arg_struct;     // "NVOS54_PARAMETERS"
  std::vector<Field> args;         // members of the argument (after the call when recorded)
  std::string_view params_struct;  // nested structure: control/alloc params, XFER target
  std::vector<Field> params;
  // NV_ESC_IOCTL_XFER_CMD: the wrapped call's own parameters ("params" buffer) — the control's
  // parameter structure or the class's allocation parameters; params holds the wrapped argument.
  std::string_view wrapped_struct;
  std::vector<Field> wrapped;
  std::vector<Pointee> pointees;  // v2: buffers behind pointer members of the parameters
  // NV_STATUS of the call (RM `status`, UVM `rmStatus`, …) read after the call.
  std::optional<uint32_t> status;
  std::string_view status_name;  // "" when the value has no name
  // RM object model, for statistics and the object tree.
  std::optional<uint32_t> h_client, h_parent, h_object, h_class, cmd;
  std::string hex;  // unknown calls: hex of the argument (up to kMaxHexBytes)
  // Anomalies of the call itself: a request or paramsSize that disagrees with the branch's
  // structure size, an XFER naming an unknown escape.
  std::vector<std::string> notes;
  // Limits of the recording: a buffer recorded shorter than its structure (members past its end
  // are left out), no argument bytes, a long argument shown in part.
  std::vector<std::string> partial;
  // v2: what the recorder says it could not record for the call (trace::Event::unrecorded).
  std::vector<trace::Unrecorded> unrecorded;
  // Environment events (v2: stat, file, mknod, …): the readable text after the call name
  // ("/dev/nvidiactl → char 195:255 0666 (__xstat)"); `args` hold the same facts as members.
  std::string summary;

  void clear();
};

inline constexpr size_t kMaxHexBytes = 256;
inline constexpr size_t kMaxListItems = 64;

// How the decoders show member `m` of structure `struct_name` (each element, for an array member):
// kHandle, kClass, kStatus, kControl, … — the same choice decode_event makes (name, declared type
// and the per-structure overrides). For A/B normalisation (ab/), which renames handles.
ValueKind member_kind(std::string_view struct_name, const FieldEntry& m);

// Decodes one event of any kind (ioctl, open, mmap, …). `out` is cleared first; reusing one
// Decoded across events avoids reallocating.
void decode_event(const Tables& tables, const trace::Event& ev, Decoded& out);
Decoded decode_event(const Tables& tables, const trace::Event& ev);

// Rendering (no printing): a value ("NV_OK", "0xc1d00033", "0x20808159? (NV2080_…)") and one
// line for the whole call ("NV_ESC_RM_CONTROL hClient=0xc1d00033 … status=NV_OK").
std::string format_value(const Field& f);
std::string format_line(const Decoded& d);
// format_line appended to `out` (no allocation when `out` has room).
void append_line(std::string& out, const Decoded& d);
// The JSON twin: an object {"call", "known", "device", "nr", "arg_struct", "args": [...],
// "params_struct", "params": [...], "pointees": [...], "status", "status_name", "h_client", …,
// "notes", "partial", "unrecorded"}.
void write_json(JsonWriter& w, const Decoded& d);
// The same members without the enclosing braces, for a caller that adds its own (`decode --json`
// puts seq, t, pid, tid and path first).
void write_json_members(JsonWriter& w, const Decoded& d);

}  // namespace cudatool::rm
