// The replay layer's pure logic: --inject specs, ddmin, the answer table built from a trace
// (identities, the bytes written back, injections, synthesized outputs) and the shims' log.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "base/bytes.hpp"
#include "record/shim_abi/replay_abi.h"
#include "replay/answers.hpp"
#include "replay/bisect.hpp"
#include "replay/environment.hpp"
#include "replay/inject.hpp"
#include "replay/replay_log.hpp"
#include "rm/tables.hpp"
#include "rm_synth.hpp"
#include "trace/trace_json.hpp"

namespace cudatool::replay {
namespace {

TEST(ReplayInject, ParsesTheSpecsOfTheDocs) {
  auto a = parse_injection("seq=44,status=0x56");
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->seq, 44u);
  EXPECT_EQ(a->status, "0x56");
  auto b = parse_injection("cmd=NV2080_CTRL_CMD_FB_GET_INFO_V2,nth=1,status=NV_ERR_NOT_SUPPORTED");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->cmd, "NV2080_CTRL_CMD_FB_GET_INFO_V2");
  EXPECT_EQ(b->nth, 1u);
  auto c = parse_injection("seq=66,member=params.grInfoList[3].data,value=0");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->member, "params.grInfoList[3].data");
  EXPECT_EQ(c->value, 0u);
  auto d = parse_injection("call=mmap,nth=2,errno=ENOMEM");
  ASSERT_TRUE(d);
  EXPECT_EQ(parse_errno(d->err), ENOMEM);
  auto e = parse_injection("seq=3,ret=-1");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->ret, -1);
}

TEST(ReplayInject, RejectsBadSpecsWithTheReason) {
  struct Case {
    const char* spec;
    const char* reason;
  } cases[] = {
      {"", "empty"},
      {"seq=x,status=1", "'x' is not a number"},
      {"status=1", "no selector"},
      {"seq=1", "no effect"},
      {"seq=1,cmd=2,status=1", "one selector"},
      {"seq=1,status=1,errno=EIO", "one effect"},
      {"seq=1,member=params.x", "needs value="},
      {"seq=1,value=3,status=1", "belongs to member="},
      {"seq=1,nth=2,status=1", "selects among"},
      {"cmd=1,nth=0,status=1", "counts from 1"},
      {"seq=1,errno=EWHAT", "neither an errno"},
      {"seq=1,,status=1", "empty item"},
      {"seq=1,status", "key=value"},
      {"seq=1,colour=red", "unknown key"},
      {"seq=1,seq=2,status=1", "given twice"},
  };
  for (const Case& c : cases) {
    auto r = parse_injection(c.spec);
    ASSERT_FALSE(r) << c.spec;
    EXPECT_NE(r.error().message().find(c.reason), std::string::npos)
        << c.spec << ": " << r.error().message();
  }
}

TEST(ReplayBisect, DdminFindsAPlantedCulpritAndNothingMore) {
  for (std::set<uint32_t> culprit :
       std::vector<std::set<uint32_t>>{{17}, {3, 41}, {0, 9, 23, 60}, {5, 6, 7, 8}}) {
    uint32_t tries = 0;
    auto fails = [&](const std::vector<uint32_t>& s) {
      ++tries;
      std::set<uint32_t> in(s.begin(), s.end());
      for (uint32_t c : culprit) {
        if (in.count(c) == 0) return false;
      }
      return true;
    };
    std::vector<uint32_t> got = ddmin(64, fails);
    EXPECT_EQ(std::set<uint32_t>(got.begin(), got.end()), culprit);
    EXPECT_LT(tries, 200u) << "ddmin of " << culprit.size() << " culprits took " << tries;
  }
}

// A small trace: a client allocation (the kernel picks the handle), an RM control whose
// parameters come back changed in two places, a UVM call, an mmap.
trace::Event ioctl(uint64_t seq, const std::string& path, uint32_t req, std::vector<uint8_t> pre,
                   std::vector<uint8_t> post) {
  trace::Event e;
  e.seq = seq;
  e.pid = e.tid = 100;
  e.sys = trace::Sys::kIoctl;
  e.fd = 3;
  e.path = path;
  e.request = req;
  trace::Buffer b;
  b.role = "arg";
  b.addr = 0x7ffd0000;
  b.size = pre.size();
  b.before = std::move(pre);
  b.after = std::move(post);
  e.arg = b;
  return e;
}

