#include "ab/align.hpp"

#include <algorithm>

namespace cudatool::ab {
namespace {

// Occurrences of each hash in the two ranges: open addressing, linear probing.
class OccurrenceTable {
 public:
  struct Slot {
    uint64_t hash;
    uint32_t count_a, count_b;
    uint32_t pos_a, pos_b;
  };

  void reset(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    slots_.assign(cap, Slot{0, 0, 0, 0, 0});
    mask_ = cap - 1;
  }
  Slot& at(uint64_t h) {
    size_t i = static_cast<size_t>((h * 0x9e3779b97f4a7c15ULL) >> 20) & mask_;
    while (true) {
      Slot& s = slots_[i];
      if (s.count_a + s.count_b == 0) {
        s.hash = h;
        return s;
      }
      if (s.hash == h) return s;
      i = (i + 1) & mask_;
    }
  }

 private:
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

class Aligner {
 public:
  Aligner(const Hashes& a, const Hashes& b, const AlignOptions& o, AlignStats& st)
      : ak_(a.key),
        as_(a.shape),
        af_(a.full),
        ai_(a.input),
        bk_(b.key),
        bs_(b.shape),
        bf_(b.full),
        bi_(b.input),
        inputs_(a.input.size() == a.full.size() && b.input.size() == b.full.size()),
        o_(o),
        st_(st) {}

  std::vector<Step> steps;

  void run(uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1, int depth) {
    while (a0 < a1 && b0 < b1 && af_[a0] == bf_[b0]) {
      steps.push_back({Op::kMatch, a0++, b0++});
      ++st_.matched_ends;
    }
    uint32_t sa = a1, sb = b1;
    while (sa > a0 && sb > b0 && af_[sa - 1] == bf_[sb - 1]) --sa, --sb;
    middle(a0, sa, b0, sb, depth);
    for (uint32_t i = 0; i < a1 - sa; ++i) steps.push_back({Op::kMatch, sa + i, sb + i});
    st_.matched_ends += a1 - sa;
  }

 private:
  std::span<const uint64_t> ak_, as_, af_, ai_, bk_, bs_, bf_, bi_;
  bool inputs_;  // both sides have input hashes
  const AlignOptions& o_;
  AlignStats& st_;
  OccurrenceTable table_;

  void pair(uint32_t i, uint32_t j) {
    steps.push_back({af_[i] == bf_[j] ? Op::kMatch : Op::kChange, i, j});
  }

  void middle(uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1, int depth) {
    uint64_t n = a1 - a0, m = b1 - b0;
    if (n == 0 || m == 0) {
      for (uint32_t i = a0; i < a1; ++i) steps.push_back({Op::kMissing, i, kNone});
      for (uint32_t j = b0; j < b1; ++j) steps.push_back({Op::kExtra, kNone, j});
      return;
    }
    if (n * m <= o_.max_dp_cells) {
      exact(a0, a1, b0, b1);
      return;
    }
    if (depth < o_.max_depth) {
      // Unique shapes first: an event unique only by its names may be matched to the wrong one
      // when an earlier missing creation shifted a name's ordinal.
      const std::span<const uint64_t> by[3][2] = {{as_, bs_}, {af_, bf_}, {ak_, bk_}};
      for (const auto& h : by) {
        std::vector<std::pair<uint32_t, uint32_t>> anchors =
            unique_anchors(h[0], h[1], a0, a1, b0, b1);
        if (anchors.empty()) continue;
        st_.anchors += anchors.size();
        uint32_t pa = a0, pb = b0;
        for (auto [i, j] : anchors) {
          run(pa, i, pb, j, depth + 1);
          pair(i, j);
          pa = i + 1;
          pb = j + 1;
        }
        run(pa, a1, pb, b1, depth + 1);
        return;
      }
    }
    greedy(a0, a1, b0, b1);
  }

