#include "replay/answer_layouts.hpp"

#include <fmt/format.h>
#include <algorithm>

#include "base/bytes.hpp"
#include "replay/inject.hpp"
#include "rm/call_semantics.hpp"
#include "rm/nv_ioctl_abi.h"

namespace cudatool::replay::detail {
namespace {

int16_t off16(const rm::FieldEntry* f, uint32_t base) {
  if (f == nullptr || f->size != 4 || base + f->offset > 0x7fff) return -1;
  return static_cast<int16_t>(base + f->offset);
}

// How the shim reads the identity of escape `e` whose argument is `s`: the members its row names
// (rm/call_semantics.hpp; ab/normalize_ioctl.cpp reads the same ones).
rp_escape layout_escape(const rm::Tables& t, const rm::EscapeEntry& e, const rm::StructEntry& s) {
  rp_escape r{};
  r.nr = e.nr;
  r.size = static_cast<uint32_t>(s.size);
  const rm::CallRow* row = rm::row_of(t, e);
  rm::CallLayout l = rm::locate_call(t, row, s);
  auto at = [&](std::string_view name) { return off16(rm::rm_member(t, l, name), l.rm_base); };
  rm::CallIdentity id = row ? rm::call_identity(*row) : rm::CallIdentity{};
  r.client_off = at(id.client);
  // rp_ident.h_obj: an allocation's parent, a free's object, else the object the call is about.
  r.object_off = at(id.creates ? id.parent : id.object);
  r.new_off = id.creates ? at(id.object) : -1;
  r.class_off = at(row ? row->cls : "");
  r.cmd_off = at(row ? row->control : "");
  r.status_off = at(row ? row->status : "");
  uint32_t does = row ? row->does : 0;
  if (does & rm::kCallCreates) r.flags |= RP_ESCF_CREATES;
  if (does & rm::kCallFrees) r.flags |= RP_ESCF_FREES;
  if (does & rm::kCallFreeLike) r.flags |= RP_ESCF_FREELIKE;
  if (does & rm::kCallControl) r.flags |= RP_ESCF_CONTROL;
  if (does & rm::kCallMapsCpu) r.flags |= RP_ESCF_MAP;
  if (does & rm::kCallMapsGpu) r.flags |= RP_ESCF_MAP_DMA;
  if (does & rm::kCallAlloc) r.flags |= RP_ESCF_ALLOC;
  return r;
}

int32_t field_offset(const rm::Tables& t, std::string_view s, std::string_view m) {
  const rm::StructEntry* st = t.find_struct(s);
  const rm::FieldEntry* f = st ? t.find_field(*st, m) : nullptr;
  return f ? static_cast<int32_t>(f->offset) : -1;
}

// The layout of the call of `row` in branch t (its first argument structure); arg == nullptr
// when the branch lacks the call or its layout.
rm::CallLayout layout_of_row(const rm::Tables& t, const rm::CallRow* row) {
  if (row == nullptr) return {};
  std::string_view type;
  if (row->space == rm::CallSpace::kEscape) {
    for (const rm::EscapeEntry& e : t.escapes()) {
      if (e.name == row->name) type = e.type;
    }
  } else {
    for (const rm::UvmEntry& u : t.uvm_ioctls()) {
      if (u.name == row->name) type = u.params;
    }
  }
  const rm::StructEntry* s = type.empty() ? nullptr : t.find_struct(type);
  return s ? rm::locate_call(t, row, *s) : rm::CallLayout{};
}

// Offset in the argument of member `m` of the call's RM structure; -1 when absent.
int32_t member_offset(const rm::Tables& t, const rm::CallLayout& l, std::string_view m) {
  const rm::FieldEntry* f = rm::rm_member(t, l, m);
  return f ? static_cast<int32_t>(l.rm_base + f->offset) : -1;
}

const std::vector<uint8_t>& side(const trace::Buffer& b) {
  return b.before.empty() ? b.after : b.before;
}

uint32_t u32_at(const std::vector<uint8_t>& b, int32_t off) {
  if (off < 0) return 0;
  return ByteView(b.data(), b.size()).read<uint32_t>(static_cast<uint64_t>(off)).value_or(0);
}

}  // namespace

std::vector<rp_escape> escape_layouts(const rm::Tables& t) {
  std::vector<rp_escape> out;
  for (const rm::EscapeEntry& e : t.escapes()) {
    for (std::string_view type : {e.type, e.alt_type}) {
      if (type.empty()) continue;
      const rm::StructEntry* s = t.find_struct(type);
      if (s == nullptr || s->size <= 0) continue;
      out.push_back(layout_escape(t, e, *s));
    }
  }
  std::sort(out.begin(), out.end(), [](const rp_escape& a, const rp_escape& b) {
    return a.nr != b.nr ? a.nr < b.nr : a.size < b.size;
  });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const rp_escape& a, const rp_escape& b) {
                          return a.nr == b.nr && a.size == b.size;
                        }),
            out.end());
  return out;
}