// A recording (preload mode; of driver 580.159.04 unless told otherwise) that starts with the open
// of nvidiactl (fd 3); trace_text writes it as the trace writer writes (trace_json.cpp), for the
// recording loader.
std::vector<trace::Event> opened_nvidiactl() {
  trace::Event open;
  open.seq = 0;
  open.pid = open.tid = 100;
  open.sys = trace::Sys::kOpen;
  open.path = "/dev/nvidiactl";
  open.ret = 3;
  return {open};
}

std::string trace_text(const std::vector<trace::Event>& ev,
                       std::optional<std::string> driver_version = "580.159.04",
                       std::string mode = "preload") {
  trace::Header h;
  h.driver_version = std::move(driver_version);
  h.mode = std::move(mode);
  h.devices = "/dev/nvidia*";
  std::string out;
  trace::append_header_line(out, h);
  for (const trace::Event& e : ev) trace::append_event_line(out, e);
  return out;
}

// NV_ESC_RM_CONTROL NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION (0x101) with 40 bytes of params at
// 0x7ffd1000 (the three string pointers 0x7ffd2000, 0x7ffd3000, 0x7ffd4000); changelistNumber
// comes back `changelist`.
trace::Event build_version_call(uint64_t seq, uint32_t changelist) {
  std::vector<uint8_t> c(32, 0);
  store_le<uint32_t>(c.data() + 0, 0xc1d00001);
  store_le<uint32_t>(c.data() + 4, 0xc1d00001);
  store_le<uint32_t>(c.data() + 8, 0x101);
  store_le<uint64_t>(c.data() + 16, 0x7ffd1000);
  store_le<uint32_t>(c.data() + 24, 40);
  trace::Event ctl = ioctl(seq, "/dev/nvidiactl", 0xc020462a, c, c);
  trace::Buffer p;
  p.role = "params";
  p.addr = 0x7ffd1000;
  p.size = 40;
  p.before.assign(40, 0);
  store_le<uint32_t>(p.before.data(), 64);               // sizeOfStrings
  store_le<uint64_t>(p.before.data() + 8, 0x7ffd2000);   // pDriverVersionBuffer
  store_le<uint64_t>(p.before.data() + 16, 0x7ffd3000);  // pVersionBuffer
  store_le<uint64_t>(p.before.data() + 24, 0x7ffd4000);  // pTitleBuffer
  p.after = p.before;
  store_le<uint32_t>(p.after.data() + 32, changelist);  // changelistNumber
  store_le<uint32_t>(p.after.data() + 36, 0x5678);
  ctl.nested.push_back(p);
  return ctl;
}

std::string small_trace(bool with_members,
                        std::optional<std::string> driver_version = "580.159.04") {
  std::vector<trace::Event> ev = opened_nvidiactl();
  // NV_ESC_RM_ALLOC (NVOS21) of NV01_ROOT_CLIENT (0x41): hObjectNew comes back 0xc1d00001.
  std::vector<uint8_t> pre(32, 0), post(32, 0);
  store_le<uint32_t>(pre.data() + 12, 0x41);
  post = pre;
  store_le<uint32_t>(post.data() + 8, 0xc1d00001);
  ev.push_back(ioctl(1, "/dev/nvidiactl", 0xc020462b, pre, post));
  trace::Event ctl = build_version_call(2, 0x1234);
  if (with_members) {
    trace::Buffer m;
    m.role = "params.pDriverVersionBuffer";
    m.addr = 0x7ffd2000;
    m.size = 64;
    m.before.assign(64, 0);
    m.after = m.before;
    std::memcpy(m.after.data(), "580.159.04", 10);
    ctl.nested.push_back(m);
  }
  ev.push_back(ctl);
  trace::Event mm;
  mm.seq = 3;
  mm.pid = mm.tid = 100;
  mm.sys = trace::Sys::kMmap;
  mm.fd = 3;
  mm.path = "/dev/nvidiactl";
  mm.len = 4096;
  mm.ret = 0x7f0000000000;
  ev.push_back(mm);
  return trace_text(ev, std::move(driver_version));
}

