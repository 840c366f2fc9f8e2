// The in-process function recorder (src/record/funcrec) on the fixture library of
// tests/fixtures/funcrec: the patch plan against objdump's instructions, and a recording of every
// scenario of fr_probe (nesting, recursion, tail calls, longjmp, values in rax/rdx/xmm0, fork,
// a signal handler, threads, exit from inside a call) checked against the fixture's known call
// tree and return values, what the program printed, and the same program run unrecorded. Static
// functions are named by nm on the unstripped library (the recorder sees fn_<address>).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "analysis/patch_plan.hpp"
#include "analysis/xrefs.hpp"
#include "harness.hpp"
#include "record/function_recorder.hpp"
#include "record/function_spool.hpp"
#include "replay_support.hpp"
#include "stacks_support.hpp"
#include "trace/function_calls.hpp"

namespace cudatool::test {
namespace {

using trace::FunctionCall;
using trace::ThreadCalls;

struct Recording {
  RunResult run;
  PatchPlan plan;
  record::FunctionSpool spool;
  std::vector<trace::FunctionTable> tables;
  std::vector<trace::FunctionBlock> blocks;
  std::vector<ThreadCalls> threads;
  std::map<uint64_t, std::string> names;  // start (ELF address) -> nm name
};

// Plans every function of the fixture, runs `fr_probe LIB scenario` with the plan and a spool,
// and turns the spool into calls.
Recording record_probe(const std::string& scenario, const std::string& globs = "*") {
  Recording r;
  auto img = DriverImage::open(funcrec_lib());
  EXPECT_TRUE(static_cast<bool>(img));
  if (!img) return r;
  auto& map = (*img)->facet<FunctionMap>();
  r.plan = make_patch_plan(**img, map, (*img)->facet<XrefIndex>(), globs);
  std::string dir = temp_dir() + "/funcrec-" + scenario;
  std::filesystem::create_directories(dir);
  std::string plan = dir + "/plan.bin", spool = dir + "/spool.bin";
  std::filesystem::remove(spool);
  EXPECT_TRUE(record::write_function_plan(**img, r.plan, plan).ok());
  EXPECT_TRUE(record::create_function_spool(spool, 64).ok());
  r.run = run({"env", "CUDATOOL_FUNCREC_PLAN=" + plan, "CUDATOOL_FUNCREC_SPOOL=" + spool,
               funcrec_probe_bin(), funcrec_lib(), scenario});
  auto s = record::read_function_spool(spool);
  EXPECT_TRUE(static_cast<bool>(s)) << (s ? "" : s.error().message());
  if (!s) return r;
  r.spool = *s;
  auto rec = record::function_records(r.spool, **img, r.plan, 0);
  EXPECT_TRUE(rec.problems.empty()) << rec.problems.front();
  r.tables = rec.tables;
  r.blocks = rec.blocks;
  r.threads = trace::build_function_calls(r.tables, r.blocks);
  // GCC's clones keep the name before the first dot ("fr_deep1.isra.0").
  for (const auto& f : nm_functions(funcrec_lib()))
    r.names[f.start] = f.name.substr(0, f.name.find('.'));
  return r;
}

std::string name_of(const Recording& r, const ThreadCalls& t, const FunctionCall& c) {
  if (t.table_ptr == nullptr || c.function >= t.table_ptr->starts.size()) return "?";
  auto it = r.names.find(t.table_ptr->starts[c.function]);
  return it == r.names.end() ? "fn?" : it->second;
}

// "fr_tree(ret=204)[fr_mid(…)[…] …]": a call and its subtree, for comparing whole trees.
std::string subtree(const Recording& r, const ThreadCalls& t, size_t i) {
  const FunctionCall& c = t.calls[i];
  std::string s = name_of(r, t, c);
  if (c.end == FunctionCall::End::kReturned) {
    s += "=" + std::to_string(static_cast<int32_t>(c.ret));
  } else {
    s += std::string(":") + std::string(trace::call_end_name(c.end));
  }
  if (c.tail) s += "(tail)";
  if (c.inherited) s += "(inherited)";
  std::string kids;
  for (size_t k = i + 1; k < t.calls.size(); ++k) {
    if (t.calls[k].parent == static_cast<int64_t>(i)) {
      kids += (kids.empty() ? "" : " ") + subtree(r, t, k);
    }
  }
  return kids.empty() ? s : s + "[" + kids + "]";
}

// The trees of a thread's outermost calls, in order.
std::vector<std::string> roots(const Recording& r, const ThreadCalls& t) {
  std::vector<std::string> out;
  for (size_t i = 0; i < t.calls.size(); ++i)
    if (t.calls[i].parent < 0) out.push_back(subtree(r, t, i));
  return out;
}

std::string leaf(int x) {
  return "fr_leaf=" + std::to_string(7 * x + 1);
}
std::string mid(int x) {
  int v = (7 * x + 1) ^ (x * x + 5);
  return "fr_mid=" + std::to_string(v) + "[" + leaf(x) + " fr_leaf2=" + std::to_string(x * x + 5) +
         "]";
}
std::string tree(int x) {
  int a = (7 * x + 1) ^ (x * x + 5), b = (7 * (x + 1) + 1) ^ ((x + 1) * (x + 1) + 5);
  return "fr_tree=" + std::to_string(3 * (a + b)) + "[" + mid(x) + " " + mid(x + 1) + "]";
}
std::string fact_chain(long n) {
  long v = 1;
  for (long k = 2; k <= n; ++k) v *= k;
  std::string s = "fr_fact_rec=" + std::to_string(static_cast<int32_t>(v));
  return n <= 1 ? s : s + "[" + fact_chain(n - 1) + "]";
}

// What the program printed, without the recorder's own line.
std::string printed(const std::string& out) {
  std::string keep;
  for (const auto& j : json_lines(out))
    if (j.contains("call")) keep += j.dump() + "\n";
  return keep;
}

TEST(FuncrecPlan, DisplacedBytesAreWholeInstructionsAsObjdumpDecodesThem) {
  auto img = DriverImage::open(funcrec_lib());
  ASSERT_TRUE(static_cast<bool>(img));
  auto& map = (*img)->facet<FunctionMap>();
  PatchPlan plan = make_patch_plan(**img, map, (*img)->facet<XrefIndex>(), "*");
  ASSERT_FALSE(plan.sites.empty());
  // objdump -d: the address of every instruction.
  RunResult d = run({"objdump", "-d", "--no-show-raw-insn", funcrec_lib()});
  ASSERT_EQ(d.status, 0) << d.err;
  std::set<uint64_t> insn_starts;
  std::istringstream in(d.out);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(":\t");
    if (colon == std::string::npos || line.empty() || line[0] != ' ') continue;
    insn_starts.insert(std::stoull(line.substr(0, colon), nullptr, 16));
  }
  for (const auto& s : plan.sites) {
    SCOPED_TRACE(map.display_name(map.functions()[s.function]));
    EXPECT_GE(s.displaced, 5);
    EXPECT_TRUE(insn_starts.count(s.start));
    EXPECT_TRUE(insn_starts.count(s.start + s.displaced)) << "the moved bytes end mid-instruction";
    // No instruction boundary between start+5 and the end would have done: the first one at or
    // past 5 bytes is where the moved bytes end.
    for (uint64_t a = s.start + 5; a < s.start + s.displaced; ++a)
      EXPECT_FALSE(insn_starts.count(a)) << "moved more than the first whole instructions";
  }
  // Every function nm knows is planned or refused, none silently dropped.
  EXPECT_EQ(plan.sites.size() + plan.refusals.size(), plan.selected);
  EXPECT_EQ(plan.selected, map.functions().size());
}

TEST(Funcrec, CallTreesReturnValuesAndProgramOutputAreRight) {
  Recording r = record_probe("all");
  ASSERT_EQ(r.run.status, 0) << r.run.err;
  auto lines = json_lines(r.run.out);
  ASSERT_FALSE(lines.empty());
  ASSERT_TRUE(lines.front().contains("installed")) << r.run.out;
  EXPECT_EQ(lines.front()["installed"].get<size_t>(), r.plan.sites.size());
  // The same program unrecorded prints the same values: the recorder changed nothing it saw
  // (rax, rdx, xmm0 returns, the callee-preserved registers, the stack).
  RunResult plain = run({funcrec_probe_bin(), funcrec_lib(), "all"});
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(printed(r.run.out), printed(plain.out));

  ASSERT_FALSE(r.threads.empty());
  const ThreadCalls& main = r.threads.front();
  EXPECT_TRUE(main.notes.empty()) << main.notes.front();
  std::vector<std::string> got = roots(r, main);
  std::vector<std::string> want = {
      tree(1),
      tree(2),
      "fr_fact=3628800[" + fact_chain(10) + "]",
      "fr_tail=13[fr_tail_target=13(tail)]",
      "fr_jump=22[fr_deep1:unwound[fr_deep2:unwound] " + leaf(3) + "]",
      "fr_jump=36[fr_deep1:unwound[fr_deep2:unwound] " + leaf(5) + "]"};
  ASSERT_GE(got.size(), want.size() + 4) << ::testing::PrintToString(got);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]);
  // fr_fsum returns in xmm0 (rax is what it left there); fr_pair in rax:rdx.
  EXPECT_EQ(got[want.size()].rfind("fr_fsum", 0), 0u) << got[want.size()];
  EXPECT_EQ(got[want.size() + 1], "fr_pair=41");
  EXPECT_EQ(got[want.size() + 2], "fr_fork=43[fr_fork_inner=43(tail)]");
  EXPECT_EQ(got[want.size() + 3].rfind("fr_signal=64[fr_signal_inner=64(tail)[", 0), 0u)
      << got[want.size() + 3];
  EXPECT_NE(got[want.size() + 3].find(leaf(9)), std::string::npos) << got[want.size() + 3];
}

