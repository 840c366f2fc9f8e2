#include "replay/bisect.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <map>

#include "ab/compare.hpp"
#include "ab/verdict.hpp"
#include "base/regex.hpp"

namespace cudatool::replay {
namespace {

Error bisect_err(std::string what) {
  return make_error("replay --bisect", "", std::nullopt, std::move(what));
}

std::vector<std::vector<uint32_t>> split(const std::vector<uint32_t>& c, size_t n) {
  std::vector<std::vector<uint32_t>> parts;
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t end = start + (c.size() - start) / (n - i);
    parts.emplace_back(c.begin() + static_cast<long>(start), c.begin() + static_cast<long>(end));
    start = end;
  }
  return parts;
}

// A try fails as BAD failed: killed by the same signal in the same function.
bool same_crash(const trace::CrashSummary& bad, const std::optional<record::CrashReport>& c) {
  return c && c->exit_status == -bad.signal && c->signal == bad.signal &&
         c->function() == bad.function;
}

}  // namespace

std::vector<uint32_t> ddmin(uint32_t count,
                            const std::function<bool(const std::vector<uint32_t>&)>& fails) {
  std::map<std::vector<uint32_t>, bool> cache;
  auto test = [&](const std::vector<uint32_t>& s) {
    auto it = cache.find(s);
    if (it != cache.end()) return it->second;
    bool r = fails(s);
    cache[s] = r;
    return r;
  };
  std::vector<uint32_t> c(count);
  for (uint32_t i = 0; i < count; ++i) c[i] = i;
  size_t n = 2;
  while (c.size() >= 2) {
    n = std::min(n, c.size());
    auto parts = split(c, n);
    bool reduced = false;
    for (const auto& d : parts) {
      if (test(d)) {
        c = d;
        n = 2;
        reduced = true;
        break;
      }
    }
    if (!reduced && n > 2) {
      for (const auto& d : parts) {
        std::vector<uint32_t> comp;
        std::set_difference(c.begin(), c.end(), d.begin(), d.end(), std::back_inserter(comp));
        if (test(comp)) {
          c = comp;
          n = std::max<size_t>(n - 1, 2);
          reduced = true;
          break;
        }
      }
    }
    if (reduced) continue;
    if (n >= c.size()) break;
    n = std::min(2 * n, c.size());
  }
  return c;
}

std::vector<AnswerDiff> differing_answers(const Recording& good, const Recording& bad) {
  return plan_bisect(good, bad).diffs;
}

namespace {

// The first of GOOD's calls that BAD never made after it stopped early (ab's early end), other
// than a teardown call: where BAD's path leaves GOOD's.
std::optional<uint32_t> departure(const ab::Comparison& cmp) {
  ab::Verdict v = ab::make_verdict(cmp);
  if (!v.early_end || !v.early_end->b_stopped) return std::nullopt;
  for (size_t k = v.early_end->from_entry; k < cmp.entries.size(); ++k) {
    const ab::Entry& e = cmp.entries[k];
    if (e.op == ab::Op::kMissing && !ab::is_teardown_call(cmp.a->events[e.a])) return e.a;
  }
  return std::nullopt;
}

}  // namespace