struct TableView {
  const rp_table* t;
  explicit TableView(const std::vector<uint8_t>& b)
      : t(reinterpret_cast<const rp_table*>(b.data())) {}
  const rp_event& event(uint32_t i) const {
    return reinterpret_cast<const rp_event*>(reinterpret_cast<const uint8_t*>(t) +
                                             t->off_events)[i];
  }
  const rp_patch& patch(uint32_t i) const {
    return reinterpret_cast<const rp_patch*>(reinterpret_cast<const uint8_t*>(t) +
                                             t->off_patches)[i];
  }
  const uint8_t* blob() const { return reinterpret_cast<const uint8_t*>(t) + t->off_blob; }
};

TEST(ReplayAnswers, WritesBackOnlyTheChangedBytes) {
  auto rec = recording_from_memory(small_trace(true), "small.jsonl");
  ASSERT_TRUE(rec) << rec.error().message();
  auto table = build_answer_table(*rec, {});
  ASSERT_TRUE(table) << table.error().message();
  ASSERT_EQ(table->calls.size(), 4u);
  TableView v(table->bytes);
  EXPECT_EQ(v.t->magic, RP_TABLE_MAGIC);
  EXPECT_EQ(v.t->size, table->bytes.size());
  // The client allocation: identity by class, parent 0; answer: the 4 bytes of hObjectNew.
  const rp_event& alloc = v.event(1);
  EXPECT_EQ(alloc.id.sys, RP_IOCTL);
  EXPECT_EQ(alloc.id.nr, 0x2bu);
  EXPECT_EQ(alloc.id.cls, 0x41u);
  EXPECT_EQ(alloc.h_new, 0u);
  // Answer: the bytes of hObjectNew (0xc1d00001 at 8) that differ from the call's 0: 8, 10, 11.
  std::set<uint32_t> alloc_written;
  uint8_t applied[32] = {};
  for (uint32_t i = 0; i < alloc.patch_count; ++i) {
    const rp_patch& p = v.patch(alloc.patch_first + i);
    EXPECT_EQ(p.buf, RP_BUF_ARG);
    for (uint32_t k = 0; k < p.len && p.off + k < sizeof applied; ++k) {
      alloc_written.insert(p.off + k);
      applied[p.off + k] = v.blob()[p.data + k];
    }
  }
  EXPECT_EQ(alloc_written, (std::set<uint32_t>{8, 10, 11}));
  EXPECT_EQ(load_le<uint32_t>(applied + 8), 0xc1d00001u);
  // The control: identity by command and handles; answer: params bytes 32..39 and the member.
  const rp_event& ctl = v.event(2);
  EXPECT_EQ(ctl.id.cmd, 0x101u);
  EXPECT_EQ(ctl.id.h_client, 0xc1d00001u);
  EXPECT_EQ(ctl.id.h_obj, 0xc1d00001u);
  bool params = false, member = false;
  std::string patches;  // for the failure message
  std::set<uint32_t> params_written;
  for (uint32_t i = 0; i < ctl.patch_count; ++i) {
    const rp_patch& q = v.patch(ctl.patch_first + i);
    patches += " buf " + std::to_string(q.buf) + " off " + std::to_string(q.off) + " len " +
               std::to_string(q.len) + ";";
    if (q.buf == RP_BUF_PARAMS) {
      for (uint32_t k = 0; k < q.len; ++k) params_written.insert(q.off + k);
    } else if (q.buf == RP_BUF_MEMBER) {
      member = q.parent == RP_BUF_PARAMS && q.ptr_off == 8 && q.off == 0 && q.len == 10 &&
               q.bufsize == 64 && std::memcmp(v.blob() + q.data, "580.159.04", 10) == 0;
    }
  }
  // changelistNumber 0x1234, 0x5678 at 32 and 36: the bytes that changed are 32, 33, 36, 37 (the
  // high bytes stay 0).
  params = params_written == std::set<uint32_t>{32, 33, 36, 37};
  EXPECT_TRUE(params) << patches;
  EXPECT_TRUE(member) << patches;
  EXPECT_TRUE(table->synthesized.empty()) << "the trace holds the strings";
}