  // Hashes that occur once in each range, as (A position, B position), longest chain increasing
  // in both (patience sorting).
  std::vector<std::pair<uint32_t, uint32_t>> unique_anchors(std::span<const uint64_t> ah,
                                                            std::span<const uint64_t> bh,
                                                            uint32_t a0, uint32_t a1, uint32_t b0,
                                                            uint32_t b1) {
    table_.reset((a1 - a0) + (b1 - b0));
    for (uint32_t i = a0; i < a1; ++i) {
      auto& s = table_.at(ah[i]);
      ++s.count_a;
      s.pos_a = i;
    }
    for (uint32_t j = b0; j < b1; ++j) {
      auto& s = table_.at(bh[j]);
      ++s.count_b;
      s.pos_b = j;
    }
    std::vector<std::pair<uint32_t, uint32_t>> cand;
    for (uint32_t i = a0; i < a1; ++i) {
      auto& s = table_.at(ah[i]);
      if (s.count_a == 1 && s.count_b == 1) cand.emplace_back(i, s.pos_b);
    }
    // Longest increasing subsequence of the B positions.
    std::vector<uint32_t> tails;  // index into cand of the smallest tail of each length
    std::vector<int64_t> prev(cand.size(), -1);
    for (uint32_t k = 0; k < cand.size(); ++k) {
      auto it = std::lower_bound(tails.begin(), tails.end(), cand[k].second,
                                 [&](uint32_t t, uint32_t v) { return cand[t].second < v; });
      if (it != tails.begin()) prev[k] = *(it - 1);
      if (it == tails.end()) {
        tails.push_back(k);
      } else {
        *it = k;
      }
    }
    std::vector<std::pair<uint32_t, uint32_t>> chain;
    for (int64_t k = tails.empty() ? int64_t{-1} : int64_t{tails.back()}; k >= 0; k = prev[k]) {
      chain.push_back(cand[k]);
    }
    std::reverse(chain.begin(), chain.end());
    return chain;
  }

  // Minimum cost: match 0, same shape 1, same request 10, change (same key) 100, missing or
  // extra 100. On ties the forward pass keeps the gap, so that the backtrace (from the end)
  // pairs calls as early as it can: of two equal partners, the one at the same place wins.
  void exact(uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1) {
    constexpr uint32_t kRename = 1, kRequest = 10, kChange = 100, kGap = 100;
    uint32_t n = a1 - a0, m = b1 - b0;
    st_.dp_cells += uint64_t{n} * m;
    std::vector<uint32_t> prev(m + 1), cur(m + 1);
    std::vector<uint8_t> dir(size_t{n + 1} * (m + 1));  // 0 diagonal, 1 missing, 2 extra
    for (uint32_t j = 0; j <= m; ++j) {
      prev[j] = j * kGap;
      dir[j] = 2;
    }
    for (uint32_t i = 1; i <= n; ++i) {
      cur[0] = i * kGap;
      dir[size_t{i} * (m + 1)] = 1;
      uint64_t af = af_[a0 + i - 1], as = as_[a0 + i - 1], ak = ak_[a0 + i - 1];
      uint64_t ai = inputs_ ? ai_[a0 + i - 1] : 0;
      for (uint32_t j = 1; j <= m; ++j) {
        uint32_t best = prev[j] + kGap;
        uint8_t d = 1;
        if (cur[j - 1] + kGap < best) {
          best = cur[j - 1] + kGap;
          d = 2;
        }
        uint32_t pair = UINT32_MAX;
        if (bf_[b0 + j - 1] == af) {
          pair = 0;
        } else if (bs_[b0 + j - 1] == as) {
          pair = kRename;
        } else if (inputs_ && bi_[b0 + j - 1] == ai) {
          pair = kRequest;
        } else if (bk_[b0 + j - 1] == ak) {
          pair = kChange;
        }
        if (pair != UINT32_MAX && prev[j - 1] + pair < best) best = prev[j - 1] + pair, d = 0;
        cur[j] = best;
        dir[size_t{i} * (m + 1) + j] = d;
      }
      std::swap(prev, cur);
    }
    std::vector<Step> rev;
    uint32_t i = n, j = m;
    while (i > 0 || j > 0) {
      uint8_t d = dir[size_t{i} * (m + 1) + j];
      if (i > 0 && j > 0 && d == 0) {
        --i, --j;
        rev.push_back({af_[a0 + i] == bf_[b0 + j] ? Op::kMatch : Op::kChange, a0 + i, b0 + j});
      } else if (i > 0 && (d == 1 || j == 0)) {
        --i;
        rev.push_back({Op::kMissing, a0 + i, kNone});
      } else {
        --j;
        rev.push_back({Op::kExtra, kNone, b0 + j});
      }
    }
    steps.insert(steps.end(), rev.rbegin(), rev.rend());
  }

