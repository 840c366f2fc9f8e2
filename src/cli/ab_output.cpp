#include "cli/ab_output.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>

#include "ab/identity.hpp"
#include "ab/rules.hpp"
#include "ab/verdict.hpp"
#include "base/json_writer.hpp"
#include "trace/event.hpp"

namespace cudatool::cli {
namespace {

using ab::Comparison;
using ab::Divergence;
using ab::Entry;
using ab::Kind;
using ab::NormalizedTrace;
using ab::NormEvent;

constexpr std::array kKinds{Kind::kMissing, Kind::kExtra, Kind::kStatus, Kind::kParameters,
                            Kind::kReturn};

std::string pci_text(const ab::GpuIdentity& g) {
  std::string s;
  if (g.pci_id) s = fmt::format("{:04x}:{:04x}", *g.pci_id >> 16, *g.pci_id & 0xffff);
  if (!g.name.empty()) s += (s.empty() ? "" : " ") + g.name;
  return s;
}

std::string_view op_name(ab::Op op) {
  switch (op) {
    case ab::Op::kMatch:
      return "match";
    case ab::Op::kChange:
      return "change";
    case ab::Op::kMissing:
      return "missing";
    case ab::Op::kExtra:
      return "extra";
  }
  return "?";
}

std::string field_line(const ab::FieldDiff& f) {
  std::string side = f.side.empty() ? "" : " (" + f.side + ")";
  return fmt::format("{}{}: {} → {}", f.field, side, f.a, f.b);
}

std::string trace_line(char name, const NormalizedTrace& t) {
  std::string s =
      fmt::format("{}: {} — {} events, {} thread{}", name, t.path.empty() ? "-" : t.path,
                  t.events.size(), t.thread_tids.size(), t.thread_tids.size() == 1 ? "" : "s");
  if (t.header.driver_version) s += ", driver " + *t.header.driver_version;
  std::string gpu = !t.header.gpu.empty() ? t.header.gpu : pci_text(t.gpu);
  if (!gpu.empty()) s += ", GPU " + gpu;
  if (t.truncated) s += ", last line cut";
  s += "\n";
  for (const std::string& g : ab::gpu_lines(t)) s += "   " + g + "\n";
  return s;
}

void divergence_text(std::string& out, const Comparison& c, const Divergence& d,
                     const std::string& indent) {
  const NormEvent* a = d.a != ab::kNone ? &c.a->events[d.a] : nullptr;
  const NormEvent* b = d.b != ab::kNone ? &c.b->events[d.b] : nullptr;
  out += fmt::format("{}{}\n", indent, ab::divergence_place(c, d));
  if (a != nullptr && b != nullptr) {
    std::string sa = ab::summarize(c.namer_a(), *a), sb = ab::summarize(c.namer_b(), *b);
    if (sa == sb) {
      out += fmt::format("{}  {}\n", indent, sa);
    } else {
      out += fmt::format("{}  A: {}\n{}  B: {}\n", indent, sa, indent, sb);
    }
    for (const ab::FieldDiff& f : d.fields) out += fmt::format("{}    {}\n", indent, field_line(f));
  } else if (a != nullptr) {
    out += fmt::format("{}  A: {}\n", indent, ab::summarize(c.namer_a(), *a));
  } else {
    out += fmt::format("{}  B: {}\n", indent, ab::summarize(c.namer_b(), *b));
  }
}

void context_text(std::string& out, const Comparison& c, uint32_t at, uint32_t n) {
  uint32_t from = at > n ? at - n : 0;
  uint32_t to = static_cast<uint32_t>(std::min<uint64_t>(c.entries.size(), uint64_t{at} + n + 1));
  out += fmt::format("\ncontext ({} before, {} after):\n", at - from, to - at - 1);
  out += "       A      B\n";
  for (uint32_t k = from; k < to; ++k) {
    const Entry& e = c.entries[k];
    char mark = e.op == ab::Op::kMatch     ? ' '
                : e.op == ab::Op::kChange  ? '!'
                : e.op == ab::Op::kMissing ? '-'
                                           : '+';
    std::string ia = e.a == ab::kNone ? "." : std::to_string(e.a);
    std::string ib = e.b == ab::kNone ? "." : std::to_string(e.b);
    std::string arrow = k == at ? ">" : " ";
    if (e.op == ab::Op::kChange) {
      out += fmt::format("{}{} {:>6} {:>6}  A: {}\n", arrow, mark, ia, ib,
                         ab::summarize(c.namer_a(), c.a->events[e.a]));
      out += fmt::format("  {:>6} {:>6}  B: {}\n", "", "",
                         ab::summarize(c.namer_b(), c.b->events[e.b]));
    } else if (e.op == ab::Op::kExtra) {
      out += fmt::format("{}{} {:>6} {:>6}  {}\n", arrow, mark, ia, ib,
                         ab::summarize(c.namer_b(), c.b->events[e.b]));
    } else {
      out += fmt::format("{}{} {:>6} {:>6}  {}\n", arrow, mark, ia, ib,
                         ab::summarize(c.namer_a(), c.a->events[e.a]));
    }
  }
}

void event_json(JsonWriter& w, const ab::Namer& names, const NormEvent* e) {
  if (e == nullptr) {
    w.null();
    return;
  }
  w.begin_object();
  w.kv("index", e->index).kv("seq", e->seq).kv("tid", e->tid).kv("thread", e->thread);
  w.kv("sys", trace::sys_name(e->sys));
  if (e->call.empty()) {
    w.key("call").null();
  } else {
    w.kv("call", e->call);
  }
  if (e->sys == trace::Sys::kIoctl) {
    w.kv_hex("request", e->request);
  } else {
    w.key("request").null();
  }
  auto opt_hex = [&](std::string_view k, const std::optional<uint32_t>& v, std::string_view name,
                     std::string_view name_key) {
    if (v) {
      w.kv_hex(k, *v);
    } else {
      w.key(k).null();
    }
    if (name.empty()) {
      w.key(name_key).null();
    } else {
      w.kv(name_key, name);
    }
  };
  opt_hex("cmd", e->cmd, ab::control_name(*e), "cmd_name");
  opt_hex("class", e->cls, ab::class_name(*e), "class_name");
  opt_hex("status", e->status, ab::status_name(*e), "status_name");
  auto sym = [&](std::string_view k, uint64_t s) {
    if (s) {
      w.kv(k, names(s));
    } else {
      w.key(k).null();
    }
  };
  sym("client", e->h_client);
  sym("object", e->h_object);
  sym("parent", e->h_parent);
  sym("fd", e->fd);
  w.kv("ret", e->ret);
  sym("ret_name", e->ret_sym);
  if (e->err) {
    w.kv("errno", e->err);
  } else {
    w.key("errno").null();
  }
  w.kv("summary", ab::summarize(names, *e, true));
  w.kv_or_null("api", e->api < names.t.api_names.size() ? names.t.api_names[e->api] : "");
  w.end_object();
}

void divergence_json(JsonWriter& w, const Comparison& c, const ab::Verdict& v,
                     const Divergence& d) {
  w.begin_object();
  w.kv("kind", ab::kind_name(d.kind)).kv("entry", d.entry).kv("not_made", ab::not_made(v, d));
  w.kv("answer", d.answer).kv("consequence", ab::has_consequence(c, v, d));
  w.key("a");
  event_json(w, c.namer_a(), d.a == ab::kNone ? nullptr : &c.a->events[d.a]);
  w.key("b");
  event_json(w, c.namer_b(), d.b == ab::kNone ? nullptr : &c.b->events[d.b]);
  w.key("fields").begin_array();
  for (const ab::FieldDiff& f : d.fields) {
    w.begin_object().kv("field", f.field);
    if (f.side.empty()) {
      w.key("side").null();
    } else {
      w.kv("side", f.side);
    }
    w.kv("a", f.a).kv("b", f.b).end_object();
  }
  w.end_array();
  w.end_object();
}

void trace_json(JsonWriter& w, const NormalizedTrace& t) {
  w.begin_object();
  w.kv("file", t.path).kv("events", t.events.size()).kv("threads", t.thread_tids.size());
  if (t.header.driver_version) {
    w.kv("driver_version", *t.header.driver_version);
  } else {
    w.key("driver_version").null();
  }
  w.kv("tables", t.tables->info().id).kv("exact_branch", t.exact_branch);
  if (t.header.gpu.empty()) {
    w.key("gpu").null();
  } else {
    w.kv("gpu", t.header.gpu);
  }
  if (t.gpu.pci_id) {
    w.kv("pci_id", fmt::format("{:04x}:{:04x}", *t.gpu.pci_id >> 16, *t.gpu.pci_id & 0xffff));
  } else {
    w.key("pci_id").null();
  }
  if (t.gpu.name.empty()) {
    w.key("gpu_name").null();
  } else {
    w.kv("gpu_name", t.gpu.name);
  }
  w.kv("mode", t.header.mode).kv("truncated", t.truncated).kv("trailer", t.trailer.has_value());
  const ab::MaskCounts& m = t.masks;
  w.key("normalization").begin_object();
  w.kv("compared_bytes", m.compared).kv("padding_bytes", m.padding);
  w.kv("beyond_size_bytes", m.beyond_size).kv("unsized_bytes", m.unsized);
  w.kv("masked_by_rule_bytes", m.by_rule);
  w.kv("handles_renamed", m.handles).kv("pointers_renamed", m.pointers).kv("fds_renamed", m.fds);
  w.kv("identities_renamed", m.identities);
  w.end_object();
  w.key("identities").begin_array();
  for (const ab::IdentitySeen& s : t.identities) {
    w.begin_object().kv("name", ab::identity_name(s.kind, s.ordinal));
    w.kv("kind", ab::identity_kind_name(s.kind)).kv("value", s.text).end_object();
  }
  w.end_array();
  w.key("diagnostics").begin_array();
  for (const Error& e : t.diagnostics.items()) w.value(e.message());
  w.end_array();
  w.end_object();
}

void aftermath_json(JsonWriter& w, const ab::Aftermath& m) {
  w.begin_object();
  w.kv("events_after", m.events).kv("teardown", m.teardown);
  w.key("calls").begin_array();
  for (const auto& [call, n] : m.calls) {
    w.begin_object().kv("call", call).kv("count", n).end_object();
  }
  w.end_array();
  w.kv("events", m.total);
  w.kv_or_null("end_reason", m.end_reason.value_or(""));
  if (m.end_reason && m.exit_status) {
    w.kv("exit_status", *m.exit_status);
  } else {
    w.key("exit_status").null();
  }
  w.kv_or_null("api", m.api);
  w.end_object();
}

void verdict_json(JsonWriter& w, const Comparison& c, const ab::Verdict& v) {
  w.begin_object();
  w.key("a");
  aftermath_json(w, v.a);
  w.key("b");
  aftermath_json(w, v.b);
  w.key("ended_early");
  if (v.early_end) {
    const ab::EarlyEnd& ee = *v.early_end;
    w.begin_object().kv("stopped", ee.b_stopped ? "b" : "a").kv("later", ee.later);
    if (ee.after == ab::kNone) {
      w.key("after").null();
    } else {
      w.kv("after", ee.after);
    }
    w.kv("remaining", ee.remaining).kv("not_made", ee.not_made).end_object();
  } else {
    w.null();
  }
  w.key("shown").begin_object();
  for (Kind k : kKinds) w.kv(ab::kind_name(k), v.shown[static_cast<size_t>(k)]);
  w.end_object();
  w.key("without_consequence").begin_array();
  for (const Divergence* d : v.quiet) divergence_json(w, c, v, *d);
  w.end_array();
  w.key("text").begin_array();
  for (const std::string& l : ab::verdict_lines(c, v, true)) w.value(l);
  w.value(ab::count_line(v));
  w.end_array();
  w.end_object();
}

std::string_view class_word(ab::MemberClass c) {
  switch (c) {
    case ab::MemberClass::kMasked:
      return "masked";
    case ab::MemberClass::kHandle:
      return "renamed as a handle";
    case ab::MemberClass::kPointer:
      return "renamed as a pointer";
    case ab::MemberClass::kFd:
      return "renamed as an fd";
    case ab::MemberClass::kIdentity:
      return "renamed as a GPU identity";
    case ab::MemberClass::kLiteral:
      break;
  }
  return "compared";
}

}  // namespace

std::string render_ab_text(const Comparison& c, const AbReportOptions& o) {
  std::string out;
  for (const ab::HeaderNote& n : c.notes) {
    if (n.serious) out += "warning: " + n.message + "\n";
  }
  out += trace_line('A', *c.a);
  out += trace_line('B', *c.b);
  for (const ab::HeaderNote& n : c.notes) {
    if (!n.serious) out += "note: " + n.message + "\n";
  }
  const ab::MaskCounts& m = c.a->masks;
  if (c.equivalent()) {
    out += fmt::format("\nequivalent: the {} events of A and the {} of B match after normalisation",
                       c.a->events.size() - c.left_out_a, c.b->events.size() - c.left_out_b);
    if (c.left_out_a + c.left_out_b > 0) {
      out += fmt::format(" ({} of A's and {} of B's left out: the notes say why)", c.left_out_a,
                         c.left_out_b);
    }
    out += fmt::format(
        "\n(in A: {} handles, {} pointers, {} fds, {} GPU identity values renamed; {} bytes "
        "compared;\nleft out: {} bytes of padding, {} past the calls' sizes, {} masked by rule)\n",
        m.handles, m.pointers, m.fds, m.identities,
        m.compared - std::min(m.compared, c.left_out_bytes_a), m.padding, m.beyond_size + m.unsized,
        m.by_rule);
    return out;
  }
  ab::Verdict v = ab::make_verdict(c);
  // The context of the first divergence with consequences, else of the first answer difference.
  const Divergence& first = v.first ? *v.first : *v.quiet.front();
  out += "\n";
  for (const std::string& l : ab::verdict_lines(c, v)) out += l + "\n";
  context_text(out, c, first.entry, o.context);
  out += "\n" + ab::count_line(v) + "\n";
  if (!o.all) {
    if (c.divergences.size() > 1) out += "(--all lists every divergence, grouped by kind)\n";
    return out;
  }
  for (Kind k : kKinds) {
    size_t n = v.shown[static_cast<size_t>(k)];
    if (n == 0) continue;
    out += fmt::format("\n{} ({}):\n", ab::kind_title(k), n);
    for (const Divergence& d : c.divergences) {
      if (d.kind == k && !ab::not_made(v, d)) divergence_text(out, c, d, "  ");
    }
  }
  if (v.early_end) {
    bool b_stopped = v.early_end->b_stopped;
    out += fmt::format("\nnot made in {} after it ended ({}):\n", b_stopped ? 'B' : 'A',
                       v.early_end->not_made);
    for (const Divergence& d : c.divergences) {
      if (!ab::not_made(v, d)) continue;
      uint32_t i = b_stopped ? d.a : d.b;
      const ab::Namer names = b_stopped ? c.namer_a() : c.namer_b();
      const NormEvent& e = (b_stopped ? c.a : c.b)->events[i];
      out += fmt::format("  {} #{:<6} {}\n", b_stopped ? 'A' : 'B', i, ab::summarize(names, e));
    }
  }
  return out;
}

std::string render_ab_json(const Comparison& c, const AbReportOptions& o) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.kv("schema", "cudatool.ab/1");
  w.key("a");
  trace_json(w, *c.a);
  w.key("b");
  trace_json(w, *c.b);
  w.key("notes").begin_array();
  for (const ab::HeaderNote& n : c.notes) {
    w.begin_object().kv("what", n.what).kv("a", n.a).kv("b", n.b).kv("serious", n.serious);
    w.kv("message", n.message).end_object();
  }
  w.end_array();
  w.kv("equivalent", c.equivalent());
  ab::Verdict v = ab::make_verdict(c);
  w.key("verdict");
  if (c.equivalent()) {
    w.null();
  } else {
    verdict_json(w, c, v);
  }
  w.key("counts").begin_object();
  std::array<size_t, 5> counts{};
  for (const Divergence& d : c.divergences) ++counts[static_cast<size_t>(d.kind)];
  for (Kind k : kKinds) w.kv(ab::kind_name(k), counts[static_cast<size_t>(k)]);
  w.end_object();
  w.key("first");
  if (v.first == nullptr) {
    w.null();
  } else {
    const Divergence& d = *v.first;
    w.begin_object();
    w.key("divergence");
    divergence_json(w, c, v, d);
    w.key("context").begin_array();
    uint32_t from = d.entry > o.context ? d.entry - o.context : 0;
    uint64_t to = std::min<uint64_t>(c.entries.size(), uint64_t{d.entry} + o.context + 1);
    for (uint64_t k = from; k < to; ++k) {
      const Entry& e = c.entries[k];
      w.begin_object().kv("op", op_name(e.op)).kv("first", k == d.entry);
      w.key("a");
      event_json(w, c.namer_a(), e.a == ab::kNone ? nullptr : &c.a->events[e.a]);
      w.key("b");
      event_json(w, c.namer_b(), e.b == ab::kNone ? nullptr : &c.b->events[e.b]);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.key("divergences");
  if (o.all) {
    w.begin_array();
    for (const Divergence& d : c.divergences) divergence_json(w, c, v, d);
    w.end_array();
  } else {
    w.null();
  }
  w.key("rules").begin_array();
  for (const ab::MaskRule& r : ab::mask_rules()) {
    w.begin_object().kv("structure", r.structure).kv("member", r.member);
    w.kv("action", class_word(r.action)).kv("reason", r.reason).end_object();
  }
  w.end_array();
  w.key("identity").begin_array();
  for (const ab::IdentityRow& r : ab::identity_rows()) {
    w.begin_object().kv("structure", r.structure).kv("member", r.member);
    w.kv("kind", ab::identity_kind_name(r.kind)).kv("reason", r.reason).end_object();
  }
  w.end_array();
  w.key("known").begin_array();
  for (const ab::KnownDifference& k : c.known) {
    w.begin_object().kv("spec", k.spec).kv("origin", k.origin);
    w.kv_or_null("call", k.call).kv_or_null("member", k.member);
    w.kv("hid", k.hid).kv("members", k.members).end_object();
  }
  w.end_array();
  w.key("alignment").begin_object();
  w.kv("entries", c.entries.size()).kv("matched_ends", c.stats.matched_ends);
  w.kv("anchors", c.stats.anchors).kv("dp_cells", c.stats.dp_cells);
  w.kv("greedy_events", c.stats.greedy_events);
  w.kv("left_out_a", c.left_out_a).kv("left_out_b", c.left_out_b);
  w.end_object();
  w.key("html");
  if (o.html_path.empty()) {
    w.null();
  } else {
    w.begin_object().kv("path", o.html_path).kv("bytes", o.html_bytes);
    w.kv("events", o.html_events).end_object();
  }
  w.end_object();
  w.finish();
  return out;
}

}  // namespace cudatool::cli
