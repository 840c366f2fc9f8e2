// The decoders and tables on the real captures in tests/data/captures (H200, driver 580.159.04):
// every ioctl decodes without a note, every class and status is named, control commands are named,
// and the sizes libcuda really passed match the generated tables.
//
// A few commands libcuda sends are not in NVIDIA's open sources at all: "GSS legacy" commands
// (the RM_GSS_LEGACY_MASK bit 0x8000 of src/nvidia/interface/deprecated/rmapi_deprecated.h; RM
// forwards them to GSP without knowing them, rmapi_gss_legacy_control.c) and commands of
// interfaces in which no release defines any command (NV2081_BINAPI). Those are listed, must have
// a named interface, and are left out of the 98% naming requirement; the raw ratio is printed.
//
// The capture is read here with xz and nlohmann::json (capture_data.cpp), independently of
// cudatool's trace reader; the driver version comes from the capture's README.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/hex.hpp"
#include "capture_data.hpp"
#include "harness.hpp"
#include "rm/tables.hpp"
#include "trace/decode.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

std::vector<uint8_t> bytes_of(const json& j, const char* key) {
  if (!j.contains(key)) return {};
  auto b = parse_hex_bytes(j[key].get<std::string>());
  EXPECT_TRUE(b.has_value()) << key << " is not hex";
  return b.value_or(std::vector<uint8_t>{});
}

// One capture line (format in tests/data/captures/README.md) as a trace event.
trace::Event event_of(const json& j) {
  trace::Event ev;
  ev.seq = j.at("seq").get<uint64_t>();
  ev.tid = j.at("tid").get<int32_t>();
  ev.sys = trace::sys_from_name(j.at("sys").get<std::string>());
  ev.path = j.value("path", "");
  ev.fd = j.value("fd", -1);
  const json& ret = j.at("ret");
  ev.ret = ret.is_string() ? static_cast<int64_t>(*parse_u64(ret.get<std::string>(), false))
                           : ret.get<int64_t>();
  if (ev.sys == trace::Sys::kMmap) {
    auto hex = [&](const char* k) { return *parse_u64(j.at(k).get<std::string>(), false); };
    ev.addr = hex("addr");
    ev.len = j.at("len").get<uint64_t>();
    ev.prot = j.at("prot").get<uint64_t>();
    ev.map_flags = hex("flags");
    ev.offset = hex("off");
  }
  if (ev.sys == trace::Sys::kIoctl) {
    ev.request = *parse_u64(j.at("req").get<std::string>(), false);
    trace::Buffer arg;
    arg.role = "arg";
    arg.before = bytes_of(j, "pre");
    arg.after = bytes_of(j, "post");
    arg.size = arg.before.size();
    ev.arg = std::move(arg);
    if (j.contains("nptr")) {
      trace::Buffer p;
      p.role = "params";
      p.addr = *parse_u64(j.at("nptr").get<std::string>(), false);
      p.before = bytes_of(j, "npre");
      p.after = bytes_of(j, "npost");
      p.size = p.before.size();
      ev.nested.push_back(std::move(p));
    }
  }
  return ev;
}

struct Capture {
  std::string driver_version;
  std::vector<trace::Event> events;
};

Capture load(const std::string& name) {
  Capture c;
  c.driver_version = capture_driver_version();
  for (const json& j : capture_lines(name)) c.events.push_back(event_of(j));
  return c;
}

class Capture580 : public ::testing::TestWithParam<std::string> {};

