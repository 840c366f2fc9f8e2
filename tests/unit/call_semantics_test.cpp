// The call-semantics table (src/rm/call_semantics.cpp) against every generated branch, as gVisor's
// nvproxy holds its per-version ioctl map against the driver's structures: every escape and UVM
// call of every branch has a row or is on the default list (with a reason, and no layout in any
// branch); every member a row names exists in that branch's structure with the size and display
// kind its role needs; every handle, status, class, control and fd member of a call's structure is
// named by its row (decode, ab and replay read only what the row names, so a member the row misses
// would silently stop being read). The checker runs on rows given to it, so the tests below also
// show that it fails on a planted missing member and a missing row.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "ab/rules.hpp"
#include "rm/call_semantics.hpp"
#include "rm/field.hpp"
#include "rm/tables.hpp"

namespace cudatool::rm {
namespace {

struct Checker {
  const Tables& t;
  std::span<const CallRow> rows;
  std::span<const DefaultCall> defaults;
  std::vector<std::string> problems;

  const CallRow* row(CallSpace space, std::string_view name) const {
    for (const CallRow& r : rows) {
      if (r.space == space && r.name == name) return &r;
    }
    return nullptr;
  }
  const DefaultCall* default_call(CallSpace space, std::string_view name) const {
    for (const DefaultCall& d : defaults) {
      if (d.space == space && d.name == name) return &d;
    }
    return nullptr;
  }
  void fail(std::string_view call, std::string_view type, const std::string& what) {
    problems.push_back(std::string(t.info().id) + ": " + std::string(call) +
                       (type.empty() ? "" : " (" + std::string(type) + ")") + ": " + what);
  }

  // Member `name` of `s` as role `role`: present, scalar, `size` bytes (0: any of 1, 2, 4, 8),
  // and shown as `kind` by the decoders (kHex: any).
  const FieldEntry* member(const CallRow& r, const StructEntry& s, std::string_view name,
                           std::string_view role, uint32_t size, ValueKind kind) {
    if (name.empty()) return nullptr;
    const FieldEntry* f = t.find_field(s, name);
    std::string where = std::string(role) + " " + std::string(name) + ": ";
    if (f == nullptr) {
      fail(r.name, s.name, where + "no such member of " + std::string(s.name));
      return nullptr;
    }
    if (size != 0 && f->elem_size != size) {
      fail(r.name, s.name,
           where + std::to_string(f->elem_size) + " bytes, not " + std::to_string(size));
    }
    if (kind != ValueKind::kHex && member_kind(s.name, *f) != kind) {
      fail(r.name, s.name, where + "not shown as the decoders show that role");
    }
    return f;
  }

  void check_members(const CallRow& r, const StructEntry& arg, bool primary) {
    CallLayout l = locate_call(t, &r, arg);
    if (!r.within.empty() && l.rm == &arg && primary) {
      fail(r.name, arg.name, "within " + std::string(r.within) + ": no such structure member");
    }
    const StructEntry& s = *l.rm;
    uint32_t last = 0;
    std::set<std::string_view> named;
    for (const HandleMember& h : r.handles) {
      if (h.member.empty()) continue;
      named.insert(h.member);
      const FieldEntry* f = member(r, s, h.member, "handle", 4, ValueKind::kHandle);
      if (f != nullptr && f->offset < last) {
        fail(r.name, s.name, "handle " + std::string(h.member) + ": not in member order");
      }
      if (f != nullptr) last = f->offset;
    }
    member(r, s, r.status, "status", 4, ValueKind::kStatus);
    member(r, s, r.cls, "class", 4, ValueKind::kClass);
    member(r, s, r.control, "control", 4, ValueKind::kControl);
    if (primary || t.find_field(arg, r.fd) != nullptr)
      member(r, arg, r.fd, "fd", 4, ValueKind::kHex);
    if (primary) {  // the fake GPU reads a mapping by the call's first structure
      member(r, s, r.map.memory, "map memory", 4, ValueKind::kHandle);
      member(r, s, r.map.offset, "map offset", 8, ValueKind::kHex);
      member(r, s, r.map.length, "map length", 8, ValueKind::kHex);
      member(r, s, r.map.address, "map address", 8, ValueKind::kHex);
    }
    // Completeness: what the readers read is what the row names.
    for (const FieldEntry& f : t.fields(s)) {
      if (f.size != f.elem_size) continue;
      ValueKind k = member_kind(s.name, f);
      if (f.size == 4 && k == ValueKind::kHandle && named.count(f.name) == 0) {
        fail(r.name, s.name, "handle member " + std::string(f.name) + " is not in the row");
      }
      if (f.size == 4 && k == ValueKind::kStatus && f.name != r.status) {
        fail(r.name, s.name, "status member " + std::string(f.name) + " is not the row's");
      }
      if (k == ValueKind::kClass && f.name == "hClass" && f.name != r.cls) {
        fail(r.name, s.name, "class member hClass is not the row's");
      }
      if (k == ValueKind::kControl && f.name != r.control) {
        fail(r.name, s.name, "control member " + std::string(f.name) + " is not the row's");
      }
      const StructEntry* inner = t.find_struct(f.type);
      if (inner != nullptr && &s == &arg) {
        for (const FieldEntry& g : t.fields(*inner)) {
          ValueKind gk = member_kind(inner->name, g);
          if (g.size == 4 && (gk == ValueKind::kHandle || gk == ValueKind::kStatus)) {
            fail(r.name, s.name,
                 std::string(f.name) + "." + std::string(g.name) +
                     ": a handle or status in a nested structure, which a row cannot name");
          }
        }
      }
    }
    // The call's structure, and the one it wraps (an RM control or alloc behind an escape). Not
    // wrapped (a UVM call, a plain escape): one structure, read once.
    std::vector<const StructEntry*> structs{&arg};
    if (&s != &arg) structs.push_back(&s);
    for (const StructEntry* st : structs) {
      for (const FieldEntry& f : t.fields(*st)) {
        if (f.size == 4 && ab::is_fd_name(f.name) && !(st == &arg && f.name == r.fd)) {
          fail(r.name, st->name, "fd member " + std::string(f.name) + " is not the row's");
        }
      }
    }
  }

