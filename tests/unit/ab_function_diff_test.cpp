// The function-level comparison (ab/function_diff.cpp) on call trees written with the trace's
// own record writer: a return value that differs counts only when the caller then behaves
// otherwise; polling loops that turn another number of times are not differences; the first
// cause of a consequence is what is reported, with its path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ab/function_diff.hpp"
#include "trace/function_events.hpp"

namespace cudatool::ab {
namespace {

// A call tree: "f=r[children]". Function numbers are indices of the table (fn_1000 + 0x40 * n).
struct Call {
  uint32_t fn;
  uint64_t ret;
  std::vector<Call> kids;
};

void emit(trace::FunctionRecordWriter& w, const Call& c, uint64_t& t) {
  w.enter(c.fn, ++t, 0x7f0000000100);
  for (const Call& k : c.kids) emit(w, k, t);
  w.ret(++t, c.ret);
}

std::vector<Call> times(int n, const std::vector<Call>& block) {
  std::vector<Call> out;
  for (int i = 0; i < n; ++i) out.insert(out.end(), block.begin(), block.end());
  return out;
}

NormalizedTrace with_calls(const std::vector<Call>& roots) {
  NormalizedTrace nt;
  trace::FunctionTable t;
  t.id = 1;
  t.pid = 10;
  t.path = "/nonexistent/libx.so";
  t.build_id = "abcd";
  t.base = 0x7f0000000000;
  for (uint64_t i = 0; i < 16; ++i) t.starts.push_back(0x1000 + 0x40 * i);
  t.globs = "*";
  nt.fn_tables.push_back(t);
  trace::FunctionRecordWriter w(1000);
  uint64_t time = 1000;
  for (const Call& c : roots) emit(w, c, time);
  trace::FunctionBlock b;
  b.table = 1;
  b.pid = 10;
  b.tid = 11;
  b.t_ns = 1000;
  b.closed = true;
  b.data = w.data();
  nt.fn_blocks.push_back(b);
  nt.thread_tids = {11};
  return nt;
}

TEST(AbFunctionDiff, AReturnValueTheCallerIgnoresIsNoDifference) {
  // f1 returns rax garbage (a float, void) in each run; its caller goes on alike.
  auto a = with_calls({{0, 0, {{1, 0x1234, {}}, {2, 0, {}}}}});
  auto b = with_calls({{0, 0, {{1, 0x99, {}}, {2, 0, {}}}}});
  FunctionComparison c = compare_functions(a, b);
  ASSERT_TRUE(c.compared);
  EXPECT_FALSE(c.first.has_value()) << c.first->message;
  EXPECT_EQ(c.quiet, 1u);
}

TEST(AbFunctionDiff, AReturnValueThatChangesWhatFollowsIsTheDifference) {
  // f3 returns a status in B; f2 then calls f5 (its error path) instead of f4.
  auto a = with_calls({{0, 0, {{2, 0, {{3, 0, {}}, {4, 0, {}}}}}}});
  auto b = with_calls({{0, 0, {{2, 0, {{3, 86, {}}, {5, 0, {}}}}}}});
  FunctionComparison c = compare_functions(a, b);
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.first->kind, "return_value");
  ASSERT_EQ(c.first->path.size(), 3u);
  EXPECT_EQ(c.first->path.back().ret_a, 0u);
  EXPECT_EQ(c.first->path.back().ret_b, 86u);
  EXPECT_TRUE(c.first->path[0].same);
  EXPECT_FALSE(c.first->path[2].same);
}

TEST(AbFunctionDiff, AReturnValueThatChangesTheCallersValueIsTheDifference) {
  // f3 fails, f2 returns its failure, the outermost call returns 801: the chain is the path.
  auto a = with_calls({{0, 0, {{2, 0, {{3, 0, {}}}}}}});
  auto b = with_calls({{0, 801, {{2, 86, {{3, 86, {}}}}}}});
  FunctionComparison c = compare_functions(a, b);
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.first->kind, "return_value");
  ASSERT_EQ(c.first->path.size(), 3u);
  EXPECT_EQ(c.first->path[0].ret_b, 801u);
  for (const auto& s : c.first->path) EXPECT_FALSE(s.same);
}

TEST(AbFunctionDiff, PollingLoopsOfAnotherLengthAreNoDifference) {
  // [poll, clock] 2 turns in A, 5 in B (the last turn finds the work done: 1), then f6 in both.
  std::vector<Call> turn{{7, 0, {}}, {8, 0, {}}};
  auto kids = [&](int n) {
    auto k = times(n - 1, turn);
    k.push_back({7, 1, {}});
    k.push_back({8, 0, {}});
    k.push_back({6, 0, {}});
    return k;
  };
  auto a = with_calls({{0, 0, {{2, 0, kids(2)}}}});
  auto b = with_calls({{0, 0, {{2, 0, kids(5)}}}});
  FunctionComparison c = compare_functions(a, b);
  EXPECT_FALSE(c.first.has_value()) << c.first->message;
  EXPECT_EQ(c.loop_counts, 1u);
  EXPECT_GE(c.quiet, 1u);
}

TEST(AbFunctionDiff, ALoopOfAnotherLengthFollowedByAnotherCalleeIsTheDifference) {
  std::vector<Call> ka = times(2, {{7, 0, {}}}), kb = times(3, {{7, 0, {}}});
  ka.push_back({4, 0, {}});
  kb.push_back({5, 0, {}});
  auto a = with_calls({{0, 0, {{2, 0, ka}}}});
  auto b = with_calls({{0, 0, {{2, 0, kb}}}});
  FunctionComparison c = compare_functions(a, b);
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.first->kind, "callee_count");  // the first cause: the loop's length
  EXPECT_EQ(c.first->count_a, 2u);
  EXPECT_EQ(c.first->count_b, 3u);
}

TEST(AbFunctionDiff, ALoopInOneRunOnlyComparesTheCallsBeforeTheListsPart) {
  // A calls [f3, f9] twice; B calls f3 once, which fails, then its error path f5. The pair of
  // f3 calls is compared before the lists' difference is: f3's value is the cause.
  auto a = with_calls({{0, 0, {{2, 0, {{3, 0, {}}, {9, 0, {}}, {3, 0, {}}, {9, 0, {}}}}}}});
  auto b = with_calls({{0, 0, {{2, 0, {{3, 86, {}}, {5, 0, {}}}}}}});
  FunctionComparison c = compare_functions(a, b);
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.first->kind, "return_value");
  EXPECT_EQ(c.first->path.back().ret_b, 86u);
}

TEST(AbFunctionDiff, AnOutermostCallsValueIsAlwaysADifference) {
  auto a = with_calls({{0, 0, {}}, {1, 0, {}}});
  auto b = with_calls({{0, 3, {}}, {1, 0, {}}});
  FunctionComparison c = compare_functions(a, b);
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.first->kind, "return_value");
  EXPECT_EQ(c.first->path.size(), 1u);
}

TEST(AbFunctionDiff, ACalleeInOneRunOnlyIsReported) {
  auto a = with_calls({{0, 0, {{1, 0, {}}, {2, 0, {}}}}});
  auto b = with_calls({{0, 0, {{1, 0, {}}}}});
  FunctionComparison c = compare_functions(a, b);
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.first->kind, "callee_only_in_a");
  EXPECT_EQ(c.first->count_a, 1u);
  EXPECT_EQ(c.first->count_b, 0u);
}

}  // namespace
}  // namespace cudatool::ab