TEST(Funcrec, CallersAreInTheCallingFunction) {
  Recording r = record_probe("tree");
  ASSERT_EQ(r.run.status, 0) << r.run.err;
  ASSERT_FALSE(r.threads.empty());
  const ThreadCalls& t = r.threads.front();
  auto fns = nm_functions(funcrec_lib());
  size_t checked = 0;
  for (const auto& c : t.calls) {
    if (c.parent < 0 || c.tail) continue;
    const FunctionCall& p = t.calls[static_cast<size_t>(c.parent)];
    const NmFunction* in = nm_find(fns, c.caller - t.table_ptr->base);
    ASSERT_NE(in, nullptr);
    EXPECT_EQ(in->name, name_of(r, t, p));
    ++checked;
  }
  EXPECT_EQ(checked, 12u);  // per fr_tree call: two fr_mid, each with two leaves
}

TEST(Funcrec, AForkedChildGoesOnInsideTheCallsItInherited) {
  Recording r = record_probe("fork");
  ASSERT_EQ(r.run.status, 0) << r.run.err;
  ASSERT_EQ(r.threads.size(), 2u);
  const ThreadCalls& parent = r.threads[0].pid < r.threads[1].pid ? r.threads[0] : r.threads[1];
  const ThreadCalls& child = &parent == &r.threads[0] ? r.threads[1] : r.threads[0];
  EXPECT_EQ(roots(r, parent), std::vector<std::string>{"fr_fork=43[fr_fork_inner=43(tail)]"});
  // The child exits with _exit from inside both calls: they stay open.
  EXPECT_EQ(roots(r, child),
            std::vector<std::string>{"fr_fork:open(inherited)[fr_fork_inner:open(inherited)[" +
                                     leaf(6) + "]]"});
}

