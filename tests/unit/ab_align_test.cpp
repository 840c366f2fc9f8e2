// ab/align: the alignment is valid (every event once, in order; matches only of equal events,
// changes only of the same call), optimal where it is exact (checked against a brute-force
// dynamic programme written here), and not quadratic on long, mostly equal sequences.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "ab/align.hpp"

namespace cudatool::ab {
namespace {

struct Seq {
  std::vector<uint64_t> key, shape, full;
  void push(uint64_t k, uint64_t s, uint64_t f) {
    key.push_back(k);
    shape.push_back(s);
    full.push_back(f);
  }
  [[nodiscard]] Hashes h() const { return Hashes{key, shape, full}; }
  [[nodiscard]] size_t size() const { return full.size(); }
};

constexpr uint32_t kGap = 100, kChange = 100, kRename = 1;

uint32_t pair_cost(const Seq& a, size_t i, const Seq& b, size_t j) {
  if (a.full[i] == b.full[j]) return 0;
  if (a.shape[i] == b.shape[j]) return kRename;
  if (a.key[i] == b.key[j]) return kChange;
  return UINT32_MAX;
}

// Independent reference: the minimum cost of aligning a with b.
uint64_t optimal_cost(const Seq& a, const Seq& b) {
  std::vector<std::vector<uint64_t>> d(a.size() + 1, std::vector<uint64_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i * kGap;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j * kGap;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      uint64_t best = std::min(d[i - 1][j], d[i][j - 1]) + kGap;
      uint32_t p = pair_cost(a, i - 1, b, j - 1);
      if (p != UINT32_MAX) best = std::min<uint64_t>(best, d[i - 1][j - 1] + p);
      d[i][j] = best;
    }
  }
  return d[a.size()][b.size()];
}

// Checks validity; returns the cost of the alignment.
uint64_t check(const Seq& a, const Seq& b, const std::vector<Step>& steps) {
  uint32_t i = 0, j = 0;
  uint64_t cost = 0;
  for (const Step& s : steps) {
    switch (s.op) {
      case Op::kMatch:
        EXPECT_EQ(s.a, i);
        EXPECT_EQ(s.b, j);
        EXPECT_EQ(a.full[s.a], b.full[s.b]);
        ++i, ++j;
        break;
      case Op::kChange:
        EXPECT_EQ(s.a, i);
        EXPECT_EQ(s.b, j);
        EXPECT_NE(a.full[s.a], b.full[s.b]);
        EXPECT_EQ(a.key[s.a], b.key[s.b]);
        cost += pair_cost(a, s.a, b, s.b);
        ++i, ++j;
        break;
      case Op::kMissing:
        EXPECT_EQ(s.a, i);
        EXPECT_EQ(s.b, kNone);
        cost += kGap;
        ++i;
        break;
      case Op::kExtra:
        EXPECT_EQ(s.a, kNone);
        EXPECT_EQ(s.b, j);
        cost += kGap;
        ++j;
        break;
    }
  }
  EXPECT_EQ(i, a.size());
  EXPECT_EQ(j, b.size());
  return cost;
}

// A random event: key from a small alphabet, shape and full derived so that equal full implies
// equal shape implies equal key.
void random_event(Seq& s, std::mt19937_64& rng, uint32_t keys) {
  uint64_t k = rng() % keys;
  uint64_t sh = k * 16 + rng() % 3;
  uint64_t f = sh * 16 + rng() % 3;
  s.push(k, sh, f);
}

Seq mutate(const Seq& a, std::mt19937_64& rng, int edits) {
  Seq b = a;
  for (int e = 0; e < edits; ++e) {
    size_t at = b.size() ? rng() % b.size() : 0;
    switch (rng() % 4) {
      case 0:  // missing
        if (b.size()) {
          b.key.erase(b.key.begin() + at), b.shape.erase(b.shape.begin() + at);
          b.full.erase(b.full.begin() + at);
        }
        break;
      case 1: {  // extra
        Seq one;
        random_event(one, rng, 8);
        b.key.insert(b.key.begin() + at, one.key[0]);
        b.shape.insert(b.shape.begin() + at, one.shape[0]);
        b.full.insert(b.full.begin() + at, one.full[0]);
        break;
      }
      case 2:  // renamed (same shape)
        if (b.size()) b.full[at] ^= 0x1000000;
        break;
      default:  // changed (same key)
        if (b.size()) b.shape[at] += 7, b.full[at] += 7 * 16;
        break;
    }
  }
  return b;
}

TEST(AbAlign, EqualSequencesAreAllMatches) {
  std::mt19937_64 rng(1);
  Seq a;
  for (int i = 0; i < 1000; ++i) random_event(a, rng, 20);
  AlignStats st;
  auto steps = align(a.h(), a.h(), {}, &st);
  EXPECT_EQ(check(a, a, steps), 0u);
  EXPECT_EQ(st.matched_ends, 1000u);
  EXPECT_EQ(st.dp_cells, 0u);
}

TEST(AbAlign, ExactAlignmentIsOptimal) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    Seq a;
    int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) random_event(a, rng, 6);
    Seq b = mutate(a, rng, 1 + static_cast<int>(rng() % 6));
    auto steps = align(a.h(), b.h());
    EXPECT_EQ(check(a, b, steps), optimal_cost(a, b)) << "round " << round;
  }
}

