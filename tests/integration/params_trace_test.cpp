// The second level of `cudatool trace`, in both modes, against nv_params (tests/fixtures/
// nvparams): RM allocation parameters sized by the class of the recording's driver branch, and
// the buffers behind the pointer members RM follows (count x element, size members, strings,
// union arms, array elements, XFER-wrapped), from threads and a forked child. The fixture prints
// every call it made with the bytes it passed and got back; the trace must hold exactly those.
// In preload mode the fixture's fake kernel answers the calls, so the bytes after the call are
// the answers. Then a changed byte behind a pointer must show in `decode` and in `ab`.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "harness.hpp"
#include "rm/tables.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

struct Branch {
  std::string line;     // the version file's first line
  std::string version;  // what the header must say
};
const Branch kR580{
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release "
    "Build  (dvs-builder@U16-I1-N07-12-3)  Thu Jan  1 00:00:00 UTC 2026",
    "580.159.04"};
const Branch kR535{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Wed Jul 16 2025",
                   "535.261.03"};

std::map<uint64_t, uint64_t> class_sizes(const rm::Tables& t) {
  std::map<uint64_t, uint64_t> m;
  for (const rm::ClassEntry& c : t.classes()) {
    if (c.alloc_params_size > 0) m[c.id] = static_cast<uint64_t>(c.alloc_params_size);
  }
  return m;
}

const json* nested_of(const json& e, const std::string& role) {
  if (!e.is_object() || !e.contains("nested")) return nullptr;
  for (const json& b : e["nested"]) {  // the event's own array: the pointer stays valid
    if (b["role"] == role) return &b;
  }
  return nullptr;
}

// The n-th event that holds a nested buffer of `role`.
const json* event_of(const std::vector<json>& events, const std::string& role, size_t n = 0) {
  for (const json& e : events) {
    if (e["sys"] == "ioctl" && nested_of(e, role) != nullptr && n-- == 0) return &e;
  }
  return nullptr;
}

std::string hex_of(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    char buf[4];
    snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

// The event objects of `decode --json` output (the header and summary lines left out).
std::vector<json> decoded_events(const std::string& out) {
  std::vector<json> events;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains("seq")) events.push_back(std::move(j));
  }
  return events;
}

class ParamsTrace : public ::testing::TestWithParam<std::string> {
 protected:
  std::string mode() const { return GetParam(); }
  // The fake kernel answers in preload mode only: under ptrace its SECCOMP_RET_TRAP would win over
  // the recorder's SECCOMP_RET_TRACE (the kernel takes the filter result of highest precedence).
  std::string fixture_mode() const { return mode() == "preload" ? "answered" : "plain"; }
  struct Run {
    RunResult result;
    std::string trace;
    TraceFile file;
    std::vector<json> printed;
    const rm::Tables* branch = nullptr;
  };
  Run record(const Branch& b, const std::string& tag, const std::vector<std::string>& extra = {}) {
    Run r;
    std::string dev = make_fake_devices(mode() + "-params-" + tag);
    std::string vf = write_temp(mode() + "-version-" + tag, b.line + "\n");
    r.trace = temp_dir() + "/" + mode() + "-params-" + tag + ".jsonl";
    std::vector<std::string> cmd{"/usr/bin/env", "CUDATOOL_DRIVER_VERSION_FILE=" + vf,
                                 cudatool_bin(), "trace",
                                 "--mode",       mode(),
                                 "-q",           "-o",
                                 r.trace,        "--devices",
                                 dev + "/*"};
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    for (const std::string& a :
         {std::string("--"), fixtures_dir() + "/nv_params", dev, fixture_mode()}) {
      cmd.push_back(a);
    }
    r.result = run(cmd);
    r.file = load_trace(r.trace);
    r.printed = load_printed(r.result.out);
    r.branch = &rm::tables_for_driver(r.file.header.value("driver_version", std::string()));
    return r;
  }
};

