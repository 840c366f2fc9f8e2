// cudatool stats: what a trace asked of the driver, counted, and the RM object tree it built.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/function_summary_output.hpp"
#include "cli/stack_output.hpp"
#include "cli/trace_input.hpp"
#include "trace/decode.hpp"
#include "trace/trace_stats.hpp"

namespace cudatool::cli {
namespace {

struct StatsOptions {
  std::string trace;
  std::string branch;
  size_t max_objects = 500;
  size_t slowest = 10;
  bool json = false;
  StackOptions stacks;
};

// Device calls per API call (cli/stack_output.hpp): what the stacks say, beside the counts.
struct ApiSection {
  bool stacks = false;
  trace::ApiStats stats;
  std::unique_ptr<trace::StackResolver> res;
};

std::string seconds(uint64_t ns) {
  return fmt::format("{}.{:06}", ns / 1000000000, ns / 1000 % 1000000);
}

std::string micros(uint64_t ns) {
  return fmt::format("{:.1f}", static_cast<double>(ns) / 1e3);
}

// The object tree in depth-first order (allocation order among siblings): (index, depth).
std::vector<std::pair<uint32_t, uint32_t>> preorder(const trace::TraceStats& s) {
  std::vector<std::pair<uint32_t, uint32_t>> out, stack;
  out.reserve(s.objects.size());
  for (auto it = s.roots.rbegin(); it != s.roots.rend(); ++it) stack.emplace_back(*it, 0);
  while (!stack.empty()) {
    auto [i, depth] = stack.back();
    stack.pop_back();
    out.emplace_back(i, depth);
    const auto& ch = s.objects[i].children;
    for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.emplace_back(*it, depth + 1);
  }
  return out;
}

std::string class_text(const trace::ObjectInfo& o) {
  if (!o.class_name.empty()) return std::string(o.class_name);
  return o.cls ? fmt::format("{:#x}?", *o.cls) : std::string("class ?");
}

void rows_table(std::string& out, std::string_view title, const std::vector<trace::CountRow>& rows,
                bool durations, std::string_view key_header = {}) {
  if (rows.empty()) return;
  fmt::format_to(std::back_inserter(out), "\n{} ({})\n", title, rows.size());
  std::vector<std::string> h{"count", "failed"};
  std::vector<bool> right{true, true};
  if (durations) {
    h.insert(h.end(), {"total ms", "max us"});
    right.insert(right.end(), {true, true});
  }
  if (!key_header.empty()) {
    h.emplace_back(key_header);
    right.push_back(false);
  }
  h.emplace_back("name");
  right.push_back(false);
  TextTable t(h, right);
  for (const trace::CountRow& r : rows) {
    std::vector<std::string> row{std::to_string(r.count), std::to_string(r.failed)};
    if (durations) {
      row.push_back(fmt::format("{:.3f}", static_cast<double>(r.dur_total_ns) / 1e6));
      row.push_back(micros(r.dur_max_ns));
    }
    if (!key_header.empty()) {
      row.push_back(key_header == "errno" ? std::to_string(r.key) : fmt::format("{:#x}", r.key));
    }
    row.push_back(r.name);
    t.add(std::move(row));
  }
  out += t.render("  ");
}

std::string render_text(const StatsOptions& o, const TraceInput& in, const trace::TraceStats& s,
                        uint64_t bad, const ApiSection& api) {
  std::string out;
  bool durs = s.with_duration > 0;
  fmt::format_to(std::back_inserter(out),
                 "{}: {} events ({} ioctls, {} failed) from {} s to {} s; decoder branch {}\n",
                 o.trace, s.events, s.ioctls, s.failed, seconds(s.first_t_ns), seconds(s.last_t_ns),
                 in.branch_text);
  if (!durs) {
    out += "durations: none recorded (an imported capture): no times per call, no slowest calls\n";
  }
  if (bad != 0) fmt::format_to(std::back_inserter(out), "bad lines: {} (on stderr)\n", bad);
  out += function_summary_text(*in.reader, "");
  if (const trace::Milestone* m = s.first_context()) {
    fmt::format_to(std::back_inserter(out),
                   "\ntime to first context: {} s after the first event (seq {}: {} {:#010x} "
                   "allocated at {} s)\n",
                   seconds(m->since_first_ns), m->seq, m->class_name, m->handle, seconds(m->t_ns));
  } else {
    out += "\ntime to first context: no channel was allocated in this trace\n";
  }
  TextTable mt({"milestone", "seq", "at s", "after first s", "handle", "class"},
               {false, true, true, true, false, false});
  for (const trace::Milestone& m : s.milestones) {
    if (!m.found) {
      mt.add({std::string(m.what), "-", "-", "-", "-", "(none: " + std::string(m.rm_class) + ")"});
      continue;
    }
    mt.add({std::string(m.what), std::to_string(m.seq), seconds(m.t_ns), seconds(m.since_first_ns),
            fmt::format("{:#010x}", m.handle), std::string(m.class_name)});
  }
  out += mt.render("  ");
  rows_table(out, "devices", s.by_device, durs);
  rows_table(out, "calls", s.by_call, durs);
  rows_table(out, "control commands", s.by_control, durs, "cmd");
  rows_table(out, "classes allocated", s.by_class, durs, "class");
  rows_table(out, "threads", s.by_thread, durs);
  if (s.env_events > 0) {
    fmt::format_to(std::back_inserter(out), "\nenvironment: {} events on {} paths\n", s.env_events,
                   s.by_env_path.size());
  }
  rows_table(out, "environment by path", s.by_env_path, durs);
  rows_table(out, "environment by call", s.by_env_op, durs);
  if (s.failures_by_status.empty() && s.failures_by_errno.empty()) {
    out += "\nfailures: none\n";
  }
  rows_table(out, "failures by status", s.failures_by_status, durs, "status");
  rows_table(out, "failures by errno", s.failures_by_errno, durs, "errno");
  append_api_stats_text(out, api.stats, api.stacks, *api.res);

  fmt::format_to(std::back_inserter(out),
                 "\nobjects: {} allocated, {} freed, {} never freed; {} frees of handles not "
                 "allocated in the trace{}\n",
                 s.objects.size(), s.objects_freed, s.objects_never_freed, s.frees_of_unknown,
                 s.objects_not_tracked ? fmt::format("; {} allocations past the limit not tracked",
                                                     s.objects_not_tracked)
                                       : "");
  size_t shown = 0;
  for (auto [i, depth] : preorder(s)) {
    if (o.max_objects != 0 && shown == o.max_objects) {
      fmt::format_to(std::back_inserter(out), "  … {} more objects (--max-objects 0 or --json)\n",
                     s.objects.size() - shown);
      break;
    }
    ++shown;
    const trace::ObjectInfo& x = s.objects[i];
    std::string life =
        x.freed ? fmt::format("freed #{} {}{}", x.free_seq, seconds(x.free_t_ns),
                              x.freed_with ? fmt::format(" (with {:#010x})", *x.freed_with) : "")
                : "never freed";
    fmt::format_to(std::back_inserter(out), "  {:{}}{:#010x} {}{}{}  alloc #{} {}  {}\n", "",
                   2 * std::min<uint32_t>(depth, 40), x.handle, class_text(x),
                   x.rm_class.empty() ? "" : fmt::format(" [{}]", x.rm_class),
                   x.orphan ? " (parent not allocated in the trace)" : "", x.alloc_seq,
                   seconds(x.alloc_t_ns), life);
  }
  if (!durs) return out;
  fmt::format_to(std::back_inserter(out), "\nslowest calls ({})\n", s.slowest.size());
  TextTable st({"dur us", "seq", "at s", "tid", "call"}, {true, true, true, true, false});
  for (const trace::SlowCall& c : s.slowest) {
    st.add(
        {micros(c.dur_ns), std::to_string(c.seq), seconds(c.t_ns), std::to_string(c.tid), c.call});
  }
  out += st.render("  ");
  return out;
}

void json_rows(JsonWriter& w, std::string_view key, const std::vector<trace::CountRow>& rows,
               std::string_view key_name, bool durs) {
  w.key(key).begin_array();
  for (const trace::CountRow& r : rows) {
    w.begin_object().kv("name", r.name);
    if (key_name == "tid") {
      w.kv("tid", static_cast<int32_t>(r.key));
    } else if (key_name == "errno") {
      w.kv("errno", r.key);
    } else if (!key_name.empty()) {
      w.kv_hex(key_name, r.key);
    }
    w.kv("count", r.count).kv("failed", r.failed);
    w.key("dur_total_ns");
    if (durs) {
      w.value(r.dur_total_ns);
    } else {
      w.null();
    }
    w.key("dur_max_ns");
    if (durs) {
      w.value(r.dur_max_ns);
    } else {
      w.null();
    }
    w.end_object();
  }
  w.end_array();
}

// One object of the tree, at `depth`.
void write_object_json(JsonWriter& w, const trace::ObjectInfo& x, size_t depth) {
  w.begin_object().kv("depth", depth).kv_hex("client", x.client).kv_hex("handle", x.handle);
  w.key("parent");
  if (x.parent == 0) {
    w.null();
  } else {
    w.hex(x.parent);
  }
  w.key("class");
  if (x.cls) {
    w.hex(*x.cls);
  } else {
    w.null();
  }
  w.key("class_name");
  if (x.class_name.empty()) {
    w.null();
  } else {
    w.value(x.class_name);
  }
  w.key("rm_class");
  if (x.rm_class.empty()) {
    w.null();
  } else {
    w.value(x.rm_class);
  }
  w.kv("created_by", x.created_by).kv("tid", x.tid).kv("orphan", x.orphan);
  w.key("alloc").begin_object().kv("seq", x.alloc_seq).kv("t_ns", x.alloc_t_ns).end_object();
  w.key("free");
  if (x.freed) {
    w.begin_object().kv("seq", x.free_seq).kv("t_ns", x.free_t_ns);
    w.key("with");
    if (x.freed_with) {
      w.hex(*x.freed_with);
    } else {
      w.null();
    }
    w.end_object();
  } else {
    w.null();
  }
  w.kv("children", x.children.size());
  w.end_object();
}

// The objects: counts and the tree (allocation order, children under their parent).
void write_objects_json(JsonWriter& w, const trace::TraceStats& s) {
  w.key("objects").begin_object();
  w.kv("allocated", s.objects.size()).kv("freed", s.objects_freed);
  w.kv("never_freed", s.objects_never_freed).kv("frees_of_unknown", s.frees_of_unknown);
  w.kv("not_tracked", s.objects_not_tracked);
  w.key("tree").begin_array();
  for (auto [i, depth] : preorder(s)) {
    write_object_json(w, s.objects[i], depth);
  }
  w.end_array().end_object();
}

std::string render_json(const StatsOptions& o, const TraceInput& in, const trace::TraceStats& s,
                        const Diagnostics& diag, const ApiSection& api) {
  std::string out;
  JsonWriter w(out);
  bool durs = s.with_duration > 0;
  w.begin_object().kv("schema", "cudatool.stats/1").kv("trace", o.trace);
  write_branch_json(w, in);
  w.kv("events", s.events).kv("ioctls", s.ioctls).kv("failed", s.failed);
  w.kv("first_t_ns", s.first_t_ns).kv("last_t_ns", s.last_t_ns);
  w.kv("with_duration", s.with_duration);
  write_function_summary_json(w, *in.reader);
  json_rows(w, "devices", s.by_device, "", durs);
  json_rows(w, "calls", s.by_call, "", durs);
  json_rows(w, "controls", s.by_control, "cmd", durs);
  json_rows(w, "classes", s.by_class, "class", durs);
  json_rows(w, "threads", s.by_thread, "tid", durs);
  w.key("environment").begin_object().kv("events", s.env_events);
  json_rows(w, "by_path", s.by_env_path, "", durs);
  json_rows(w, "by_call", s.by_env_op, "", durs);
  w.end_object();
  w.key("failures").begin_object();
  json_rows(w, "by_status", s.failures_by_status, "status", durs);
  json_rows(w, "by_errno", s.failures_by_errno, "errno", durs);
  w.end_object();
  write_api_stats_json(w, api.stats, api.stacks, *api.res);
  w.key("first_context");
  const trace::Milestone* fc = s.first_context();
  if (fc == nullptr) {
    w.null();
  } else {
    w.begin_object().kv("seq", fc->seq).kv("t_ns", fc->t_ns);
    w.kv("since_first_event_ns", fc->since_first_ns).kv_hex("handle", fc->handle);
    w.kv("class", fc->class_name).end_object();
  }
  w.key("milestones").begin_array();
  for (const trace::Milestone& m : s.milestones) {
    w.begin_object().kv("what", m.what).kv("rm_class", m.rm_class).kv("found", m.found);
    if (m.found) {
      w.kv("seq", m.seq).kv("t_ns", m.t_ns).kv("since_first_event_ns", m.since_first_ns);
      w.kv_hex("handle", m.handle).kv("class", m.class_name);
    }
    w.end_object();
  }
  w.end_array();
  write_objects_json(w, s);
  w.key("slowest").begin_array();
  for (const trace::SlowCall& c : s.slowest) {
    w.begin_object().kv("seq", c.seq).kv("t_ns", c.t_ns).kv("dur_ns", c.dur_ns);
    w.kv("tid", c.tid).kv("call", c.call).end_object();
  }
  w.end_array();
  w.key("diagnostics").begin_array();
  for (const Error& e : diag.items()) w.value(e.message());
  w.end_array();
  w.end_object();
  w.finish();
  return out;
}

int run_stats(const StatsOptions& o) {
  auto in = open_trace_input(o.trace, o.branch);
  if (!in) return kExitBadInput;
  trace::StatsBuilder b(*in->tables, o.slowest);
  DiagnosticStream diag;
  trace::TraceReader& r = *in->reader;
  trace::Event ev;
  trace::Decoded d;
  ApiSection api;
  api.stacks = r.header().stacks;
  api.res = make_resolver(o.stacks);
  trace::ApiStatsBuilder by_api;
  while (r.next(ev)) {
    trace::decode_event(*in->tables, ev, d);
    b.add(ev, d);
    if (api.stacks) {
      api.res->follow(r.modules(), ev);
      bool failed = ev.err != 0 || (d.status && *d.status != 0);
      by_api.add(ev, ev.stack.empty() ? std::nullopt : api.res->api_of(ev), failed, d.call);
    }
    if (r.diagnostics().count() != 0) diag.flush(r.diagnostics());
  }
  diag.flush(r.diagnostics());
  trace::TraceStats s = b.finish();
  api.stats = by_api.finish();
  uint64_t bad = r.diagnostics().count();
  emit(o.json ? render_json(o, *in, s, r.diagnostics(), api) : render_text(o, *in, s, bad, api));
  return bad == 0 ? kExitOk : kExitBadInput;
}

}  // namespace

void register_stats(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<StatsOptions>();
  auto* cmd = app.add_subcommand(
      "stats",
      "Count a trace's calls by device, escape, control command, class and status, and "
      "rebuild its RM object tree");
  cmd->add_option("TRACE", o->trace, "trace file (cudatool trace or import; plain or .zst)")
      ->required();
  cmd->add_option("--branch", o->branch, branch_option_help());
  cmd->add_option("--max-objects", o->max_objects,
                  "objects of the tree listed in the text output (0: all; --json lists all)")
      ->capture_default_str();
  cmd->add_option("--slowest", o->slowest, "how many of the slowest calls to list")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print as JSON (schema cudatool.stats/1)");
  add_stack_options(*cmd, o->stacks, false);
  cmd->footer(
      "Examples:\n"
      "  cudatool stats a.jsonl\n"
      "  cudatool stats a.jsonl --json | jq '.controls[:5]'\n"
      "  cudatool stats a.jsonl --json | jq '.objects.tree[] | select(.free == null)'\n"
      "  cudatool stats run.jsonl --json | jq '.api_calls.rows[] | {api, device_calls}'\n"
      "\n"
      "Counts: per device path, per call (escape, UVM ioctl, system call), per RM control\n"
      "command, per class allocated, per thread; failures by NV_STATUS and by errno. Objects:\n"
      "every object NV_ESC_RM_ALLOC (or ALLOC_MEMORY, DUP_OBJECT) created with NV_OK, under its\n"
      "parent, with the seq and time of its allocation and of its free (NV_ESC_RM_FREE frees the\n"
      "object and everything below it). Time to first context: from the first event of the\n"
      "trace to the completion of the first channel allocation (a *_CHANNEL_GPFIFO_* class,\n"
      "RM's KernelChannel), see docs/decode.md. Slowest calls need recorded durations\n"
      "(cudatool trace; imported captures have none). Device calls per API call: with call\n"
      "stacks in the trace, device calls grouped by the CUDA API call in progress (the outermost\n"
      "exported entry point of --api-lib on the stack; --lib-path as for decode).\n"
      "\n"
      "Exit status: 0 ok; 2 the trace cannot be read, a bad --branch, or lines of the trace\n"
      "that are not valid events (each reported on stderr; the rest are counted).");
  cmd->callback([o, exit_code] { *exit_code = run_stats(*o); });
}

}  // namespace cudatool::cli
