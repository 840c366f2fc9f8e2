// cudatool export: a trace in another tool's format (Chrome/Perfetto trace-event JSON).
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>

#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/function_summary_output.hpp"
#include "cli/stack_output.hpp"
#include "cli/trace_input.hpp"
#include "trace/decode.hpp"
#include "trace/event_filter.hpp"
#include "trace/function_calls.hpp"
#include "trace/function_namer.hpp"
#include "trace/perfetto.hpp"

namespace cudatool::cli {
namespace {

struct ExportOptions {
  std::string trace;
  std::string format = "perfetto";
  std::string output;
  std::string filter;
  std::string branch;
  StackOptions stacks;
  std::string functions_lib;
  bool no_functions = false;
  bool json = false;
  bool force = false;
};

// The function events of the trace (trace/replay --functions) as slices, each thread's calls on
// its track: how many.
uint64_t export_functions(const ExportOptions& o, trace::TraceReader& r, trace::PerfettoWriter& pw,
                          OutBuffer& out) {
  if (o.no_functions || r.function_blocks().empty()) return 0;
  trace::FunctionNamer namer(o.functions_lib);
  uint64_t n = 0;
  for (const trace::ThreadCalls& t :
       trace::build_function_calls(r.function_tables(), r.function_blocks())) {
    for (const trace::FunctionCall& c : t.calls) {
      pw.add_function(out.str(), t.pid, t.tid, namer.name(t.table_ptr, c.function), c);
      out.maybe_flush();
      ++n;
    }
  }
  for (const std::string& note : namer.notes()) print_hint(note);
  return n;
}

int run_export(const ExportOptions& o) {
  if (o.format != "perfetto") {
    print_error(fmt::format("--format '{}': the formats are: perfetto", o.format));
    return kExitBadInput;
  }
  if (!usable_output("-o", o.output, {o.trace}, OutputKind::kJson, o.force)) return kExitBadInput;
  auto in = open_trace_input(o.trace, o.branch);
  if (!in) return kExitBadInput;
  auto filter = open_filter(o.filter, *in);
  if (!filter) return kExitBadInput;
  int fd = STDOUT_FILENO;
  if (o.output != "-") {
    fd = ::open(o.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      print_error(fmt::format("{}: cannot create: {}", o.output, strerror(errno)));
      return kExitBadInput;
    }
  }
  uint64_t events = 0, exported = 0, function_slices = 0;
  bool write_ok = true;
  DiagnosticStream diag;
  trace::TraceReader& r = *in->reader;
  {
    OutBuffer out(fd);
    trace::PerfettoWriter pw(*in->tables, r.header(), o.trace);
    pw.begin(out.str());
    trace::Event ev;
    trace::Decoded d;
    // The CUDA API call of each event, as decode resolves it (docs/decode.md, "Call stacks"):
    // an arg of the slice, and what `api=` selects.
    bool with_api = r.header().stacks || filter->uses_api();
    auto res = make_resolver(o.stacks);
    while (r.next(ev)) {
      ++events;
      res->follow(r.modules(), ev);
      trace::decode_event(*in->tables, ev, d);
      std::string_view api;
      if (with_api && !ev.stack.empty()) api = res->api_of(ev).value_or(std::string_view());
      if (!filter->matches(ev, d, api)) continue;
      ++exported;
      pw.add(out.str(), ev, d, api);
      out.maybe_flush();
      if (r.diagnostics().count() != 0) diag.flush(r.diagnostics());
    }
    diag.flush(r.diagnostics());
    function_slices = export_functions(o, r, pw, out);
    pw.finish(out.str(), events, r.diagnostics().count());
    out.flush();
    write_ok = out.ok();
  }
  if (fd != STDOUT_FILENO && ::close(fd) != 0) write_ok = false;
  if (!write_ok) {
    print_error(fmt::format("{}: write failed: {}", o.output, strerror(errno)));
    return kExitBadInput;
  }
  uint64_t bad = r.diagnostics().count();
  if (o.json) {
    std::string s;
    JsonWriter w(s);
    w.begin_object().kv("schema", "cudatool.export/1").kv("trace", o.trace);
    w.kv("format", o.format).kv("output", o.output);
    write_branch_json(w, *in);
    w.kv("events", events).kv("exported", exported).kv("function_slices", function_slices);
    w.kv("bad_lines", bad);
    write_function_summary_json(w, r);
    w.end_object();
    w.finish();
    // With -o - the document is standard output: the summary goes beside it, to stderr.
    if (o.output == "-")
      (void)!::write(STDERR_FILENO, s.data(), s.size());
    else
      emit(s);
  } else if (o.output != "-") {
    emit(fmt::format("exported {} of {} events{} to {} (trace-event JSON: open it in "
                     "ui.perfetto.dev){}\n",
                     exported, events,
                     function_slices == 0 ? std::string()
                                          : fmt::format(" and {} function calls", function_slices),
                     o.output, bad == 0 ? "" : fmt::format("; {} bad lines (on stderr)", bad)) +
         (function_slices == 0 ? function_summary_text(r, "  (not exported) ") : std::string()));
  }
  return bad == 0 ? kExitOk : kExitBadInput;
}

}  // namespace

void register_export(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd =
      app.add_subcommand("export",
                         "Write a trace as Chrome/Perfetto trace-event JSON, for a timeline in "
                         "ui.perfetto.dev");
  cmd->add_option("TRACE", o->trace, "trace file (cudatool trace or import; plain or .zst)")
      ->required();
  cmd->add_option("--format", o->format, "output format: perfetto (Chrome trace-event JSON)")
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "file to write ('-': standard output)")->required();
  cmd->add_option("--filter", o->filter,
                  "export only the events an expression selects "
                  "(the language of decode --filter, docs/decode.md)");
  cmd->add_option("--branch", o->branch, branch_option_help());
  add_force_flag(cmd, o->force);
  cmd->add_flag("--json", o->json,
                "print the summary as JSON (schema cudatool.export/1; on stderr with -o -)");
  add_stack_options(*cmd, o->stacks, false);
  cmd->add_flag("--no-functions", o->no_functions,
                "leave out the function calls of a trace with function events (trace/replay "
                "--functions): by default each is a slice on its thread's track, nesting its "
                "callees and the device calls made inside it");
  cmd->add_option("--functions-lib", o->functions_lib,
                  "name the function slices by this file (default: the library the trace names, "
                  "when it is here with the same build id; else fn_<address>)");
  cmd->footer(
      "Examples:\n"
      "  cudatool export a.jsonl --format perfetto -o a.perfetto.json\n"
      "  cudatool export a.jsonl --format perfetto -o - --filter 'device=uvm' | gzip > "
      "uvm.json.gz\n"
      "Then open the file in https://ui.perfetto.dev (or chrome://tracing).\n"
      "\n"
      "One track per thread (pid/tid); each event is a complete slice ('X') named by its call\n"
      "(\"NV_ESC_RM_CONTROL NV2080_CTRL_CMD_GPU_GET_INFO_V2\", \"NV_ESC_RM_ALLOC\n"
      "HOPPER_CHANNEL_GPFIFO_A\", \"UVM_FREE\", \"open /dev/nvidiactl\"), with seq, path, request, "
      "status, handles and the\n"
      "decoded line as args, and for a trace with call stacks the CUDA API call in progress\n"
      "(\"api\": \"cuDevicePrimaryCtxRetain\"; --filter 'api=cuInit' selects by it). Imported\n"
      "captures record no durations: their slices have dur 0.\n"
      "\n"
      "A trace with function events (trace/replay --functions) also gets one slice per\n"
      "function call (category \"function\", args end, ret, depth) on its thread's track: the\n"
      "viewer nests each call under its caller and the device calls under the function that\n"
      "made them — the flame chart of one CUDA call with its ioctls inside. --filter selects\n"
      "device events only; --no-functions leaves the calls out.\n"
      "\n"
      "Exit status: 0 ok; 2 the trace cannot be read, the output cannot be written, a bad\n"
      "option, or lines of the trace that are not valid events (reported on stderr; the rest\n"
      "are exported).");
  cmd->callback([o, exit_code] { *exit_code = run_export(*o); });
}

}  // namespace cudatool::cli
