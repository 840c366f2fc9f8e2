// Decoding of trace events by the NVIDIA kernel ABI: one trace event (trace/event.hpp, the shared
// contract) in, a structured description out — the escape or UVM call by name, the members of
// its argument structure (handles, class and control command by name, status by name), the
// nested parameter structure of RM control/alloc calls and, for unknown calls, a hex dump sized
// by the request.
//
// Every ioctl decoder has one signature and is chosen by the device and the ioctl type and
// number; layouts (offsets and sizes of members) come from the generated tables of the driver
// branch (rm/tables.hpp, read by rm/decode_layout.hpp), so the same code decodes every branch.
// Decoders never fail: what does not fit is reported in Decoded::notes and the rest is decoded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/text_stage.hpp"
#include "rm/device.hpp"
#include "rm/field.hpp"
#include "rm/tables.hpp"
#include "trace/event.hpp"

namespace cudatool {
class JsonWriter;
}

namespace cudatool::trace {

// A buffer behind a pointer member of the parameters (nested role "params.<member>"), decoded
// element by element by the rule that made the recorder read it (rm/tables.hpp PointerRule).
struct Pointee {
  std::string role;            // "params.grInfoList", "params.opsBuffer[3].pCpuVA"
  std::string_view elem_type;  // "NV2080_CTRL_GR_INFO"; "" for bytes or text
  bool known = false;          // a pointer rule of the branch names the role
  rm::Field value;             // kList of elements, kString, or kBytes
};

struct Decoded {
  rm::Device device = rm::Device::kUnknown;
  Sys sys = Sys::kUnknown;
  uint64_t request = 0;
  uint8_t ioc_type = 0;   // _IOC_TYPE ('F' = 0x46 for RM), 0 for UVM
  uint32_t nr = 0;        // escape number (_IOC_NR) or UVM ioctl number
  uint32_t ioc_size = 0;  // _IOC_SIZE of the request (0 for UVM)
  std::string_view call;  // "NV_ESC_RM_CONTROL", "UVM_MAP_EXTERNAL_ALLOCATION", "mmap"; "" unknown
  bool known = false;     // the call was recognised
  std::string_view arg_struct;     // "NVOS54_PARAMETERS"
  std::vector<rm::Field> args;     // members of the argument (after the call when recorded)
  std::string_view params_struct;  // nested structure: control/alloc params, XFER target
  std::vector<rm::Field> params;
  // NV_ESC_IOCTL_XFER_CMD: the wrapped call's own parameters ("params" buffer) — the control's
  // parameter structure or the class's allocation parameters; params holds the wrapped argument.
  std::string_view wrapped_struct;
  std::vector<rm::Field> wrapped;
  std::vector<Pointee> pointees;  // v2: buffers behind pointer members of the parameters
  // NV_STATUS of the call (RM `status`, UVM `rmStatus`, …) read after the call.
  std::optional<uint32_t> status;
  std::string_view status_name;  // "" when the value has no name
  // RM object model, for statistics and the object tree.
  std::optional<uint32_t> h_client, h_parent, h_object, h_class, cmd;
  std::string hex;  // unknown calls: hex of the argument (up to rm::kMaxHexBytes)
  // Anomalies of the call itself: a request or paramsSize that disagrees with the branch's
  // structure size, an XFER naming an unknown escape.
  std::vector<std::string> notes;
  // Limits of the recording: a buffer recorded shorter than its structure (members past its end
  // are left out), no argument bytes, a long argument shown in part.
  std::vector<std::string> partial;
  // v2: what the recorder says it could not record for the call (Event::unrecorded).
  std::vector<Unrecorded> unrecorded;
  // Environment events (v2: stat, file, mknod, …): the readable text after the call name
  // ("/dev/nvidiactl → char 195:255 0666 (__xstat)"); `args` hold the same facts as members.
  std::string summary;

  void clear();
};

// Decodes one event of any kind (ioctl, open, mmap, …). `out` is cleared first; reusing one
// Decoded across events avoids reallocating.
void decode_event(const rm::Tables& tables, const Event& ev, Decoded& out);
Decoded decode_event(const rm::Tables& tables, const Event& ev);

// Rendering (no printing): a value ("NV_OK", "0xc1d00033", "0x20808159? (NV2080_…)") and one
// line for the whole call ("NV_ESC_RM_CONTROL hClient=0xc1d00033 … status=NV_OK").
std::string format_value(const rm::Field& f);
std::string format_line(const Decoded& d);
// format_line appended to `out` (no allocation when `out` has room).
void append_line(std::string& out, const Decoded& d);
// The same through a stage (decode's event loop keeps one).
void append_line(TextStage& out, const Decoded& d);
// The JSON twin: an object {"call", "known", "device", "nr", "arg_struct", "args": [...],
// "params_struct", "params": [...], "pointees": [...], "status", "status_name", "h_client", …,
// "notes", "partial", "unrecorded"}.
void write_json(JsonWriter& w, const Decoded& d);
// The same members without the enclosing braces, for a caller that adds its own (`decode --json`
// puts seq, t, pid, tid and path first).
void write_json_members(JsonWriter& w, const Decoded& d);

}  // namespace cudatool::trace