TEST(Funcrec, ThreadsAreRecordedApart) {
  Recording r = record_probe("threads");
  ASSERT_EQ(r.run.status, 0) << r.run.err;
  std::map<std::string, int> trees;
  size_t with_calls = 0;
  for (const auto& t : r.threads) {
    if (t.calls.empty()) continue;
    ++with_calls;
    auto got = roots(r, t);
    ASSERT_EQ(got.size(), 2u);
    ++trees[got[0]];
    EXPECT_EQ(got[1].rfind("fr_fact=", 0), 0u);
  }
  EXPECT_EQ(with_calls, 4u);
  for (int x = 3; x <= 6; ++x) EXPECT_EQ(trees[tree(x)], 1) << x;
}

TEST(Funcrec, ExitFromInsideACallClosesItAsUnwound) {
  Recording r = record_probe("exit");
  EXPECT_EQ(r.run.status, 7) << r.run.err;
  ASSERT_FALSE(r.threads.empty());
  EXPECT_EQ(roots(r, r.threads.front()),
            std::vector<std::string>{"fr_exit:unwound[fr_exit_inner:unwound]"});
}

TEST(Funcrec, GlobsSelectTheFunctionsRecorded) {
  Recording r = record_probe("tree", "fr_tree,fn_*");
  ASSERT_EQ(r.run.status, 0) << r.run.err;
  // Exports other than fr_tree are not patched; the static functions (fn_<address>) are.
  for (const auto& s : r.plan.sites) {
    auto it = r.names.find(s.start);
    ASSERT_NE(it, r.names.end());
    bool exported = false;
    for (const auto& f : nm_functions(funcrec_lib()))
      if (f.start == s.start) exported = f.global;
    EXPECT_TRUE(!exported || it->second == "fr_tree") << it->second;
  }
  ASSERT_FALSE(r.threads.empty());
  EXPECT_EQ(roots(r, r.threads.front()), (std::vector<std::string>{tree(1), tree(2)}));
}

}  // namespace
}  // namespace cudatool::test

