// cudatool decode: one line per event of a trace, the kernel calls by name (docs/decode.md).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstring>

#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/trace_input.hpp"
#include "rm/decode.hpp"
#include "rm/event_filter.hpp"

namespace cudatool::cli {
namespace {

struct DecodeOptions {
  std::string trace;
  std::string filter;
  std::string branch;
  bool json = false;
};

std::string_view base_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// "   161     0.012345        -     540 nvidiactl  NV_ESC_RM_CONTROL hClient=… [note: …]"
void append_text(std::string& out, const trace::Event& ev, const rm::Decoded& d) {
  fmt::format_to(std::back_inserter(out), "{:>7} {:>6}.{:06} ", ev.seq, ev.t_ns / 1000000000,
                 ev.t_ns / 1000 % 1000000);
  if (ev.has_duration) {
    fmt::format_to(std::back_inserter(out), "{:>9.1f}us ", static_cast<double>(ev.dur_ns) / 1e3);
  } else {
    out += "        -   ";
  }
  fmt::format_to(std::back_inserter(out), "{:>7} {:<11} ", ev.tid,
                 ev.path.empty() ? std::string_view("-") : base_name(ev.path));
  rm::append_line(out, d);
  if (ev.err != 0) {
    const char* name = strerrorname_np(ev.err);
    fmt::format_to(std::back_inserter(out), " = {} {}", ev.ret,
                   name != nullptr ? name : fmt::format("errno {}", ev.err));
  } else if (ev.sys == trace::Sys::kIoctl && ev.ret != 0) {
    fmt::format_to(std::back_inserter(out), " = {}", ev.ret);
  }
  for (const std::string& n : d.notes) fmt::format_to(std::back_inserter(out), " [note: {}]", n);
  for (const std::string& n : d.partial) {
    fmt::format_to(std::back_inserter(out), " [partial: {}]", n);
  }
  out += '\n';
}

void append_json(std::string& out, const trace::Event& ev, const rm::Decoded& d) {
  JsonWriter w(out, false);
  w.begin_object();
  w.kv("seq", ev.seq).kv("t", ev.t_ns);
  w.key("dur");
  if (ev.has_duration) {
    w.value(ev.dur_ns);
  } else {
    w.null();
  }
  w.kv("pid", ev.pid).kv("tid", ev.tid);
  w.kv("sys",
       ev.sys == trace::Sys::kUnknown ? std::string_view(ev.sys_raw) : trace::sys_name(ev.sys));
  w.key("path");
  if (ev.path.empty()) {
    w.null();
  } else {
    w.value(ev.path);
  }
  w.key("fd");
  if (ev.fd >= 0) {
    w.value(ev.fd);
  } else {
    w.null();
  }
  w.kv("ret", ev.ret);
  w.key("errno");
  if (ev.err != 0) {
    const char* name = strerrorname_np(ev.err);
    w.value(name != nullptr ? std::string_view(name) : std::string_view("?"));
  } else {
    w.null();
  }
  rm::write_json_members(w, d);
  w.end_object();
  w.finish();
}

int run_decode(const DecodeOptions& o) {
  auto in = open_trace_input(o.trace, o.branch);
  if (!in) return kExitBadInput;
  auto filter = rm::EventFilter::parse(o.filter, *in->tables);
  if (!filter) {
    print_error(filter.error());
    return kExitBadInput;
  }
  OutBuffer out;
  if (o.json) {
    JsonWriter w(out.str(), false);
    w.begin_object();
    w.kv("schema", "cudatool.decode/1").kv("trace", o.trace);
    write_branch_json(w, *in);
    w.key("filter");
    if (o.filter.empty()) {
      w.null();
    } else {
      w.value(o.filter);
    }
    w.end_object();
    w.finish();
  } else {
    fmt::format_to(std::back_inserter(out.str()), "# {}: decoding with branch {}\n", o.trace,
                   in->branch_text);
  }
  DiagnosticStream diag;
  trace::TraceReader& r = *in->reader;
  trace::Event ev;
  rm::Decoded d;
  uint64_t events = 0, shown = 0;
  while (r.next(ev)) {
    ++events;
    rm::decode_event(*in->tables, ev, d);
    if (!filter->matches(ev, d)) continue;
    ++shown;
    if (o.json) {
      append_json(out.str(), ev, d);
    } else {
      append_text(out.str(), ev, d);
    }
    out.maybe_flush();
    if (r.diagnostics().count() != 0) diag.flush(r.diagnostics());
  }
  diag.flush(r.diagnostics());
  uint64_t bad = r.diagnostics().count();
  if (o.json) {
    JsonWriter w(out.str(), false);
    w.begin_object().key("summary").begin_object();
    w.kv("events", events).kv("shown", shown).kv("bad_lines", bad);
    w.kv("trailer", r.trailer().has_value()).kv("truncated", r.truncated());
    w.key("diagnostics").begin_array();
    for (const Error& e : r.diagnostics().items()) w.value(e.message());
    w.end_array();
    w.end_object().end_object();
    w.finish();
  } else {
    fmt::format_to(std::back_inserter(out.str()), "# {} events{}{}{}\n", events,
                   o.filter.empty() ? "" : fmt::format(", {} shown (--filter {})", shown, o.filter),
                   bad == 0 ? "" : fmt::format(", {} bad lines (on stderr)", bad),
                   r.trailer() ? "" : ", no trailer (the recording did not finish)");
  }
  out.flush();
  return bad == 0 ? kExitOk : kExitBadInput;
}

}  // namespace

void register_decode(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<DecodeOptions>();
  auto* cmd =
      app.add_subcommand("decode",
                         "Print every event of a trace with the kernel calls by name (escapes, RM "
                         "controls, classes, statuses, UVM)");
  cmd->add_option("TRACE", o->trace, "trace file (cudatool trace or import; plain or .zst)")
      ->required();
  cmd->add_option("--filter", o->filter,
                  "keep only the events an expression selects (docs/decode.md), e.g. "
                  "'status!=NV_OK' or 'failed and device=uvm'");
  cmd->add_option("--branch", o->branch, branch_option_help());
  cmd->add_flag("--json", o->json,
                "JSON lines: a header object (schema cudatool.decode/1), one object per event, "
                "a summary object");
  cmd->footer(
      "Examples:\n"
      "  cudatool import ../shared/data/trace_a.jsonl.xz -o a.jsonl --driver-version 580.159.04\n"
      "  cudatool decode a.jsonl\n"
      "  cudatool decode a.jsonl --filter 'failed'\n"
      "  cudatool decode a.jsonl --filter 'ctrl=NV2080_CTRL_CMD_GPU_* or class=*CHANNEL*'\n"
      "  cudatool decode a.jsonl --filter 'call=NV_ESC_RM_ALLOC,NV_ESC_RM_FREE and tid=540'\n"
      "  cudatool decode a.jsonl --json --filter 'device=uvm' | jq -r .call | sort | uniq -c\n"
      "\n"
      "Each line: seq, time since the start (s), duration (-: not recorded), tid, device, then\n"
      "the call: escape or UVM ioctl, its argument members (handles, class, control command and\n"
      "status by name) and the nested parameters. Unknown values print as hex with '?'.\n"
      "The branch of decoder tables is chosen by the trace's driver version (the same major,\n"
      "else the nearest); the first line says which.\n"
      "\n"
      "Filter: FIELD=VALUE, FIELD!=VALUE (values: names, globs with * ? [..], numbers; a comma\n"
      "list is any of them), FIELD<N (<, <=, >, >= for numbers and times), the flags failed,\n"
      "unknown, notes, partial; joined with and, or, not, parentheses. Fields: sys, call, ctrl,\n"
      "class, status, errno, device, path, tid, pid, seq, fd, t, dur, client, parent, object,\n"
      "handle, request, ret. See docs/decode.md.\n"
      "\n"
      "Exit status: 0 ok; 2 the trace cannot be read, a bad --filter or --branch, or lines of\n"
      "the trace that are not valid events (each reported on stderr; the rest are decoded).");
  cmd->callback([o, exit_code] { *exit_code = run_decode(*o); });
}

}  // namespace cudatool::cli
