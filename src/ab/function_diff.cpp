#include "ab/function_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "ab/compare.hpp"
#include "trace/function_calls.hpp"
#include "trace/function_namer.hpp"

namespace cudatool::ab {
namespace {

using trace::FunctionCall;
using trace::ThreadCalls;

// `x` of thread `tx`, `y` of thread `ty`: a process or thread id returned (getpid, gettid) is
// the same when it is each run's own.
bool same_value(const FunctionCall& x, const ThreadCalls& tx, const FunctionCall& y,
                const ThreadCalls& ty) {
  if (x.end != y.end) return false;
  if (x.end != FunctionCall::End::kReturned) return true;
  constexpr uint64_t kAddress = uint64_t{1} << 32;
  auto id = [](uint64_t v, int32_t want) {
    return (v & 0xffffffff) == static_cast<uint32_t>(want);
  };
  return x.ret == y.ret || (x.ret >= kAddress && y.ret >= kAddress) ||
         (id(x.ret, tx.tid) && id(y.ret, ty.tid)) || (id(x.ret, tx.pid) && id(y.ret, ty.pid));
}

// One trace's side: its threads' calls, the names of their functions, the children of each call.
struct TreeSide {
  const NormalizedTrace* t = nullptr;
  std::vector<ThreadCalls> threads;
  std::vector<std::vector<std::string>> names;               // per thread, per call
  std::vector<std::vector<std::vector<uint32_t>>> children;  // per thread, per call (+1: roots)
  std::unordered_map<uint64_t, const NormEvent*> by_seq;

  void build(const NormalizedTrace& nt, trace::FunctionNamer& namer) {
    t = &nt;
    threads = trace::build_function_calls(nt.fn_tables, nt.fn_blocks);
    // Roles as ab's thread roles order them (processes, main thread, then by tid).
    std::map<int32_t, size_t> role;
    for (size_t i = 0; i < nt.thread_tids.size(); ++i) role.emplace(nt.thread_tids[i], i);
    std::stable_sort(threads.begin(), threads.end(),
                     [&](const ThreadCalls& x, const ThreadCalls& y) {
                       auto rx = role.find(x.tid), ry = role.find(y.tid);
                       size_t ix = rx == role.end() ? SIZE_MAX : rx->second,
                              iy = ry == role.end() ? SIZE_MAX : ry->second;
                       return ix < iy;
                     });
    for (const auto& th : threads) {
      auto& nm = names.emplace_back(th.calls.size());
      auto& ch = children.emplace_back(th.calls.size() + 1);
      for (size_t i = 0; i < th.calls.size(); ++i) {
        nm[i] = namer.name(th.table_ptr, th.calls[i].function);
        const int64_t p = th.calls[i].parent;
        ch[p < 0 ? th.calls.size() : static_cast<size_t>(p)].push_back(static_cast<uint32_t>(i));
      }
    }
    for (const NormEvent& e : nt.events) by_seq.emplace(e.seq, &e);
  }

  std::vector<FunctionDeviceCall> devices(size_t th, int64_t call) const {
    std::vector<FunctionDeviceCall> out;
    const Namer namer{*t};
    const auto& calls = threads[th].calls;
    auto inside = [&](int64_t c) {  // c is `call` or one of its callees, at any depth
      if (call < 0) return c < 0;
      while (c >= 0 && c != call) c = calls[static_cast<size_t>(c)].parent;
      return c == call;
    };
    for (const auto& d : threads[th].devices) {
      if (!inside(d.call)) continue;
      auto it = by_seq.find(d.seq);
      out.push_back({d.seq, it == by_seq.end() ? std::string("(no such event)")
                                               : summarize(namer, *it->second, true)});
    }
    return out;
  }
};

// The callees of one call, in order, by name; loops in them.
struct Callees {
  static constexpr size_t kMaxBlock = 8;  // callees in a loop's block, at most
  const std::vector<uint32_t>& c;
  const std::vector<std::string>& names;

