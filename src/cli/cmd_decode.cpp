// cudatool decode: one line per event of a trace, the kernel calls by name (docs/decode.md).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "analysis/patch_plan.hpp"
#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/function_summary_output.hpp"
#include "cli/function_tree_output.hpp"
#include "cli/stack_output.hpp"
#include "cli/trace_input.hpp"
#include "trace/decode.hpp"
#include "trace/event_filter.hpp"

namespace cudatool::cli {

using namespace json_literals;  // NOLINT(google-build-using-namespace): "name"_key
namespace {

struct DecodeOptions {
  std::string trace;
  std::string filter;
  std::string branch;
  bool json = false;
  StackOptions stacks;
  std::string functions;  // --functions[=GLOBS]: the call trees instead of the event list
  std::string functions_lib;
};

std::string_view base_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// `v` right-aligned in `width` columns (spaces), with at least `zero_pad` digits (zeros), written
// at p; returns the end. p has room for width + 20 bytes. The digits go straight to p (counted
// first), not through a buffer that is then copied.
char* put_uint(char* p, uint64_t v, size_t width, size_t zero_pad = 0) {
  size_t n = 1;
  for (uint64_t x = v; x >= 10; x /= 10) ++n;
  size_t digits = std::max(n, zero_pad);
  if (digits < width) p = std::fill_n(p, width - digits, ' ');
  if (n < digits) p = std::fill_n(p, digits - n, '0');
  char* end = p + n;
  for (char* q = end; q != p; v /= 10) *--q = static_cast<char>('0' + v % 10);
  return end;
}

// "    161      0.012345       3.2us     540 nvidiactl   NV_ESC_RM_CONTROL hClient=… [note: …]"
// (written without a format library: this is the command's inner loop).
void append_text(TextStage& out, const trace::Event& ev, const trace::Decoded& d,
                 std::string_view api) {
  // The columns before the call, written in place at the stage's cursor.
  char* p = put_uint(out.room(160), ev.seq, 7);
  *p++ = ' ';
  p = put_uint(p, ev.t_ns / 1000000000, 6);
  *p++ = '.';
  p = put_uint(p, ev.t_ns / 1000 % 1000000, 6, 6);
  *p++ = ' ';
  if (ev.has_duration) {
    p = put_uint(p, ev.dur_ns / 1000, 7);
    *p++ = '.';
    p = put_uint(p, ev.dur_ns / 100 % 10, 1);
    p = std::copy_n("us ", 3, p);
  } else {
    p = std::copy_n("        -   ", 12, p);
  }
  p = put_uint(p, static_cast<uint32_t>(ev.tid), 7);
  *p++ = ' ';
  out.set_cursor(p);
  std::string_view dev = ev.path.empty() ? std::string_view("-") : base_name(ev.path);
  out += dev;
  out.fill(dev.size() < 11 ? 12 - dev.size() : 1, ' ');
  trace::append_line(out, d);
  if (ev.err != 0) {
    const char* name = strerrorname_np(ev.err);
    out +=
        fmt::format(" = {} {}", ev.ret, name != nullptr ? name : fmt::format("errno {}", ev.err));
  } else if (ev.sys == trace::Sys::kIoctl && ev.ret != 0) {
    out += fmt::format(" = {}", ev.ret);
  }
  for (const std::string& n : d.notes) {
    out += " [note: ";
    out += n;
    out += ']';
  }
  for (const std::string& n : d.partial) {
    out += " [partial: ";
    out += n;
    out += ']';
  }
  for (const trace::Unrecorded& u : d.unrecorded) {
    out += " [unrecorded: ";
    out += u.what;
    out += ": ";
    out += u.why;
    out += ']';
  }
  if (!api.empty()) {
    out += " during ";
    out += api;
  }
  out += '\n';
}

// `w` writes into the output buffer and is reused across events (a writer per event would
// allocate its container stack each time).
void append_json(JsonWriter& w, const trace::Event& ev, const trace::Decoded& d, bool with_api,
                 std::string_view api, const std::vector<trace::ResolvedFrame>* frames) {
  w.begin_object();
  w.kv("seq"_key, ev.seq).kv("t"_key, ev.t_ns);
  w.key("dur"_key);
  if (ev.has_duration) {
    w.value(ev.dur_ns);
  } else {
    w.null();
  }
  w.kv("pid"_key, ev.pid).kv("tid"_key, ev.tid);
  w.kv("sys"_key,
       ev.sys == trace::Sys::kUnknown ? std::string_view(ev.sys_raw) : trace::sys_name(ev.sys));
  w.key("path"_key);
  if (ev.path.empty()) {
    w.null();
  } else {
    w.value(ev.path);
  }
  w.key("fd"_key);
  if (ev.fd >= 0) {
    w.value(ev.fd);
  } else {
    w.null();
  }
  w.kv("ret"_key, ev.ret);
  w.key("errno"_key);
  if (ev.err != 0) {
    const char* name = strerrorname_np(ev.err);
    w.value(name != nullptr ? std::string_view(name) : std::string_view("?"));
  } else {
    w.null();
  }
  trace::write_json_members(w, d);
  if (with_api) w.kv_or_null("api"_key, api);
  if (frames != nullptr) write_frames_json(w, *frames, ev.stack_error);
  w.end_object();
  w.finish();
}

const std::vector<trace::ResolvedFrame> kNoFrames;

// The first line: the trace, the branch it is decoded with, the filter.
void decode_head(OutBuffer& out, const DecodeOptions& o, const TraceInput& in) {
  if (o.json) {
    JsonWriter w(out.str(), false);
    w.begin_object();
    w.kv("schema", "cudatool.decode/1").kv("trace", o.trace);
    write_branch_json(w, in);
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
                   in.branch_text);
  }
}

// The last line: what was read and shown, and what went wrong.
void decode_summary(OutBuffer& out, const DecodeOptions& o, const trace::TraceReader& r,
                    const trace::EventFilter& filter, const trace::StackResolver& res,
                    bool with_api, uint64_t events, uint64_t shown, uint64_t stacked) {
  uint64_t bad = r.diagnostics().count();
  // An api= filter on a trace without stacks cannot match: say why nothing was shown.
  std::string no_api;
  if (filter.uses_api() && stacked == 0) {
    no_api =
        "the trace has no call stacks, so no event is attributed to an API call (cudatool trace "
        "records them unless --no-stacks; imported captures and replayed runs have none)";
  }
  if (o.json) {
    JsonWriter w(out.str(), false);
    w.begin_object().key("summary").begin_object();
    w.kv("events", events).kv("shown", shown).kv("bad_lines", bad);
    w.kv("trailer", r.trailer().has_value()).kv("truncated", r.truncated());
    w.kv_or_null("note", no_api);
    w.key("diagnostics").begin_array();
    for (const Error& e : r.diagnostics().items()) w.value(e.message());
    w.end_array();
    if (with_api) write_libraries_json(w, res);
    write_function_summary_json(w, r);
    w.end_object().end_object();
    w.finish();
  } else {
    fmt::format_to(std::back_inserter(out.str()), "# {} events{}{}{}\n", events,
                   o.filter.empty() ? ""
                                    : fmt::format(", {} shown (--filter {}{})", shown, o.filter,
                                                  no_api.empty() ? "" : ": " + no_api),
                   bad == 0 ? "" : fmt::format(", {} bad lines (on stderr)", bad),
                   r.trailer() ? "" : ", no trailer (the recording did not finish)");
    out.str() += function_summary_text(r, "# ");
  }
}

int run_decode(const DecodeOptions& o) {
  auto in = open_trace_input(o.trace, o.branch);
  if (!in) return kExitBadInput;
  auto filter = open_filter(o.filter, *in);
  if (!filter) return kExitBadInput;
  if (!o.functions.empty()) {
    if (std::string bad = check_function_globs(o.functions); !bad.empty()) {
      print_error(fmt::format("decode: --functions={}: {}", o.functions, bad));
      return kExitBadInput;
    }
    FunctionTreeOptions fo;
    fo.globs = o.functions;
    fo.lib = o.functions_lib;
    fo.filter = o.filter;
    fo.json = o.json;
    return print_function_trees(*in, *filter, fo);
  }
  OutBuffer out;
  decode_head(out, o, *in);
  DiagnosticStream diag;
  trace::TraceReader& r = *in->reader;
  trace::Event ev;
  trace::Decoded d;
  JsonWriter event_writer(out.str(), false, JsonWriter::Mode::kStaged);
  TextStage text(out.str(), 16384);  // the text lines, handed to `out` after each event
  uint64_t events = 0, shown = 0, stacked = 0;
  // Call stacks (docs/decode.md, "Call stacks"): the API call of each event, its frames.
  bool with_api = r.header().stacks || filter->uses_api();
  auto res = make_resolver(o.stacks);
  std::vector<trace::ResolvedFrame> frames;
  while (r.next(ev)) {
    ++events;
    stacked += !ev.stack.empty();
    res->follow(r.modules(), ev);
    trace::decode_event(*in->tables, ev, d);
    std::string_view api;
    if (with_api && !ev.stack.empty()) api = res->api_of(ev).value_or(std::string_view());
    if (!filter->matches(ev, d, api)) continue;
    ++shown;
    bool show_frames = o.stacks.show && !ev.stack.empty();
    if (show_frames) res->frames(ev, frames);
    if (!o.json) {
      for (const trace::Library* lib : res->take_new_libraries()) {
        out.str() += library_note(*lib);
        out.str() += '\n';
      }
    }
    if (o.json) {
      append_json(event_writer, ev, d, with_api, api,
                  o.stacks.show ? (show_frames ? &frames : &kNoFrames) : nullptr);
    } else {
      append_text(text, ev, d, api);
      text.flush();
      if (show_frames) append_frames_text(out.str(), frames, ev.stack_error);
    }
    out.maybe_flush();
    if (r.diagnostics().count() != 0) diag.flush(r.diagnostics());
  }
  diag.flush(r.diagnostics());
  uint64_t bad = r.diagnostics().count();
  decode_summary(out, o, r, *filter, *res, with_api, events, shown, stacked);
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
  add_stack_options(*cmd, o->stacks, true);
  cmd->add_option("--functions", o->functions,
                  "print the call trees of the function events (trace/replay --functions): each "
                  "call indented with its return value, the device calls nested in the function "
                  "that made them; GLOBS (comma-separated, case-insensitive, '!' excludes; write "
                  "--functions=GLOBS) show the matching calls with the path down to them and "
                  "their subtrees; --filter keeps the outermost calls with a matching device "
                  "call inside (api= names the outermost call)")
      ->expected(0, 1)
      ->default_str("*");
  cmd->add_option("--functions-lib", o->functions_lib,
                  "--functions: name the functions by this file (default: the library the trace "
                  "names, when it is here with the same build id; else fn_<address>)");
  cmd->footer(
      "Examples:\n"
      "  cudatool import tests/data/captures/trace_a.jsonl.xz -o a.jsonl --driver-version "
      "580.159.04\n"
      "  cudatool decode a.jsonl\n"
      "  cudatool decode a.jsonl --filter 'failed'\n"
      "  cudatool decode a.jsonl --filter 'ctrl=NV2080_CTRL_CMD_GPU_* or class=*CHANNEL*'\n"
      "  cudatool decode a.jsonl --filter 'call=NV_ESC_RM_ALLOC,NV_ESC_RM_FREE and tid=540'\n"
      "  cudatool decode a.jsonl --json --filter 'device=uvm' | jq -r 'select(.seq) | .call' | "
      "sort\n"
      "  cudatool decode run.jsonl --filter 'api=cuDevicePrimaryCtxRetain' --stacks\n"
      "  cudatool decode run.jsonl --stacks --lib-path ./libs-of-the-recording-machine\n"
      "  cudatool decode f.jsonl --functions --filter 'api=cuDevicePrimaryCtxRetain'\n"
      "  cudatool decode f.jsonl --functions='*Ctx*,!fn_*'     # those calls, their paths\n"
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
      "handle, request, ret, api. See docs/decode.md.\n"
      "\n"
      "Stacks (traces recorded with them): each event ends with 'during X', X the CUDA API call "
      "in\n"
      "progress (the outermost exported entry point of --api-lib on its stack); --stacks prints\n"
      "the frames under it as module+offset and function+offset. A library that is absent or\n"
      "another build here is matched by build id in --lib-path; without it a '# no names' line\n"
      "says why and its frames stay module+offset.\n"
      "\n"
      "Exit status: 0 ok; 2 the trace cannot be read, a bad --filter or --branch, or lines of\n"
      "the trace that are not valid events (each reported on stderr; the rest are decoded).");
  cmd->callback([o, exit_code] { *exit_code = run_decode(*o); });
}

}  // namespace cudatool::cli