TEST(AbAlign, AnchoredAndGreedyPathsStayValid) {
  // A tiny exact-alignment budget forces anchors and the greedy walk.
  AlignOptions small;
  small.max_dp_cells = 16;
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    Seq a;
    int n = 20 + static_cast<int>(rng() % 200);
    for (int i = 0; i < n; ++i) random_event(a, rng, round % 2 ? 4 : 1000);
    Seq b = mutate(a, rng, 1 + static_cast<int>(rng() % 10));
    AlignStats st;
    auto steps = align(a.h(), b.h(), small, &st);
    check(a, b, steps);
  }
}

TEST(AbAlign, LongMostlyEqualSequencesAreNotQuadratic) {
  // 200,000 distinct events, a dozen edits spread over them: the work is linear (common ends,
  // unique anchors) and the exact alignments cover only the small gaps around the edits.
  std::mt19937_64 rng(3);
  Seq a;
  for (uint64_t i = 0; i < 200000; ++i) a.push(i % 97, i * 3, i * 3);
  Seq b = a;
  std::vector<size_t> spots;
  for (int e = 0; e < 12; ++e) spots.push_back(1000 + rng() % 198000);
  std::sort(spots.rbegin(), spots.rend());
  for (size_t at : spots) {
    if (at % 2) {
      b.key.erase(b.key.begin() + at), b.shape.erase(b.shape.begin() + at);
      b.full.erase(b.full.begin() + at);
    } else {
      b.full[at] += 1;  // renamed
    }
  }
  AlignStats st;
  auto steps = align(a.h(), b.h(), {}, &st);
  uint64_t cost = check(a, b, steps);
  uint64_t matches =
      std::count_if(steps.begin(), steps.end(), [](const Step& s) { return s.op == Op::kMatch; });
  EXPECT_GE(matches, a.size() - 12);
  EXPECT_LE(cost, 12u * kGap);
  EXPECT_LT(st.dp_cells, 1000000u) << "exact alignment over " << st.dp_cells << " cells";
  EXPECT_GT(st.anchors + st.matched_ends, 190000u);
}

TEST(AbAlign, RepetitiveSequencesWithoutAnchors) {
  // A pattern repeated: no event is unique, so gaps are split by the common ends or walked.
  Seq a;
  for (int rep = 0; rep < 2000; ++rep) {
    for (uint64_t k = 0; k < 50; ++k) a.push(k, k, k);
  }
  Seq b = a;
  b.key.erase(b.key.begin() + 50000), b.shape.erase(b.shape.begin() + 50000);
  b.full.erase(b.full.begin() + 50000);
  AlignStats st;
  auto steps = align(a.h(), b.h(), {}, &st);
  EXPECT_EQ(check(a, b, steps), kGap);
}

TEST(AbAlign, EmptySides) {
  Seq a, b;
  a.push(1, 1, 1);
  a.push(2, 2, 2);
  auto steps = align(a.h(), b.h());
  EXPECT_EQ(check(a, b, steps), 2 * kGap);
  steps = align(b.h(), a.h());
  EXPECT_EQ(check(b, a, steps), 2 * kGap);
  steps = align(b.h(), b.h());
  EXPECT_TRUE(steps.empty());
}

// Where B's failing call goes: B makes A's first call, then A's second call with A's inputs but
// another outcome, then stops. A also makes that command later: once with other inputs, once
// with the same inputs. The partner is the call with the same inputs at the same place.
TEST(AbAlign, TheSameRequestAtTheSamePlaceIsThePartner) {
  // key, shape, full, input
  struct E {
    uint64_t k, s, f, in;
  };
  auto seqs = [](std::initializer_list<E> es, std::vector<uint64_t>& key, std::vector<uint64_t>& sh,
                 std::vector<uint64_t>& full, std::vector<uint64_t>& in) {
    for (const E& e : es)
      key.push_back(e.k), sh.push_back(e.s), full.push_back(e.f), in.push_back(e.in);
  };
  std::vector<uint64_t> ak, as, af, ai, bk, bs, bf, bi;
  //                 open         control, input 7   other         control, input 8  control, input
  //                 7
  seqs({{1, 1, 1, 1}, {2, 20, 200, 7}, {3, 30, 300, 3}, {2, 21, 210, 8}, {2, 20, 201, 7}}, ak, as,
       af, ai);
  seqs({{1, 1, 1, 1}, {2, 22, 220, 7}}, bk, bs, bf, bi);
  for (bool with_inputs : {true, false}) {
    Hashes a{ak, as, af, with_inputs ? std::span<const uint64_t>(ai) : std::span<const uint64_t>()};
    Hashes b{bk, bs, bf, with_inputs ? std::span<const uint64_t>(bi) : std::span<const uint64_t>()};
    std::vector<Step> steps = align(a, b);
    auto it = std::find_if(steps.begin(), steps.end(), [](const Step& s) { return s.b == 1; });
    ASSERT_NE(it, steps.end());
    EXPECT_EQ(it->op, Op::kChange) << "with inputs " << with_inputs;
    // With inputs: the same request. Without: of three calls of the same command, the earliest.
    EXPECT_EQ(it->a, 1u) << "with inputs " << with_inputs;
  }
  // Inputs decide over position: B's call has the inputs of A's fourth call only.
  bi[1] = 8;
  std::vector<Step> steps = align(Hashes{ak, as, af, ai}, Hashes{bk, bs, bf, bi});
  auto it = std::find_if(steps.begin(), steps.end(), [](const Step& s) { return s.b == 1; });
  ASSERT_NE(it, steps.end());
  EXPECT_EQ(it->a, 3u);
}

}  // namespace
}  // namespace cudatool::ab