  size_t size() const { return c.size(); }
  const std::string& name(size_t i) const { return names[c[i]]; }
  uint64_t count(const std::string& f) const {
    return static_cast<uint64_t>(
        std::count_if(c.begin(), c.end(), [&](uint32_t k) { return names[k] == f; }));
  }
  // How many times the p callees of `u` at `at` follow each other here from i.
  size_t turns(size_t i, const Callees& u, size_t at, size_t p) const {
    size_t n = 0;
    for (; i + (n + 1) * p <= size(); ++n) {
      for (size_t e = 0; e < p; ++e) {
        if (name(i + n * p + e) != u.name(at + e)) return n;
      }
    }
    return n;
  }
  // The loop that starts at i: its block's length and turns (1, 1: no loop), the one covering
  // the most calls, the shortest block among equals.
  std::pair<size_t, size_t> loop_at(size_t i) const {
    std::pair<size_t, size_t> best{1, 1};
    for (size_t p = 1; p <= kMaxBlock && i + 2 * p <= size(); ++p) {
      size_t n = turns(i, *this, i, p);
      if (n >= 2 && n * p > best.first * best.second) best = {p, n};
    }
    return best;
  }
};

// The walk in call order. A return value that differs while the callees below are the same, and
// a run of one callee of another length, are held back: reported when the caller then behaves
// otherwise (another callee, another return value) — the first cause of a consequence. When the
// caller goes on as in the other run, it is dropped and counted (`quiet`): rax of a function that
// returns nothing in it (void, a float in xmm0, a time) and the turns of a polling loop differ
// between any two runs and change nothing. An outermost call's value is the program's: always
// reported.
struct Walk {
  Walk(const TreeSide& sa, const TreeSide& sb, size_t thread) : a(sa), b(sb), th(thread) {}
  const TreeSide& a;
  const TreeSide& b;
  size_t th = 0;
  std::vector<std::pair<uint32_t, uint32_t>> path;  // (call in A, call in B), outermost first
  std::optional<FunctionDifference> found;
  uint64_t quiet = 0;        // held differences dropped (one per caller)
  uint64_t loop_counts = 0;  // runs of a callee of another length

  size_t roots_a() const { return a.threads[th].calls.size(); }
  size_t roots_b() const { return b.threads[th].calls.size(); }

  // Compares the callee lists of a pair (or the threads' outermost calls, `top`), as loops: runs
  // of one block of callees called again and again (a polling loop: [poll, read the clock]
  // twice in one run, forty times in the other). The first difference inside a pair of callees,
  // else one in the loops themselves. In a loop, the turns are paired in order (the turn that
  // found the work done, against one that did not, differs in its values: held); a loop that
  // turned another number of times is held, as a return value is: the first held difference waits
  // in `held` for the caller to report (another callee or return value follows) or drop (it went on
  // as in the other run).
  bool callees(size_t ka, size_t kb, std::optional<FunctionDifference>& held, bool top = false) {
    const Callees xa{a.children[th][ka], a.names[th]}, xb{b.children[th][kb], b.names[th]};
    auto consequence = [&](FunctionDifference d) {
      found = held ? std::move(held) : std::move(d);
      return true;
    };
    size_t i = 0, k = 0;
    while (i < xa.size() && k < xb.size()) {
      // The loop's block: the one of the side whose loop covers more calls.
      auto [pa, ra] = xa.loop_at(i);
      auto [pb, rb] = xb.loop_at(k);
      bool from_a = pa * ra >= pb * rb;
      const Callees& unit = from_a ? xa : xb;
      size_t at = from_a ? i : k, p = from_a ? pa : pb;
      size_t turns_a = xa.turns(i, unit, at, p), turns_b = xb.turns(k, unit, at, p);
      if (turns_a == 0 || turns_b == 0) {  // a loop in one run only: the calls up to where the
        size_t e = 0;                      // lists part are compared first
        for (; i + e < xa.size() && k + e < xb.size() && xa.name(i + e) == xb.name(k + e); ++e) {
          path.emplace_back(xa.c[i + e], xb.c[k + e]);
          bool differs = pair(xa.c[i + e], xb.c[k + e], held, top);
          path.pop_back();
          if (differs) return true;
        }
        return consequence(
            list_difference(xa, xb, i + e < xa.size() ? xa.name(i + e) : xb.name(k + e)));
      }
      size_t both = std::min(turns_a, turns_b);
      for (size_t t = 0; t < both; ++t) {
        for (size_t e = 0; e < p; ++e) {
          uint32_t x = xa.c[i + t * p + e], y = xb.c[k + t * p + e];
          path.emplace_back(x, y);
          bool differs = pair(x, y, held, top);
          path.pop_back();
          if (differs) return true;
        }
      }
      if (turns_a != turns_b) {
        ++loop_counts;
        FunctionDifference d = list_difference(xa, xb, unit.name(at));
        if (top) return consequence(std::move(d));
        if (!held) held = std::move(d);
      }
      i += turns_a * p;
      k += turns_b * p;
    }
    if (i < xa.size() || k < xb.size()) {
      return consequence(list_difference(xa, xb, i < xa.size() ? xa.name(i) : xb.name(k)));
    }
    return false;
  }

  bool pair(uint32_t x, uint32_t y, std::optional<FunctionDifference>& held, bool top) {
    std::optional<FunctionDifference> below;
    if (callees(x, y, below)) {
      if (held) found = std::move(held);  // an earlier sibling's value came first
      return true;
    }
    bool same =
        same_value(a.threads[th].calls[x], a.threads[th], b.threads[th].calls[y], b.threads[th]);
    if (!same && below) {  // this call's value differs after a callee's did: that callee's
      found = held ? std::move(held) : std::move(below);
      return true;
    }
    if (below) ++quiet;  // a difference below, and this call went on as in the other run
    if (same) return false;
    if (top) {
      found = held ? std::move(held) : report("return_value", "");
      return true;
    }
    if (!held) held = report("return_value", "");
    return false;
  }