const rp_escape* find_escape(const std::vector<rp_escape>& v, uint32_t nr, uint32_t size) {
  for (const rp_escape& e : v) {
    if (e.nr == nr && e.size == size) return &e;
  }
  return nullptr;
}

std::vector<rp_uvm> uvm_layouts(const rm::Tables& t) {
  std::vector<rp_uvm> out;
  for (const rm::UvmEntry& u : t.uvm_ioctls()) {
    rp_uvm r{};
    r.nr = u.nr;
    r.size = u.params_size;
    r.status_off = u.rm_status_offset;
    uint32_t does = 0;
    if (const rm::CallRow* row = rm::row_of(t, u)) does = row->does;
    if (does & rm::kCallFreeLike) r.flags |= RP_UVMF_FREELIKE;
    if (does & rm::kCallMapsExternal) r.flags |= RP_UVMF_MAP_EXTERNAL;
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const rp_uvm& a, const rp_uvm& b) { return a.nr < b.nr; });
  return out;
}

std::vector<rp_class_size> channel_classes(const rm::Tables& t) {
  std::vector<rp_class_size> out;
  for (const rm::ClassEntry& c : t.classes()) {
    if (rm::class_does(t, c.id) & rm::kClassChannel) {
      out.push_back({c.id, c.alloc_params_size});
    }
  }
  return out;
}

// Offsets in the argument of the one call mapping `kind` (a kCallMaps* bit): the memory object,
// the offset into it, the length, the address it lands at, the client, the fd; -1 when absent.
struct MapOffsets {
  int32_t memory = -1, offset = -1, length = -1, address = -1, client = -1, fd = -1;
};
MapOffsets map_offsets(const rm::Tables& t, uint32_t kind) {
  MapOffsets m;
  const rm::CallRow* row = rm::row_doing(kind);
  rm::CallLayout l = layout_of_row(t, row);
  if (row == nullptr || l.arg == nullptr) return m;
  m.memory = member_offset(t, l, row->map.memory);
  m.offset = member_offset(t, l, row->map.offset);
  m.length = member_offset(t, l, row->map.length);
  m.address = member_offset(t, l, row->map.address);
  m.client = member_offset(t, l, rm::handle_member(*row, rm::HandleKind::kClient));
  // The fd of the mmap that follows, beside the RM structure in the argument.
  const rm::FieldEntry* fd = row->fd.empty() ? nullptr : t.find_field(*l.arg, row->fd);
  m.fd = fd ? static_cast<int32_t>(fd->offset) : -1;
  return m;
}

// The members the fake GPU reads: of the channel classes' allocation parameters and of the one
// call of each kind of mapping (rm/call_semantics.hpp rows).
rp_gpu_layout gpu_layout(const rm::Tables& t) {
  rp_gpu_layout g{};
  const rm::ClassRow* chan = rm::class_row_doing(rm::kClassChannel);
  std::string_view params = chan ? chan->alloc_params : std::string_view();
  g.chan_gpfifo_offset = field_offset(t, params, chan ? chan->channel.gpfifo_offset : "");
  g.chan_gpfifo_entries = field_offset(t, params, chan ? chan->channel.gpfifo_entries : "");
  g.chan_userd_memory = field_offset(t, params, chan ? chan->channel.userd_memory : "");
  g.chan_userd_offset = field_offset(t, params, chan ? chan->channel.userd_offset : "");
  const rm::StructEntry* cs = t.find_struct(params);
  g.chan_params_size = cs ? cs->size : -1;
  MapOffsets ext = map_offsets(t, rm::kCallMapsExternal);
  g.map_ext_base = ext.address;
  g.map_ext_length = ext.length;
  g.map_ext_offset = ext.offset;
  g.map_ext_hmemory = ext.memory;
  g.map_ext_hclient = ext.client;
  MapOffsets dma = map_offsets(t, rm::kCallMapsGpu);
  g.dma_hmemory = dma.memory;
  g.dma_offset = dma.offset;
  g.dma_length = dma.length;
  g.dma_dma_offset = dma.address;
  MapOffsets map = map_offsets(t, rm::kCallMapsCpu);
  g.map_hmemory = map.memory;
  g.map_offset = map.offset;
  g.map_length = map.length;
  g.map_linear = map.address;
  g.map_fd = map.fd;
  return g;
}

