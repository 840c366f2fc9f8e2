// Dispatch and the per-call decoders. Layouts: NVOS* structures of nvos.h (RM escapes, table of
// src/nvidia/arch/nvalloc/unix/src/escape.c), nv_ioctl_* of nv-ioctl.h (frontend escapes,
// kernel-open/nvidia/nv.c), UVM_*_PARAMS of uvm_ioctl.h; all located through the generated
// tables of the branch (rm/tables.hpp).
#include "trace/decode.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "base/hex.hpp"
#include "rm/call_semantics.hpp"
#include "rm/decode_layout.hpp"
#include "trace/decode_env.hpp"

namespace cudatool::trace {

using rm::CategoryEntry;
using rm::ClassEntry;
using rm::classify_device;
using rm::CtrlEntry;
using rm::Device;
using rm::EscapeEntry;
using rm::Field;
using rm::FieldEntry;
using rm::kMaxHexBytes;
using rm::kMaxListItems;
using rm::member_kind;
using rm::PointerKind;
using rm::PointerRule;
using rm::StatusEntry;
using rm::StructEntry;
using rm::Tables;
using rm::UvmEntry;
using rm::ValueKind;
namespace {

using rm::detail::decode_struct;
using rm::detail::read_uint;

constexpr uint8_t kRmIoctlType = 'F';  // NV_IOCTL_MAGIC (nv-ioctl-numbers.h)

// What every decoder gets: the event, its argument bytes and the output.
struct Ctx {
  const Tables& t;
  const Event& ev;
  Decoded& d;
  ByteView arg;  // after the call when recorded, else before
  const EscapeEntry* escape = nullptr;
  const rm::CallRow* row = nullptr;  // the call's row; nullptr: on the default list
};
using DecodeFn = void (*)(Ctx&);

ByteView view_of(const Buffer& b) {
  const std::vector<uint8_t>& v = b.after.empty() ? b.before : b.after;
  return ByteView(v.data(), v.size(), b.addr);
}

const Buffer* nested(const Event& ev, std::string_view role) {
  for (const Buffer& b : ev.nested) {
    if (b.role == role) return &b;
  }
  return nullptr;
}

void note(Decoded& d, std::string text) {
  d.notes.push_back(std::move(text));
}
void partial(Decoded& d, std::string text) {
  d.partial.push_back(std::move(text));
}

std::string hex_u64(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void set_hex(Decoded& d, ByteView bytes) {
  append_hex(d.hex, bytes.clamp(0, kMaxHexBytes));
  if (bytes.size() > kMaxHexBytes) {
    partial(d, "argument: " + std::to_string(bytes.size()) + " bytes, first " +
                   std::to_string(kMaxHexBytes) + " shown");
  }
}

// Fills the symbols of class / control / status values of a decoded tree.
void resolve(const Tables& t, std::vector<Field>& fields) {
  for (Field& f : fields) {
    switch (f.kind) {
      case ValueKind::kClass:
        if (const ClassEntry* c = t.find_class(static_cast<uint32_t>(f.value))) f.symbol = c->name;
        break;
      case ValueKind::kControl:
        if (const CtrlEntry* c = t.find_control(static_cast<uint32_t>(f.value))) {
          f.symbol = c->name;
          f.category = c->handler;  // a name no header define gives: RM's handler beside it
        } else if (const CategoryEntry* g = t.find_category(static_cast<uint32_t>(f.value))) {
          f.category = g->name;
        }
        break;
      case ValueKind::kStatus:
        if (const StatusEntry* s = t.find_status(static_cast<uint32_t>(f.value))) {
          f.symbol = s->name;
        }
        break;
      default:
        break;
    }
    if (!f.items.empty()) resolve(t, f.items);
  }
}

// The call's status, class, control command and RM handles: the members its row names
// (rm/call_semantics.hpp), in its RM structure (the argument, or the member the *_with_fd
// wrappers hold it in).
void summarize(Decoded& d, const rm::CallRow* row, const std::vector<Field>& fields) {
  if (row == nullptr) return;
  const std::vector<Field>* rm_fields = &fields;
  if (!row->within.empty()) {
    for (const Field& f : fields) {
      if (f.kind == ValueKind::kStruct && f.name == row->within) rm_fields = &f.items;
    }
  }
  for (const Field& f : *rm_fields) {
    std::string_view n = f.name;
    auto v = static_cast<uint32_t>(f.value);
    if (f.kind == ValueKind::kStatus && n == row->status && !d.status) {
      d.status = v;
      d.status_name = f.symbol;
    } else if (f.kind == ValueKind::kClass && n == row->cls) {
      d.h_class = v;
    } else if (f.kind == ValueKind::kControl && n == row->control) {
      d.cmd = v;
    } else if (f.kind == ValueKind::kHandle) {
      for (const rm::HandleMember& h : row->handles) {
        if (h.member != n) continue;
        std::optional<uint32_t>* slot = nullptr;
        switch (rm::handle_slot(h.kind)) {
          case rm::HandleSlot::kClient:
            slot = &d.h_client;
            break;
          case rm::HandleSlot::kParent:
            slot = &d.h_parent;
            break;
          case rm::HandleSlot::kObject:
            slot = &d.h_object;
            break;
          case rm::HandleSlot::kNone:
            break;
        }
        if (slot != nullptr && !*slot) *slot = v;
        break;
      }
    }
  }
}

// Decodes `bytes` as structure `type` into `out`; false when the branch has no layout for it.
bool decode_named(Ctx& c, std::string_view type, ByteView bytes, std::vector<Field>& out,
                  std::string_view what) {
  const StructEntry* s = c.t.find_struct(type);
  if (s == nullptr) return false;
  decode_struct(c.t, *s, bytes, out, c.d.partial, what);
  resolve(c.t, out);
  return true;
}

// --- buffers behind pointer members (v2) ---------------------------------------------------

// Text when the bytes up to the first NUL are printable and there is at least one.
bool as_text(ByteView bytes, std::string& out) {
  std::string_view c = bytes.chars();
  size_t end = c.find('\0');
  if (end == std::string_view::npos || end == 0) return false;
  for (size_t i = 0; i < end; ++i) {
    auto u = static_cast<unsigned char>(c[i]);
    if ((u < 0x20 && u != '\t' && u != '\n') || u >= 0x7f) return false;
  }
  out.assign(c.substr(0, end));
  return true;
}

void decode_pointee(Ctx& c, const Buffer& b, const PointerRule* r, Pointee& out) {
  out.role = b.role;
  out.known = r != nullptr;
  Field& f = out.value;
  f.name = r ? r->member : std::string_view();
  ByteView bytes = view_of(b);
  uint32_t elem = r ? r->elem_size : 0;
  const StructEntry* s = r && !r->elem_type.empty() ? c.t.find_struct(r->elem_type) : nullptr;
  bool scalar = elem == 1 || elem == 2 || elem == 4 || elem == 8;
  if (r != nullptr && (s != nullptr || (scalar && !r->elem_type.empty() && elem > 1))) {
    out.elem_type = r->elem_type;
    f.kind = ValueKind::kList;
    uint64_t n = bytes.size() / elem;
    f.total = n;
    FieldEntry m{r->member, r->elem_type, 0, elem, elem};
    ValueKind kind = member_kind(r->struct_name, m);
    for (uint64_t i = 0; i < n && f.items.size() < kMaxListItems; ++i) {
      ByteView one = *bytes.sub(i * elem, elem);
      Field& e = f.items.emplace_back();
      if (s != nullptr) {
        e.kind = ValueKind::kStruct;
        rm::detail::decode_struct(c.t, *s, one, e.items, c.d.partial, out.role);
      } else {
        e.kind = kind;
        e.value = read_uint(one, 0, elem);
      }
    }
    resolve(c.t, f.items);
    return;
  }
  if (as_text(bytes, f.text)) {
    f.kind = ValueKind::kString;
    return;
  }
  f.kind = ValueKind::kBytes;
  append_hex(f.text, bytes.clamp(0, kMaxHexBytes));
  f.total = bytes.size();
}

// The nested buffers "params.<member>" of a call whose parameters are of control command or
// class `key`.
void decode_pointees(Ctx& c, PointerKind kind, uint32_t key) {
  for (const Buffer& b : c.ev.nested) {
    if (b.role.size() <= 7 || b.role.compare(0, 7, "params.") != 0) continue;
    if (b.before.empty() && b.after.empty()) continue;  // not read: `unrecorded` says why
    Pointee& p = c.d.pointees.emplace_back();
    decode_pointee(c, b, c.t.find_pointer_rule(kind, key, b.role), p);
  }
}

// --- 'F' escapes ---------------------------------------------------------------------------

// The argument structure of an escape: the main one, or the alternative whose size the request
// carries (NV_ESC_RM_ALLOC: NVOS21 or NVOS64).
std::string_view arg_type(const Ctx& c, int32_t* size) {
  const EscapeEntry& e = *c.escape;
  if (!e.alt_type.empty() && e.alt_size >= 0 && static_cast<uint32_t>(e.alt_size) == c.d.ioc_size) {
    *size = e.alt_size;
    return e.alt_type;
  }
  *size = e.size;
  return e.type;
}

void escape_generic(Ctx& c) {
  int32_t size = 0;
  std::string_view type = arg_type(c, &size);
  c.d.arg_struct = type;
  if (type.empty()) {  // the release's handler names no structure
    set_hex(c.d, c.arg.clamp(0, c.d.ioc_size ? c.d.ioc_size : c.arg.size()));
    return;
  }
  if (!c.escape->array && size >= 0 && static_cast<uint32_t>(size) != c.d.ioc_size) {
    note(c.d, "request size " + std::to_string(c.d.ioc_size) + ", " + std::string(type) + " is " +
                  std::to_string(size));
  }
  ByteView bytes = c.arg.clamp(0, c.d.ioc_size ? c.d.ioc_size : c.arg.size());
  if (!decode_named(c, type, bytes, c.d.args, "argument")) set_hex(c.d, bytes);
  summarize(c.d, c.row, c.d.args);
}

// The value of member `name` of `fields`, 0 when absent.
uint64_t member_value(const std::vector<Field>& fields, std::string_view name) {
  for (const Field& f : fields) {
    if (f.name == name) return f.value;
  }
  return 0;
}

// The parameter structure of control `cmd` (`params_size` bytes as NVOS54 says) from the "params"
// buffer into (*st, out); a paramsSize that disagrees with the branch is a note. False for a
// command the branch does not know.
bool control_params(Ctx& c, uint32_t cmd_id, uint64_t params_size, std::string_view* st,
                    std::vector<Field>& out) {
  const CtrlEntry* cmd = c.t.find_control(cmd_id);
  if (cmd == nullptr) return false;
  *st = cmd->params;
  if (cmd->params_size >= 0 && params_size != static_cast<uint64_t>(cmd->params_size)) {
    note(c.d, "paramsSize " + std::to_string(params_size) + ", " +
                  std::string(cmd->params.empty() ? "no parameters" : cmd->params) + " is " +
                  std::to_string(cmd->params_size));
  }
  const Buffer* p = nested(c.ev, "params");
  if (p != nullptr && !cmd->params.empty()) {
    decode_named(c, cmd->params, view_of(*p).clamp(0, params_size), out, "params");
  }
  return true;
}

// The allocation parameters of class `hclass` (`args`: the NVOS21/NVOS64 members) from the
// "params" buffer into (*st, out); a non-zero paramsSize that disagrees with the branch is a note.
void alloc_params(Ctx& c, uint32_t hclass, const std::vector<Field>& args, std::string_view* st,
                  std::vector<Field>& out) {
  const ClassEntry* cls = c.t.find_class(hclass);
  if (cls == nullptr || cls->alloc_params.empty()) return;
  *st = cls->alloc_params;
  uint64_t size = member_value(args, "paramsSize");  // NVOS64 carries the size it passes
  if (size != 0 && cls->alloc_params_size >= 0 &&
      size != static_cast<uint64_t>(cls->alloc_params_size)) {
    note(c.d, "paramsSize " + std::to_string(size) + ", " + std::string(cls->alloc_params) +
                  " is " + std::to_string(cls->alloc_params_size));
  }
  if (const Buffer* p = nested(c.ev, "params")) {
    ByteView bytes = view_of(*p);
    if (cls->alloc_params_size >= 0) bytes = bytes.clamp(0, cls->alloc_params_size);
    decode_named(c, cls->alloc_params, bytes, out, "params");
  }
}

// NV_ESC_RM_CONTROL (NVOS54): the command by name and its parameter structure.
void escape_rm_control(Ctx& c) {
  escape_generic(c);
  if (!c.d.cmd) return;
  if (!control_params(c, *c.d.cmd, member_value(c.d.args, "paramsSize"), &c.d.params_struct,
                      c.d.params)) {
    return;
  }
  decode_pointees(c, PointerKind::kControl, *c.d.cmd);
}

// NV_ESC_RM_ALLOC (NVOS21 / NVOS64): the class by name and its allocation parameters.
void escape_rm_alloc(Ctx& c) {
  escape_generic(c);
  if (!c.d.h_class) return;
  const ClassEntry* cls = c.t.find_class(*c.d.h_class);
  if (cls == nullptr || cls->alloc_params.empty()) return;
  alloc_params(c, *c.d.h_class, c.d.args, &c.d.params_struct, c.d.params);
  decode_pointees(c, PointerKind::kAlloc, *c.d.h_class);
}

// Escapes whose argument is an array of the table's type (NV_ESC_CARD_INFO: nv_ioctl_card_info_t
// per device slot; NV_ESC_ATTACH_GPUS_TO_FD: NvU32 GPU ids).
void escape_array(Ctx& c) {
  const EscapeEntry& e = *c.escape;
  c.d.arg_struct = e.type;
  ByteView bytes = c.arg.clamp(0, c.d.ioc_size ? c.d.ioc_size : c.arg.size());
  if (e.size <= 0) {
    set_hex(c.d, bytes);
    return;
  }
  if (c.d.ioc_size % e.size != 0) {
    note(c.d, "request size " + std::to_string(c.d.ioc_size) + " is not a multiple of " +
                  std::string(e.type) + " (" + std::to_string(e.size) + ")");
  }
  Field list;
  list.name = "entries";
  list.kind = ValueKind::kList;
  const StructEntry* s = c.t.find_struct(e.type);
  // Unused device slots of NV_ESC_CARD_INFO have valid == 0 (nv-ioctl.h).
  const FieldEntry* valid = s ? c.t.find_field(*s, "valid") : nullptr;
  uint64_t n = bytes.size() / e.size;
  for (uint64_t i = 0; i < n && list.items.size() < kMaxListItems; ++i) {
    ByteView one = *bytes.sub(i * e.size, e.size);
    if (s == nullptr) {
      uint64_t v = read_uint(one, 0, static_cast<uint32_t>(e.size));
      if (v == 0 || v == 0xffffffffu) continue;  // unused slots
      Field f;
      f.kind = ValueKind::kHex;
      f.value = v;
      list.items.push_back(std::move(f));
      continue;
    }
    if (valid != nullptr && read_uint(one, valid->offset, valid->size) == 0) continue;
    Field f;
    f.kind = ValueKind::kStruct;
    decode_struct(c.t, *s, one, f.items, c.d.partial, "entry");
    list.items.push_back(std::move(f));
  }
  list.total = list.items.size();
  resolve(c.t, list.items);
  c.d.args.push_back(std::move(list));
}

// NV_ESC_IOCTL_XFER_CMD: nv_ioctl_xfer_t names another escape whose argument lives in the
// buffer it points to ("xfer").
void escape_xfer(Ctx& c) {
  escape_generic(c);
  uint32_t inner = 0;
  for (const Field& f : c.d.args) {
    if (f.name == "cmd") inner = static_cast<uint32_t>(f.value);
  }
  const EscapeEntry* e = c.t.find_escape(inner);
  if (e == nullptr) {
    note(c.d, "xfer: unknown escape " + hex_u64(inner));
    return;
  }
  c.d.params_struct = e->type;
  if (const Buffer* x = nested(c.ev, "xfer")) {
    decode_named(c, e->type, view_of(*x), c.d.params, "xfer");
  }
  // The wrapped call's command or class, status and handles are the event's (filters, stats and
  // ab see an XFER-wrapped control as the control it is); the xfer's own fields name none.
  const rm::CallRow* row = rm::row_of(c.t, *e);
  summarize(c.d, row, c.d.params);
  // The wrapped call's own parameters, as a plain control or alloc decodes them.
  rm::CallDecoder inner_decoder = row ? row->decoder : rm::CallDecoder::kStruct;
  if (inner_decoder == rm::CallDecoder::kControl && c.d.cmd) {
    control_params(c, *c.d.cmd, member_value(c.d.params, "paramsSize"), &c.d.wrapped_struct,
                   c.d.wrapped);
  } else if (inner_decoder == rm::CallDecoder::kAlloc && c.d.h_class) {
    alloc_params(c, *c.d.h_class, c.d.params, &c.d.wrapped_struct, c.d.wrapped);
  }
  // The wrapped escape's own parameters' pointer members: by its command or class.
  for (const Field& f : c.d.params) {
    if (f.kind == ValueKind::kControl) {
      decode_pointees(c, PointerKind::kControl, static_cast<uint32_t>(f.value));
    } else if (f.kind == ValueKind::kClass && f.name == "hClass") {
      decode_pointees(c, PointerKind::kAlloc, static_cast<uint32_t>(f.value));
    }
  }
}

// The decoder a row names (rm/call_semantics.hpp); a call on the default list has none.
DecodeFn escape_decoder(const rm::CallRow* row) {
  switch (row ? row->decoder : rm::CallDecoder::kStruct) {
    case rm::CallDecoder::kControl:
      return escape_rm_control;
    case rm::CallDecoder::kAlloc:
      return escape_rm_alloc;
    case rm::CallDecoder::kArray:
      return escape_array;
    case rm::CallDecoder::kXfer:
      return escape_xfer;
    case rm::CallDecoder::kStruct:
      break;
  }
  return escape_generic;
}

// --- UVM -----------------------------------------------------------------------------------

void decode_uvm(Ctx& c, const UvmEntry& u) {
  c.d.call = u.name;
  c.d.known = true;
  c.d.arg_struct = u.params;
  if (u.params.empty() || u.params_size < 0) {
    if (u.params_size < 0) set_hex(c.d, c.arg);
    return;
  }
  ByteView bytes = c.arg.clamp(0, u.params_size);
  if (!decode_named(c, u.params, bytes, c.d.args, "argument")) set_hex(c.d, bytes);
  summarize(c.d, rm::row_of(c.t, u), c.d.args);
  if (u.rm_status_offset >= 0 && !c.d.status) {
    if (auto v = c.arg.read<uint32_t>(u.rm_status_offset)) {
      c.d.status = *v;
      if (const StatusEntry* s = c.t.find_status(*v)) c.d.status_name = s->name;
    }
  }
}

void decode_ioctl(Ctx& c) {
  Decoded& d = c.d;
  d.request = c.ev.request;
  if (c.ev.arg) {
    c.arg = view_of(*c.ev.arg);
  } else {
    partial(d, "no argument bytes recorded");
  }
  if (d.device == Device::kUvm || d.device == Device::kUvmTools) {
    d.nr = static_cast<uint32_t>(c.ev.request);
    if (const UvmEntry* u = c.t.find_uvm(d.nr); u != nullptr && c.ev.request <= 0xffffffffu) {
      decode_uvm(c, *u);
      return;
    }
    set_hex(d, c.arg);
    return;
  }
  uint64_t req = c.ev.request;
  d.ioc_type = static_cast<uint8_t>((req >> 8) & 0xff);
  d.nr = static_cast<uint32_t>(req & 0xff);
  d.ioc_size = static_cast<uint32_t>((req >> 16) & 0x3fff);
  if (d.ioc_type == kRmIoctlType) {
    c.escape = c.t.find_escape(d.nr);
    if (c.escape != nullptr) {
      d.call = c.escape->name;
      d.known = true;
      c.row = rm::row_of(c.t, *c.escape);
      escape_decoder(c.row)(c);
      return;
    }
  }
  // Unknown: a hex dump sized by the request (what the kernel copies for an _IOC request).
  set_hex(d, d.ioc_size ? c.arg.clamp(0, d.ioc_size) : c.arg);
}

Field number(std::string_view name, ValueKind kind, uint64_t v) {
  Field f;
  f.name = name;
  f.kind = kind;
  f.value = v;
  return f;
}

// A compute launch a replay's fake GPU completed (docs/replay.md): not a call the program made.
// Its members as the replay wrote them ("kernel=\"add1\" grid=[1024,1,1] …").
void decode_launch(const Event& ev, Decoded& d) {
  d.call = "launch";
  d.known = true;
  d.summary = "(the fake GPU's, not a call)";
  static constexpr std::string_view kKeys[] = {"channel",      "class",  "kernel",
                                               "program",      "grid",   "block",
                                               "shared_bytes", "params", "executed"};
  for (const ExtraField& f : ev.extra) {
    d.summary += ' ';
    d.summary += f.key;
    d.summary += '=';
    d.summary += f.json;
    // The same as args for --json (names from the list: a Field's name must outlive `ev`).
    for (std::string_view k : kKeys) {
      if (k != f.key) continue;
      Field x;
      x.name = k;
      x.kind = ValueKind::kString;
      bool quoted = f.json.size() >= 2 && f.json.front() == '"' && f.json.back() == '"';
      x.text = quoted ? f.json.substr(1, f.json.size() - 2) : f.json;
      d.args.push_back(std::move(x));
    }
  }
}

void decode_other(const Event& ev, Decoded& d) {
  d.call = sys_name(ev.sys);
  d.known = ev.sys != Sys::kUnknown;
  switch (ev.sys) {
    case Sys::kOpen: {
      Field p;
      p.name = "path";
      p.kind = ValueKind::kString;
      p.text = ev.path;
      d.args.push_back(std::move(p));
      d.args.push_back(number("flags", ValueKind::kHex, ev.open_flags));
      d.args.push_back(number("fd", ValueKind::kSigned, static_cast<uint64_t>(ev.ret)));
      break;
    }
    case Sys::kMmap:
      d.args.push_back(number("addr", ValueKind::kHex, ev.addr));
      d.args.push_back(number("len", ValueKind::kDec, ev.len));
      d.args.push_back(number("prot", ValueKind::kHex, ev.prot));
      d.args.push_back(number("flags", ValueKind::kHex, ev.map_flags));
      d.args.push_back(number("offset", ValueKind::kHex, ev.offset));
      d.args.push_back(number("ret", ValueKind::kHex, static_cast<uint64_t>(ev.ret)));
      break;
    case Sys::kMunmap:
      d.args.push_back(number("addr", ValueKind::kHex, ev.addr));
      d.args.push_back(number("len", ValueKind::kDec, ev.len));
      break;
    case Sys::kClose:
    case Sys::kDup:
      d.args.push_back(number("fd", ValueKind::kSigned, static_cast<uint64_t>(int64_t{ev.fd})));
      break;
    default:
      if (is_environment(ev.sys)) {
        detail::decode_environment(ev, d);
      } else if (ev.sys == Sys::kUnknown && ev.sys_raw == "launch") {
        decode_launch(ev, d);
      }
      break;
  }
}

}  // namespace

void Decoded::clear() {
  // Member by member, so that the vectors keep their capacity for the next event.
  device = Device::kUnknown;
  sys = Sys::kUnknown;
  request = 0;
  ioc_type = 0;
  nr = 0;
  ioc_size = 0;
  call = {};
  known = false;
  arg_struct = {};
  args.clear();
  params_struct = {};
  params.clear();
  wrapped_struct = {};
  wrapped.clear();
  pointees.clear();
  status.reset();
  status_name = {};
  h_client.reset();
  h_parent.reset();
  h_object.reset();
  h_class.reset();
  cmd.reset();
  hex.clear();
  notes.clear();
  partial.clear();
  unrecorded.clear();
  summary.clear();
}

void decode_event(const Tables& tables, const Event& ev, Decoded& out) {
  out.clear();
  out.sys = ev.sys;
  out.device = classify_device(ev.path);
  out.unrecorded = ev.unrecorded;
  if (ev.sys != Sys::kIoctl) {
    decode_other(ev, out);
    return;
  }
  Ctx c{tables, ev, out, ByteView(), nullptr};
  decode_ioctl(c);
  // What the recorder could not read of a buffer it meant to read (EFAULT, over the cap, a
  // prefix only), as it said it in the buffer: one entry per buffer and side.
  auto say = [&out](const Buffer& b) {
    auto add = [&out, &b](std::string_view side, const std::string& why) {
      if (why.empty()) return;
      std::string what = b.role + std::string(side);
      for (const Unrecorded& u : out.unrecorded) {
        if (u.what == what || (u.what == b.role && u.why == why)) return;
      }
      out.unrecorded.push_back({std::move(what), why});
    };
    if (b.before_error == b.after_error) {
      add("", b.before_error);
    } else {
      add(" (before the call)", b.before_error);
      add(" (after the call)", b.after_error);
    }
  };
  if (ev.arg) say(*ev.arg);
  for (const Buffer& b : ev.nested) say(b);
}

Decoded decode_event(const Tables& tables, const Event& ev) {
  Decoded d;
  decode_event(tables, ev, d);
  return d;
}

}  // namespace cudatool::trace