TEST_P(ParamsTrace, RecordsClassSizedParametersAndTheBuffersBehindPointers) {
  Run r = record(kR580, "580");
  ASSERT_EQ(r.result.status, 0) << r.result.err;
  EXPECT_EQ(r.file.header["driver_version"], kR580.version);
  EXPECT_EQ(r.branch->info().id, "r580");
  ASSERT_GT(r.printed.size(), 30u) << r.result.out;
  // Class-sized parameters: the fixture cannot know their size; the branch's table says it.
  EXPECT_EQ(resolve_class_table_sizes(r.printed, class_sizes(*r.branch)), 9u);
  for (const auto& p : match_exactly(r.printed, r.file.events)) ADD_FAILURE() << p;

  // The roles the rules name, each found in the trace.
  for (const char* role :
       {"params.grInfoList", "params.pDriverVersionBuffer", "params.pVersionBuffer",
        "params.pTitleBuffer", "params.pChannelHandleList", "params.pChannelList",
        "params.pageNumberList", "params.transData.i2cBlockData.pMessage",
        "params.opsBuffer[0].pCpuVA", "params.opsBuffer[1].pCpuVA"}) {
    EXPECT_NE(event_of(r.file.events, role), nullptr) << role;
  }
  // Threads and the child: main, three workers, the child.
  std::set<int> tids, pids;
  for (const json& e : r.file.events) {
    if (e["sys"] != "ioctl" || !e.contains("nested")) continue;
    for (const json& b : e["nested"]) {
      if (b["role"].get<std::string>().starts_with("params.")) {
        tids.insert(e["tid"].get<int>());
        pids.insert(e["pid"].get<int>());
      }
    }
  }
  EXPECT_GE(tids.size(), 5u);
  EXPECT_EQ(pids.size(), 2u);
  // The count past the cap: nothing read, and the event says why.
  bool over = false;
  for (const json& e : r.file.events) {
    for (const json& u : e.value("unrecorded", json::array())) {
      over = true;
      EXPECT_EQ(u["what"], "params.grInfoList");
      EXPECT_NE(u["why"].get<std::string>().find("over --max-buffer"), std::string::npos) << u;
    }
  }
  EXPECT_TRUE(over);

  // Lists the recorder could not read, in whole or in part: the trace says why in the buffer,
  // and decode (text and JSON) says it for the call.
  size_t unreadable = 0;
  for (const json& e : r.file.events) {
    const json* b = nested_of(e, "params.grInfoList");
    if (b == nullptr || !b->contains("pre_error")) continue;
    std::string why = (*b)["pre_error"];
    if (why.find("over cap") != std::string::npos) continue;  // the count past the cap, above
    ++unreadable;
    EXPECT_NE(why.find("EFAULT"), std::string::npos) << why;
    std::string filter = "seq=" + std::to_string(e["seq"].get<uint64_t>());
    RunResult dj = run({cudatool_bin(), "decode", r.trace, "--json", "--filter", filter});
    ASSERT_EQ(dj.status, 0) << dj.err;
    bool said = false;
    for (const json& j : decoded_events(dj.out)) {
      for (const json& u : j["unrecorded"]) {
        said = said || (u["what"] == "params.grInfoList" && u["why"] == why);
      }
    }
    EXPECT_TRUE(said) << dj.out.substr(0, 2000);
    RunResult dt = run({cudatool_bin(), "decode", r.trace, "--filter", filter});
    EXPECT_NE(dt.out.find("[unrecorded: params.grInfoList: " + why + "]"), std::string::npos)
        << dt.out;
  }
  EXPECT_EQ(unreadable, 2u);

  // The answers of the fake kernel are in the bytes after the call (preload mode).
  const json* v = event_of(r.file.events, "params.pDriverVersionBuffer");
  ASSERT_NE(v, nullptr);
  std::string post = nested_of(*v, "params.pDriverVersionBuffer")->value("post", "");
  if (fixture_mode() == "answered") {
    EXPECT_EQ(post.substr(0, 22), hex_of(std::string("580.159.04\0", 11))) << post;
    const json* g = event_of(r.file.events, "params.grInfoList");
    const json* list = nested_of(*g, "params.grInfoList");
    EXPECT_NE(list->value("pre", ""), list->value("post", ""));
  } else {
    EXPECT_EQ(post, nested_of(*v, "params.pDriverVersionBuffer")->value("pre", ""));
  }

  // The comparison can fail: a byte behind a pointer changed, a pointee dropped, one invented.
  for (int change = 0; change < 3; ++change) {
    auto wrong = r.file.events;
    auto it = std::find_if(wrong.begin(), wrong.end(), [](const json& e) {
      const json* b = nested_of(e, "params.grInfoList");
      return b != nullptr && b->contains("pre");
    });
    ASSERT_NE(it, wrong.end());
    json& nested = (*it)["nested"];
    auto b = std::find_if(nested.begin(), nested.end(),
                          [](const json& x) { return x["role"] == "params.grInfoList"; });
    if (change == 0) {
      std::string pre = (*b)["pre"];
      pre[1] = pre[1] == '0' ? '1' : '0';
      (*b)["pre"] = pre;
    } else if (change == 1) {
      nested.erase(b);
    } else {
      json extra = *b;
      extra["role"] = "params.grInfoList2";
      nested.push_back(extra);
    }
    EXPECT_FALSE(match_exactly(r.printed, wrong).empty()) << "change " << change;
  }
}

