// Property test of `ab` on runs that fail and stop, built from the real capture (trace_a): B makes
// A's first N calls, the N-th (an RM control) comes back with another status or another output
// member, then B tears down — frees of the objects it created, in reverse order (the frees A
// itself makes near its end, on other objects), UVM_DEINITIALIZE, closes of its fds, an exit —
// and its trailer says exit status 1. Random N, control, mutation and teardown length, seeded
// (CUDATOOL_AB_SEED picks another seed; the seed is printed with every failure):
//
//   - the first divergence is exactly (A #N, B #N), different_status or different_parameters;
//   - nothing before it is reported (every entry before it is a match, no divergence names an
//     event before N);
//   - the verdict says B ended early, after A #N, with B's teardown and exit status 1.
//
// The expectations come from the mutation itself, the capture's events, the driver tables and
// the decoder (rm/): which calls are RM controls, statuses, the NVOS00 layout of a free.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "ab/verdict.hpp"
#include "ab_support.hpp"
#include "base/bytes.hpp"
#include "harness.hpp"
#include "trace/decode.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

class AbEarlyEnd : public ::testing::Test {
 protected:
  const AbTrace& a_ = ab_capture("trace_a.jsonl.xz");
  const rm::Tables& t_ = rm::tables_for_driver("580.159.04");
  std::unique_ptr<ab::NormalizedTrace> na_;
  std::vector<trace::Decoded> dec_;
  std::vector<uint32_t> controls_;  // RM controls answered NV_OK, with an A tail behind them
  uint32_t status_off_ = 0;

  void SetUp() override {
    ASSERT_FALSE(a_.events.empty());
    auto r = ab::normalize_file(a_.path);
    ASSERT_TRUE(r.ok());
    na_ = std::move(*r);
    status_off_ = nvos54_status_offset();
    for (const trace::Event& e : a_.events) dec_.push_back(trace::decode_event(t_, e));
    // A run that stops early leaves most of A undone: controls with at least 64 calls after.
    for (uint32_t k = 0; k + 64 < a_.events.size(); ++k) {
      if (dec_[k].call == "NV_ESC_RM_CONTROL" && dec_[k].status && *dec_[k].status == 0 &&
          a_.events[k].arg && a_.events[k].arg->after.size() >= status_off_ + 4) {
        controls_.push_back(k);
      }
    }
    ASSERT_GT(controls_.size(), 100u);
  }
};

enum class Change { kStatus, kOutput };