TEST(ReplayAnswers, SynthesizesTheBuildVersionStringsATraceLacks) {
  auto rec = recording_from_memory(small_trace(false), "small.jsonl");
  ASSERT_TRUE(rec);
  auto table = build_answer_table(*rec, {});
  ASSERT_TRUE(table);
  ASSERT_EQ(table->synthesized.size(), 1u);
  EXPECT_NE(table->synthesized[0].find("580.159.04"), std::string::npos);
  EXPECT_TRUE(table->calls[2].synthesized);
  TableView v(table->bytes);
  const rp_event& ctl = v.event(2);
  std::set<uint32_t> ptrs;
  for (uint32_t i = 0; i < ctl.patch_count; ++i) {
    const rp_patch& q = v.patch(ctl.patch_first + i);
    if (q.buf != RP_BUF_MEMBER) continue;
    ptrs.insert(q.ptr_off);
    std::string s(reinterpret_cast<const char*>(v.blob() + q.data), q.len);
    EXPECT_NE(s.find("580.159.04"), std::string::npos) << s;
    EXPECT_EQ(s.back(), '\0');
  }
  // pDriverVersionBuffer, pVersionBuffer, pTitleBuffer
  // (NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS)
  EXPECT_EQ(ptrs, (std::set<uint32_t>{8, 16, 24}));
}

TEST(ReplayAnswers, SaysWhenTheBuildVersionStringsCannotBeMade) {
  // An imported capture without --driver-version: neither the strings nor a version to make
  // them from. The report says so (libcuda will see empty strings), and nothing is written.
  auto rec = recording_from_memory(small_trace(false, std::nullopt), "small.jsonl");
  ASSERT_TRUE(rec) << rec.error().message();
  auto table = build_answer_table(*rec, {});
  ASSERT_TRUE(table) << table.error().message();
  EXPECT_TRUE(table->synthesized.empty());
  EXPECT_FALSE(table->calls[2].synthesized);
  std::string said;
  for (const std::string& g : table->gaps) said += g + "\n";
  EXPECT_NE(said.find("seq 2 NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION"), std::string::npos) << said;
  EXPECT_NE(said.find("--driver-version"), std::string::npos) << said;
  TableView v(table->bytes);
  const rp_event& ctl = v.event(2);
  for (uint32_t i = 0; i < ctl.patch_count; ++i) {
    EXPECT_NE(v.patch(ctl.patch_first + i).buf, RP_BUF_MEMBER);
  }
  // With the strings in the trace, nothing is missing, version or not.
  auto whole = recording_from_memory(small_trace(true, std::nullopt), "small.jsonl");
  ASSERT_TRUE(whole);
  auto t2 = build_answer_table(*whole, {});
  ASSERT_TRUE(t2);
  for (const std::string& g : t2->gaps) EXPECT_EQ(g.find("BUILD_VERSION"), std::string::npos) << g;
}

TEST(ReplayAnswers, InjectionsLandOnTheNamedBytes) {
  auto rec = recording_from_memory(small_trace(true), "small.jsonl");
  ASSERT_TRUE(rec);
  TableOptions o;
  for (const char* spec :
       {"seq=2,status=NV_ERR_NOT_SUPPORTED", "seq=1,member=arg.hClass,value=0x1",
        "call=mmap,errno=ENOMEM", "seq=2,member=params.pDriverVersionBuffer+0x4,value=7"}) {
    auto inj = parse_injection(spec);
    ASSERT_TRUE(inj) << spec;
    o.injections.push_back(*inj);
  }
  auto table = build_answer_table(*rec, o);
  ASSERT_TRUE(table) << table.error().message();
  EXPECT_EQ(table->injected.size(), 4u);
  TableView v(table->bytes);
  // status: the NVOS54 status member, offset 28 of the argument, last patch of the event.
  const rp_event& ctl = v.event(2);
  EXPECT_TRUE(ctl.flags & RP_EVF_INJECTED);
  bool status = false, member = false;
  for (uint32_t i = 0; i < ctl.patch_count; ++i) {
    const rp_patch& q = v.patch(ctl.patch_first + i);
    if (q.buf == RP_BUF_ARG && q.off == 28 && q.len == 4) {
      status = load_le<uint32_t>(v.blob() + q.data) == 0x56;
    }
    if (q.buf == RP_BUF_MEMBER && q.off == 4 && q.len == 4 && q.ptr_off == 8) {
      member = load_le<uint32_t>(v.blob() + q.data) == 7;
    }
  }
  EXPECT_TRUE(status);
  EXPECT_TRUE(member);
  const rp_event& alloc = v.event(1);
  const rp_patch& cls = v.patch(alloc.patch_first + alloc.patch_count - 1);
  EXPECT_EQ(cls.off, 12u);  // NVOS21.hClass
  EXPECT_EQ(load_le<uint32_t>(v.blob() + cls.data), 1u);
  const rp_event& mm = v.event(3);
  EXPECT_EQ(mm.ret, -1);
  EXPECT_EQ(mm.err, ENOMEM);
  // Selectors that match nothing, and effects that do not apply, are errors.
  for (const char* spec : {"seq=99,status=1", "cmd=NV2080_CTRL_CMD_FB_GET_INFO_V2,status=1",
                           "cmd=NO_SUCH_CONTROL,status=1", "call=mmap,status=1",
                           "seq=2,member=params.noSuchMember,value=1",
                           "seq=2,member=params.pVersionBuffer[1],value=1"}) {
    TableOptions bad;
    bad.injections.push_back(*parse_injection(spec));
    auto t = build_answer_table(*rec, bad);
    EXPECT_FALSE(t) << spec;
  }
}