// RM sizes allocation parameters by the class as the recording's branch defines it: the same
// program recorded as under a 535 driver reads NV_MEMORY_ALLOCATION_PARAMS as 535 sizes it.
TEST_P(ParamsTrace, ClassSizesFollowTheDriverBranch) {
  std::map<std::string, uint64_t> memory_system;
  for (const Branch* b : {&kR535, &kR580}) {
    Run r = record(*b, b->version);
    ASSERT_EQ(r.result.status, 0) << r.result.err;
    EXPECT_EQ(r.file.header["driver_version"], b->version);
    EXPECT_EQ(resolve_class_table_sizes(r.printed, class_sizes(*r.branch)), 9u);
    for (const auto& p : match_exactly(r.printed, r.file.events)) ADD_FAILURE() << b->version << p;
    const rm::ClassEntry* c = r.branch->find_class(0x3e);  // NV01_MEMORY_SYSTEM
    ASSERT_NE(c, nullptr);
    for (const json& e : r.file.events) {
      const json* p = nested_of(e, "params");
      if (p == nullptr || p->value("sized_by", "") != "class") continue;
      std::string arg = e["arg"]["pre"];  // hClass at byte 12 of NVOS21/NVOS64
      if (arg.substr(24, 8) == "3e000000") memory_system[b->version] = (*p)["size"];
    }
    EXPECT_EQ(memory_system[b->version], static_cast<uint64_t>(c->alloc_params_size));
  }
  EXPECT_NE(memory_system["535.261.03"], memory_system["580.159.04"]);
}

// `--max-buffer 64`: no buffer is recorded past 64 bytes; a longer one records nothing and says
// so in the trace and in decode, a count member whose extent passes the cap is unrecorded with
// the cap named, and what fits is recorded as without a cap.
TEST_P(ParamsTrace, MaxBufferCapsEveryBuffer) {
  Run r = record(kR580, "cap", {"--max-buffer", "64"});
  ASSERT_EQ(r.result.status, 0) << r.result.err;
  size_t over = 0, fits = 0, counts = 0;
  for (const json& e : r.file.events) {
    if (e["sys"] != "ioctl") continue;
    for (const json& u : e.value("unrecorded", json::array())) {
      if (u["why"].get<std::string>().find("over --max-buffer (64)") != std::string::npos) ++counts;
    }
    for (const json& b : e.value("nested", json::array())) {
      for (const char* side : {"pre", "post"}) {
        EXPECT_LE(b.value(side, "").size(), 128u) << b.dump().substr(0, 300);
      }
      if (b["size"].get<uint64_t>() > 64) {
        ++over;
        EXPECT_FALSE(b.contains("pre")) << b.dump().substr(0, 300);
        EXPECT_NE(b.value("pre_error", "").find("over cap 0x40"), std::string::npos) << b.dump();
      } else if (b["role"] == "params.grInfoList" && b.contains("pre")) {
        ++fits;
      }
    }
  }
  EXPECT_GE(over, 9u);  // at least the class-sized parameters of 128 bytes and more
  EXPECT_GE(fits, 5u);
  EXPECT_GE(counts, 1u);
  RunResult d = run({cudatool_bin(), "decode", r.trace, "--filter", "class=NV01_MEMORY_SYSTEM"});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_NE(d.out.find("[unrecorded: params: size 0x80 over cap 0x40]"), std::string::npos)
      << d.out;
}