  void check_does(const CallRow& r) {
    auto needs = [&](bool cond, const char* what) {
      if (!cond) fail(r.name, "", what);
    };
    CallIdentity id = call_identity(r);
    if (r.does & kCallCreates)
      needs(!id.object.empty() && !id.parent.empty(), "creates: names no new object or no parent");
    if (r.does & kCallFrees) {
      needs(!id.object.empty() && !id.parent.empty(), "frees: names no freed object or no parent");
      // A free undoes: without kCallFreeLike replay would refuse an unrecorded one.
      needs((r.does & kCallFreeLike) != 0, "frees: not kCallFreeLike as well");
    }
    if (r.does & (kCallMapsCpu | kCallMapsGpu | kCallMapsExternal)) {
      needs(!r.map.memory.empty() && !r.map.offset.empty() && !r.map.length.empty() &&
                !r.map.address.empty(),
            "maps: the mapped range is not named");
    }
    if (r.does & kCallMapsCpu) needs(!r.fd.empty(), "maps CPU memory: names no fd to mmap");
    needs(((r.does & kCallControl) != 0) == (r.decoder == CallDecoder::kControl),
          "control: kCallControl and the control decoder go together");
    needs(((r.does & kCallAlloc) != 0) == (r.decoder == CallDecoder::kAlloc),
          "alloc: kCallAlloc and the alloc decoder go together");
    needs(((r.does & kCallWraps) != 0) == (r.decoder == CallDecoder::kXfer),
          "wraps: kCallWraps and the xfer decoder go together");
  }

  // The row of a call, or its default; false when neither is right.
  const CallRow* row_or_default(CallSpace space, std::string_view name, bool has_layout) {
    const CallRow* r = row(space, name);
    const DefaultCall* d = default_call(space, name);
    if (r != nullptr && d != nullptr) fail(name, "", "has a row and is on the default list");
    if (r == nullptr && d == nullptr) {
      fail(name, "", "has no row in src/rm/call_semantics.cpp and is not on its default list");
    }
    if (d != nullptr && has_layout) {
      fail(name, "", "is on the default list but has a layout in this branch: give it a row");
    }
    return r;
  }