IoctlView view_ioctl(const trace::Event& ev, const std::vector<rp_escape>& escapes,
                     const std::vector<rp_uvm>& uvms) {
  IoctlView v;
  static const std::vector<uint8_t> kEmpty;
  const std::vector<uint8_t>& arg = ev.arg ? side(*ev.arg) : kEmpty;
  uint32_t req = static_cast<uint32_t>(ev.request);
  int kind = nvtr_dev_kind_of_path(ev.path.c_str());
  if (kind == NVTR_DEV_UVM) {
    v.nr = req;
    auto it = std::lower_bound(uvms.begin(), uvms.end(), req,
                               [](const rp_uvm& u, uint32_t n) { return u.nr < n; });
    if (it != uvms.end() && it->nr == req) {
      v.uvm = &*it;
      if (it->status_off >= 0) {
        v.status_buf = RP_BUF_ARG;
        v.status_off = it->status_off;
      }
    }
    return v;
  }
  if (NVTR_IOC_TYPE(req) != NVTR_NV_IOCTL_MAGIC) return v;
  v.nr = NVTR_IOC_NR(req);
  uint32_t size = NVTR_IOC_SIZE(req);
  const std::vector<uint8_t>* id = &arg;
  if (v.nr == NVTR_ESC_IOCTL_XFER_CMD && arg.size() >= NVTR_XFER_SIZE) {
    for (const trace::Buffer& b : ev.nested) {
      if (b.role != "xfer") continue;
      v.xfer = true;
      v.nr = load_le<uint32_t>(arg.data() + NVTR_XFER_CMD) & 0xffu;
      size = load_le<uint32_t>(arg.data() + NVTR_XFER_ARG_SIZE);
      id = &side(b);
      break;
    }
  }
  v.esc = find_escape(escapes, v.nr, size);
  if (v.esc == nullptr || id->size() < size) return v;
  v.cmd = u32_at(*id, v.esc->cmd_off);
  v.cls = u32_at(*id, v.esc->class_off);
  v.h_client = u32_at(*id, v.esc->client_off);
  v.h_obj = u32_at(*id, v.esc->object_off);
  v.h_new = u32_at(*id, v.esc->new_off);
  if (v.esc->status_off >= 0) {
    v.status_buf = v.xfer ? RP_BUF_XFER : RP_BUF_ARG;
    v.status_off = v.esc->status_off;
  }
  return v;
}

int buffer_of_role(std::string_view role, bool xfer) {
  if (role == "arg") return RP_BUF_ARG;
  if (role == "params") return xfer ? RP_BUF_XPARAMS : RP_BUF_PARAMS;
  if (role == "rights") return RP_BUF_RIGHTS;
  if (role == "xfer") return RP_BUF_XFER;
  if (role.find('.') != std::string_view::npos) return RP_BUF_MEMBER;
  return -1;
}

namespace {

// The layout of a root buffer (arg, xfer: the escape's or UVM call's; params: the control's or
// the allocated class's), or null.
const rm::StructEntry* root_layout(const rm::Tables& t, const IoctlView& v, int buf) {
  const rm::StructEntry* s = nullptr;
  if (buf == RP_BUF_ARG || buf == RP_BUF_XFER) {
    if (v.uvm != nullptr) {
      if (const rm::UvmEntry* u = t.find_uvm(v.nr)) s = t.find_struct(u->params);
    } else if (const rm::EscapeEntry* e = t.find_escape(v.nr)) {
      s = t.find_struct(e->type);
      if (v.esc != nullptr && !e->alt_type.empty() && e->alt_size >= 0 &&
          static_cast<uint32_t>(e->alt_size) == v.esc->size) {
        s = t.find_struct(e->alt_type);
      }
    }
  } else if (buf == RP_BUF_PARAMS || buf == RP_BUF_XPARAMS) {
    if (v.cmd != 0) {
      if (const rm::CtrlEntry* c = t.find_control(v.cmd)) s = t.find_struct(c->params);
    } else if (v.cls != 0) {
      if (const rm::ClassEntry* c = t.find_class(v.cls)) s = t.find_struct(c->alloc_params);
    }
  }
  return s;
}

// Into the buffer behind pointer member `role` ("params.grInfoList", "params.list[3].ptr"): the
// trace must hold it (v2, role "<buf>.<member>"). `rest` may go on to an element, by the pointer
// rule RM copies it by ("[3].data"), or a member of the first (".data"). "" or why not.
std::string enter_pointee(const rm::Tables& t, const trace::Event& ev, const IoctlView& v,
                          const std::string& role, std::string_view& rest, MemberPlace& m,
                          uint64_t& off, const rm::StructEntry*& s, uint32_t& width) {
  auto held = std::find_if(ev.nested.begin(), ev.nested.end(),
                           [&](const trace::Buffer& b) { return b.role == role; });
  if (held == ev.nested.end()) return fmt::format("the recording holds no buffer {}", role);
  m.buf = RP_BUF_MEMBER;
  m.role = role;
  off = 0;
  s = nullptr;
  width = 0;
  const rm::PointerRule* r =
      v.cmd != 0   ? t.find_pointer_rule(rm::PointerKind::kControl, v.cmd, role)
      : v.cls != 0 ? t.find_pointer_rule(rm::PointerKind::kAlloc, v.cls, role)
                   : nullptr;
  const rm::StructEntry* elem =
      r != nullptr && !r->elem_type.empty() ? t.find_struct(r->elem_type) : nullptr;
  if (elem != nullptr && elem->size <= 0) elem = nullptr;
  if (!rest.empty() && rest[0] == '[') {
    if (elem == nullptr) {
      return fmt::format("{} is a buffer of bytes: name the byte, {}+OFFSET", role, role);
    }
    size_t close = rest.find(']');
    auto idx =
        close == std::string_view::npos ? std::nullopt : parse_number(rest.substr(1, close - 1));
    if (!idx) return fmt::format("bad index in '{}'", rest);
    uint64_t count = held->size / static_cast<uint64_t>(elem->size);
    if (*idx >= count) {
      return fmt::format("{}[{}]: the recorded buffer holds {} {}", role, *idx, count, elem->name);
    }
    off = *idx * static_cast<uint64_t>(elem->size);
    rest = rest.substr(close + 1);
    s = elem;
  } else if (!rest.empty() && rest[0] == '.') {
    s = elem;  // a member of the first element
  }
  return "";
}

}  // namespace

