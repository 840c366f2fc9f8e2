// The rules of ab/rules.cpp found by two replays of trace_a against the real libcuda 580
// (RuleEvidence::kReplays; SKIPPED without ../shared/data). With `--aslr` (address-space layout
// randomised, as two runs on a machine are): without the rules the two replays differ exactly in
// the members those rules name, each of them; with the rules they are equivalent at the
// device-call level. By default replay fixes the layout: two replays are then equivalent without
// the rules too.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "ab/compare.hpp"
#include "ab/rules.hpp"
#include "ab_support.hpp"
#include "harness.hpp"
#include "replay_support.hpp"
#include "rm/tables.hpp"
#include "trace/decode.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::test {
namespace {

TEST(AbReplays, EachReplayRuleIsNeeded) {
  DriverBuild build = shared_builds().front();
  CUDATOOL_REQUIRE_BUILD(build);
  std::string dir = temp_dir() + "/ab-replays";
  std::filesystem::create_directories(dir);
  std::string rec = dir + "/trace_a.jsonl";
  RunResult imp = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", rec,
                       "--driver-version", build.version});
  ASSERT_EQ(imp.status, 0) << imp.err;
  std::vector<std::string> out;
  for (const char* name : {"/a.jsonl", "/b.jsonl", "/fixed-a.jsonl", "/fixed-b.jsonl"}) {
    out.push_back(dir + name);
    std::vector<std::string> opts{"--deadline", "60", "-o", out.back()};
    if (out.size() <= 2) opts.push_back("--aslr");
    ReplayRun r = replay(rec, opts, {cuda_probe_bin(), build.lib_path, "ctx"}, 600);
    ASSERT_TRUE(r.report.is_object()) << r.run.err;
  }
  ab::NormalizeOptions off;
  off.rules = false;
  {
    auto fa = ab::normalize_file(out[2], off);
    auto fb = ab::normalize_file(out[3], off);
    ASSERT_TRUE(fa && fb);
    EXPECT_TRUE(ab::compare(**fa, **fb).equivalent()) << "a fixed layout, no rules";
  }
  auto na = ab::normalize_file(out[0], off);
  auto nb = ab::normalize_file(out[1], off);
  ASSERT_TRUE(na && nb);
  ab::Comparison c = ab::compare(**na, **nb);
  std::set<std::string> seen = members_named_by_rules(c);
  // size: the low half of a stack address, different in every layout. caps: its upper 16 bits,
  // which take a few values only (0x7ffc, 0x7ffd …) and may agree between two runs: shown to be
  // the stack's bits instead, equal to pAllocParms >> 32 in each run.
  EXPECT_TRUE(seen.count("NV_GR_ALLOCATION_PARAMETERS.size"));
  for (const std::string& path : {out[0], out[1]}) {
    auto reader = trace::TraceReader::open(path);
    ASSERT_TRUE(static_cast<bool>(reader));
    const rm::Tables& tables = rm::tables_for_driver(build.version);
    trace::Event ev;
    trace::Decoded d;
    size_t checked = 0;
    while ((*reader)->next(ev)) {
      trace::decode_event(tables, ev, d);
      if (d.params_struct != "NV_GR_ALLOCATION_PARAMETERS") continue;
      uint64_t at = 0, caps = 0;
      for (const rm::Field& f : d.args) at = f.name == "pAllocParms" ? f.value : at;
      for (const rm::Field& f : d.params) caps = f.name == "caps" ? f.value : caps;
      EXPECT_EQ(caps, at >> 32) << path << " seq " << ev.seq;
      ++checked;
    }
    EXPECT_GT(checked, 0u) << path;
  }
  for (const ab::MaskRule& r : ab::mask_rules()) {
    if (r.evidence != ab::RuleEvidence::kReplays) continue;
    EXPECT_TRUE(r.structure == "NV_GR_ALLOCATION_PARAMETERS" &&
                (r.member == "size" || r.member == "caps"))
        << r.structure << "." << r.member << ": a replay rule this test does not check";
  }
  auto ra = ab::normalize_file(out[0]);
  auto rb = ab::normalize_file(out[1]);
  ASSERT_TRUE(ra && rb);
  EXPECT_TRUE(ab::compare(**ra, **rb).equivalent());
}

}  // namespace
}  // namespace cudatool::test
