// `cudatool ab` across two machines (issue 32): two recordings of one program made on different
// fake GPUs (tests/fixtures/nvgpu/nv_gpu: a fake kernel answers from its environment, as two
// machines would; preload mode) —
//
//   - UUID, PCI location, gpuId, board id and serial changed consistently in one run: equivalent,
//     each run's GPU named in the header, a note that they differ;
//   - the floorsweeping (each GPC's TPC mask) changed too: the answers are listed without
//     consequence, `first` is null, exit 1;
//   - a status injected on top: `first` is the injected call, the answers before it listed under;
//   - a UUID used inconsistently in one run is still a divergence;
//   - --ignore and --expect hide known differences and say what they hid.
//
// And the identity table itself (ab/identity.cpp), like the rules of ab/rules.cpp: every row
// names a member of the driver branches' tables of the right type, and each is needed — without
// the table, the members that differ between the two machines are exactly its rows, each met.
// Random values are seeded (CUDATOOL_AB_SEED picks another seed, printed with every failure);
// expected texts are made here from the values given to the fixture, not by ab/.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "ab/compare.hpp"
#include "ab/identity.hpp"
#include "ab/verdict.hpp"
#include "harness.hpp"
#include "rm/tables.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

const char kVersionLine[] =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
    "(dvs-builder@U16-I1-N07-12-3)  Thu Jan  1 00:00:00 UTC 2026";

// What a machine's GPU answers (nv_gpu's environment); empty: the fixture's default.
struct Machine {
  std::string uuid, uuid_text, pci, serial, board, tpc_masks, fail;
  std::vector<std::string> env() const {
    std::vector<std::string> e;
    auto add = [&](const char* k, const std::string& v) {
      if (!v.empty()) e.push_back(std::string(k) + "=" + v);
    };
    add("NVGPU_UUID", uuid);
    add("NVGPU_UUID_TEXT", uuid_text);
    add("NVGPU_PCI", pci);
    add("NVGPU_SERIAL", serial);
    add("NVGPU_BOARD", board);
    add("NVGPU_TPC_MASKS", tpc_masks);
    add("NVGPU_FAIL", fail);
    return e;
  }
};

// nv_gpu recorded in preload mode on the one fake device directory of this test binary (the
// device paths are part of what is compared), with the 580 branch's version line.
std::string record(const std::string& name, const Machine& m, int expect_status = 0) {
  static const std::string dev = make_fake_devices("ab-identity-dev");
  static const std::string vf = write_temp("ab-identity-version", std::string(kVersionLine) + "\n");
  std::string trace = temp_dir() + "/" + name + ".jsonl";
  std::vector<std::string> cmd{"/usr/bin/env", "CUDATOOL_DRIVER_VERSION_FILE=" + vf};
  for (const std::string& e : m.env()) cmd.push_back(e);
  for (const std::string& a :
       {cudatool_bin(), std::string("trace"), std::string("--mode"), std::string("preload"),
        std::string("-q"), std::string("-o"), trace, std::string("--devices"), dev + "/*",
        std::string("--"), fixtures_dir() + "/nv_gpu", dev}) {
    cmd.push_back(a);
  }
  RunResult r = run(cmd);
  EXPECT_EQ(r.status, expect_status) << name << ": " << r.err << r.out;
  return trace;
}