Result<MemberPlace> resolve_member(const rm::Tables& t, const trace::Event& ev, const IoctlView& v,
                                   std::string_view path) {
  auto fail = [&](std::string why) {
    return make_error(fmt::format("member '{}'", path), "", std::nullopt, std::move(why));
  };
  size_t cut = path.find_first_of(".+[");
  std::string_view root = path.substr(0, cut);
  MemberPlace m;
  m.role = std::string(root);
  m.buf = buffer_of_role(root, v.xfer);
  if (m.buf < 0 || m.buf == RP_BUF_MEMBER) {
    return fail(fmt::format("'{}': the path starts with arg, params, xfer or rights", root));
  }
  const rm::StructEntry* s = root_layout(t, v, m.buf);
  std::string_view rest = cut == std::string_view::npos ? std::string_view() : path.substr(cut);
  uint64_t off = 0;
  uint32_t width = 0;
  while (!rest.empty()) {
    if (rest[0] == '+') {
      auto n = parse_number(rest.substr(1));
      if (!n || *n > 0xffffff) return fail(fmt::format("'{}' is not a byte offset", rest));
      off += *n;
      width = 4;
      break;
    }
    if (rest[0] != '.') return fail(fmt::format("unexpected '{}'", rest));
    rest.remove_prefix(1);
    size_t e = rest.find_first_of(".+[");
    std::string_view name = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e);
    if (s == nullptr) {
      return fail(
          fmt::format("'{}': the layout of {} is not in the tables of {}; name the byte: "
                      "{}+OFFSET",
                      name, m.role, t.info().id, m.role));
    }
    const rm::FieldEntry* f = t.find_field(*s, name);
    if (f == nullptr) return fail(fmt::format("{} has no member '{}'", s->name, name));
    if (f->type == "NvP64" && !rest.empty()) {
      std::string role(path.substr(0, path.size() - rest.size()));
      if (std::string why = enter_pointee(t, ev, v, role, rest, m, off, s, width); !why.empty())
        return fail(why);
      continue;
    }
    off += f->offset;
    width = f->elem_size;
    uint64_t count = f->elem_size ? f->size / f->elem_size : 1;
    if (!rest.empty() && rest[0] == '[') {
      size_t close = rest.find(']');
      auto idx =
          close == std::string_view::npos ? std::nullopt : parse_number(rest.substr(1, close - 1));
      if (!idx) return fail(fmt::format("bad index in '{}'", rest));
      if (*idx >= count) {
        return fail(fmt::format("{}[{}]: the member has {} elements", name, *idx, count));
      }
      off += *idx * f->elem_size;
      rest = rest.substr(close + 1);
    }
    s = t.find_struct(f->type);
    if (s != nullptr && s->size <= 0) s = nullptr;
  }
  if (width != 1 && width != 2 && width != 4 && width != 8) {
    return fail(fmt::format("names a member of {} bytes; name a 1, 2, 4 or 8-byte member", width));
  }
  m.offset = static_cast<uint32_t>(off);
  m.width = width;
  return m;
}

}  // namespace cudatool::replay::detail