// An XFER-wrapped control is the control it wraps for everything that selects or counts by
// command: the fixture's NV_ESC_IOCTL_XFER_CMD carries an NVOS54 whose cmd (offset 8, nvos.h) is
// NV2080_CTRL_CMD_GR_GET_INFO; decode's JSON names it, `--filter ctrl=` selects it with the plain
// controls, and stats counts it among them.
TEST_P(ParamsTrace, XferWrappedControlIsTheControlItWraps) {
  Run r = record(kR580, "xfer");
  ASSERT_EQ(r.result.status, 0) << r.result.err;
  size_t gr_calls = 0, xfers = 0;
  for (const json& c : r.printed) {
    if (c.value("sys", "") != "ioctl" || !c.contains("nested")) continue;
    uint64_t req = std::stoull(c["req"].get<std::string>(), nullptr, 16);
    for (const json& n : c["nested"]) {
      bool gr = false;
      if ((req & 0xff) == 0x2a && n["role"] == "params.grInfoList") gr = true;
      if ((req & 0xff) == 0xd3 && n["role"] == "xfer") {
        std::string pre = n["pre"];
        uint64_t cmd = std::stoull(
            pre.substr(22, 2) + pre.substr(20, 2) + pre.substr(18, 2) + pre.substr(16, 2), nullptr,
            16);
        gr = cmd == 0x20801201;  // NV2080_CTRL_CMD_GR_GET_INFO
        xfers += gr;
      }
      gr_calls += gr;
    }
  }
  ASSERT_EQ(xfers, 1u);
  RunResult d = run({cudatool_bin(), "decode", r.trace, "--json", "--filter",
                     "ctrl=NV2080_CTRL_CMD_GR_GET_INFO"});
  ASSERT_EQ(d.status, 0) << d.err;
  size_t selected = 0, selected_xfers = 0;
  for (const json& e : decoded_events(d.out)) {
    ++selected;
    EXPECT_EQ(e["cmd"], "0x20801201") << e.dump().substr(0, 300);
    if (e["call"] == "NV_ESC_IOCTL_XFER_CMD") {
      ++selected_xfers;
      EXPECT_EQ(e["h_client"], "0xc1d00001");
      // The wrapped control's own parameters, decoded like a plain control's.
      EXPECT_EQ(e["wrapped_struct"], "NV2080_CTRL_GR_GET_INFO_PARAMS");
      ASSERT_TRUE(e["wrapped"].is_array());
      ASSERT_FALSE(e["wrapped"].empty());
      EXPECT_EQ(e["wrapped"][0]["name"], "grInfoListSize");
      EXPECT_EQ(e["wrapped"][0]["value"], 2);
      EXPECT_FALSE(e["status"].is_null());
    }
  }
  EXPECT_EQ(selected, gr_calls);
  EXPECT_EQ(selected_xfers, 1u);
  RunResult st = run({cudatool_bin(), "stats", r.trace, "--json"});
  ASSERT_EQ(st.status, 0) << st.err;
  json sj = json::parse(st.out);
  uint64_t counted = 0;
  for (const json& c : sj["controls"]) {
    if (c["cmd"] == "0x20801201") counted = c["count"].get<uint64_t>();
  }
  EXPECT_EQ(counted, gr_calls);
}