BisectPlan plan_bisect(const Recording& good, const Recording& bad) {
  // Of what both hold: against an imported capture, a recording is compared as the capture holds
  // its calls (ab::normalize_pair does the same for `cudatool ab`).
  auto view = [](const Recording& self, const Recording& other) {
    std::unique_ptr<ab::NormalizedTrace> v;
    if (ab::NormalizeOptions::capture_view_against(self.header, other.header)) {
      ab::NormalizeOptions o;
      o.capture_view = true;
      o.libcuda_version = self.norm->libcuda_version;
      v = ab::normalize_events(self.header, self.events, o);
    }
    return v;
  };
  std::unique_ptr<ab::NormalizedTrace> good_view = view(good, bad), bad_view = view(bad, good);
  ab::Comparison cmp =
      ab::compare(good_view ? *good_view : *good.norm, bad_view ? *bad_view : *bad.norm);
  BisectPlan plan;
  plan.departure = departure(cmp);
  std::vector<AnswerDiff>& out = plan.diffs;
  for (const ab::Divergence& d : cmp.divergences) {
    if (d.kind != ab::Kind::kStatus && d.kind != ab::Kind::kReturn &&
        d.kind != ab::Kind::kParameters) {
      continue;
    }
    // The program's own end (its exit status) is the outcome bisect explains, not an answer.
    if (bad.events[d.b].sys == trace::Sys::kExit || good.events[d.a].sys == trace::Sys::kExit) {
      continue;
    }
    bool answer = d.kind != ab::Kind::kParameters;
    std::string change;
    for (const ab::FieldDiff& f : d.fields) {
      // The fd a call is made on is the program's input (its naming differs when an earlier
      // open or close did), not the kernel's answer.
      if (f.side == "in" || f.field == "fd") continue;
      answer = true;
      if (!change.empty()) change += ", ";
      change += fmt::format("{} {} -> {}", f.field, f.a, f.b);
    }
    if (!answer) continue;  // the program asked differently: a consequence, not an answer
    AnswerDiff a;
    a.good_index = d.a;
    a.bad_index = d.b;
    a.good_seq = good.events[d.a].seq;
    a.bad_seq = bad.events[d.b].seq;
    a.kind = std::string(ab::kind_name(d.kind));
    a.what = describe_event(good, d.a);
    a.change = change;
    out.push_back(std::move(a));
  }
  return plan;
}

namespace {

// How a try is told to fail as BAD failed (BisectReport::criterion): --fails-if, else BAD's exit
// status when GOOD's is another, else BAD's path. Errors when none of them can tell.
Status choose_criterion(const BisectOptions& o, const Recording& good, const Recording& bad,
                        BisectReport& rep) {
  if (!o.fails_if.empty()) {
    rep.criterion = fmt::format("the program's output matches /{}/", o.fails_if);
    rep.criterion_kind = "output";
    return Status::success();
  }
  std::optional<int> bad_status = bad.trailer ? bad.trailer->exit_status : std::nullopt;
  std::optional<int> good_status = good.trailer ? good.trailer->exit_status : std::nullopt;
  if (bad_status && bad_status != good_status) {
    rep.bad_exit_status = *bad_status;
    rep.criterion = fmt::format("exit status {} (BAD's trailer)", *bad_status);
    rep.criterion_kind = "exit_status";
    // A crash is a failure of its own kind: the same signal in the same function.
    if (const auto& c = bad.trailer->crash; c && *bad_status == -c->signal) {
      rep.bad_crash = *c;
      rep.criterion = fmt::format("killed by {} in {} (BAD's trailer)",
                                  record::signal_name(c->signal), c->function);
      rep.criterion_kind = "crash";
    }
    return Status::success();
  }
  std::string why = !bad.trailer ? fmt::format("{} has no trailer", o.bad)
                    : !bad_status
                        ? std::string("BAD's exit status is not known (an import)")
                        : fmt::format("GOOD and BAD both exited with status {}", *bad_status);
  if (!rep.departure) {
    return bisect_err(fmt::format(
        "{}, and BAD's device calls do not end early against GOOD's (ab finds no early end): "
        "give --fails-if to say how BAD failed",
        why));
  }
  rep.criterion = fmt::format(
      "its device calls end where BAD's ended: it does not reach GOOD's seq {} ({}), the "
      "first of GOOD's calls BAD never made ({})",
      good.events[*rep.departure].seq, describe(good, good.events[*rep.departure]).name, why);
  rep.criterion_kind = "path";
  return Status::success();
}

// "BAD's answer to #12 (…: …) alone makes the program fail as BAD failed (…)".
std::string culprit_message(const BisectReport& rep) {
  std::string list;
  for (uint32_t k : rep.culprit) {
    const AnswerDiff& a = rep.diffs[k];
    if (!list.empty()) list += "; ";
    list += fmt::format("#{} ({}{}{})", a.bad_seq, a.what, a.change.empty() ? "" : ": ", a.change);
  }
  return fmt::format("BAD's answer{} to {} {} make{} the program fail as BAD failed ({})",
                     rep.culprit.size() == 1 ? "" : "s", list,
                     rep.culprit.size() == 1 ? "alone" : "together",
                     rep.culprit.size() == 1 ? "s" : "", rep.criterion);
}

}  // namespace