  void check_branch() {
    for (const EscapeEntry& e : t.escapes()) {
      const StructEntry* types[2] = {nullptr, nullptr};
      if (!e.type.empty()) types[0] = t.find_struct(e.type);
      if (!e.alt_type.empty()) types[1] = t.find_struct(e.alt_type);
      for (auto& s : types) {
        if (s != nullptr && s->size <= 0) s = nullptr;
      }
      const CallRow* r = row_or_default(CallSpace::kEscape, e.name, types[0] || types[1]);
      if (r == nullptr) continue;
      if (e.array != (r->decoder == CallDecoder::kArray)) {
        fail(e.name, "", "the array decoder goes with an array argument (escapes.inc)");
      }
      check_does(*r);
      for (int i = 0; i < 2; ++i) {
        if (types[i] != nullptr && !e.array) check_members(*r, *types[i], i == 0);
      }
    }
    for (const UvmEntry& u : t.uvm_ioctls()) {
      const StructEntry* s = u.params.empty() ? nullptr : t.find_struct(u.params);
      if (s != nullptr && s->size <= 0) s = nullptr;
      const CallRow* r = row_or_default(CallSpace::kUvm, u.name, s != nullptr);
      if (r == nullptr) continue;
      if (r->decoder != CallDecoder::kStruct || !r->within.empty()) {
        fail(u.name, "", "a UVM call is read by its layout, unwrapped");
      }
      check_does(*r);
      if (s == nullptr) continue;
      check_members(*r, *s, true);
      const FieldEntry* st = r->status.empty() ? nullptr : t.find_field(*s, r->status);
      if (st != nullptr && static_cast<int32_t>(st->offset) != u.rm_status_offset) {
        fail(u.name, s->name, "status is not at the generated rm_status_offset");
      }
    }
  }
};

std::vector<std::string> check(const Tables& t, std::span<const CallRow> rows,
                               std::span<const DefaultCall> defaults) {
  Checker c{t, rows, defaults, {}};
  c.check_branch();
  return c.problems;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& p : v) s += p + "\n";
  return s;
}

TEST(CallSemantics, EveryCallOfEveryBranchHasARowThatFitsItsLayouts) {
  ASSERT_GE(all_branches().size(), 4u);
  for (const Tables& t : all_branches()) {
    std::vector<std::string> problems = check(t, call_rows(), default_calls());
    EXPECT_TRUE(problems.empty()) << joined(problems);
  }
}

TEST(CallSemantics, EveryRowAndDefaultNamesACallOfSomeBranch) {
  std::set<std::pair<CallSpace, std::string_view>> calls;
  for (const Tables& t : all_branches()) {
    for (const EscapeEntry& e : t.escapes()) calls.insert({CallSpace::kEscape, e.name});
    for (const UvmEntry& u : t.uvm_ioctls()) calls.insert({CallSpace::kUvm, u.name});
  }
  std::set<std::pair<CallSpace, std::string_view>> seen;
  for (const CallRow& r : call_rows()) {
    EXPECT_TRUE(calls.count({r.space, r.name})) << r.name << ": no branch has this call";
    EXPECT_TRUE(seen.insert({r.space, r.name}).second) << r.name << ": two rows";
    EXPECT_FALSE(r.what.empty()) << r.name;
  }
  for (const DefaultCall& d : default_calls()) {
    EXPECT_TRUE(calls.count({d.space, d.name})) << d.name << ": no branch has this call";
    EXPECT_FALSE(d.why.empty()) << d.name;
  }
}

// The fake GPU has one layout per kind of mapping (record/shim_abi/replay_abi.h rp_gpu_layout): a
// second row of a kind would reach it with the first one's layout.
TEST(CallSemantics, OneMappingCallPerKindOfMapping) {
  for (uint32_t kind : {kCallMapsCpu, kCallMapsGpu, kCallMapsExternal}) {
    int rows = 0;
    for (const CallRow& r : call_rows()) rows += (r.does & kind) != 0;
    EXPECT_EQ(rows, 1) << "mapping kind " << kind;
    EXPECT_NE(row_doing(kind), nullptr);
  }
}

TEST(CallSemantics, ClassAndControlRowsNameWhatEveryBranchHas) {
  for (const Tables& t : all_branches()) {
    SCOPED_TRACE(std::string(t.info().id));
    for (const ClassRow& r : class_rows()) {
      EXPECT_NE(r.name.empty(), r.alloc_params.empty()) << "a class row matches one way";
      size_t classes = 0;
      for (const ClassEntry& c : t.classes()) {
        classes +=
            r.name == c.name || (!r.alloc_params.empty() && r.alloc_params == c.alloc_params);
      }
      EXPECT_GT(classes, 0u) << r.name << r.alloc_params << ": no class of the branch";
      if ((r.does & kClassChannel) == 0) continue;
      const StructEntry* s = t.find_struct(r.alloc_params);
      ASSERT_NE(s, nullptr) << r.alloc_params;
      auto size_of = [&](std::string_view m) {
        const FieldEntry* f = t.find_field(*s, m);
        return f ? f->elem_size : 0u;
      };
      EXPECT_EQ(size_of(r.channel.gpfifo_offset), 8u);
      EXPECT_EQ(size_of(r.channel.gpfifo_entries), 4u);
      EXPECT_EQ(size_of(r.channel.userd_memory), 4u);
      EXPECT_EQ(size_of(r.channel.userd_offset), 8u);
    }
    for (const ControlRow& r : control_rows()) {
      EXPECT_NE(control_doing(t, r.does), nullptr) << r.name;
    }
    // The client classes are the three of cl0000.h, cl0001.h and cl0041.h.
    std::set<uint32_t> clients;
    for (const ClassEntry& c : t.classes()) {
      if (class_does(t, c.id) & kClassClient) clients.insert(c.id);
    }
    EXPECT_EQ(clients, (std::set<uint32_t>{0x0, 0x1, 0x41}));
  }
}

TEST(CallSemantics, RowsOfEveryGeneratedBranchAreFoundByEntry) {
  for (const Tables& t : all_branches()) {
    for (const EscapeEntry& e : t.escapes()) {
      EXPECT_EQ(row_of(t, e), find_call_row(CallSpace::kEscape, e.name)) << e.name;
    }
    for (const UvmEntry& u : t.uvm_ioctls()) {
      EXPECT_EQ(row_of(t, u), find_call_row(CallSpace::kUvm, u.name)) << u.name;
    }
  }
}

// --- the checker fails where it must ---------------------------------------------------------

std::vector<CallRow> rows_copy() {
  return {call_rows().begin(), call_rows().end()};
}
CallRow& row_named(std::vector<CallRow>& rows, std::string_view name) {
  for (CallRow& r : rows) {
    if (r.name == name) return r;
  }
  ADD_FAILURE() << name;
  return rows.front();
}
bool mentions(const std::vector<std::string>& problems, std::string_view a, std::string_view b) {
  for (const std::string& p : problems) {
    if (p.find(a) != std::string::npos && p.find(b) != std::string::npos) return true;
  }
  return false;
}

TEST(CallSemanticsChecker, FailsOnAMemberTheStructureLacks) {
  std::vector<CallRow> rows = rows_copy();
  row_named(rows, "NV_ESC_RM_ALLOC").handles[0].member = "hNoSuchMember";
  auto problems = check(all_branches().back(), rows, default_calls());
  EXPECT_TRUE(mentions(problems, "NV_ESC_RM_ALLOC", "hNoSuchMember: no such member"))
      << joined(problems);
  // hRoot is now read by no one: the completeness check says so too.
  EXPECT_TRUE(mentions(problems, "NV_ESC_RM_ALLOC", "handle member hRoot is not in the row"))
      << joined(problems);
}

TEST(CallSemanticsChecker, FailsOnAMemberOfTheWrongSizeOrKind) {
  std::vector<CallRow> rows = rows_copy();
  row_named(rows, "NV_ESC_RM_MAP_MEMORY").map.length = "hMemory";  // 4 bytes, not 8
  row_named(rows, "UVM_FREE").status = "base";                     // 8 bytes, not a status
  auto problems = check(all_branches().back(), rows, default_calls());
  EXPECT_TRUE(mentions(problems, "NV_ESC_RM_MAP_MEMORY", "map length hMemory: 4 bytes, not 8"))
      << joined(problems);
  EXPECT_TRUE(mentions(problems, "UVM_FREE", "status base")) << joined(problems);
}

TEST(CallSemanticsChecker, FailsOnACallWithoutARow) {
  std::vector<CallRow> rows;
  for (const CallRow& r : call_rows()) {
    if (r.name != "UVM_FREE" && r.name != "NV_ESC_RM_FREE") rows.push_back(r);
  }
  auto problems = check(all_branches().back(), rows, default_calls());
  EXPECT_TRUE(mentions(problems, "UVM_FREE", "has no row")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "NV_ESC_RM_FREE", "has no row")) << joined(problems);
  EXPECT_EQ(problems.size(), 2u) << joined(problems);
}

TEST(CallSemanticsChecker, FailsOnADefaultThatHasALayout) {
  std::vector<CallRow> rows;
  for (const CallRow& r : call_rows()) {
    if (r.name != "UVM_FREE") rows.push_back(r);
  }
  std::vector<DefaultCall> defaults(default_calls().begin(), default_calls().end());
  defaults.push_back({CallSpace::kUvm, "UVM_FREE", "planted"});
  auto problems = check(all_branches().back(), rows, defaults);
  EXPECT_TRUE(mentions(problems, "UVM_FREE", "has a layout in this branch")) << joined(problems);
}

}  // namespace
}  // namespace cudatool::rm