namespace cudatool::test {
namespace {

// A recorder that cannot start writes why into the spool, where cudatool finds it.
TEST(Funcrec, WhyTheRecorderDidNotStartIsInTheSpool) {
  auto img = DriverImage::open(funcrec_lib());
  ASSERT_TRUE(static_cast<bool>(img));
  PatchPlan plan =
      make_patch_plan(**img, (*img)->facet<FunctionMap>(), (*img)->facet<XrefIndex>(), "*");
  std::string dir = temp_dir() + "/funcrec-bad-plan";
  std::filesystem::create_directories(dir);
  std::string plan_file = dir + "/plan.bin", spool = dir + "/spool.bin";
  ASSERT_TRUE(record::write_function_plan(**img, plan, plan_file).ok());
  std::string bytes = read_file(plan_file);
  bytes[8] = 99;  // the ABI version (after the 8-byte magic)
  write_temp("funcrec-bad-plan/plan.bin", bytes);
  ASSERT_TRUE(record::create_function_spool(spool, 4).ok());
  RunResult r =
      run({"env",
           "LD_PRELOAD=" + std::filesystem::path(cudatool_bin()).parent_path().string() +
               "/libcudatool_funcrec.so",
           "CUDATOOL_FUNCREC_PLAN=" + plan_file, "CUDATOOL_FUNCREC_SPOOL=" + spool, "true"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto s = record::read_function_spool(spool);
  ASSERT_TRUE(static_cast<bool>(s));
  EXPECT_EQ(s->error, "a function plan of another version");
  EXPECT_TRUE(s->tables.empty());
}

}  // namespace
}  // namespace cudatool::test

namespace cudatool::test {
namespace {

// --functions on what cannot be planned: the run goes on without function events, and says why.
TEST(FunctionRecorder, SaysWhyWhenNoLibraryCanBePlanned) {
  std::string dir = temp_dir() + "/funcrec-why";
  std::filesystem::create_directories(dir);
  std::string text = write_temp("funcrec-why/libcuda.so.1", "not an ELF file\n");
  record::FunctionRecorderOptions o;
  o.libraries = {dir + "/missing.so", text};
  o.dir = dir;
  record::FunctionRecorder fr = record::FunctionRecorder::prepare(o);
  EXPECT_FALSE(fr.active());
  EXPECT_TRUE(fr.env().empty());
  EXPECT_NE(fr.why_not().find("missing.so"), std::string::npos) << fr.why_not();
  EXPECT_NE(fr.why_not().find(text), std::string::npos) << fr.why_not();
  // A glob list that selects nothing patchable, and a bad one.
  o.libraries = {funcrec_lib()};
  o.globs = "no_such_function*";
  fr = record::FunctionRecorder::prepare(o);
  EXPECT_FALSE(fr.active());
  EXPECT_NE(fr.why_not().find("none patchable"), std::string::npos) << fr.why_not();
  o.globs = "fr_tree,,";
  fr = record::FunctionRecorder::prepare(o);
  EXPECT_FALSE(fr.active());
  EXPECT_NE(fr.why_not().find("empty glob"), std::string::npos) << fr.why_not();
  // The command's own argument naming a libcuda comes first.
  auto libs = record::function_libraries_for({"prog", text, "other"});
  ASSERT_FALSE(libs.empty());
  EXPECT_EQ(libs.front(), text);
}

}  // namespace
}  // namespace cudatool::test