  // The callee lists differ in `callee`: how often each run calls it.
  FunctionDifference list_difference(const Callees& xa, const Callees& xb,
                                     const std::string& callee) const {
    FunctionDifference d = report("", callee);
    d.count_a = xa.count(callee);
    d.count_b = xb.count(callee);
    d.kind = d.count_b == 0   ? "callee_only_in_a"
             : d.count_a == 0 ? "callee_only_in_b"
                              : "callee_count";
    return d;
  }

  FunctionDifference report(std::string kind, std::string callee) const {
    FunctionDifference d;
    d.kind = std::move(kind);
    d.callee = std::move(callee);
    d.thread = static_cast<uint32_t>(th);
    d.tid_a = a.threads[th].tid;
    d.tid_b = b.threads[th].tid;
    for (auto [x, y] : path) {
      const FunctionCall& cx = a.threads[th].calls[x];
      const FunctionCall& cy = b.threads[th].calls[y];
      d.path.push_back({.function = a.names[th][x],
                        .end_a = std::string(call_end_name(cx.end)),
                        .end_b = std::string(call_end_name(cy.end)),
                        .ret_a = cx.ret,
                        .ret_b = cy.ret,
                        .same = same_value(cx, a.threads[th], cy, b.threads[th])});
    }
    int64_t at_a = path.empty() ? -1 : path.back().first,
            at_b = path.empty() ? -1 : path.back().second;
    d.devices_a = a.devices(th, at_a);
    d.devices_b = b.devices(th, at_b);
    return d;
  }
};

std::string path_text(const FunctionDifference& d) {
  std::string s;
  for (const auto& p : d.path) s += (s.empty() ? "" : " -> ") + p.function;
  return s.empty() ? "(outside every recorded call)" : s;
}

std::string ret_text(const std::string& end, uint64_t v) {
  if (end != "returned") return end;
  auto sv = static_cast<int64_t>(v);
  return sv >= -4096 && sv <= 0xffff ? std::to_string(sv) : fmt::format("{:#x}", v);
}

std::string message(const FunctionDifference& d) {
  std::string where = path_text(d);
  if (d.kind == "return_value") {
    const FunctionStep& s = d.path.back();
    return fmt::format("{}: returned {} in A, {} in B", where, ret_text(s.end_a, s.ret_a),
                       ret_text(s.end_b, s.ret_b));
  }
  if (d.kind == "callee_count") {
    return fmt::format("{}: calls {} {} times in A, {} in B", where, d.callee, d.count_a,
                       d.count_b);
  }
  return fmt::format("{}: calls {} in {} only", where, d.callee,
                     d.kind == "callee_only_in_a" ? "A" : "B");
}

}  // namespace

FunctionComparison compare_functions(const NormalizedTrace& a, const NormalizedTrace& b,
                                     const std::string& lib) {
  FunctionComparison out;
  if (a.fn_blocks.empty() || b.fn_blocks.empty()) {
    out.why_not = a.fn_blocks.empty() && b.fn_blocks.empty() ? "neither trace has function events"
                  : a.fn_blocks.empty()                      ? "A has no function events"
                                                             : "B has no function events";
    return out;
  }
  out.compared = true;
  trace::FunctionNamer namer(lib);
  TreeSide sa, sb;
  sa.build(a, namer);
  sb.build(b, namer);
  for (const auto& t : sa.threads) out.calls_a += t.calls.size();
  for (const auto& t : sb.threads) out.calls_b += t.calls.size();
  out.threads_a = sa.threads.size();
  out.threads_b = sb.threads.size();
  out.notes = namer.notes();
  for (size_t th = 0; th < std::min(sa.threads.size(), sb.threads.size()); ++th) {
    for (const auto& n : sa.threads[th].notes) out.notes.push_back("A: " + n);
    for (const auto& n : sb.threads[th].notes) out.notes.push_back("B: " + n);
    Walk w(sa, sb, th);
    std::optional<FunctionDifference> held;
    bool differs = w.callees(w.roots_a(), w.roots_b(), held, /*top=*/true);
    out.quiet += w.quiet;
    out.loop_counts += w.loop_counts;
    if (differs) {
      w.found->message = message(*w.found);
      out.first = std::move(w.found);
      break;
    }
  }
  if (!out.first && sa.threads.size() != sb.threads.size()) {
    out.notes.push_back(fmt::format("threads with function events: {} in A, {} in B",
                                    sa.threads.size(), sb.threads.size()));
  }
  return out;
}

}  // namespace cudatool::ab