// An element of a buffer behind a pointer member, by the element type of the pointer rule RM
// copies it by: params.grInfoList[3].data of NV2080_CTRL_CMD_GR_GET_INFO. Offsets from the r580
// tables (NV2080_CTRL_GR_GET_INFO_PARAMS, NV2080_CTRL_GR_INFO), not typed here.
TEST(ReplayAnswers, AMemberOfAnElementBehindAPointerIsInjected) {
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  const rm::StructEntry* ps = t.find_struct("NV2080_CTRL_GR_GET_INFO_PARAMS");
  const rm::StructEntry* es = t.find_struct("NV2080_CTRL_GR_INFO");
  ASSERT_NE(ps, nullptr);
  ASSERT_NE(es, nullptr);
  const rm::FieldEntry* count = t.find_field(*ps, "grInfoListSize");
  const rm::FieldEntry* list = t.find_field(*ps, "grInfoList");
  const rm::FieldEntry* data = t.find_field(*es, "data");
  ASSERT_TRUE(count && list && data);
  uint32_t cmd = 0;
  for (const rm::CtrlEntry& c : t.controls()) {
    if (c.name == "NV2080_CTRL_CMD_GR_GET_INFO") cmd = c.id;
  }
  ASSERT_NE(cmd, 0u);
  std::vector<trace::Event> ev = opened_nvidiactl();
  std::vector<uint8_t> a(32, 0);
  store_le<uint32_t>(a.data() + 0, 0xc1d00001);
  store_le<uint32_t>(a.data() + 4, 0x5c000003);
  store_le<uint32_t>(a.data() + 8, cmd);
  store_le<uint64_t>(a.data() + 16, 0x7ffd1000);
  store_le<uint32_t>(a.data() + 24, static_cast<uint32_t>(ps->size));
  trace::Event ctl = ioctl(1, "/dev/nvidiactl", 0xc020462a, a, a);
  trace::Buffer p;
  p.role = "params";
  p.addr = 0x7ffd1000;
  p.size = static_cast<uint64_t>(ps->size);
  p.before.assign(p.size, 0);
  store_le<uint32_t>(p.before.data() + count->offset, 4);
  store_le<uint64_t>(p.before.data() + list->offset, 0x7ffd2000);
  p.after = p.before;
  ctl.nested.push_back(p);
  trace::Buffer l;
  l.role = "params.grInfoList";
  l.addr = 0x7ffd2000;
  l.size = 4 * static_cast<uint64_t>(es->size);
  l.before.assign(l.size, 0);
  l.after = l.before;
  ctl.nested.push_back(l);
  ev.push_back(ctl);
  auto rec = recording_from_memory(trace_text(ev), "gr.jsonl");
  ASSERT_TRUE(rec) << rec.error().message();
  TableOptions o;
  o.injections.push_back(*parse_injection("seq=1,member=params.grInfoList[3].data,value=0x77"));
  auto table = build_answer_table(*rec, o);
  ASSERT_TRUE(table) << table.error().message();
  TableView v(table->bytes);
  const rp_event& e = v.event(1);
  bool found = false;
  for (uint32_t i = 0; i < e.patch_count; ++i) {
    const rp_patch& q = v.patch(e.patch_first + i);
    if (q.buf == RP_BUF_MEMBER && q.ptr_off == list->offset &&
        q.off == 3 * static_cast<uint32_t>(es->size) + data->offset && q.len == 4) {
      found = load_le<uint32_t>(v.blob() + q.data) == 0x77;
    }
  }
  EXPECT_TRUE(found) << "no 4-byte patch of element 3's data behind grInfoList";
  // Past the recorded elements, or an index into a buffer of bytes: errors that say why.
  for (auto [spec, why] :
       {std::pair{"seq=1,member=params.grInfoList[4].data,value=1", "holds 4 NV2080_CTRL_GR_INFO"},
        {"seq=1,member=params.grInfoList[1].nope,value=1", "no member 'nope'"},
        // Bytes past what the recording holds (the shim would write none of them), and a value
        // wider than the member (it would be cut): refused, not reported as made.
        {"seq=1,member=params+0x100000,value=1", "the recording holds"},
        {"seq=1,member=params.grInfoList[3].data,value=0x1ffffffff", "does not fit"}}) {
    TableOptions bad;
    bad.injections.push_back(*parse_injection(spec));
    auto r = build_answer_table(*rec, bad);
    ASSERT_FALSE(r) << spec;
    EXPECT_NE(r.error().message().find(why), std::string::npos) << r.error().message();
  }
}

