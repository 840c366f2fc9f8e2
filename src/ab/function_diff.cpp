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
struct Side {
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
    for (const auto& d : threads[th].devices) {
      if (d.call != call) continue;
      auto it = by_seq.find(d.seq);
      out.push_back({d.seq, it == by_seq.end() ? std::string("(no such event)")
                                               : summarize(namer, *it->second, true)});
    }
    return out;
  }
};

struct Walk {
  Walk(const Side& sa, const Side& sb, size_t thread) : a(sa), b(sb), th(thread) {}
  const Side& a;
  const Side& b;
  size_t th = 0;
  std::vector<std::pair<uint32_t, uint32_t>> path;  // (call in A, call in B), outermost first
  std::optional<FunctionDifference> found;

  size_t roots_a() const { return a.threads[th].calls.size(); }
  size_t roots_b() const { return b.threads[th].calls.size(); }

  // Compares the callee lists of a pair (or the threads' outermost calls): the first difference
  // inside a pair of callees, else one in the lists themselves.
  bool callees(size_t ka, size_t kb) {
    const auto& ca = a.children[th][ka];
    const auto& cb = b.children[th][kb];
    const auto& na = a.names[th];
    const auto& nb = b.names[th];
    size_t n = std::min(ca.size(), cb.size());
    for (size_t i = 0; i < n; ++i) {
      if (na[ca[i]] != nb[cb[i]]) return list_difference(ca, cb, i);
      path.emplace_back(ca[i], cb[i]);
      if (pair(ca[i], cb[i])) return true;
      path.pop_back();
    }
    if (ca.size() != cb.size()) return list_difference(ca, cb, n);
    return false;
  }

  bool pair(uint32_t x, uint32_t y) {
    if (callees(x, y)) return true;
    if (same_value(a.threads[th].calls[x], a.threads[th], b.threads[th].calls[y], b.threads[th]))
      return false;
    report("return_value", "");
    return true;
  }

  // The callee lists differ at position i: by which function, and how.
  bool list_difference(const std::vector<uint32_t>& ca, const std::vector<uint32_t>& cb, size_t i) {
    const auto& na = a.names[th];
    const auto& nb = b.names[th];
    const std::string& callee = i < ca.size() ? na[ca[i]] : nb[cb[i]];
    auto count = [](const std::vector<uint32_t>& c, const std::vector<std::string>& nm,
                    const std::string& f) {
      return static_cast<uint64_t>(
          std::count_if(c.begin(), c.end(), [&](uint32_t k) { return nm[k] == f; }));
    };
    FunctionDifference& d = report("", callee);
    d.count_a = count(ca, na, callee);
    d.count_b = count(cb, nb, callee);
    d.kind = d.count_b == 0   ? "callee_only_in_a"
             : d.count_a == 0 ? "callee_only_in_b"
                              : "callee_count";
    return true;
  }

  FunctionDifference& report(std::string kind, std::string callee) {
    FunctionDifference& d = found.emplace();
    d.kind = std::move(kind);
    d.callee = std::move(callee);
    d.thread = static_cast<uint32_t>(th);
    d.tid_a = a.threads[th].tid;
    d.tid_b = b.threads[th].tid;
    for (auto [x, y] : path) {
      const FunctionCall& cx = a.threads[th].calls[x];
      const FunctionCall& cy = b.threads[th].calls[y];
      d.path.push_back({a.names[th][x], std::string(call_end_name(cx.end)),
                        std::string(call_end_name(cy.end)), cx.ret, cy.ret,
                        same_value(cx, a.threads[th], cy, b.threads[th])});
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
  Side sa, sb;
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
    if (w.callees(w.roots_a(), w.roots_b())) {
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