  // Linear walk for large gaps without anchors: pair equal keys, else look ahead a bounded
  // distance on each side for the other's key.
  void greedy(uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1) {
    st_.greedy_events += (a1 - a0) + (b1 - b0);
    uint32_t i = a0, j = b0;
    while (i < a1 && j < b1) {
      if (ak_[i] == bk_[j]) {
        pair(i++, j++);
        continue;
      }
      uint32_t db = 0, da = 0;
      for (uint32_t d = 1; d <= o_.lookahead && j + d < b1; ++d) {
        if (bk_[j + d] == ak_[i]) {
          db = d;
          break;
        }
      }
      for (uint32_t d = 1; d <= o_.lookahead && i + d < a1; ++d) {
        if (ak_[i + d] == bk_[j]) {
          da = d;
          break;
        }
      }
      if (db != 0 && (da == 0 || db <= da)) {
        for (uint32_t k = 0; k < db; ++k) steps.push_back({Op::kExtra, kNone, j++});
      } else if (da != 0) {
        for (uint32_t k = 0; k < da; ++k) steps.push_back({Op::kMissing, i++, kNone});
      } else {
        steps.push_back({Op::kMissing, i++, kNone});
        steps.push_back({Op::kExtra, kNone, j++});
      }
    }
    while (i < a1) steps.push_back({Op::kMissing, i++, kNone});
    while (j < b1) steps.push_back({Op::kExtra, kNone, j++});
  }
};

// A changed call whose partner lies inside a long run of the other side's gaps is no change at
// that place: after a run that stopped early, B's teardown (frees, closes) would otherwise pair
// with calls of the same kind far on in A (a free of another object) only because A's calls there
// are missing anyway. A pair of equal keys but other inputs (not the same request) that follows at
// least kFarRun missing calls since the last anchor (a match or a same-request pair) and is
// followed by another missing call before the next anchor is split into a missing and an extra
// call, and the extra one moves back to where its run made it (before those missing calls). The
// same with the roles swapped (A stopped early). A changed call right before an anchor stays.
void detach_far_changes(std::vector<Step>& steps, const Hashes& a, const Hashes& b) {
  constexpr uint32_t kFarRun = 16;
  bool inputs = a.input.size() == a.full.size() && b.input.size() == b.full.size();
  auto anchor = [&](const Step& s) {
    if (s.op == Op::kMatch) return true;
    return s.op == Op::kChange && inputs && a.input[s.a] == b.input[s.b];
  };
  size_t n = steps.size();
  // Gaps of each kind since the last anchor (forward) and until the next one (backward).
  std::vector<uint32_t> miss_before(n), extra_before(n), miss_after(n), extra_after(n);
  uint32_t m = 0, e = 0;
  for (size_t k = 0; k < n; ++k) {
    miss_before[k] = m, extra_before[k] = e;
    if (anchor(steps[k])) m = e = 0;
    m += steps[k].op == Op::kMissing;
    e += steps[k].op == Op::kExtra;
  }
  m = e = 0;
  for (size_t k = n; k-- > 0;) {
    miss_after[k] = m, extra_after[k] = e;
    if (anchor(steps[k])) m = e = 0;
    m += steps[k].op == Op::kMissing;
    e += steps[k].op == Op::kExtra;
  }
  // Split in place (first pass), then, in each run of gaps holding a split, the side that made
  // the split call first (a stable partition: both sides keep their order).
  std::vector<Step> out;
  std::vector<uint8_t> first;  // per step of out: 0, or which op goes first in its gap run
  out.reserve(n + 16);
  first.reserve(n + 16);
  bool split_any = false;
  for (size_t k = 0; k < n; ++k) {
    const Step& s = steps[k];
    bool far_in_a = miss_before[k] >= kFarRun && miss_after[k] > 0;
    bool far_in_b = extra_before[k] >= kFarRun && extra_after[k] > 0;
    if (s.op != Op::kChange || anchor(s) || !(far_in_a || far_in_b)) {
      out.push_back(s);
      first.push_back(0);
      continue;
    }
    split_any = true;
    uint8_t f = far_in_a ? 1 : 2;  // 1: B's extra calls first; 2: A's missing calls first
    out.push_back({Op::kMissing, s.a, kNone});
    out.push_back({Op::kExtra, kNone, s.b});
    first.push_back(f);
    first.push_back(f);
  }
  if (!split_any) return;
  auto gap = [](const Step& s) { return s.op == Op::kMissing || s.op == Op::kExtra; };
  steps.clear();
  std::vector<Step> later;
  for (size_t k = 0; k < out.size();) {
    if (!gap(out[k])) {
      steps.push_back(out[k++]);
      continue;
    }
    size_t end = k;
    uint8_t f = 0;
    while (end < out.size() && gap(out[end])) f = std::max(f, first[end++]);
    if (f == 0) {
      steps.insert(steps.end(), out.begin() + static_cast<std::ptrdiff_t>(k),
                   out.begin() + static_cast<std::ptrdiff_t>(end));
    } else {
      Op lead = f == 1 ? Op::kExtra : Op::kMissing;
      later.clear();
      for (size_t i = k; i < end; ++i) {
        if (out[i].op == lead) {
          steps.push_back(out[i]);
        } else {
          later.push_back(out[i]);
        }
      }
      steps.insert(steps.end(), later.begin(), later.end());
    }
    k = end;
  }
}

// A run that stopped early tears down: frees, unmaps, closes, its exit (and a control or two:
// libcuda's teardown releases a boost or a compute-mode reservation). The other run makes calls of
// the same kinds at its own end, hundreds of calls later, and the alignment pairs them (a free of
// another object is a changed call, a free of the same one a match) only because the other run's
// calls in between are missing anyway. So: when a teardown call of the run is paired with a call
// of the other reached only across at least kFarRun calls it never made since its own call before,
// and from there on at least three in four of the run's calls are teardown calls, that call and
// the run's calls after it are its own teardown: they become extra (missing, for A) calls where it
// made them, and their partners calls it did not make. Not when that end is the other run's end
// too (every call paired with the same request, none of the other run's calls missing among them
// or after them: a run that skipped a stretch of the other's calls and then ended as it did).
// kFarRun as in detach_far_changes.
void detach_far_teardown(std::vector<Step>& steps, const Hashes& a, const Hashes& b) {
  constexpr uint32_t kFarRun = 16;
  if (a.teardown.size() != a.full.size() || b.teardown.size() != b.full.size()) return;
  bool inputs = a.input.size() == a.full.size() && b.input.size() == b.full.size();
  auto paired = [](const Step& s) { return s.op == Op::kMatch || s.op == Op::kChange; };
  for (bool in_b : {true, false}) {
    auto own = [&](const Step& s) { return in_b ? s.b : s.a; };
    std::span<const uint8_t> teardown = in_b ? b.teardown : a.teardown;
    Op gone = in_b ? Op::kMissing : Op::kExtra;  // the other run's calls it never made
    size_t n = steps.size();
    // From step k on: the run's calls, and of them its teardown calls.
    std::vector<uint32_t> calls(n + 1, 0), releases(n + 1, 0);
    for (size_t k = n; k-- > 0;) {
      bool mine = own(steps[k]) != kNone;
      calls[k] = calls[k + 1] + mine;
      releases[k] = releases[k + 1] + (mine && teardown[own(steps[k])]);
    }
    size_t far = n, prev = n;  // the call that starts the teardown; the run's step before it
    uint32_t run = 0;
    for (size_t k = 0; k < n && far == n; ++k) {
      run += steps[k].op == gone;
      if (own(steps[k]) == kNone) continue;
      if (paired(steps[k]) && run >= kFarRun && teardown[own(steps[k])] &&
          4 * releases[k] >= 3 * calls[k]) {
        far = k;
      } else {
        prev = k;
        run = 0;
      }
    }
    if (far == n) continue;
    bool own_end = false;
    for (size_t k = far; k < n && !own_end; ++k) {
      const Step& x = steps[k];
      bool same =
          x.op == Op::kMatch || (x.op == Op::kChange && inputs && a.input[x.a] == b.input[x.b]);
      own_end = x.op == gone || (own(x) != kNone && !same);
    }
    if (!own_end) continue;
    // The run's calls from `far` on, unpaired, go right after its call before them; the other
    // run's calls stay in their order.
    size_t keep = prev == n ? 0 : prev + 1;
    std::vector<Step> out(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(keep));
    std::vector<Step> rest;
    for (size_t k = keep; k < n; ++k) {
      const Step& s = steps[k];
      if (own(s) == kNone) {
        rest.push_back(s);
        continue;
      }
      out.push_back(in_b ? Step{Op::kExtra, kNone, s.b} : Step{Op::kMissing, s.a, kNone});
      uint32_t other = in_b ? s.a : s.b;
      if (other == kNone) continue;
      rest.push_back(in_b ? Step{Op::kMissing, other, kNone} : Step{Op::kExtra, kNone, other});
    }
    out.insert(out.end(), rest.begin(), rest.end());
    steps = std::move(out);
  }
}

}  // namespace

std::vector<Step> align(const Hashes& a, const Hashes& b, const AlignOptions& options,
                        AlignStats* stats) {
  AlignStats local;
  AlignStats& st = stats ? *stats : local;
  Aligner al(a, b, options, st);
  al.steps.reserve(std::max(a.full.size(), b.full.size()));
  al.run(0, static_cast<uint32_t>(a.full.size()), 0, static_cast<uint32_t>(b.full.size()), 0);
  detach_far_changes(al.steps, a, b);
  detach_far_teardown(al.steps, a, b);
  return std::move(al.steps);
}

}  // namespace cudatool::ab