// Bisect's candidates are BAD's answers that differ from GOOD's in what both recordings hold:
// GOOD an imported capture (no class-sized alloc parameters, no buffers behind pointers), BAD a
// recording with both — only the control whose output BAD changed is a candidate, not the
// alloc whose parameters the capture lacks. Two recordings: that alloc's differing parameters
// count too.
TEST(ReplayBisect, OnlyWhatBothRecordingsHoldIsACandidate) {
  auto run = [](bool recorded, uint32_t changelist, uint8_t alloc_out) {
    std::vector<trace::Event> ev = opened_nvidiactl();
    // NV_ESC_RM_ALLOC (NVOS21) of NV01_DEVICE_0 with pAllocParms and paramsSize 0.
    std::vector<uint8_t> a(32, 0);
    store_le<uint32_t>(a.data() + 0, 0xc1d00001);
    store_le<uint32_t>(a.data() + 4, 0xc1d00001);
    store_le<uint32_t>(a.data() + 8, 0x5c000001);
    store_le<uint32_t>(a.data() + 12, 0x80);
    store_le<uint64_t>(a.data() + 16, 0x7ffd5000);
    trace::Event alloc = ioctl(1, "/dev/nvidiactl", 0xc020462b, a, a);
    if (recorded) {
      trace::Buffer p;
      p.role = "params";
      p.addr = 0x7ffd5000;
      p.size = 8;
      p.sized_by = "class";
      p.before.assign(8, 0);
      p.after.assign(8, alloc_out);
      alloc.nested.push_back(p);
    }
    ev.push_back(alloc);
    ev.push_back(build_version_call(2, changelist));
    return trace_text(ev, "580.159.04", recorded ? "ptrace" : "import");
  };
  auto good = recording_from_memory(run(false, 0x1234, 0), "good.jsonl");
  auto bad = recording_from_memory(run(true, 0x9999, 7), "bad.jsonl");
  ASSERT_TRUE(good && bad);
  std::vector<AnswerDiff> d = differing_answers(*good, *bad);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].good_seq, 2u);
  EXPECT_NE(d[0].change.find("0x9999"), std::string::npos) << d[0].change;
  // Two recordings: the alloc's parameters differ as well.
  auto good2 = recording_from_memory(run(true, 0x1234, 0), "good2.jsonl");
  ASSERT_TRUE(good2);
  std::vector<AnswerDiff> d2 = differing_answers(*good2, *bad);
  ASSERT_EQ(d2.size(), 2u);
  EXPECT_EQ(d2[0].good_seq, 1u);
}

