// `cudatool ab` on the two real captures of tests/data/captures (two runs of one program on an
// H200): equivalent, with zero divergences — while their raw bytes differ in hundreds of calls and
// a single changed status is still reported; each rule of ab/rules.cpp is needed; threads are
// matched by role; drivers and GPUs that differ are said first. Expected values come from the
// captures' own events (the trace reader), the driver tables and the decoder (rm/), not from ab/.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "ab/compare.hpp"
#include "ab/rules.hpp"
#include "ab_support.hpp"
#include "base/bytes.hpp"
#include "harness.hpp"
#include "trace/decode.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// The first RM control (NV_ESC_RM_CONTROL) at or after `from` whose status the decoder reads.
uint32_t control_at(const std::vector<trace::Event>& ev, uint32_t from) {
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  for (uint32_t k = from; k < ev.size(); ++k) {
    trace::Decoded d = trace::decode_event(t, ev[k]);
    if (d.call == "NV_ESC_RM_CONTROL" && d.status && *d.status == 0) return k;
  }
  ADD_FAILURE() << "no RM control after " << from;
  return 0;
}

TEST(AbReal, TwoRunsOfOneProgramAreEquivalent) {
  const AbTrace& a = ab_capture("trace_a.jsonl.xz");
  const AbTrace& b = ab_capture("trace_b.jsonl.xz");
  ASSERT_FALSE(a.events.empty());
  ASSERT_EQ(a.events.size(), b.events.size());
  // What the normalisation has to overcome: the raw argument bytes differ in most calls.
  size_t raw_diff = 0;
  for (size_t i = 0; i < a.events.size(); ++i) {
    const trace::Event& x = a.events[i];
    const trace::Event& y = b.events[i];
    bool d = x.ret != y.ret || x.addr != y.addr || x.tid != y.tid;
    if (x.arg && y.arg) d |= x.arg->before != y.arg->before || x.arg->after != y.arg->after;
    for (size_t k = 0; k < x.nested.size() && k < y.nested.size(); ++k) {
      d |= x.nested[k].before != y.nested[k].before || x.nested[k].after != y.nested[k].after;
    }
    raw_diff += d;
  }
  EXPECT_GT(raw_diff, a.events.size() / 2) << "the two runs should differ in raw values";

  RunResult r = run({cudatool_bin(), "ab", a.path, b.path, "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "cudatool.ab/1");
  EXPECT_TRUE(j["equivalent"].get<bool>());
  for (auto& [kind, n] : j["counts"].items()) EXPECT_EQ(n.get<int>(), 0) << kind;
  EXPECT_TRUE(j["first"].is_null());
  EXPECT_EQ(j["a"]["events"].get<size_t>(), a.events.size());
  EXPECT_EQ(j["b"]["events"].get<size_t>(), b.events.size());
  EXPECT_EQ(j["a"]["driver_version"], "580.159.04");
  EXPECT_TRUE(j["notes"].empty()) << j["notes"].dump();
  // Most of what was recorded is compared; handles, pointers and fds are renamed, not ignored.
  const json& n = j["a"]["normalization"];
  uint64_t compared = n["compared_bytes"], padding = n["padding_bytes"],
           masked = n["masked_by_rule_bytes"];
  EXPECT_GT(compared, 10 * (padding + masked));
  EXPECT_GT(n["handles_renamed"].get<uint64_t>(), 1000u);

  RunResult text = run({cudatool_bin(), "ab", a.path, b.path});
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("equivalent: the " + std::to_string(a.events.size()) + " events"),
            std::string::npos)
      << text.out;
}

TEST(AbReal, OneChangedControlStatusIsReported) {
  const AbTrace& a = ab_capture("trace_a.jsonl.xz");
  const AbTrace& b = ab_capture("trace_b.jsonl.xz");
  ASSERT_FALSE(b.events.empty());
  // B's control nearest the middle fails with NV_ERR_INVALID_ARGUMENT (0x1f, nvstatuscodes.h).
  std::vector<trace::Event> m = b.events;
  uint32_t k = control_at(m, static_cast<uint32_t>(m.size() / 2));
  store_le<uint32_t>(m[k].arg->after.data() + nvos54_status_offset(), 0x1f);
  std::string path = ab_write("ab-b-status.trace", b.header, m);
  RunResult r = run({cudatool_bin(), "ab", a.path, path, "--json"});
  ASSERT_EQ(r.status, 1) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_FALSE(j["equivalent"].get<bool>());
  EXPECT_EQ(j["counts"]["different_status"], 1);
  int total = 0;
  for (auto& [kind, c] : j["counts"].items()) total += c.get<int>();
  EXPECT_EQ(total, 1) << r.out;
  const json& d = j["first"]["divergence"];
  EXPECT_EQ(d["kind"], "different_status");
  EXPECT_EQ(d["a"]["index"], k);
  EXPECT_EQ(d["b"]["index"], k);
  EXPECT_EQ(d["a"]["status_name"], "NV_OK");
  EXPECT_EQ(d["b"]["status_name"], "NV_ERR_INVALID_ARGUMENT");
  // The control is named as the decoder names it.
  trace::Decoded dec = trace::decode_event(rm::tables_for_driver("580.159.04"), m[k]);
  const rm::CtrlEntry* c = rm::tables_for_driver("580.159.04").find_control(*dec.cmd);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(d["b"]["cmd_name"], std::string(c->name));
  bool named = false;
  for (const json& f : d["fields"]) named |= f["field"] == "arg.status" && f["side"] == "out";
  EXPECT_TRUE(named) << d.dump();
  // Context: five calls each side, the divergence marked.
  EXPECT_EQ(j["first"]["context"].size(), 11u);
  EXPECT_TRUE(j["first"]["context"][5]["first"].get<bool>());

  RunResult text = run({cudatool_bin(), "ab", a.path, path, "--context", "2"});
  EXPECT_EQ(text.status, 1);
  EXPECT_NE(text.out.find("first divergence: different status: A #" + std::to_string(k)),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("arg.status (out): NV_OK → NV_ERR_INVALID_ARGUMENT"), std::string::npos);
  EXPECT_NE(text.out.find("context (2 before, 2 after)"), std::string::npos);
}

TEST(AbReal, EachRuleIsNeeded) {
  const AbTrace& a = ab_capture("trace_a.jsonl.xz");
  const AbTrace& b = ab_capture("trace_b.jsonl.xz");
  ab::NormalizeOptions off;
  off.rules = false;
  auto na = ab::normalize_file(a.path, off);
  auto nb = ab::normalize_file(b.path, off);
  ASSERT_TRUE(na && nb);
  ab::Comparison c = ab::compare(**na, **nb);
  EXPECT_FALSE(c.equivalent()) << "without its rules the two runs should differ";
  // Every member that differs is one a rule names, and every rule is met.
  std::set<std::string> seen = members_named_by_rules(c);
  for (const ab::MaskRule& r : ab::mask_rules()) {
    if (r.evidence != ab::RuleEvidence::kCaptures) continue;  // ab_replays_test.cpp
    EXPECT_TRUE(seen.count(std::string(r.structure) + "." + std::string(r.member)))
        << r.structure << "." << r.member << " no longer differs between the runs";
  }
  auto ra = ab::normalize_file(a.path);
  auto rb = ab::normalize_file(b.path);
  EXPECT_TRUE(ab::compare(**ra, **rb).equivalent());
}

TEST(AbReal, ThreadsAreMatchedByRole) {
  const AbTrace& a = ab_capture("trace_a.jsonl.xz");
  const AbTrace& b = ab_capture("trace_b.jsonl.xz");
  // As if UVM calls came from a second thread: in A, thread 2000; in B, thread 4000, and each
  // UVM call completes up to two RM controls later (controls create and free nothing).
  std::vector<trace::Event> ea = a.events, eb = b.events;
  for (auto& e : ea) e.tid = e.path == "/dev/nvidia-uvm" ? 2000 : 1000;
  for (auto& e : eb) e.tid = e.path == "/dev/nvidia-uvm" ? 4000 : 3000;
  size_t moved = 0;
  for (size_t i = 0; i + 2 < eb.size(); ++i) {
    if (eb[i].tid != 4000) continue;
    size_t j = i;
    while (j + 1 < eb.size() && j < i + 2 && eb[j + 1].tid == 3000 &&
           (eb[j + 1].request & 0xffff) == 0x462a) {
      std::swap(eb[j], eb[j + 1]);
      ++j;
    }
    moved += j != i;
    i = j;
  }
  ASSERT_GE(moved, 5u);
  std::string pa = ab_write("ab-threads-a.trace", a.header, ea);
  std::string pb = ab_write("ab-threads-b.trace", b.header, eb);
  RunResult r = run({cudatool_bin(), "ab", pa, pb, "--json"});
  EXPECT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_TRUE(j["equivalent"].get<bool>());
  EXPECT_EQ(j["a"]["threads"], 2);
  EXPECT_EQ(j["b"]["threads"], 2);
}

TEST(AbReal, DifferentDriversAndGpusAreSaidFirst) {
  const AbTrace& a = ab_capture("trace_a.jsonl.xz");
  const AbTrace& b = ab_capture("trace_b.jsonl.xz");
  trace::Header h = b.header;
  h.driver_version = "550.163.01";
  std::string other_driver = ab_write("ab-b-550.trace", h, b.events);
  RunResult r = run({cudatool_bin(), "ab", a.path, other_driver});
  EXPECT_EQ(
      r.out.rfind("warning: the traces come from different drivers: A 580.159.04, B 550.163.01", 0),
      0u)
      << r.out;
  json j = json::parse(run({cudatool_bin(), "ab", a.path, other_driver, "--json"}).out);
  ASSERT_FALSE(j["notes"].empty());
  EXPECT_EQ(j["notes"][0]["what"], "driver");
  EXPECT_TRUE(j["notes"][0]["serious"].get<bool>());

  // Another GPU: the PCI device id NV_ESC_CARD_INFO reports (nv_pci_info_t.device_id).
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  const rm::StructEntry* card = t.find_struct("nv_ioctl_card_info_t");
  const rm::FieldEntry* pci = t.find_field(*card, "pci_info");
  const rm::FieldEntry* dev = t.find_field(*t.find_struct(pci->type), "device_id");
  std::vector<trace::Event> m = b.events;
  int changed = 0;
  for (trace::Event& e : m) {
    trace::Decoded d = trace::decode_event(t, e);
    if (d.call != "NV_ESC_CARD_INFO") continue;
    for (auto* side : {&e.arg->before, &e.arg->after}) {
      if (side->size() >= pci->offset + dev->offset + 2) {
        store_le<uint16_t>(side->data() + pci->offset + dev->offset, 0x2330);  // an H100
        ++changed;
      }
    }
  }
  ASSERT_GT(changed, 0);
  std::string other_gpu = ab_write("ab-b-gpu.trace", b.header, m);
  RunResult g = run({cudatool_bin(), "ab", a.path, other_gpu});
  EXPECT_EQ(g.status, 1);
  EXPECT_EQ(g.out.rfind("warning: the traces come from different GPUs", 0), 0u) << g.out;
  EXPECT_NE(g.out.find("10de:2335"), std::string::npos);
  EXPECT_NE(g.out.find("10de:2330"), std::string::npos);
}

}  // namespace
}  // namespace cudatool::test