TEST_P(Capture580, EveryCallDecodesAndIsNamed) {
  Capture cap = load(GetParam());
  ASSERT_FALSE(cap.events.empty());
  ASSERT_FALSE(cap.driver_version.empty()) << "no driver version in the captures' README";
  rm::BranchChoice choice = rm::choose_branch(cap.driver_version);
  ASSERT_TRUE(choice.exact_major) << "no branch for driver " << cap.driver_version;
  const rm::Tables& t = *choice.tables;

  std::map<uint32_t, int> controls, classes, statuses;
  std::set<uint32_t> ctrl_size_checked;
  size_t ioctls = 0, partial = 0;
  trace::Decoded d;
  for (const trace::Event& ev : cap.events) {
    trace::decode_event(t, ev, d);
    if (ev.sys != trace::Sys::kIoctl) continue;
    ++ioctls;
    EXPECT_TRUE(d.known) << "seq " << ev.seq << ": unknown call " << trace::format_line(d);
    EXPECT_TRUE(d.notes.empty()) << "seq " << ev.seq << ": " << d.notes.front() << "\n  "
                                 << trace::format_line(d);
    if (!d.partial.empty()) ++partial;
    if (d.cmd) ++controls[*d.cmd];
    if (d.h_class) ++classes[*d.h_class];
    if (d.status) ++statuses[*d.status];
    // The parameter size libcuda passed (and RM accepted: status NV_OK) is the table's size.
    if (d.call == "NV_ESC_RM_CONTROL" && d.status == 0u && d.cmd) {
      const rm::CtrlEntry* c = t.find_control(*d.cmd);
      const rm::StructEntry* s = t.find_struct("NVOS54_PARAMETERS");
      ASSERT_NE(s, nullptr);
      const rm::FieldEntry* ps = t.find_field(*s, "paramsSize");
      ASSERT_NE(ps, nullptr);
      uint32_t passed = load_le<uint32_t>(ev.arg->after.data() + ps->offset);
      if (c != nullptr && c->params_size >= 0) {
        EXPECT_EQ(static_cast<uint32_t>(c->params_size), passed) << c->name;
        ctrl_size_checked.insert(*d.cmd);
      }
    }
  }
  EXPECT_GT(ioctls, 0u);

  // Control commands: named, or unpublished (GSS legacy, or an interface without any published
  // command in any release): capture_data.hpp says the rule.
  size_t named = 0, unpublished = 0;
  std::string unnamed;
  for (const auto& [cmd, n] : controls) {
    ControlNaming naming = control_naming(t, cmd);
    if (naming == ControlNaming::kNamed) {
      ++named;
      continue;
    }
    const rm::CategoryEntry* cat = t.find_category(cmd);
    char buf[112];
    snprintf(buf, sizeof buf, " 0x%08x (%s, %d call%s)", cmd,
             cat ? std::string(cat->name).c_str() : "unknown interface", n, n == 1 ? "" : "s");
    unnamed += buf;
    EXPECT_NE(cat, nullptr) << "control 0x" << std::hex << cmd << ": interface unknown";
    if (naming == ControlNaming::kUnpublished) {
      ++unpublished;
    } else {
      ADD_FAILURE() << "control 0x" << std::hex << cmd
                    << " is unnamed although its interface is published";
    }
  }
  size_t published = controls.size() - unpublished;
  std::cout << GetParam() << ": " << ioctls << " ioctls (" << partial
            << " recorded shorter than their structure); control commands named " << named << "/"
            << controls.size() << " (" << 100.0 * named / std::max<size_t>(controls.size(), 1)
            << "% raw, " << 100.0 * named / std::max<size_t>(published, 1)
            << "% of the published), sizes checked " << ctrl_size_checked.size()
            << "; unnamed:" << (unnamed.empty() ? " none" : unnamed) << "\n";
  EXPECT_GE(named * 100, published * 98);
  EXPECT_GE(ctrl_size_checked.size(), controls.size() / 2);

  for (const auto& [cls, n] : classes) {
    EXPECT_NE(t.find_class(cls), nullptr) << "class 0x" << std::hex << cls << " unnamed";
  }
  for (const auto& [st, n] : statuses) {
    EXPECT_NE(t.find_status(st), nullptr) << "status 0x" << std::hex << st << " unnamed";
  }
  std::cout << GetParam() << ": classes " << classes.size() << " (all named), statuses "
            << statuses.size() << " (all named)\n";
  EXPECT_GT(classes.size(), 0u);
  EXPECT_GT(statuses.size(), 0u);
}

// Every pointer member of the parameter structures the real run uses is followed (a pointer rule
// reads the buffer) or listed with what RM does with it (pointer_members.inc): the members are
// taken from the structures' layouts (fields.inc), the statuses from the inventory.
TEST_P(Capture580, EveryPointerMemberOfTheStructuresUsedIsFollowedOrListed) {
  Capture cap = load(GetParam());
  ASSERT_FALSE(cap.events.empty());
  const rm::Tables& t = rm::tables_for_driver(cap.driver_version);
  std::set<std::string_view> used;
  size_t allocs = 0;
  trace::Decoded d;
  for (const trace::Event& ev : cap.events) {
    trace::decode_event(t, ev, d);
    if (d.call == "NV_ESC_RM_ALLOC") ++allocs;
    if (!d.params_struct.empty()) used.insert(d.params_struct);
  }
  EXPECT_EQ(allocs, 120u);
  std::map<std::pair<std::string_view, std::string_view>, rm::PointerStatus> listed;
  for (const rm::PointerMember& m : t.pointer_members()) {
    listed[{m.struct_name, m.member}] = static_cast<rm::PointerStatus>(m.status);
  }
  size_t members = 0, followed = 0, not_copied = 0, bounded = 0;
  std::string report;
  for (std::string_view s : used) {
    const rm::StructEntry* e = t.find_struct(s);
    if (e == nullptr) continue;
    for (const rm::FieldEntry& f : t.fields(*e)) {
      if (f.type != "NvP64" && !f.type.ends_with("*")) continue;
      ++members;
      auto it = listed.find({s, f.name});
      ASSERT_NE(it, listed.end()) << s << "." << f.name << " is neither followed nor listed";
      followed += it->second == rm::PointerStatus::kFollowed;
      bounded += it->second == rm::PointerStatus::kBounded;
      not_copied += it->second == rm::PointerStatus::kNotCopied;
      report += " " + std::string(s) + "." + std::string(f.name) +
                (it->second == rm::PointerStatus::kFollowed ? "(followed)" : "(not copied)");
      if (it->second == rm::PointerStatus::kFollowed) {
        bool ruled = false;
        for (const rm::PointerRule& r : t.pointer_rules()) {
          ruled |= r.struct_name == s && r.member == f.name;
        }
        EXPECT_TRUE(ruled) << s << "." << f.name;
      }
    }
  }
  std::cout << GetParam() << ": " << used.size() << " parameter structures used, " << members
            << " pointer members: " << followed << " followed, " << not_copied
            << " not copied by RM, " << bounded << " bounded;" << report << "\n";
  EXPECT_EQ(followed, 6u);  // the three build-version strings, grInfoList, the two channel lists
  EXPECT_EQ(not_copied, 3u);
  EXPECT_EQ(bounded, 0u);
}

INSTANTIATE_TEST_SUITE_P(Captures, Capture580,
                         ::testing::Values("trace_a.jsonl.xz", "trace_b.jsonl.xz"),
                         [](const auto& info) { return info.param.substr(0, 7); });

}  // namespace
}  // namespace cudatool::test