// The recorded machine's memory block size reaches the replayed program: libcuda reads
// /sys/devices/system/memory/block_size_bytes and passes it on as NV_ESC_SYS_PARAMS.memblock_size,
// so the environment answers the file with the recorded call's value (as the kernel prints it)
// and the report says so; a recording without that call leaves the host's file alone.
TEST(ReplayEnvironment, AnswersTheMemoryBlockSizeTheRecordedCallPassedOn) {
  namespace synth = rm::synth;
  const rm::EscapeEntry* esc = nullptr;
  for (const rm::EscapeEntry& e : synth::tables().escapes()) {
    if (e.name == "NV_ESC_SYS_PARAMS") esc = &e;
  }
  ASSERT_NE(esc, nullptr);
  std::vector<uint8_t> arg = synth::make(esc->type, {{"memblock_size", 0x40000000}});
  std::vector<trace::Event> ev = opened_nvidiactl();
  ev.push_back(ioctl(1, "/dev/nvidiactl", synth::rm_request(esc->nr, arg.size()), arg, arg));
  auto rec = recording_from_memory(trace_text(ev), "sys.jsonl");
  ASSERT_TRUE(rec) << rec.error().message();
  std::string base = ::testing::TempDir() + "replay-env-" + std::to_string(getpid());
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  auto env = build_environment(*rec, base + "/root");
  ASSERT_TRUE(env) << env.error().message();
  std::ifstream f(base + "/root" + kMemblockPath);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text.str(), "40000000\n");
  EXPECT_NE(env->globs.find(kMemblockPath), std::string::npos) << env->globs;
  ASSERT_EQ(env->synthesized.size(), 1u);
  EXPECT_NE(env->synthesized[0].find("seq 1 NV_ESC_SYS_PARAMS"), std::string::npos);
  EXPECT_NE(env->synthesized[0].find("memblock_size 0x40000000"), std::string::npos);

  auto plain = recording_from_memory(trace_text(opened_nvidiactl()), "plain.jsonl");
  ASSERT_TRUE(plain) << plain.error().message();
  auto none = build_environment(*plain, base + "/root2");
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_FALSE(std::filesystem::exists(base + "/root2" + kMemblockPath));
  EXPECT_EQ(none->globs.find(kMemblockPath), std::string::npos) << none->globs;
  EXPECT_TRUE(none->synthesized.empty());
  std::filesystem::remove_all(base);
}

TEST(ReplayLog, ReadsRecordsAndStopsAtDamage) {
  std::vector<uint8_t> img(4096, 0);
  rp_log_head h{RP_LOG_MAGIC, 64, img.size(), 0};
  std::memcpy(img.data(), &h, sizeof h);
  auto put = [&](uint64_t off, uint32_t sys, uint64_t seq, uint32_t nbufs,
                 const std::vector<uint8_t>& pre) -> uint64_t {
    rp_log_rec r{};
    uint64_t buf_bytes = nbufs ? sizeof(rp_log_buf) + ((2 * pre.size() + 7) & ~size_t{7}) : 0;
    r.size = static_cast<uint32_t>(sizeof r + buf_bytes);
    r.sys = sys;
    r.seq = seq;
    r.ret = 0;
    r.nbufs = nbufs;
    std::memcpy(img.data() + off, &r, sizeof r);
    if (nbufs) {
      rp_log_buf b{};
      b.role = RP_BUF_ARG;
      b.size = static_cast<uint32_t>(pre.size());
      b.pre_len = b.post_len = b.size;
      std::memcpy(img.data() + off + sizeof r, &b, sizeof b);
      std::memcpy(img.data() + off + sizeof r + sizeof b, pre.data(), pre.size());
      std::memcpy(img.data() + off + sizeof r + sizeof b + pre.size(), pre.data(), pre.size());
    }
    return off + r.size;
  };
  uint64_t off = put(64, RP_IOCTL, 1, 1, {1, 2, 3, 4, 5});
  off = put(off, RP_OPEN, 0, 0, {});
  uint64_t end = off;
  store_le<uint64_t>(img.data() + 8, end);
  auto log = parse_log(ByteView(img.data(), img.size()));
  ASSERT_TRUE(log);
  ASSERT_EQ(log->records.size(), 2u);
  EXPECT_EQ(log->records[0].sys, static_cast<uint32_t>(RP_OPEN));  // sorted by seq
  ASSERT_EQ(log->records[1].bufs.size(), 1u);
  EXPECT_EQ(log->records[1].bufs[0].pre, (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(log->diagnostics.empty());
  // A buffer that claims more bytes than its record holds: reported, the record dropped.
  store_le<uint32_t>(img.data() + 64 + sizeof(rp_log_rec) + 16, 0x100000);
  auto damaged = parse_log(ByteView(img.data(), img.size()));
  ASSERT_TRUE(damaged);
  EXPECT_EQ(damaged->records.size(), 1u);
  EXPECT_FALSE(damaged->diagnostics.empty());
  // Not a log at all.
  std::vector<uint8_t> zeros(64, 0);
  EXPECT_FALSE(parse_log(ByteView(zeros.data(), zeros.size())));
}

}  // namespace
}  // namespace cudatool::replay
