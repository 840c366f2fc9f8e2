// Layouts of kernel-ABI requests and their differences between branches (abi_layout.hpp).
#include "analysis/abi_layout.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "rm/field.hpp"

namespace cudatool {

std::string_view abi_member_role_name(AbiMemberRole r) {
  switch (r) {
    case AbiMemberRole::kPlain:
      return "plain";
    case AbiMemberRole::kHandle:
      return "handle";
    case AbiMemberRole::kFd:
      return "fd";
    case AbiMemberRole::kPointer:
      return "pointer";
  }
  return "?";
}

// The one place that says what a member is to a proxy. Pointers: NvP64 or a native `T *` (the
// types the generator's pointer inventory follows); handles: what the decoders show as handles
// (rm::member_kind); fds: a 32-bit member named `fd`, `*_fd` or `*Fd` (nv_ioctl_register_fd_t
// ctl_fd, UVM_REGISTER_GPU_PARAMS rmCtrlFd, the *_with_fd wrappers' fd).
AbiMemberRole abi_member_role(const rm::StructEntry& s, const rm::FieldEntry& m) {
  std::string_view n = m.name, type = m.type;
  if (type == "NvP64" || (!type.empty() && type.back() == '*')) return AbiMemberRole::kPointer;
  if (m.elem_size == 4 && m.size == 4 &&
      (n == "fd" || n.ends_with("_fd") || (n.size() > 2 && n.ends_with("Fd")))) {
    return AbiMemberRole::kFd;
  }
  if (rm::member_kind(s.name, m) == rm::ValueKind::kHandle) return AbiMemberRole::kHandle;
  return AbiMemberRole::kPlain;
}

bool AbiLayout::simple() const {
  return std::none_of(members.begin(), members.end(), [](const AbiMember& m) {
    return m.role == AbiMemberRole::kPointer || m.role == AbiMemberRole::kFd;
  });
}

std::vector<const AbiMember*> AbiLayout::with_role(AbiMemberRole r) const {
  std::vector<const AbiMember*> out;
  for (const AbiMember& m : members) {
    if (m.role == r) out.push_back(&m);
  }
  return out;
}

namespace {

constexpr int kMaxDepth = 3;

// Every member of `s`, through nested structures (and the first element of arrays of them),
// as paths "a.b" / "a[].b" like the pointer inventory's.
void flatten(const rm::Tables& t, const rm::StructEntry& s, const std::string& prefix, int64_t base,
             int depth, std::vector<AbiMember>& out) {
  for (const rm::FieldEntry& f : t.fields(s)) {
    bool array = f.elem_size != 0 && f.size > f.elem_size;
    const rm::StructEntry* inner = t.find_struct(f.type);
    std::string path = prefix + std::string(f.name);
    if (inner != nullptr && depth < kMaxDepth && inner->name != s.name) {
      if (array) {  // the array itself too: a change of its length is a change of the layout
        AbiMember& a = out.emplace_back();
        a.name = path;
        a.type = f.type;
        a.offset = base + f.offset;
        a.size = f.size;
      }
      flatten(t, *inner, path + (array ? "[]." : "."), base + f.offset, depth + 1, out);
      continue;
    }
    AbiMember& m = out.emplace_back();
    m.name = std::move(path);
    m.type = f.type;
    m.offset = base + f.offset;
    m.size = f.size;
    m.role = abi_member_role(s, f);
  }
}

std::string extent_text(const rm::PointerRule& r) {
  std::string out;
  for (std::string_view c : {r.count0, r.count1}) {
    if (!c.empty()) out += std::string(c) + " × ";
  }
  if (!r.elem_type.empty()) return out + fmt::format("{} ({} bytes)", r.elem_type, r.elem_size);
  return out + fmt::format("{} bytes", r.elem_size);
}

std::string_view pointer_status_name(uint32_t s) {
  switch (static_cast<rm::PointerStatus>(s)) {
    case rm::PointerStatus::kFollowed:
      return "followed";
    case rm::PointerStatus::kBounded:
      return "bounded";
    case rm::PointerStatus::kNotCopied:
      return "not copied";
  }
  return "?";
}

// Pointer statuses and extents of a control's or class's parameters (pointer_members.inc,
// pointers.inc); members the layouts lack are added by name.
void add_pointer_facts(const rm::Tables& t, AbiKind kind, uint32_t value, std::string_view st,
                       AbiLayout& l) {
  auto pkind = kind == AbiKind::kControl ? rm::PointerKind::kControl : rm::PointerKind::kAlloc;
  auto rules = t.find_pointer_rules(pkind, value);
  for (const rm::PointerMember& pm : t.pointer_members()) {
    if (pm.struct_name != st) continue;
    auto it = std::find_if(l.members.begin(), l.members.end(),
                           [&](const AbiMember& m) { return m.name == pm.member; });
    if (it == l.members.end()) {
      AbiMember& m = l.members.emplace_back();
      m.name = std::string(pm.member);
      m.role = AbiMemberRole::kPointer;
      it = l.members.end() - 1;
    }
    it->role = AbiMemberRole::kPointer;
    it->pointer_status = pointer_status_name(pm.status);
    for (const rm::PointerRule& r : rules) {
      if (r.member == pm.member) it->points_to = extent_text(r);
    }
  }
}

}  // namespace

AbiLayout abi_layout(const rm::Tables& t, AbiKind kind, uint32_t value) {
  AbiLayout l;
  switch (kind) {
    case AbiKind::kEscape:
      if (const auto* e = t.find_escape(value)) {
        l.params = e->type, l.size = e->size, l.alt_params = e->alt_type, l.alt_size = e->alt_size;
      }
      break;
    case AbiKind::kControl:
      if (const auto* c = t.find_control(value)) l.params = c->params, l.size = c->params_size;
      break;
    case AbiKind::kClass:
      if (const auto* c = t.find_class(value)) {
        l.params = c->alloc_params, l.size = c->alloc_params_size;
      }
      break;
    case AbiKind::kUvm:
      if (const auto* u = t.find_uvm(value)) l.params = u->params, l.size = u->params_size;
      break;
  }
  if (l.params.empty()) {
    l.members_known = true;  // no parameters: nothing unknown
    return l;
  }
  if (const rm::StructEntry* s = t.find_struct(l.params)) {
    l.members_known = true;
    flatten(t, *s, "", 0, 0, l.members);
  }
  if (kind == AbiKind::kControl || kind == AbiKind::kClass) {
    add_pointer_facts(t, kind, value, l.params, l);
  }
  return l;
}

bool AbiLayoutChange::empty() const {
  return old_params == new_params && old_size == new_size && added.empty() && removed.empty() &&
         moved.empty() && retyped.empty() && roles.empty();
}

namespace {

std::string member_text(const AbiMember& m) {
  if (m.offset < 0) return m.name;
  return fmt::format("{} ({}, +{:#x})", m.name, m.type, m.offset);
}

void diff_members(const AbiLayout& a, const AbiLayout& b, AbiLayoutChange& c) {
  std::map<std::string_view, const AbiMember*> old_by, new_by;
  for (const AbiMember& m : a.members) old_by.emplace(m.name, &m);
  for (const AbiMember& m : b.members) new_by.emplace(m.name, &m);
  for (const auto& [name, m] : new_by) {
    auto it = old_by.find(name);
    if (it == old_by.end()) {
      c.added.push_back(member_text(*m));
      continue;
    }
    const AbiMember& o = *it->second;
    if (o.offset != m->offset) {
      c.moved.push_back(fmt::format("{} +{:#x} → +{:#x}", name, o.offset, m->offset));
    }
    if (o.type != m->type || o.size != m->size) {
      c.retyped.push_back(
          fmt::format("{} {} ({} bytes) → {} ({} bytes)", name, o.type, o.size, m->type, m->size));
    }
    if (o.role != m->role || o.pointer_status != m->pointer_status) {
      c.roles.push_back(
          fmt::format("{} {}{} → {}{}", name, abi_member_role_name(o.role),
                      o.pointer_status.empty() ? "" : " " + std::string(o.pointer_status),
                      abi_member_role_name(m->role),
                      m->pointer_status.empty() ? "" : " " + std::string(m->pointer_status)));
    }
  }
  for (const auto& [name, m] : old_by) {
    if (!new_by.contains(name)) c.removed.push_back(member_text(*m));
  }
}

}  // namespace

AbiLayoutChange diff_abi_layout(const rm::Tables& old_t, const rm::Tables& new_t, AbiKind kind,
                                uint32_t value) {
  AbiLayoutChange c;
  c.kind = kind;
  c.value = value;
  c.name = abi_request_name(new_t, kind, value);
  AbiLayout a = abi_layout(old_t, kind, value);
  AbiLayout b = abi_layout(new_t, kind, value);
  c.old_params = a.params, c.new_params = b.params;
  c.old_size = a.size, c.new_size = b.size;
  c.unknown_members = !a.members_known || !b.members_known;
  if (c.unknown_members) {  // one side lists only its pointer members: compare those, by name
    for (AbiLayout* l : {&a, &b}) {
      std::erase_if(l->members,
                    [](const AbiMember& m) { return m.role != AbiMemberRole::kPointer; });
      for (AbiMember& m : l->members) m.offset = -1, m.size = -1, m.type = {};
    }
  }
  diff_members(a, b, c);
  return c;
}

AbiDiff diff_abi(const AbiSurface& old_s, const AbiSurface& new_s) {
  AbiDiff d;
  for (const AbiRequest& r : new_s.requests()) {
    if (old_s.find(r.kind, r.value) == nullptr) {
      d.added.push_back(&r);
      continue;
    }
    ++d.common;
    AbiLayoutChange c = diff_abi_layout(old_s.tables(), new_s.tables(), r.kind, r.value);
    if (!c.empty()) d.changed.push_back(std::move(c));
  }
  for (const AbiRequest& r : old_s.requests()) {
    if (new_s.find(r.kind, r.value) == nullptr) d.removed.push_back(&r);
  }
  return d;
}

}  // namespace cudatool
