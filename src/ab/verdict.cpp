#include "ab/verdict.hpp"

#include <algorithm>
#include <string_view>

namespace cudatool::ab {
namespace {

constexpr std::array kKinds{Kind::kMissing, Kind::kExtra, Kind::kStatus, Kind::kParameters,
                            Kind::kReturn};
constexpr size_t kMaxListed = 6;

std::string call_label(const NormEvent& e) {
  if (!e.call.empty()) return std::string(e.call);
  char buf[32];
  snprintf(buf, sizeof buf, "ioctl 0x%llx?", static_cast<unsigned long long>(e.request));
  return buf;
}

std::string call_list(const Aftermath& m, bool ascii) {
  std::string s;
  for (size_t i = 0; i < m.calls.size() && i < kMaxListed; ++i) {
    if (!s.empty()) s += ", ";
    s += counted(m.calls[i].first, m.calls[i].second);
  }
  if (m.calls.size() > kMaxListed) s += ascii ? ", ..." : ", …";
  return s;
}

std::string ending(const Aftermath& m) {
  if (!m.end_reason) return " (no trailer: the recording was cut)";
  const std::string& r = *m.end_reason;
  int status = m.exit_status.value_or(0);
  if (r == "exit") return " (exit status " + std::to_string(status) + ")";
  if (r == "signal") return " (killed by signal " + std::to_string(-status) + ")";
  // An import holds no exit status unless `import --exit-status` stated one.
  if (r == "import") return m.exit_status ? " (exit status " + std::to_string(status) + ")" : "";
  return " (recording " + r + ")";
}

std::string plural(uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

void fill_aftermath(const Comparison& c, const NormalizedTrace& t, bool side_a, uint32_t fk,
                    Aftermath& m) {
  m.total = static_cast<uint32_t>(t.events.size());
  if (t.trailer) {
    m.end_reason = t.trailer->reason;
    m.exit_status = t.trailer->exit_status;
  }
  if (fk >= c.entries.size()) return;
  bool all_release = true;
  for (size_t k = fk + 1; k < c.entries.size(); ++k) {
    uint32_t i = side_a ? c.entries[k].a : c.entries[k].b;
    if (i == kNone) continue;
    const NormEvent& e = t.events[i];
    ++m.events;
    all_release &= is_teardown_call(e);
    if (e.sys == trace::Sys::kExit) continue;
    std::string label = call_label(e);
    auto it = std::find_if(m.calls.begin(), m.calls.end(),
                           [&](const auto& p) { return p.first == label; });
    if (it == m.calls.end()) {
      m.calls.emplace_back(std::move(label), 1);
    } else {
      ++it->second;
    }
  }
  m.teardown = m.events > 0 && all_release;
  // The API call in progress: at the divergence, else the side's next event, else its last one.
  uint32_t at = kNone;
  for (size_t k = fk; k < c.entries.size() && at == kNone; ++k) {
    at = side_a ? c.entries[k].a : c.entries[k].b;
  }
  for (size_t k = fk; k-- > 0 && at == kNone;) at = side_a ? c.entries[k].a : c.entries[k].b;
  if (at != kNone && t.events[at].api < t.api_names.size()) m.api = t.api_names[t.events[at].api];
}

std::string summary_line(const Comparison& c, const Divergence& d, bool ascii) {
  if (d.a == kNone) return "B: " + summarize(c.namer_b(), c.b->events[d.b], ascii);
  if (d.b == kNone) return "A: " + summarize(c.namer_a(), c.a->events[d.a], ascii);
  std::string sa = summarize(c.namer_a(), c.a->events[d.a], ascii);
  std::string sb = summarize(c.namer_b(), c.b->events[d.b], ascii);
  if (sa == sb) return sa;
  std::string_view arrow = ascii ? " ->" : " →";
  size_t pa = sa.rfind(arrow), pb = sb.rfind(arrow);
  if (pa != std::string::npos && pa == pb && sa.compare(0, pa, sb, 0, pb) == 0) {
    size_t from = pa + arrow.size() + 1;
    return sa.substr(0, pa + arrow.size()) + " A: " + sa.substr(std::min(from, sa.size())) +
           "  B: " + sb.substr(std::min(from, sb.size()));
  }
  return "A: " + sa + "\n  B: " + sb;
}

}  // namespace

std::string counted(std::string_view call, uint64_t n) {
  std::string noun = call == "NV_ESC_RM_FREE" ? "free" : std::string(call);
  bool word = noun == "free" || noun == "close" || noun == "munmap" || noun == "open" ||
              noun == "dup" || noun == "mmap";
  if (n == 1) return word ? "1 " + noun : noun;
  return std::to_string(n) + " " + noun + (word ? "s" : "");
}

namespace {

// A run that stopped after the first divergence: the alignment ends with calls of the other run
// only (after the first divergence's entry `fk`). Those are folded into one finding; `divergent`
// says which entries are divergences (not those known differences hid).
void later_end(const Comparison& c, uint32_t fk, const std::vector<uint8_t>& divergent,
               Verdict& v) {
  size_t n = c.entries.size();
  if (n <= fk + 1) return;
  Op gone = c.entries[n - 1].op;
  if (gone != Op::kMissing && gone != Op::kExtra) return;
  size_t k = n;
  while (k > fk + 1 && c.entries[k - 1].op == gone) --k;
  EarlyEnd ee;
  ee.b_stopped = gone == Op::kMissing;
  ee.later = true;
  ee.from_entry = static_cast<uint32_t>(k);
  ee.remaining = static_cast<uint32_t>(n - k);
  ee.not_made = static_cast<uint32_t>(
      std::count(divergent.begin() + static_cast<std::ptrdiff_t>(k), divergent.end(), uint8_t{1}));
  if (ee.not_made == 0) return;
  for (size_t j = k; j-- > 0 && ee.after == kNone;) {
    ee.after = ee.b_stopped ? c.entries[j].a : c.entries[j].b;
  }
  v.early_end = ee;
  v.shown[static_cast<size_t>(ee.b_stopped ? Kind::kMissing : Kind::kExtra)] -= ee.not_made;
}

}  // namespace

namespace {

// Verdict::consequence: a divergence other than an answer difference has consequences; an answer
// difference has them when the next entry that is no answer difference is a divergence (the runs
// part there), not a match.
std::vector<uint8_t> consequences(const Comparison& c) {
  size_t n = c.divergences.size();
  std::vector<uint8_t> out(n, 1);
  std::vector<uint32_t> at(c.entries.size(), kNone);  // entry → divergence
  for (size_t i = 0; i < n; ++i) at[c.divergences[i].entry] = static_cast<uint32_t>(i);
  // Backwards: whether, from entry k on, the first entry that is not an answer difference is a
  // divergence (false at the end).
  bool parts = false;
  for (size_t k = c.entries.size(); k-- > 0;) {
    uint32_t i = at[k];
    if (i == kNone) {
      parts = false;  // a match
    } else if (c.divergences[i].answer) {
      out[i] = parts;
    } else {
      parts = true;
    }
  }
  return out;
}

}  // namespace

bool has_consequence(const Comparison& c, const Verdict& v, const Divergence& d) {
  size_t i = static_cast<size_t>(&d - c.divergences.data());
  return i >= v.consequence.size() || v.consequence[i] != 0;
}

Verdict make_verdict(const Comparison& c) {
  Verdict v;
  for (const Divergence& d : c.divergences) ++v.counts[static_cast<size_t>(d.kind)];
  v.shown = v.counts;
  v.consequence = consequences(c);
  for (size_t i = 0; i < c.divergences.size() && v.first == nullptr; ++i) {
    if (v.consequence[i]) {
      v.first = &c.divergences[i];
    } else {
      v.quiet.push_back(&c.divergences[i]);
    }
  }
  uint32_t fk = v.first ? v.first->entry : static_cast<uint32_t>(c.entries.size());
  fill_aftermath(c, *c.a, true, fk, v.a);
  fill_aftermath(c, *c.b, false, fk, v.b);
  if (v.first == nullptr) return v;
  const Divergence& f = *v.first;
  // From the first divergence on: calls of one run without a partner (divergences: not those
  // known differences hid), calls of the other run.
  std::vector<uint8_t> divergent(c.entries.size(), 0);
  for (const Divergence& d : c.divergences) divergent[d.entry] = 1;
  uint32_t missing = 0, extra = 0, a_from = 0, b_from = 0;
  for (size_t k = fk; k < c.entries.size(); ++k) {
    const Entry& e = c.entries[k];
    missing += e.op == Op::kMissing && divergent[k];
    extra += e.op == Op::kExtra && divergent[k];
    a_from += e.a != kNone;
    b_from += e.b != kNone;
  }
  bool b_stopped = missing > b_from;
  bool a_stopped = extra > a_from;
  if (!b_stopped && !a_stopped) {
    later_end(c, fk, divergent, v);
    return v;
  }
  EarlyEnd ee;
  ee.b_stopped = b_stopped;
  ee.from_entry = fk;
  Op gone = b_stopped ? Op::kMissing : Op::kExtra;
  uint32_t own = b_stopped ? f.a : f.b;  // the first divergence's event in the run that went on
  const Entry& fe = c.entries[fk];
  if (own != kNone && fe.op != gone) {
    ee.after = own;
  } else {
    for (size_t k = fk; k-- > 0 && ee.after == kNone;) {
      ee.after = b_stopped ? c.entries[k].a : c.entries[k].b;
    }
  }
  ee.remaining = (b_stopped ? a_from : b_from) - (own != kNone && fe.op != gone ? 1 : 0);
  ee.not_made = b_stopped ? missing : extra;
  v.early_end = ee;
  Kind folded = b_stopped ? Kind::kMissing : Kind::kExtra;
  v.shown[static_cast<size_t>(folded)] -= ee.not_made;
  return v;
}

bool not_made(const Verdict& v, const Divergence& d) {
  if (!v.early_end || v.first == nullptr || d.entry < v.early_end->from_entry) return false;
  return d.kind == (v.early_end->b_stopped ? Kind::kMissing : Kind::kExtra);
}

std::string divergence_place(const Comparison& c, const Divergence& d) {
  std::string s;
  auto one = [&](char side, const NormalizedTrace& t, uint32_t i) {
    if (i == kNone) return;
    if (!s.empty()) s += " / ";
    s += side;
    s += " #" + std::to_string(i);
    if (t.events[i].seq != i) s += " (seq " + std::to_string(t.events[i].seq) + ")";
  };
  one('A', *c.a, d.a);
  one('B', *c.b, d.b);
  const NormEvent& e = d.a != kNone ? c.a->events[d.a] : c.b->events[d.b];
  if (std::max(c.threads_a, c.threads_b) > 1) s += ", thread " + std::to_string(e.thread);
  return s;
}

namespace {

// "B ends after A #44: 704 of A's remaining 708 calls were not made".
std::string end_line(const EarlyEnd& ee) {
  char s = ee.b_stopped ? 'B' : 'A', o = ee.b_stopped ? 'A' : 'B';
  std::string where = ee.after == kNone
                          ? std::string("at the start")
                          : "after " + std::string(1, o) + " #" + std::to_string(ee.after);
  std::string which =
      ee.not_made == ee.remaining
          ? std::string(1, o) + "'s remaining " + plural(ee.remaining, "call was", "calls were")
          : std::to_string(ee.not_made) + " of " + std::string(1, o) + "'s remaining " +
                plural(ee.remaining, "call", "calls") + (ee.not_made == 1 ? " was" : " were");
  return std::string(1, s) + " ends " + where + ": " + which + " not made";
}

}  // namespace

std::string divergence_line(const Comparison& c, const Divergence& d, bool ascii) {
  const NormEvent& e = d.a != kNone ? c.a->events[d.a] : c.b->events[d.b];
  std::string call =
      d.a != kNone ? summarize(c.namer_a(), e, ascii) : summarize(c.namer_b(), e, ascii);
  std::string_view arrow = ascii ? " ->" : " →";
  if (size_t at = call.rfind(arrow); at != std::string::npos) call.resize(at);
  std::string s = divergence_place(c, d) + " " + call;
  if (!d.fields.empty()) {
    const FieldDiff& f = d.fields.front();
    s += ": " + f.field + (f.side.empty() ? "" : " (" + f.side + ")") + " " + f.a +
         std::string(arrow) + " " + f.b;
    if (d.fields.size() > 1)
      s += " (+" + plural(d.fields.size() - 1, "more member", "more members") + ")";
  }
  return s;
}

namespace {

constexpr size_t kMaxQuiet = 10;

// "before it, 3 answers differed without visible consequence:" and one line each.
void quiet_lines(const Comparison& c, const Verdict& v, bool ascii, std::vector<std::string>& out) {
  if (v.quiet.empty()) return;
  std::string n = plural(v.quiet.size(), "answer", "answers");
  out.push_back(v.first ? "before it, " + n + " differed without visible consequence:"
                        : n + " differed without visible consequence:");
  for (size_t i = 0; i < v.quiet.size() && i < kMaxQuiet; ++i) {
    out.push_back("  " + divergence_line(c, *v.quiet[i], ascii));
  }
  if (v.quiet.size() > kMaxQuiet) {
    out.push_back(std::string(ascii ? "  ... and " : "  … and ") +
                  std::to_string(v.quiet.size() - kMaxQuiet) +
                  " more (--all lists every divergence)");
  }
}

}  // namespace

std::vector<std::string> verdict_lines(const Comparison& c, const Verdict& v, bool ascii) {
  std::vector<std::string> out;
  if (v.first == nullptr) {
    if (v.quiet.empty()) return out;
    out.push_back(
        "no divergence with consequences: the same calls, asked the same, with the same status "
        "and return;");
    quiet_lines(c, v, ascii, out);
    return out;
  }
  const Divergence& f = *v.first;
  std::string_view arrow = ascii ? "->" : "→";
  out.push_back("first divergence: " + std::string(kind_title(f.kind)) + ": " +
                divergence_place(c, f));
  std::string summary = summary_line(c, f, ascii);
  for (size_t at = 0; at != std::string::npos;) {
    size_t nl = summary.find('\n', at);
    out.push_back("  " + summary.substr(at, nl == std::string::npos ? nl : nl - at));
    at = nl == std::string::npos ? nl : nl + 1;
  }
  for (const FieldDiff& d : f.fields) {
    std::string side = d.side.empty() ? "" : " (" + d.side + ")";
    out.push_back("    " + d.field + side + ": " + d.a + " " + std::string(arrow) + " " + d.b);
  }
  if (!v.a.api.empty() || !v.b.api.empty()) {
    if (v.a.api == v.b.api) {
      out.push_back("  during " + v.a.api);
    } else {
      auto during = [](const std::string& api) {
        return api.empty() ? std::string("not known") : "during " + api;
      };
      out.push_back("  A: " + during(v.a.api) + "; B: " + during(v.b.api));
    }
  }
  if (v.early_end && !v.early_end->later) {
    const EarlyEnd& ee = *v.early_end;
    char s = ee.b_stopped ? 'B' : 'A', o = ee.b_stopped ? 'A' : 'B';
    const Aftermath& ms = ee.b_stopped ? v.b : v.a;
    const Aftermath& mo = ee.b_stopped ? v.a : v.b;
    std::string what;
    if (ms.teardown) {
      what = "tore down (" + call_list(ms, ascii) + ") and ";
    } else if (ms.events > 0) {
      what = "made " + plural(ms.events, "more call", "more calls") + " (" + call_list(ms, ascii) +
             ") and ";
    }
    out.push_back(std::string("then ") + s + " " + what + "ended after " +
                  plural(ms.total, "event", "events") + ending(ms) + ";");
    out.push_back(std::string(1, o) + " made " + plural(ee.remaining, "more call", "more calls") +
                  ending(mo) + ".");
    out.push_back(end_line(ee));
  } else {
    out.push_back("after it, A made " + plural(v.a.events, "more call", "more calls") +
                  ending(v.a) + " and B " + std::to_string(v.b.events) + ending(v.b) + ".");
    if (v.early_end) out.push_back(end_line(*v.early_end));  // a later end
  }
  quiet_lines(c, v, ascii, out);
  return out;
}

std::string count_line(const Verdict& v) {
  size_t total = 0;
  std::string by_kind;
  for (Kind k : kKinds) {
    size_t n = v.shown[static_cast<size_t>(k)];
    total += n;
    if (n == 0) continue;
    by_kind += (by_kind.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(kind_name(k));
  }
  std::string s;
  if (total > 0 || !v.early_end) {
    s = plural(total, "divergence", "divergences") + (by_kind.empty() ? "" : ": " + by_kind);
  }
  if (v.early_end) {
    const EarlyEnd& ee = *v.early_end;
    if (!s.empty()) s += "; ";
    s += std::string(ee.b_stopped ? "B" : "A") + " ended early: " + std::to_string(ee.not_made) +
         " of " + (ee.b_stopped ? "A" : "B") + "'s calls not made";
  }
  return s;
}

}  // namespace cudatool::ab