TEST_F(AbEarlyEnd, FirstDivergenceIsTheFailingCallAndBEndsEarly) {
  const std::vector<trace::Event>& A = a_.events;
  const char* env_seed = std::getenv("CUDATOOL_AB_SEED");
  const uint64_t seed = env_seed ? std::strtoull(env_seed, nullptr, 0) : 20261201;
  std::mt19937_64 rng(seed);
  auto statuses = t_.statuses();
  const int kIterations = test_rounds(240), kThroughCli = 8;
  int status_changes = 0, output_changes = 0, with_frees = 0, with_deinit = 0, text_checked = 0;
  for (int it = 0; it < kIterations; ++it) {
    uint32_t n = controls_[rng() % controls_.size()];
    std::vector<trace::Event> b(A.begin(), A.begin() + n + 1);
    trace::Event& x = b[n];
    Change change = rng() % 2 ? Change::kStatus : Change::kOutput;
    std::string what;
    if (change == Change::kOutput) {
      // An output member of the control's parameters: a byte that is compared, the low byte of
      // a 4-byte word, so the word stays a count or a flag and does not become a handle or a
      // pointer.
      std::vector<uint32_t> offs;
      if (!x.nested.empty()) {
        for (uint32_t off = 0; off < x.nested[0].after.size(); off += 4) {
          if (ab::byte_fate(*na_, n, ab::Role::kParams, true, off) == ab::ByteFate::kCompared) {
            offs.push_back(off);
          }
        }
      }
      if (offs.empty()) {
        change = Change::kStatus;
      } else {
        uint32_t off = offs[rng() % offs.size()];
        x.nested[0].after[off] ^= static_cast<uint8_t>(1 + rng() % 0x7f);
        what = "output params+" + std::to_string(off);
      }
    }
    if (change == Change::kStatus) {
      uint32_t now = 0;
      while (now == 0) now = statuses[rng() % statuses.size()].value;
      store_le<uint32_t>(x.arg->after.data() + status_off_, now);
      what = "status " + std::to_string(now);
    }
    (change == Change::kStatus ? status_changes : output_changes)++;
    TeardownPlan plan;
    plan.frees = static_cast<uint32_t>(rng() % 9);
    plan.deinit = rng() % 4 != 0;
    plan.closes = static_cast<uint32_t>(rng() % 7);
    plan.exit = rng() % 2 != 0;
    Teardown td = teardown_after(a_, n + 1, plan);
    with_frees += td.frees > 0;
    with_deinit += td.deinit;
    b.insert(b.end(), td.events.begin(), td.events.end());
    for (size_t k = 0; k < b.size(); ++k) b[k].seq = k;
    SCOPED_TRACE(::testing::Message()
                 << "iteration " << it << ", seed " << seed << ": N " << n << " (" << what << "), "
                 << td.frees << " frees, deinit " << td.deinit << ", " << td.closes
                 << " closes, exit event " << td.exit);

    auto nb = ab::normalize_events(a_.header, b);
    trace::Trailer tr;
    tr.events = b.size();
    tr.reason = "exit";
    tr.exit_status = 1;
    nb->trailer = tr;
    ab::Comparison c = ab::compare(*na_, *nb);
    ASSERT_FALSE(c.equivalent());
    const ab::Divergence& f = c.divergences.front();
    EXPECT_EQ(f.a, n);
    EXPECT_EQ(f.b, n);
    EXPECT_EQ(f.kind, change == Change::kStatus ? ab::Kind::kStatus : ab::Kind::kParameters);
    for (uint32_t k = 0; k < f.entry; ++k) {
      ASSERT_EQ(c.entries[k].op, ab::Op::kMatch) << "entry " << k << " before the first";
    }
    for (const ab::Divergence& d : c.divergences) {
      EXPECT_TRUE(d.a == ab::kNone || d.a >= n) << "divergence at A #" << d.a;
      EXPECT_TRUE(d.b == ab::kNone || d.b >= n) << "divergence at B #" << d.b;
    }
    // B's teardown is B's: none of its calls is paired — as a changed call or a match — with a
    // call of A reached only across a long run of A's calls B never made since B's call before
    // it (a free of another object, or of the same one, far on in A: issue 32).
    uint32_t missing_since_b = 0;
    for (size_t k = f.entry + 1; k < c.entries.size(); ++k) {
      const auto& e = c.entries[k];
      if (e.op == ab::Op::kMissing) ++missing_since_b;
      if ((e.op == ab::Op::kChange || e.op == ab::Op::kMatch) && e.b > n) {
        EXPECT_LT(missing_since_b, 16u) << "B #" << e.b << " paired with A #" << e.a << " across "
                                        << missing_since_b << " calls B never made";
      }
      if (e.b != ab::kNone) missing_since_b = 0;
    }
    ab::Verdict v = ab::make_verdict(c);
    ASSERT_TRUE(v.early_end.has_value());
    EXPECT_TRUE(v.early_end->b_stopped);
    EXPECT_EQ(v.early_end->after, n);
    EXPECT_EQ(v.early_end->remaining, A.size() - n - 1);
    // Every call of A after N is either not made or paired with one of B's teardown calls.
    EXPECT_GE(v.early_end->not_made + td.events.size(), v.early_end->remaining);
    EXPECT_EQ(v.b.events, td.events.size());
    EXPECT_EQ(v.b.teardown, !td.events.empty());
    EXPECT_EQ(v.b.exit_status, 1);
    EXPECT_EQ(v.b.total, b.size());
    EXPECT_EQ(v.a.events, A.size() - n - 1);
    if (::testing::Test::HasFatalFailure()) return;

    if (it < kThroughCli) {
      // The same through the command: the trace writer, the reader, the text and the JSON.
      trace::Trailer cli_tr = tr;
      std::string path =
          ab_write("ab-early-" + std::to_string(it) + ".trace", a_.header, b, cli_tr);
      RunResult r = run({cudatool_bin(), "ab", a_.path, path});
      EXPECT_EQ(r.status, 1) << r.err;
      std::string first =
          std::string("first divergence: ") +
          (change == Change::kStatus ? "different status" : "different parameters") + ": A #" +
          std::to_string(n) + " / B #" + std::to_string(n) + "\n";
      EXPECT_NE(r.out.find(first), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("B ends after A #" + std::to_string(n) + ": "), std::string::npos)
          << r.out;
      EXPECT_NE(
          r.out.find(" and ended after " + std::to_string(b.size()) + " events (exit status 1);\n"),
          std::string::npos)
          << r.out;
      if (!td.events.empty()) {
        EXPECT_NE(r.out.find("then B tore down ("), std::string::npos) << r.out;
      }
      json j = json::parse(run({cudatool_bin(), "ab", a_.path, path, "--json"}).out);
      const json& ee = j["verdict"]["ended_early"];
      EXPECT_EQ(ee["stopped"], "b");
      EXPECT_EQ(ee["after"], n);
      EXPECT_EQ(ee["not_made"], v.early_end->not_made);
      EXPECT_EQ(j["first"]["divergence"]["a"]["index"], n);
      EXPECT_EQ(j["verdict"]["b"]["exit_status"], 1);
      EXPECT_EQ(j["counts"]["missing_call"].get<size_t>() - ee["not_made"].get<size_t>(),
                j["verdict"]["shown"]["missing_call"].get<size_t>());
      ++text_checked;
    }
  }
  std::printf(
      "early-end properties: %d iterations (%d status, %d output member; %d with frees, %d "
      "with UVM_DEINITIALIZE; %d through the command), seed %llu\n",
      kIterations, status_changes, output_changes, with_frees, with_deinit, text_checked,
      static_cast<unsigned long long>(seed));
  // The generator explores both mutations and real teardowns.
  EXPECT_GT(status_changes, kIterations / 4);
  EXPECT_GT(output_changes, kIterations / 8);
  EXPECT_GT(with_frees, kIterations / 2);
  EXPECT_GT(with_deinit, kIterations / 4);
}

}  // namespace
}  // namespace cudatool::test