std::string hex(uint64_t v, int width = 0) {
  char b[32];
  snprintf(b, sizeof b, "%0*llx", width, static_cast<unsigned long long>(v));
  return b;
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" of 32 hex digits (gpu_uuid.c's groups 8-4-4-4-12).
std::string uuid_text(const std::string& digits) {
  return "GPU-" + digits.substr(0, 8) + "-" + digits.substr(8, 4) + "-" + digits.substr(12, 4) +
         "-" + digits.substr(16, 4) + "-" + digits.substr(20);
}

struct Random {
  uint64_t seed;
  std::mt19937_64 rng;
  Random() : seed(initial()), rng(seed) {}
  static uint64_t initial() {
    const char* s = std::getenv("CUDATOOL_AB_SEED");
    return s ? std::strtoull(s, nullptr, 0) : 20261204;
  }
  uint64_t below(uint64_t n) { return rng() % n; }
  // Another machine: every identity value other than the fixture's defaults (0000:00:06.0,
  // board 0x6, …), each part of the PCI location too.
  Machine machine() {
    Machine m;
    for (int i = 0; i < 32; ++i) m.uuid += "0123456789abcdef"[below(16)];
    m.pci = hex(1 + below(0xfffe), 4) + ":" + hex(1 + below(254), 2) + ":" + hex(7 + below(24), 2) +
            "." + hex(1 + below(7));
    for (int i = 0; i < 13; ++i) m.serial += static_cast<char>('0' + below(10));
    m.board = hex(0x10 + below(0xfffff));
    return m;
  }
  // Eight GPCs' TPC masks, each the default 0x1ff or one TPC off; at least one off.
  std::vector<uint32_t> masks() {
    std::vector<uint32_t> m(8, 0x1ff);
    m[below(8)] &= ~(1u << below(9));
    for (uint32_t& x : m) {
      if (below(3) == 0) x &= ~(1u << below(9));
    }
    return m;
  }
};

std::string mask_list(const std::vector<uint32_t>& m) {
  std::string s;
  for (uint32_t x : m) s += (s.empty() ? "" : ",") + hex(x);
  return s;
}

json ab_json(const std::string& a, const std::string& b, int expect,
             const std::vector<std::string>& extra = {}) {
  std::vector<std::string> cmd{cudatool_bin(), "ab", a, b, "--json"};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  RunResult r = run(cmd);
  EXPECT_EQ(r.status, expect) << r.err << r.out.substr(0, 4000);
  json j = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << r.err;
  return j;
}

std::set<std::string> identity_values(const json& trace, const std::string& kind) {
  std::set<std::string> out;
  for (const json& i : trace["identities"]) {
    if (i["kind"] == kind) out.insert(i["value"].get<std::string>());
  }
  return out;
}

const std::string& machine_a() {
  static const std::string a = record("ab-identity-a", Machine{});
  return a;
}

TEST(AbIdentity, OneGpuOnTwoMachinesIsEquivalent) {
  Random rnd;
  const int kIterations = 4;
  for (int it = 0; it < kIterations; ++it) {
    Machine m = rnd.machine();
    SCOPED_TRACE(::testing::Message()
                 << "iteration " << it << ", seed " << rnd.seed << ": " << m.uuid << " " << m.pci
                 << " " << m.serial << " " << m.board);
    std::string b = record("ab-identity-b" + std::to_string(it), m);
    json j = ab_json(machine_a(), b, 0);
    EXPECT_TRUE(j["equivalent"].get<bool>()) << j["first"].dump();
    EXPECT_EQ(identity_values(j["a"], "uuid"),
              std::set<std::string>{uuid_text("5b57e3bf3ef89827e2df30d462191363")});
    EXPECT_EQ(identity_values(j["b"], "uuid"), std::set<std::string>{uuid_text(m.uuid)});
    EXPECT_EQ(identity_values(j["b"], "pci"), std::set<std::string>{m.pci});
    EXPECT_EQ(identity_values(j["b"], "serial"), std::set<std::string>{m.serial});
    EXPECT_EQ(identity_values(j["b"], "board_id"), std::set<std::string>{"0x" + m.board});
    bool noted = false;
    for (const json& n : j["notes"]) noted |= n["what"] == "gpu_identity" && !n["serious"];
    EXPECT_TRUE(noted) << j["notes"].dump();
    if (it == 0) {
      RunResult text = run({cudatool_bin(), "ab", machine_a(), b});
      EXPECT_EQ(text.status, 0);
      EXPECT_NE(text.out.find("   gpu#0: " + uuid_text(m.uuid) + " at " + m.pci), std::string::npos)
          << text.out;
      EXPECT_NE(text.out.find("note: the GPUs differ ("), std::string::npos) << text.out;
      EXPECT_NE(text.out.find("\nequivalent: "), std::string::npos) << text.out;
    }
  }
}

// The struct and member a divergence's field names, walked through the branch's layouts: the
// root is the escape's or UVM call's argument ("arg…") or the control's parameters ("params…").
std::pair<std::string, std::string> resolve(const rm::Tables& t, const ab::NormEvent& e,
                                            const std::string& field) {
  std::string path = field;
  std::string_view root;
  if (path.rfind("params.", 0) == 0 && e.cmd) {
    if (const rm::CtrlEntry* c = t.find_control(*e.cmd)) root = c->params;
    path = path.substr(7);
  } else if (path.rfind("arg", 0) == 0) {
    const rm::UvmEntry* u = t.find_uvm(e.nr);
    const rm::EscapeEntry* x = t.find_escape(e.nr);
    root = e.device == rm::Device::kUvm && u ? u->params : x ? x->type : std::string_view();
    path = path.substr(path.find('.') + 1);
  }
  const rm::StructEntry* s = t.find_struct(root);
  std::string member;
  while (s != nullptr) {
    size_t dot = path.find('.');
    member = path.substr(0, dot);
    member = member.substr(0, member.find('['));
    if (dot == std::string::npos) break;
    const rm::FieldEntry* f = t.find_field(*s, member);
    if (f == nullptr) return {"?", field};
    s = t.find_struct(f->type);
    path = path.substr(dot + 1);
  }
  return {s ? std::string(s->name) : "?", member};
}

// Like AbReal.EachRuleIsNeeded for the mask rules: without the identity table the two machines'
// runs differ in exactly its members, and in every one of them.
TEST(AbIdentity, EachRowOfTheTableIsNeeded) {
  Random rnd;
  Machine m = rnd.machine();
  SCOPED_TRACE(::testing::Message() << "seed " << rnd.seed);
  std::string b = record("ab-identity-rows", m);
  ab::NormalizeOptions off;
  off.identity = false;
  auto na = ab::normalize_file(machine_a(), off);
  auto nb = ab::normalize_file(b, off);
  ASSERT_TRUE(na && nb);
  ab::Comparison c = ab::compare(**na, **nb);
  EXPECT_FALSE(c.equivalent());
  const rm::Tables& t = *(*na)->tables;
  std::set<std::pair<std::string, std::string>> seen;
  for (const ab::Divergence& d : c.divergences) {
    ASSERT_NE(d.a, ab::kNone);
    ASSERT_NE(d.b, ab::kNone) << "another machine makes the same calls";
    for (const ab::FieldDiff& f : d.fields) {
      auto [st, member] = resolve(t, (*na)->events[d.a], f.field);
      EXPECT_NE(ab::find_identity_row(st, member), nullptr)
          << f.field << " (" << st << "." << member << ") differs and no row names it";
      seen.insert({st, member});
    }
  }
  for (const ab::IdentityRow& r : ab::identity_rows()) {
    EXPECT_TRUE(seen.count({std::string(r.structure), std::string(r.member)}))
        << r.structure << "." << r.member << " does not differ between the two machines";
  }
  auto ra = ab::normalize_file(machine_a());
  auto rb = ab::normalize_file(b);
  EXPECT_TRUE(ab::compare(**ra, **rb).equivalent());
}

// Every row names a member of the branches' tables, of a type its kind can hold; the branch of
// the real captures (r580) has them all.
TEST(AbIdentity, EveryRowIsAMemberOfTheBranchTables) {
  for (const rm::Tables& branch : rm::all_branches()) {
    const rm::Tables* t = &branch;
    for (const ab::IdentityRow& r : ab::identity_rows()) {
      SCOPED_TRACE(std::string(t->info().id) + " " + std::string(r.structure) + "." +
                   std::string(r.member));
      const rm::StructEntry* s = t->find_struct(r.structure);
      if (s == nullptr) {
        EXPECT_NE(t->info().id, "r580") << "the captures' branch has every row's structure";
        continue;
      }
      const rm::FieldEntry* f = t->find_field(*s, r.member);
      ASSERT_NE(f, nullptr) << "no such member";
      switch (r.kind) {
        case ab::IdentityKind::kUuid:  // NvU8[16] binary, or room for the text with its NUL
          EXPECT_EQ(f->elem_size, 1u);
          EXPECT_TRUE(f->size == 16 || f->size >= 41) << f->size;
          break;
        case ab::IdentityKind::kSerial:
          EXPECT_EQ(f->elem_size, 1u);
          EXPECT_GE(f->size, 2u);
          break;
        case ab::IdentityKind::kPciLocation:
          EXPECT_EQ(f->size, f->elem_size);
          EXPECT_TRUE(f->size == 1 || f->size == 2 || f->size == 4) << f->size;
          break;
        case ab::IdentityKind::kGpuId:
        case ab::IdentityKind::kBoardId:
          EXPECT_EQ(f->elem_size, 4u);
          break;
      }
    }
  }
}

TEST(AbIdentity, ConfigurationAnswersHaveNoConsequence) {
  Random rnd;
  for (int it = 0; it < 3; ++it) {
    Machine m = rnd.machine();
    std::vector<uint32_t> masks = rnd.masks();
    m.tpc_masks = mask_list(masks);
    SCOPED_TRACE(::testing::Message()
                 << "iteration " << it << ", seed " << rnd.seed << ": masks " << m.tpc_masks);
    std::string b = record("ab-identity-config" + std::to_string(it), m);
    json j = ab_json(machine_a(), b, 1);
    EXPECT_FALSE(j["equivalent"].get<bool>());
    EXPECT_TRUE(j["first"].is_null()) << j["first"].dump();
    std::multiset<std::string> expected, listed;
    for (uint32_t x : masks) {
      if (x != 0x1ff) expected.insert("0x" + hex(x));
    }
    for (const json& d : j["verdict"]["without_consequence"]) {
      EXPECT_EQ(d["a"]["cmd_name"], "NV2080_CTRL_CMD_GR_GET_TPC_MASK") << d.dump();
      ASSERT_EQ(d["fields"].size(), 1u) << d.dump();
      EXPECT_EQ(d["fields"][0]["field"], "params.tpcMask");
      EXPECT_EQ(d["fields"][0]["side"], "out");
      EXPECT_EQ(d["fields"][0]["a"], "0x1ff");
      EXPECT_FALSE(d["consequence"].get<bool>());
      listed.insert(d["fields"][0]["b"].get<std::string>());
    }
    EXPECT_EQ(listed, expected);
    EXPECT_EQ(j["counts"]["different_parameters"], expected.size());
    RunResult text = run({cudatool_bin(), "ab", machine_a(), b});
    EXPECT_EQ(text.status, 1);
    std::string n =
        std::to_string(expected.size()) + (expected.size() == 1 ? " answer" : " answers");
    EXPECT_NE(text.out.find("\nno divergence with consequences: "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("\n" + n + " differed without visible consequence:\n"),
              std::string::npos)
        << text.out;
  }
}

TEST(AbIdentity, AStatusInjectedOnTopIsTheFirstDivergence) {
  Random rnd;
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  // A control nv_gpu makes after the TPC masks (the answers before it listed under it), and
  // three before (the binary GID comes first).
  const uint32_t kAfter = 0x2080013f, kBefore[] = {0x205, 0x21b, 0x2080014a};
  for (int it = 0; it < 4; ++it) {
    Machine m = rnd.machine();
    std::vector<uint32_t> masks = rnd.masks();
    m.tpc_masks = mask_list(masks);
    bool after = it % 2 == 0;
    uint32_t cmd = after ? kAfter : kBefore[rnd.below(3)];
    m.fail = hex(cmd);
    const rm::CtrlEntry* c = t.find_control(cmd);
    ASSERT_NE(c, nullptr);
    SCOPED_TRACE(::testing::Message() << "iteration " << it << ", seed " << rnd.seed << ": "
                                      << c->name << " fails; masks " << m.tpc_masks);
    std::string b = record("ab-identity-fail" + std::to_string(it), m, 1);
    json j = ab_json(machine_a(), b, 1);
    const json& f = j["first"]["divergence"];
    EXPECT_EQ(f["kind"], "different_status") << j["first"].dump();
    EXPECT_EQ(f["a"]["cmd_name"], std::string(c->name));
    EXPECT_EQ(f["b"]["status_name"], "NV_ERR_NOT_SUPPORTED");
    EXPECT_EQ(f["a"]["index"], f["b"]["index"]);
    size_t differing = 0;
    for (uint32_t x : masks) differing += x != 0x1ff;
    const json& quiet = j["verdict"]["without_consequence"];
    EXPECT_EQ(quiet.size(), after ? differing : 0u) << quiet.dump();
    for (const json& d : quiet) EXPECT_LT(d["a"]["index"], f["a"]["index"]);
    EXPECT_EQ(j["verdict"]["b"]["exit_status"], 1);
    if (it == 0) {
      RunResult text = run({cudatool_bin(), "ab", machine_a(), b});
      EXPECT_NE(text.out.find("\nfirst divergence: different status: "), std::string::npos)
          << text.out;
      EXPECT_NE(text.out.find("\nbefore it, " + std::to_string(differing) +
                              (differing == 1 ? " answer" : " answers") +
                              " differed without visible consequence:\n"),
                std::string::npos)
          << text.out;
      // The page shows the same verdict.
      std::string page = temp_dir() + "/ab-identity-fail.html";
      RunResult h = run({cudatool_bin(), "ab", machine_a(), b, "--html", page});
      EXPECT_EQ(h.status, 1) << h.err;
      EXPECT_NE(read_file(page).find("differed without visible consequence:"), std::string::npos);
    }
  }
}

TEST(AbIdentity, AUuidUsedInconsistentlyIsStillADivergence) {
  Random rnd;
  Machine m = rnd.machine();
  m.uuid_text = std::string(m.uuid.rbegin(), m.uuid.rend());  // the text answers: another UUID
  std::string b = record("ab-identity-inconsistent", m);
  json j = ab_json(machine_a(), b, 1);
  EXPECT_FALSE(j["equivalent"].get<bool>());
  EXPECT_EQ(identity_values(j["b"], "uuid"),
            (std::set<std::string>{uuid_text(m.uuid), uuid_text(m.uuid_text)}));
  bool named = false;
  json all = ab_json(machine_a(), b, 1, {"--all"});
  for (const json& d : all["divergences"]) {
    for (const json& f : d["fields"]) named |= f["b"] == "B:gpu#1";
  }
  EXPECT_TRUE(named) << "B's second UUID has no counterpart in A";
}

TEST(AbIdentity, KnownDifferencesAreHiddenAndCounted) {
  Random rnd;
  Machine m = rnd.machine();
  std::vector<uint32_t> masks{0x1ff, 0x1bf, 0x1ff, 0x0ff, 0x1ff, 0x1ff, 0x1ff, 0x1ff};
  m.tpc_masks = mask_list(masks);
  std::string b = record("ab-identity-known", m);
  for (const std::string& spec :
       {std::string("NV2080_CTRL_CMD_GR_GET_TPC_MASK"), std::string("tpcMask"),
        std::string("params.tpcMask"), std::string("NV2080_CTRL_CMD_GR_*:params.*Mask")}) {
    json j = ab_json(machine_a(), b, 0, {"--ignore", spec});
    EXPECT_TRUE(j["equivalent"].get<bool>()) << spec;
    ASSERT_EQ(j["known"].size(), 1u);
    EXPECT_EQ(j["known"][0]["hid"], 2) << spec;
    EXPECT_EQ(j["known"][0]["origin"], "--ignore");
  }
  std::string file = write_temp("ab-known.txt",
                                "# the two H200s of the lab\n"
                                "NV2080_CTRL_CMD_GR_GET_TPC_MASK   # floorswept differently\n"
                                "\n"
                                "gpcMask\n");
  RunResult r = run({cudatool_bin(), "ab", machine_a(), b, "--expect", file});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(
      r.out.find("note: known differences hid 2 divergences: NV2080_CTRL_CMD_GR_GET_TPC_MASK (" +
                 file + " line 2): 2 divergences; gpcMask (" + file + " line 4): nothing\n"),
      std::string::npos)
      << r.out;
  // Without them the answers are there; a bad spec or line is bad input.
  EXPECT_EQ(run({cudatool_bin(), "ab", machine_a(), b}).status, 1);
  RunResult bad = run({cudatool_bin(), "ab", machine_a(), b, "--ignore", "tpc mask"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--ignore"), std::string::npos) << bad.err;
  std::string bad_file = write_temp("ab-known-bad.txt", "tpcMask gpcMask\n");
  RunResult bf = run({cudatool_bin(), "ab", machine_a(), b, "--expect", bad_file});
  EXPECT_EQ(bf.status, 2);
  EXPECT_NE(bf.err.find(bad_file + " line 1"), std::string::npos) << bf.err;
}

}  // namespace
}  // namespace cudatool::test
