// One ioctl: which call it is (RM escape, XFER's inner escape, UVM ioctl), the RM objects it
// creates or frees, its status, and the normalised images of its argument and nested buffers.
// Layouts come from the driver branch's tables (rm/tables.hpp), as in trace/decode.cpp.
#include <algorithm>
#include <cstring>

#include "ab/normalize_state.hpp"
#include "ab/rules.hpp"
#include "base/bytes.hpp"
#include "rm/call_semantics.hpp"
#include "trace/capture_import.hpp"

namespace cudatool::ab::detail {
namespace {

using detail::hash_bytes;
using detail::mix;

constexpr uint8_t kRmIoctlType = 'F';  // NV_IOCTL_MAGIC (nv-ioctl-numbers.h)
constexpr uint32_t kNvOk = 0;

std::optional<uint64_t> read_field(const rm::FieldEntry* f, const std::vector<uint8_t>& bytes,
                                   uint64_t base) {
  if (f == nullptr || f->size != f->elem_size) return std::nullopt;
  ByteView v(bytes.data(), bytes.size());
  switch (f->size) {
    case 1:
      return v.read<uint8_t>(base + f->offset);
    case 2:
      return v.read<uint16_t>(base + f->offset);
    case 4:
      return v.read<uint32_t>(base + f->offset);
    case 8:
      return v.read<uint64_t>(base + f->offset);
    default:
      return std::nullopt;
  }
}

const std::vector<uint8_t>& side_bytes(const trace::Buffer& b) {
  return b.after.empty() ? b.before : b.after;
}

struct Plan {
  const rm::StructEntry* arg_layout = nullptr;
  bool arg_array = false;
  bool arg_sized = true;
  uint64_t arg_size = 0;                    // bytes of the argument the call uses
  const rm::EscapeEntry* escape = nullptr;  // effective escape (XFER: the inner one)
  const rm::UvmEntry* uvm = nullptr;
  const rm::CallRow* row = nullptr;  // the effective call's row (rm/call_semantics.hpp)
  // Where the RM identity members are read: a structure over one buffer's bytes at an offset.
  const rm::StructEntry* id_layout = nullptr;
  const std::vector<uint8_t>* id_bytes = nullptr;
  uint64_t id_base = 0;
  const rm::StructEntry* xfer_layout = nullptr;
  const rm::StructEntry* params_layout = nullptr;
};

const trace::Buffer* nested(const trace::Event& ev, std::string_view role) {
  for (const trace::Buffer& b : ev.nested) {
    if (b.role == role) return &b;
  }
  return nullptr;
}

// What the GPU is, from the first NV_ESC_CARD_INFO and NV2080_CTRL_CMD_GPU_GET_NAME_STRING.
void note_gpu(Normalizer::State& s, const NormEvent& ne, const trace::Event& ev, const Plan& p) {
  GpuIdentity& g = s.out.gpu;
  if (!g.pci_id && ne.call == "NV_ESC_CARD_INFO" && p.arg_layout != nullptr && ev.arg) {
    const std::vector<uint8_t>& b = side_bytes(*ev.arg);
    const rm::FieldEntry* pci = s.field(p.arg_layout, "pci_info");
    const rm::StructEntry* pci_s = pci ? s.layout(pci->type) : nullptr;
    uint64_t size = static_cast<uint64_t>(p.arg_layout->size);
    for (uint64_t off = 0; pci_s != nullptr && b.size() >= size && off <= b.size() - size;
         off += size) {
      if (read_field(s.field(p.arg_layout, "valid"), b, off).value_or(0) == 0) continue;
      auto vendor = read_field(s.field(pci_s, "vendor_id"), b, off + pci->offset);
      auto device = read_field(s.field(pci_s, "device_id"), b, off + pci->offset);
      if (vendor && device) g.pci_id = static_cast<uint32_t>((*vendor << 16) | *device);
      break;
    }
  }
  if (g.name.empty() && p.params_layout != nullptr &&
      p.params_layout->name == "NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS") {
    const trace::Buffer* nb = nested(ev, "params");
    const rm::FieldEntry* f = s.field(p.params_layout, "gpuNameString");
    if (nb != nullptr && f != nullptr && !nb->after.empty()) {
      ByteView v = ByteView(nb->after.data(), nb->after.size()).clamp(f->offset, f->size);
      std::string_view c = v.chars();
      c = c.substr(0, std::min(c.size(), c.find('\0')));
      if (!c.empty() &&
          std::all_of(c.begin(), c.end(), [](char ch) { return ch >= 0x20 && ch < 0x7f; })) {
        g.name = std::string(c);
      }
    }
  }
}

Plan plan_ioctl(Normalizer::State& s, const trace::Event& ev, NormEvent& ne) {
  const rm::Tables& t = s.t;
  Plan p;
  const trace::Buffer* arg = ev.arg ? &*ev.arg : nullptr;
  uint64_t recorded = arg ? side_bytes(*arg).size() : 0;
  if (ne.device == rm::Device::kUvm || ne.device == rm::Device::kUvmTools) {
    ne.nr = static_cast<uint32_t>(ev.request);
    p.uvm = ev.request <= 0xffffffffu ? t.find_uvm(ne.nr) : nullptr;
    if (p.uvm != nullptr) {
      ne.call = p.uvm->name;
      p.row = rm::row_of(t, *p.uvm);
      p.arg_layout = s.layout(p.uvm->params);
      if (p.uvm->params_size >= 0) {
        p.arg_size = static_cast<uint64_t>(p.uvm->params_size);
      } else {
        p.arg_sized = !(arg && arg->bounded);
        p.arg_size = recorded;
      }
    } else {
      ne.call = {};
      p.arg_sized = !(arg && arg->bounded);
      p.arg_size = recorded;
    }
    if (s.capture_view && p.arg_sized && p.arg_size > trace::kCaptureUvmBytes) {
      p.arg_size = trace::kCaptureUvmBytes;  // what a capture holds of it
      ++s.out.masks.capture_uvm;
    }
    p.id_layout = p.arg_layout;
    p.id_bytes = arg ? &side_bytes(*arg) : nullptr;
    return p;
  }
  uint64_t req = ev.request;
  uint8_t type = static_cast<uint8_t>((req >> 8) & 0xff);
  uint32_t ioc_size = static_cast<uint32_t>((req >> 16) & 0x3fff);
  ne.nr = static_cast<uint32_t>(req & 0xff);
  p.arg_size = ioc_size ? ioc_size : recorded;
  p.arg_sized = ioc_size != 0 || !(arg && arg->bounded);
  ne.call = {};
  if (type != kRmIoctlType) return p;
  const rm::EscapeEntry* e = t.find_escape(ne.nr);
  if (e == nullptr) return p;
  ne.call = e->name;
  std::string_view type_name = e->type;
  if (!e->alt_type.empty() && e->alt_size >= 0 && static_cast<uint32_t>(e->alt_size) == ioc_size) {
    type_name = e->alt_type;
  }
  p.arg_layout = s.layout(type_name);
  p.arg_array = e->array;
  p.escape = e;
  p.row = rm::row_of(t, *e);
  p.id_layout = p.arg_layout;
  p.id_bytes = arg ? &side_bytes(*arg) : nullptr;
  if (p.row != nullptr && (p.row->does & rm::kCallWraps) && p.id_bytes != nullptr) {
    // nv_ioctl_xfer_t names the escape whose argument is in the "xfer" buffer.
    auto inner = read_field(s.field(p.arg_layout, "cmd"), *p.id_bytes, 0);
    const rm::EscapeEntry* ie = inner ? t.find_escape(static_cast<uint32_t>(*inner)) : nullptr;
    const trace::Buffer* x = nested(ev, "xfer");
    if (ie != nullptr) {
      ne.nr = ie->nr;
      p.escape = ie;
      p.row = rm::row_of(t, *ie);
      p.xfer_layout = s.layout(ie->type);
      p.id_layout = p.xfer_layout;
      p.id_bytes = x ? &side_bytes(*x) : nullptr;
    }
  }
  // The *_with_fd wrappers (nv-ioctl.h) hold the RM structure (NVOS02, NVOS33) in a member,
  // next to an fd: the row says which.
  if (p.id_layout != nullptr) {
    rm::CallLayout l = rm::locate_call(t, p.row, *p.id_layout);
    p.id_layout = l.rm;
    p.id_base = l.rm_base;
  }
  return p;
}

}  // namespace

Role role_of(std::string_view r) {
  if (r == "arg") return Role::kArg;
  if (r == "params") return Role::kParams;
  if (r == "xfer") return Role::kXfer;
  if (r == "rights") return Role::kRights;
  return Role::kOther;
}

namespace {

// Whether nested buffer `b` is compared. Not: a NULL pointer with size 0 (a control without
// parameters: nothing to compare, and an imported capture writes no buffer for it); in
// capture_view, what a capture does not hold (an address into it then reads as in the capture).
// `count`: count what capture_view leaves out.
bool compared_buffer(Normalizer::State& s, const trace::Buffer& b, bool count) {
  if (b.addr == 0 && b.before.empty() && b.after.empty() && b.before_error.empty() &&
      b.after_error.empty()) {
    return false;
  }
  if (!s.capture_view) return true;
  if (b.sized_by == "class") {
    s.out.masks.capture_params += count;
    return false;
  }
  if (b.role.find('.') != std::string::npos) {
    s.out.masks.capture_pointers += count;
    return false;
  }
  return true;
}

// Both sides of a recorded buffer, walked by `layout` (each element, `array`), the first `size`
// bytes compared (`sized` false: none, the size is not known).
void add_buffer(Normalizer::State& s, const trace::Buffer& b, Role role,
                const rm::StructEntry* layout, bool array, bool sized, uint64_t size,
                std::string_view member = {}) {
  for (bool after : {false, true}) {
    const std::vector<uint8_t>& bytes = after ? b.after : b.before;
    const std::string& error = after ? b.after_error : b.before_error;
    if (bytes.empty() && error.empty() && after && !b.before.empty()) continue;  // not re-read
    NormBuffer nb;
    nb.role = role;
    nb.member = member;
    nb.after = after;
    nb.recorded = bytes.size();
    nb.unreadable = bytes.empty() && !error.empty();
    uint64_t compared = 0;
    if (!sized) {
      s.out.masks.unsized += bytes.size();
    } else {
      compared = std::min<uint64_t>(bytes.size(), size);
      s.out.masks.beyond_size += bytes.size() - compared;
    }
    compared = std::min<uint64_t>(compared, UINT32_MAX);
    s.walk_buffer(nb, bytes.data(), static_cast<uint32_t>(compared), layout, array);
    s.out.buffers.push_back(nb);
  }
}

// What add_ioctl's phases share: the plan, the identity bytes, the row.
struct IoctlCtx {
  Normalizer::State& s;
  const trace::Event& ev;
  NormEvent& ne;
  Plan& p;
  const std::vector<uint8_t>& idb;
  const rm::CallRow& row;
  std::string_view id_name;
  const rm::FieldEntry* member(std::string_view name) const {
    return name.empty() ? nullptr : s.field(p.id_layout, name);
  }
};

// Identity: command, class, status (read after the call only), client.
void read_identity(IoctlCtx& x) {
  Normalizer::State& s = x.s;
  NormEvent& ne = x.ne;
  Plan& p = x.p;
  const trace::Event& ev = x.ev;
  if (const rm::FieldEntry* f = x.member(x.row.control)) ne.cmd = read_field(f, x.idb, p.id_base);
  if (auto c = read_field(x.member(x.row.cls), x.idb, p.id_base)) {
    ne.cls = static_cast<uint32_t>(*c);
  }
  const trace::Buffer* status_buf = ev.arg ? &*ev.arg : nullptr;
  if (p.xfer_layout != nullptr) status_buf = nested(ev, "xfer");
  if (status_buf != nullptr && !status_buf->after.empty()) {
    if (p.uvm != nullptr && p.uvm->rm_status_offset >= 0) {
      // Within the bytes compared (capture_view cuts UVM arguments short).
      if (static_cast<uint64_t>(p.uvm->rm_status_offset) + 4 <= p.arg_size) {
        ne.status = ByteView(status_buf->after.data(), status_buf->after.size())
                        .read<uint32_t>(static_cast<uint64_t>(p.uvm->rm_status_offset));
      }
    } else if (const rm::FieldEntry* f = x.member(x.row.status)) {
      auto v = read_field(f, status_buf->after, p.id_base);
      if (v) ne.status = static_cast<uint32_t>(*v);
    }
  }
  s.scope = mix(ne.nr + uint64_t{1}, ne.cmd ? *ne.cmd : ~uint64_t{0});
  const rm::CallIdentity id = rm::call_identity(x.row);
  std::optional<uint64_t> client_raw = read_field(x.member(id.client), x.idb, p.id_base);
  if (client_raw && *client_raw != 0) {
    s.client = s.client_symbol(static_cast<uint32_t>(*client_raw), Place{x.id_name, id.client});
  }
}

// Nested buffers (an object's creation parameters are part of its name: symbols.cpp): control
// parameters by command, allocation parameters by class, buffers behind pointer members by the
// pointer rules.
void add_nested(IoctlCtx& x) {
  Normalizer::State& s = x.s;
  const rm::Tables& t = s.t;
  NormEvent& ne = x.ne;
  Plan& p = x.p;
  const rm::CallRow& row = x.row;
  if (p.escape != nullptr && ne.cmd && (row.does & rm::kCallControl)) {
    if (const rm::CtrlEntry* c = t.find_control(*ne.cmd)) p.params_layout = s.layout(c->params);
  } else if (p.escape != nullptr && ne.cls && (row.does & rm::kCallAlloc)) {
    if (const rm::ClassEntry* c = t.find_class(*ne.cls))
      p.params_layout = s.layout(c->alloc_params);
  }

  for (const trace::Buffer& b : x.ev.nested) {
    if (!compared_buffer(s, b, true)) continue;
    Role role = role_of(b.role);
    const rm::StructEntry* layout = nullptr;
    if (role == Role::kParams) layout = p.params_layout;
    if (role == Role::kXfer) layout = p.xfer_layout;
    if (role == Role::kRights) layout = s.layout("RS_ACCESS_MASK");
    uint64_t recorded = std::max(b.before.size(), b.after.size());
    if (role == Role::kOther && b.role.starts_with("params.")) {
      // Behind a pointer member (v2): an array of the rule's element structure, the bytes
      // compared member by member; the pointer itself, in `params`, is a pointer symbol.
      const rm::PointerRule* r = nullptr;
      if (p.escape != nullptr && ne.cmd && (row.does & rm::kCallControl)) {
        r = t.find_pointer_rule(rm::PointerKind::kControl, *ne.cmd, b.role);
      } else if (p.escape != nullptr && ne.cls && (row.does & rm::kCallAlloc)) {
        r = t.find_pointer_rule(rm::PointerKind::kAlloc, *ne.cls, b.role);
      }
      const rm::StructEntry* elem = r ? s.layout(r->elem_type) : nullptr;
      add_buffer(s, b, role, elem, elem != nullptr, !b.bounded, recorded,
                 r ? r->role : std::string_view("params.?"));
      continue;
    }
    bool sized = !b.bounded || layout != nullptr;
    uint64_t size = b.bounded && layout ? static_cast<uint64_t>(layout->size) : recorded;
    add_buffer(s, b, role, layout, false, sized, size);
  }
}

// Objects created or freed, and the object a call is about; returns the handle freed (0 none).
// `first_nested`: where this call's nested buffers begin in out.buffers.
uint32_t note_objects(IoctlCtx& x, size_t first_nested) {
  Normalizer::State& s = x.s;
  const rm::Tables& t = s.t;
  NormalizedTrace& out = s.out;
  NormEvent& ne = x.ne;
  Plan& p = x.p;
  const std::vector<uint8_t>& idb = x.idb;
  std::string_view id_name = x.id_name;
  const rm::CallIdentity id = rm::call_identity(x.row);
  auto member = [&](std::string_view name) { return x.member(name); };
  // Objects created or freed.
  uint32_t freed = 0;
  if (id.creates || id.frees) {
    uint32_t obj = static_cast<uint32_t>(read_field(member(id.object), idb, p.id_base).value_or(0));
    uint32_t parent =
        static_cast<uint32_t>(read_field(member(id.parent), idb, p.id_base).value_or(0));
    bool ok = !ne.status || *ne.status == kNvOk;
    if (id.frees) {
      freed = obj;
      if (obj != 0) ne.h_object = s.lookup_handle(obj, Place{id_name, id.object});
    } else if (obj != 0 && ne.cls && is_client_class(t, *ne.cls)) {
      if (ok || s.clients.count(obj) == 0) s.client = s.create_client(obj);
      ne.h_object = s.client;
    } else if (obj != 0) {
      bool live = s.client != 0 && s.objects.count(mix(s.client, obj)) != 0;
      if (ok || !live) {
        // What the object is made from: its class and the parameters passed in.
        uint64_t content = 0;
        for (size_t i = first_nested; i < out.buffers.size(); ++i) {
          const NormBuffer& nb = out.buffers[i];
          if (nb.after) continue;
          content = mix(content, hash_bytes(out.bytes.data() + nb.bytes, nb.compared));
          for (uint64_t k = nb.subst; k < nb.subst + nb.subst_count; ++k) {
            content = mix(mix(content, out.substs[k].base), out.substs[k].delta);
          }
        }
        uint32_t cls = ne.cls ? *ne.cls : 0xffffffffu;  // NVOS55 (dup): no class
        ne.h_object = s.create_object(parent, obj, cls, content);
      } else {
        ne.h_object = s.lookup_handle(obj, Place{id_name, id.object});
      }
    }
    if (parent != 0) ne.h_parent = s.lookup_handle(parent, Place{id_name, id.parent});
  } else if (const rm::FieldEntry* f = member(id.object)) {
    // The object the call is about (hObject of a control, hMemory of a mapping); of a UVM
    // argument, only within the bytes compared (capture_view cuts it short).
    bool compared = p.uvm == nullptr || uint64_t{f->offset} + f->size <= p.arg_size;
    auto h = compared ? read_field(f, idb, p.id_base) : std::nullopt;
    if (h && *h != 0) {
      ne.h_object = s.lookup_handle(static_cast<uint32_t>(*h), Place{id_name, id.object});
    }
  }
  return freed;
}

}  // namespace

void add_ioctl(Normalizer::State& s, const trace::Event& ev, NormEvent& ne) {
  ne.request = ev.request;
  Plan p = plan_ioctl(s, ev, ne);
  if (ev.arg && ev.arg->addr != 0) s.live.push_back({Role::kArg, ev.arg->addr, ev.arg->size});
  for (const trace::Buffer& b : ev.nested) {
    if (b.addr != 0 && compared_buffer(s, b, false)) {
      s.live.push_back({role_of(b.role), b.addr, b.size});
    }
  }
  static const std::vector<uint8_t> kEmpty;
  static const rm::CallRow kNoRow;  // the members of a call without a row: none
  IoctlCtx x{s,
             ev,
             ne,
             p,
             p.id_bytes ? *p.id_bytes : kEmpty,
             p.row ? *p.row : kNoRow,
             p.id_layout ? p.id_layout->name : std::string_view()};
  read_identity(x);
  size_t first_nested = s.out.buffers.size();
  add_nested(x);
  uint32_t freed = note_objects(x, first_nested);
  ne.h_client = s.client;
  if (ev.arg)
    add_buffer(s, *ev.arg, Role::kArg, p.arg_layout, p.arg_array, p.arg_sized, p.arg_size);
  note_gpu(s, ne, ev, p);
  if (freed != 0) s.free_object(freed);
}

}  // namespace cudatool::ab::detail

namespace cudatool::ab {

const rm::StructEntry* Normalizer::State::layout(std::string_view name) {
  if (name.empty()) return nullptr;
  uint64_t key = detail::mix(reinterpret_cast<uintptr_t>(name.data()), name.size());
  auto [it, inserted] = lookups.try_emplace(key, nullptr);
  if (inserted) {
    const rm::StructEntry* s = t.find_struct(name);
    it->second = (s != nullptr && s->size > 0) ? s : nullptr;
  }
  return static_cast<const rm::StructEntry*>(it->second);
}

const rm::FieldEntry* Normalizer::State::field(const rm::StructEntry* s, std::string_view name) {
  if (s == nullptr) return nullptr;
  uint64_t key = detail::mix(detail::mix(reinterpret_cast<uintptr_t>(s), 1),
                             detail::mix(reinterpret_cast<uintptr_t>(name.data()), name.size()));
  auto [it, inserted] = lookups.try_emplace(key, nullptr);
  if (inserted) it->second = t.find_field(*s, name);
  return static_cast<const rm::FieldEntry*>(it->second);
}

}  // namespace cudatool::ab