Result<BisectReport> run_bisect(const BisectOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  auto good = load_recording(o.good);
  if (!good) return good.error();
  auto bad = load_recording(o.bad);
  if (!bad) return bad.error();
  BisectReport rep;
  rep.good = o.good;
  rep.bad = o.bad;
  rep.argv = o.argv;
  std::optional<PosixRegex> re;
  if (!o.fails_if.empty()) {
    auto compiled = PosixRegex::compile(o.fails_if);
    if (!compiled) return bisect_err(fmt::format("--fails-if: {}", compiled.error().message()));
    re.emplace(std::move(*compiled));
  }
  BisectPlan plan = plan_bisect(*good, *bad);
  rep.diffs = std::move(plan.diffs);
  rep.departure = plan.departure;
  if (Status st = choose_criterion(o, *good, *bad, rep); !st.ok()) return st.error();

  if (rep.diffs.empty()) {
    rep.message = "BAD answers no call differently from GOOD (after ab's normalisation)";
    return rep;
  }
  auto attempt = [&](const std::vector<uint32_t>& subset) -> Result<bool> {
    ReplayOptions ro;
    ro.argv = o.argv;
    ro.deadline_s = o.deadline_s;
    ro.shim = o.shim;
    ro.capture_output = true;
    for (uint32_t k : subset) {
      const AnswerDiff& a = rep.diffs[k];
      ro.overrides.push_back({a.good_index, &bad->events[a.bad_index],
                              fmt::format("BAD's answer (seq {})", a.bad_seq)});
    }
    auto r = run_replay(*good, ro);
    if (!r) return r.error();
    BisectTry t;
    t.subset = subset;
    t.exit_status = r->exit_status;
    t.end = r->end;
    t.wall_s = r->wall_s;
    if (r->crash) t.crash = r->crash->signature();
    if (re) {
      t.failed = re->search_lines(r->program_output);
    } else if (rep.bad_crash) {
      t.failed = same_crash(*rep.bad_crash, r->crash);
    } else if (rep.criterion_kind == "exit_status") {
      t.failed = r->end != ReplayEnd::kRefused && r->exit_status == rep.bad_exit_status;
    } else {  // BAD's path: GOOD's call where BAD's path departs is not reached
      t.failed = r->end != ReplayEnd::kRefused &&
                 std::find(r->unanswered.begin(), r->unanswered.end(), *rep.departure) !=
                     r->unanswered.end();
    }
    rep.tries.push_back(t);
    return t.failed;
  };
  std::vector<uint32_t> all(rep.diffs.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  auto none = attempt({});
  if (!none) return none.error();
  if (*none) {
    rep.message = "GOOD's own answers already make the program fail so: nothing to bisect";
    return rep;
  }
  auto every = attempt(all);
  if (!every) return every.error();
  if (!*every) {
    rep.message = fmt::format(
        "all {} of BAD's differing answers together do not make the program fail so: the "
        "failure needs more than these answers (calls BAD made that GOOD did not, timing, the "
        "environment)",
        all.size());
    return rep;
  }
  std::optional<Error> failure;
  rep.culprit = ddmin(static_cast<uint32_t>(all.size()), [&](const std::vector<uint32_t>& s) {
    if (failure) return false;
    auto r = attempt(s);
    if (!r) {
      failure = r.error();
      return false;
    }
    return *r;
  });
  if (failure) return *failure;
  rep.found = true;
  rep.message = culprit_message(rep);
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace cudatool::replay
