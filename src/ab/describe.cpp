// Text for divergences (no printing): the members that differ between two events of the same
// call, named from the structure layouts of the driver tables (else byte offsets), and one-line
// summaries of events with escape, control command, class and status by name.
#include <cstdio>
#include <cstring>
#include <functional>

#include "ab/compare.hpp"
#include "ab/rules.hpp"
#include "base/bytes.hpp"

namespace cudatool::ab {
namespace {

constexpr size_t kMaxFieldDiffs = 64;
constexpr int kMaxDepth = 4;

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string errno_text(int32_t err) {
  if (err == 0) return "0";
  const char* n = strerrorname_np(err);
  return n ? std::string(n) : std::to_string(err);
}

// A member (or array element) of a layout: where it is and how to show it.
struct Leaf {
  std::string path;
  uint64_t offset;
  uint32_t width;
  rm::ValueKind kind;  // for scalars; kBytes for byte runs
};

void leaves(const rm::Tables& t, const rm::StructEntry& s, uint64_t base, const std::string& prefix,
            int depth, const std::function<void(const Leaf&)>& fn) {
  for (const rm::FieldEntry& m : t.fields(s)) {
    std::string path = prefix.empty() ? std::string(m.name) : prefix + "." + std::string(m.name);
    uint64_t off = base + m.offset;
    bool scalar = m.elem_size == 1 || m.elem_size == 2 || m.elem_size == 4 || m.elem_size == 8;
    if (m.size == m.elem_size && scalar) {
      fn(Leaf{path, off, m.size, rm::member_kind(s.name, m)});
      continue;
    }
    const rm::StructEntry* inner = t.find_struct(m.type);
    uint32_t n = m.elem_size ? m.size / m.elem_size : 0;
    if (inner != nullptr && depth < kMaxDepth &&
        m.elem_size == static_cast<uint32_t>(inner->size)) {
      for (uint32_t i = 0; i < n; ++i) {
        std::string p = m.size == m.elem_size ? path : path + "[" + std::to_string(i) + "]";
        leaves(t, *inner, off + uint64_t{i} * m.elem_size, p, depth + 1, fn);
      }
    } else if (scalar && m.elem_size > 1) {
      rm::ValueKind k = rm::member_kind(s.name, m);
      for (uint32_t i = 0; i < n; ++i) {
        fn(Leaf{path + "[" + std::to_string(i) + "]", off + uint64_t{i} * m.elem_size, m.elem_size,
                k});
      }
    } else {
      fn(Leaf{path, off, m.size, rm::ValueKind::kBytes});
    }
  }
}

struct Side {
  const NormalizedTrace& t;
  const NormBuffer& nb;
  const Namer& names;
  const uint8_t* img() const { return t.bytes.data() + nb.bytes; }
  const Subst* subst_at(uint64_t off) const {
    for (uint64_t k = nb.subst; k < nb.subst + nb.subst_count; ++k) {
      if (t.substs[k].offset == off) return &t.substs[k];
    }
    return nullptr;
  }
  std::string value(const Leaf& l) const {
    if (const Subst* s = subst_at(l.offset)) return names.describe(*s);
    if (l.kind == rm::ValueKind::kBytes || l.width > 8) {
      std::string h;
      char buf[4];
      for (uint32_t i = 0; i < l.width && i < 32; ++i) {
        snprintf(buf, sizeof buf, "%02x", img()[l.offset + i]);
        h += buf;
      }
      if (l.width > 32) h += "…";
      return h;
    }
    uint64_t v = 0;
    std::memcpy(&v, img() + l.offset, l.width);
    const rm::Tables& tb = *t.tables;
    switch (l.kind) {
      case rm::ValueKind::kStatus:
        if (const rm::StatusEntry* e = tb.find_status(static_cast<uint32_t>(v))) {
          return std::string(e->name);
        }
        break;
      case rm::ValueKind::kClass:
        if (const rm::ClassEntry* e = tb.find_class(static_cast<uint32_t>(v))) {
          return std::string(e->name);
        }
        break;
      case rm::ValueKind::kControl:
        if (const rm::CtrlEntry* e = tb.find_control(static_cast<uint32_t>(v))) {
          return std::string(e->name);
        }
        break;
      case rm::ValueKind::kDec:
        return std::to_string(v);
      case rm::ValueKind::kSigned: {
        int64_t sv = l.width == 8   ? static_cast<int64_t>(v)
                     : l.width == 4 ? static_cast<int32_t>(v)
                     : l.width == 2 ? static_cast<int16_t>(v)
                                    : static_cast<int8_t>(v);
        return std::to_string(sv);
      }
      default:
        break;
    }
    return hex(v);
  }
  bool same(const Side& o, const Leaf& l, SymbolMap& map) const {
    const Subst* a = subst_at(l.offset);
    const Subst* b = o.subst_at(l.offset);
    if ((a == nullptr) != (b == nullptr)) return false;
    if (a != nullptr &&
        (a->delta != b->delta || a->width != b->width || !map.same(a->base, b->base))) {
      return false;
    }
    return std::memcmp(img() + l.offset, o.img() + l.offset, l.width) == 0;
  }
};

void diff_buffer(const Namer& na, const NormBuffer& x, const Namer& nb, const NormBuffer& y,
                 trace::Sys sys, SymbolMap& map, std::vector<FieldDiff>& out) {
  const NormalizedTrace& ta = na.t;
  std::string role(x.member.empty() ? role_name(x.role) : x.member);
  std::string side = x.role == Role::kCall ? "" : (x.after ? "out" : "in");
  if (x.unreadable != y.unreadable) {
    out.push_back({.field = role,
                   .side = side,
                   .a = x.unreadable ? "unreadable" : "read",
                   .b = y.unreadable ? "unreadable" : "read"});
  }
  if (x.compared != y.compared) {
    out.push_back({.field = role + " size",
                   .side = side,
                   .a = std::to_string(x.compared),
                   .b = std::to_string(y.compared)});
  }
  uint64_t limit = std::min(x.compared, y.compared);
  Side sa{ta, x, na}, sb{nb.t, y, nb};
  auto check = [&](const Leaf& l) {
    if (out.size() >= kMaxFieldDiffs) return;
    if (l.width == 0 || l.width > limit || l.offset > limit - l.width) return;
    if (sa.same(sb, l, map)) return;
    out.push_back({.field = l.path, .side = side, .a = sa.value(l), .b = sb.value(l)});
  };
  if (x.role == Role::kCall) {
    for (const CallMember& m : call_layout(sys)) {
      uint32_t w =
          m.size ? m.size : static_cast<uint32_t>(limit - std::min<uint64_t>(limit, m.offset));
      bool text = m.size == 0;
      Leaf l{std::string(m.name), m.offset, w, text ? rm::ValueKind::kString : rm::ValueKind::kHex};
      if (text && (x.compared != y.compared || !sa.same(sb, l, map))) {
        auto str = [&](const Side& s) {
          return std::string(reinterpret_cast<const char*>(s.img()) + m.offset,
                             s.nb.compared - std::min<uint64_t>(s.nb.compared, m.offset));
        };
        out.push_back({.field = l.path, .side = side, .a = str(sa), .b = str(sb)});
        continue;
      }
      if (!text) check(l);
    }
    return;
  }
  if (x.layout != nullptr && y.layout != nullptr && x.layout->name == y.layout->name) {
    const rm::Tables& t = *ta.tables;
    uint64_t size = static_cast<uint64_t>(x.layout->size);
    uint64_t end = 0;
    if (x.array) {
      for (uint64_t i = 0; i < limit / size; ++i) {
        leaves(t, *x.layout, i * size, role + "[" + std::to_string(i) + "]", 0, check);
      }
      end = limit - limit % size;
    } else {
      leaves(t, *x.layout, 0, role, 0, check);
      end = std::min(limit, size);
    }
    // A buffer longer than its structure: the rest in 4-byte words.
    for (uint64_t off = end; off < limit && out.size() < kMaxFieldDiffs; off += 4) {
      uint32_t w = static_cast<uint32_t>(std::min<uint64_t>(4, limit - off));
      check(Leaf{role + "+" + hex(off), off, w, rm::ValueKind::kHex});
    }
    return;
  }
  if (x.layout != nullptr || y.layout != nullptr) {
    out.push_back({.field = role + " structure",
                   .side = side,
                   .a = x.layout ? std::string(x.layout->name) : "bytes",
                   .b = y.layout ? std::string(y.layout->name) : "bytes"});
  }
  // Unknown layout: symbols where either side has one, else 4-byte words.
  uint64_t off = 0;
  while (off < limit && out.size() < kMaxFieldDiffs) {
    const Subst* s = sa.subst_at(off);
    if (s == nullptr) s = sb.subst_at(off);
    uint32_t w = s ? s->width : static_cast<uint32_t>(std::min<uint64_t>(4, limit - off));
    if (w > limit - off) w = static_cast<uint32_t>(limit - off);
    check(Leaf{role + "+" + hex(off), off, w, rm::ValueKind::kHex});
    off += w;
  }
}

}  // namespace

std::vector<FieldDiff> diff_events(const NormalizedTrace& ta, const NormEvent& a,
                                   const NormalizedTrace& tb, const NormEvent& b, SymbolMap& map) {
  std::vector<FieldDiff> out;
  Namer na{ta}, nb{tb, &ta, &map};
  auto sym = [&](uint64_t x, uint64_t y) { return (x == 0 || y == 0) ? x == y : map.same(x, y); };
  auto ret_text = [](const Namer& n, const NormEvent& e) {
    return e.ret_sym ? n(e.ret_sym) : std::to_string(e.ret);
  };
  if (a.ret != b.ret || !sym(a.ret_sym, b.ret_sym)) {
    out.push_back({.field = "ret", .side = "", .a = ret_text(na, a), .b = ret_text(nb, b)});
  }
  if (a.err != b.err)
    out.push_back({.field = "errno", .side = "", .a = errno_text(a.err), .b = errno_text(b.err)});
  if (!sym(a.fd, b.fd)) out.push_back({.field = "fd", .side = "", .a = na(a.fd), .b = nb(b.fd)});
  std::vector<uint8_t> used(b.buffer_count, 0);
  for (uint32_t i = 0; i < a.buffer_count; ++i) {
    const NormBuffer& x = ta.buffers[a.buffer + i];
    const NormBuffer* y = nullptr;
    for (uint32_t j = 0; j < b.buffer_count; ++j) {
      const NormBuffer& c = tb.buffers[b.buffer + j];
      if (!used[j] && c.role == x.role && c.after == x.after) {
        used[j] = 1;
        y = &c;
        break;
      }
    }
    std::string side = x.role == Role::kCall ? "" : (x.after ? "out" : "in");
    if (y == nullptr) {
      out.push_back(
          {.field = std::string(role_name(x.role)), .side = side, .a = "recorded", .b = "absent"});
      continue;
    }
    diff_buffer(na, x, nb, *y, a.sys, map, out);
  }
  for (uint32_t j = 0; j < b.buffer_count; ++j) {
    if (used[j]) continue;
    const NormBuffer& y = tb.buffers[b.buffer + j];
    out.push_back({.field = std::string(role_name(y.role)),
                   .side = y.role == Role::kCall ? "" : (y.after ? "out" : "in"),
                   .a = "absent",
                   .b = "recorded"});
  }
  return out;
}

std::string_view control_name(const NormEvent& e) {
  if (!e.cmd || e.tables == nullptr) return {};
  const rm::CtrlEntry* c = e.tables->find_control(*e.cmd);
  return c ? c->name : std::string_view();
}

std::string_view class_name(const NormEvent& e) {
  if (!e.cls || e.tables == nullptr) return {};
  const rm::ClassEntry* c = e.tables->find_class(*e.cls);
  return c ? c->name : std::string_view();
}

std::string_view status_name(const NormEvent& e) {
  if (!e.status || e.tables == nullptr) return {};
  const rm::StatusEntry* s = e.tables->find_status(*e.status);
  return s ? s->name : std::string_view();
}

std::string summarize(const Namer& names, const NormEvent& e, bool ascii) {
  const NormalizedTrace& t = names.t;
  std::string s;
  auto add = [&](std::string_view part) {
    if (part.empty()) return;
    if (!s.empty()) s += ' ';
    s += part;
  };
  if (e.sys == trace::Sys::kIoctl) {
    add(e.call.empty() ? "ioctl " + hex(e.request) + "?" : std::string(e.call));
    if (e.cmd) add(control_name(e).empty() ? hex(*e.cmd) + "?" : std::string(control_name(e)));
    if (e.cls) add(class_name(e).empty() ? hex(*e.cls) + "?" : std::string(class_name(e)));
    if (e.h_object) add(names(e.h_object));
    if (e.h_parent) add("(parent " + names(e.h_parent) + ")");
    if (e.fd) add("on " + names(e.fd));
  } else {
    add(e.call);
    if (e.fd) add(names(e.fd));
    // The path (environment events: after mode, rdev, size and flags; normalize_env.cpp).
    bool env = trace::is_environment(e.sys);
    if (e.buffer_count > 0 && (e.sys == trace::Sys::kOpen || e.sys == trace::Sys::kExecve || env)) {
      const NormBuffer& nb = t.buffers[e.buffer];
      uint64_t off = e.sys == trace::Sys::kOpen ? 8 : env ? 32 : 0;
      if (nb.compared > off) {
        add(std::string(reinterpret_cast<const char*>(t.bytes.data() + nb.bytes + off),
                        nb.compared - off));
      }
    }
    if (e.sys == trace::Sys::kMmap && e.buffer_count > 0 && t.buffers[e.buffer].compared >= 16) {
      add("len " +
          std::to_string(load_le<uint64_t>(t.bytes.data() + t.buffers[e.buffer].bytes + 8)));
    }
  }
  s += ascii ? " ->" : " →";
  if (e.status) {
    s += ' ';
    s += status_name(e).empty() ? hex(*e.status) + "?" : std::string(status_name(e));
  }
  if (e.ret_sym) {
    s += ' ' + names(e.ret_sym);
  } else if (!e.status || e.ret != 0 || e.err != 0) {
    s += ' ' + std::to_string(e.ret);
  }
  if (e.err) s += ' ' + errno_text(e.err);
  return s;
}

std::string_view byte_fate_name(ByteFate f) {
  switch (f) {
    case ByteFate::kCompared:
      return "compared";
    case ByteFate::kRenamed:
      return "renamed";
    case ByteFate::kPadding:
      return "padding";
    case ByteFate::kBeyondSize:
      return "beyond_size";
    case ByteFate::kMaskedByRule:
      return "masked_by_rule";
    case ByteFate::kNotRecorded:
      break;
  }
  return "not_recorded";
}

ByteFate byte_fate(const NormalizedTrace& t, uint32_t event, Role role, bool after,
                   uint64_t offset) {
  if (event >= t.events.size()) return ByteFate::kNotRecorded;
  const NormEvent& e = t.events[event];
  const NormBuffer* nb = nullptr;
  for (uint32_t i = 0; i < e.buffer_count; ++i) {
    const NormBuffer& b = t.buffers[e.buffer + i];
    if (b.role == role && b.after == after) {
      nb = &b;
      break;
    }
  }
  if (nb == nullptr || offset >= nb->recorded) return ByteFate::kNotRecorded;
  if (offset >= nb->compared) return ByteFate::kBeyondSize;
  for (uint64_t k = nb->subst; k < nb->subst + nb->subst_count; ++k) {
    const Subst& s = t.substs[k];
    if (offset >= s.offset && offset - s.offset < s.width) return ByteFate::kRenamed;
  }
  if (nb->layout == nullptr) return ByteFate::kCompared;
  uint64_t size = static_cast<uint64_t>(nb->layout->size);
  uint64_t base = 0;
  if (nb->array) {
    base = offset - offset % size;
  } else if (offset >= size) {
    return ByteFate::kCompared;  // past the structure: compared byte by byte
  }
  if (nb->array && base + size > nb->compared) return ByteFate::kCompared;
  ByteFate fate = ByteFate::kPadding;
  const rm::Tables& tb = *t.tables;
  leaves(tb, *nb->layout, base, {}, 0, [&](const Leaf& l) {
    if (offset >= l.offset && offset - l.offset < l.width) fate = ByteFate::kCompared;
  });
  if (fate == ByteFate::kPadding) return fate;
  // A member masked by a rule: find it among the members of the layout and its inner ones.
  std::function<bool(const rm::StructEntry&, uint64_t, int)> masked = [&](const rm::StructEntry& st,
                                                                          uint64_t at, int depth) {
    for (const rm::FieldEntry& m : tb.fields(st)) {
      if (offset < at + m.offset || offset - (at + m.offset) >= m.size) continue;
      if (classify_member(st.name, m) == MemberClass::kMasked) return true;
      const rm::StructEntry* inner = tb.find_struct(m.type);
      if (inner != nullptr && depth < kMaxDepth && inner->size > 0 &&
          m.elem_size == static_cast<uint32_t>(inner->size)) {
        uint64_t rel = offset - (at + m.offset);
        return masked(*inner, at + m.offset + rel - rel % m.elem_size, depth + 1);
      }
    }
    return false;
  };
  return masked(*nb->layout, base, 0) ? ByteFate::kMaskedByRule : ByteFate::kCompared;
}

}  // namespace cudatool::ab