// An XFER-wrapped alloc with paramsSize 0 is sized by its class like a plain one (the fixture's
// NV_ESC_IOCTL_XFER_CMD carries an NVOS21 of NV01_MEMORY_SYSTEM, 0x3e): the trace holds the
// class-sized parameters (match_exactly above checks their bytes), decode names the class and
// decodes the class's allocation-parameter structure member by member, and `--filter class=`
// selects it with the plain allocs of the class.
TEST_P(ParamsTrace, XferWrappedAllocIsTheAllocItWraps) {
  Run r = record(kR580, "xfer-alloc");
  ASSERT_EQ(r.result.status, 0) << r.result.err;
  const rm::ClassEntry* c = r.branch->find_class(0x3e);
  ASSERT_NE(c, nullptr);
  const json* x = nullptr;
  size_t plain = 0;
  for (const json& e : r.file.events) {
    if (e["sys"] != "ioctl") continue;
    const json* p = nested_of(e, "params");
    if (p == nullptr || p->value("sized_by", "") != "class") continue;
    if (nested_of(e, "xfer") != nullptr) {
      EXPECT_EQ(x, nullptr) << "one XFER-wrapped alloc";
      x = &e;
      EXPECT_EQ((*p)["size"], static_cast<uint64_t>(c->alloc_params_size));
    } else if (e["arg"]["pre"].get<std::string>().substr(24, 8) == "3e000000") {
      ++plain;
    }
  }
  ASSERT_NE(x, nullptr);
  EXPECT_GE(plain, 2u);
  std::string filter = "seq=" + std::to_string((*x)["seq"].get<uint64_t>());
  RunResult d = run({cudatool_bin(), "decode", r.trace, "--filter", filter});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_NE(d.out.find("NV01_MEMORY_SYSTEM"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find(c->alloc_params), std::string::npos) << c->alloc_params << "\n" << d.out;
  RunResult dj = run({cudatool_bin(), "decode", r.trace, "--json", "--filter", filter});
  ASSERT_EQ(dj.status, 0) << dj.err;
  bool seen = false;
  for (const json& j : decoded_events(dj.out)) {
    seen = true;
    EXPECT_EQ(j["call"], "NV_ESC_IOCTL_XFER_CMD");
    EXPECT_EQ(j["h_class"], "0x3e") << j.dump().substr(0, 400);
    EXPECT_EQ(j["h_client"], "0xc1d00001");
    EXPECT_EQ(j["params_struct"], "NVOS21_PARAMETERS");
    EXPECT_EQ(j["wrapped_struct"], std::string(c->alloc_params));
    // The members of the class's parameters, as the bytes behind the pointer give them.
    ASSERT_TRUE(j["wrapped"].is_array());
    EXPECT_GT(j["wrapped"].size(), 10u) << j["wrapped"].dump();
    // Its first member (owner, NvU32) after the call: the fake kernel's marker when it answers,
    // else the fixture's fill (bytes 0x33, 0x3a, 0x41, 0x48).
    const json& first = j["wrapped"][0];
    EXPECT_EQ(first["name"], "owner");
    uint64_t owner = first["value"].is_string()
                         ? std::stoull(first["value"].get<std::string>(), nullptr, 16)
                         : first["value"].get<uint64_t>();
    EXPECT_EQ(owner, fixture_mode() == "answered" ? 0x5ca1ab1eu : 0x48413a33u);
  }
  EXPECT_TRUE(seen);
  RunResult sel =
      run({cudatool_bin(), "decode", r.trace, "--json", "--filter", "class=NV01_MEMORY_SYSTEM"});
  ASSERT_EQ(sel.status, 0) << sel.err;
  size_t selected = 0, selected_xfers = 0;
  for (const json& j : decoded_events(sel.out)) {
    ++selected;
    selected_xfers += j["call"] == "NV_ESC_IOCTL_XFER_CMD";
  }
  EXPECT_EQ(selected, plain + 1);
  EXPECT_EQ(selected_xfers, 1u);
}

INSTANTIATE_TEST_SUITE_P(Modes, ParamsTrace, ::testing::Values("ptrace", "preload"),
                         [](const auto& info) { return info.param; });

// A changed byte behind a pointer shows in `decode` (the decoded element) and in `ab` (a
// different_parameters divergence naming the member), recorded in either mode.
TEST_P(ParamsTrace, ChangedByteBehindAPointerShowsInDecodeAndAb) {
  std::string dev = make_fake_devices("params-diff-" + mode());
  std::string vf = write_temp("params-diff-version", kR580.line + "\n");
  std::string a = temp_dir() + "/params-diff-a-" + mode() + ".jsonl";
  RunResult r = run({"/usr/bin/env", "CUDATOOL_DRIVER_VERSION_FILE=" + vf, cudatool_bin(), "trace",
                     "--mode", mode(), "-q", "-o", a, "--devices", dev + "/*", "--",
                     fixtures_dir() + "/nv_params", dev, fixture_mode()});
  ASSERT_EQ(r.status, 0) << r.err;
  // B: element 3 of the first GR info list (5 elements: index 1..5; data answered 0x1001..0x1005
  // by the fake kernel in preload mode, left as the program wrote it under ptrace) reads with
  // its low byte's bit 6 flipped after the call.
  std::string text = read_file(a), b_text;
  uint64_t seq = 0, old_data = 0, new_data = 0;
  bool changed = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (!changed && j.is_object() && j.contains("nested")) {
      for (json& n : j["nested"]) {
        if (n["role"] == "params.grInfoList" && n["size"] == 40) {
          std::string post = n["post"];
          if (mode() == "preload") {
            ASSERT_EQ(post.substr(3 * 16 + 8, 8), "04100000") << post;
          }
          for (int k = 3; k >= 0; --k) {
            old_data = old_data << 8 | std::stoul(post.substr(3 * 16 + 8 + 2 * k, 2), nullptr, 16);
          }
          new_data = old_data ^ 0x40;
          post.replace(3 * 16 + 8, 2, fmt::format("{:02x}", new_data & 0xff));
          n["post"] = post;
          seq = j["seq"];
          changed = true;
          line = j.dump();
          break;
        }
      }
    }
    b_text += line + "\n";
  }
  ASSERT_TRUE(changed);
  std::string b = write_temp("params-diff-b-" + mode() + ".jsonl", b_text);
  std::string filter = "seq=" + std::to_string(seq);
  RunResult da = run({cudatool_bin(), "decode", a, "--filter", filter});
  RunResult db = run({cudatool_bin(), "decode", b, "--filter", filter});
  ASSERT_EQ(da.status, 0) << da.err;
  ASSERT_EQ(db.status, 0) << db.err;
  if (mode() == "preload") {
    EXPECT_NE(da.out.find("params.grInfoList=[{index=0x1 data=0x1001}, {index=0x2 data=0x1002}, "
                          "{index=0x3 data=0x1003}, {index=0x4 data=0x1004}, {index=0x5 "
                          "data=0x1005}]"),
              std::string::npos)
        << da.out;
  }
  std::string old_el = fmt::format("{{index=0x4 data={:#x}}}", old_data);
  std::string new_el = fmt::format("{{index=0x4 data={:#x}}}", new_data);
  EXPECT_NE(da.out.find(old_el), std::string::npos) << old_el << "\n" << da.out;
  EXPECT_NE(db.out.find(new_el), std::string::npos) << new_el << "\n" << db.out;
  EXPECT_EQ(db.out.find(old_el), std::string::npos) << db.out;
  // The JSON twin names the element type.
  RunResult dj = run({cudatool_bin(), "decode", a, "--filter", filter, "--json"});
  ASSERT_EQ(dj.status, 0) << dj.err;
  EXPECT_NE(dj.out.find("\"role\":\"params.grInfoList\",\"struct\":\"NV2080_CTRL_GR_INFO\""),
            std::string::npos)
      << dj.out;

  RunResult same = run({cudatool_bin(), "ab", a, a, "--json"});
  EXPECT_EQ(same.status, 0) << same.out << same.err;
  RunResult ab = run({cudatool_bin(), "ab", a, b, "--json", "--all"});
  ASSERT_EQ(ab.status, 1) << ab.out << ab.err;
  json report = json::parse(ab.out);
  bool found = false;
  for (const json& d : report["divergences"]) {
    if (d["kind"] != "different_parameters") continue;
    for (const json& f : d["fields"]) {
      if (f["field"] == "params.grInfoList[3].data") {
        found = true;
        EXPECT_EQ(f["side"], "out");
        EXPECT_EQ(f["a"], fmt::format("{:#x}", old_data));
        EXPECT_EQ(f["b"], fmt::format("{:#x}", new_data));
      }
    }
  }
  EXPECT_TRUE(found) << ab.out;
  EXPECT_EQ(report["counts"]["different_parameters"], 1) << ab.out;
}

}  // namespace
}  // namespace cudatool::test
