// cudatool import: a capture of the simpler format of tests/data/captures into a trace.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "analysis/version_strings.h"
#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/json_diagnostics.hpp"
#include "trace/capture_import.hpp"
#include "trace/capture_probe.hpp"

namespace cudatool::cli {
namespace {

struct ImportCliOptions {
  std::string capture;
  std::string output;
  std::string driver_version;
  std::optional<int> exit_status;  // --exit-status
  bool json = false;
  bool force = false;
};

// The driver version for the header: --driver-version, else what the capture's calls name.
// Fills `source` with where it came from; false (after the error) for a malformed option.
bool choose_driver_version(const ImportCliOptions& o, trace::ImportOptions& io,
                           std::string& source) {
  if (!o.driver_version.empty()) {
    const std::string& v = o.driver_version;
    if (nvtr_version_length(v.data(), v.size()) != v.size()) {
      print_error(fmt::format(
          "--driver-version {}: not a driver version (digits.digits[.digits], e.g. 580.159.04)",
          v));
      return false;
    }
    io.driver_version = v;
    source = "--driver-version";
    return true;
  }
  if (auto found = trace::capture_driver_version(o.capture)) {
    io.driver_version = found->version;
    source = found->source;
  }
  return true;
}

int run_import(const ImportCliOptions& o) {
  if (!usable_output("-o", o.output, {o.capture}, OutputKind::kTrace, o.force)) {
    return kExitBadInput;
  }
  if (Status s = trace::check_capture_start(o.capture); !s.ok()) {
    print_error(s.error());
    return kExitBadInput;
  }
  trace::ImportOptions io;
  std::string version_source;
  if (!choose_driver_version(o, io, version_source)) return kExitBadInput;
  auto w = trace::TraceWriter::create(o.output);
  if (!w) {
    print_error(w.error());
    return kExitBadInput;
  }
  io.exit_status = o.exit_status;
  Diagnostics diag;
  auto r = trace::import_capture(o.capture, io, **w, diag);
  if (!r) {
    print_error(r.error());
    return kExitBadInput;
  }
  if (r->events == 0) {
    report_diagnostics(diag);
    std::remove(o.output.c_str());
    print_error(fmt::format("{}: none of its {} lines is a capture record; nothing written",
                            o.capture, r->lines));
    return kExitBadInput;
  }
  if (o.json) {
    std::string out;
    JsonWriter j(out);
    j.begin_object();
    j.kv("schema", "cudatool.import/1").kv("source", o.capture).kv("output", o.output);
    j.kv("compression", r->compression).kv("lines", r->lines).kv("events", r->events);
    j.kv_or_null("driver_version", io.driver_version.value_or(""));
    j.kv_or_null("driver_version_source", version_source);
    if (o.exit_status) {
      j.kv("exit_status", *o.exit_status);
    } else {
      j.key("exit_status").null();
    }
    j.key("by_sys").begin_object();
    for (const auto& [k, n] : r->by_sys) j.kv(k, n);
    j.end_object();
    write_diagnostics(j, diag);
    j.end_object();
    j.finish();
    emit(out);
  } else {
    std::string kinds;
    for (const auto& [k, n] : r->by_sys)
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, k);
    emit(fmt::format("imported {} events ({}) from {} ({}) to {}\n", r->events, kinds, o.capture,
                     r->compression == "none" ? "plain" : r->compression, o.output));
    if (!io.driver_version) {
      // Neither the option nor the calls: decode would take the newest branch's tables, and
      // replay could neither make the build-version strings nor check the library.
      std::fprintf(stderr,
                   "cudatool: note: no call of the capture names its driver version "
                   "(NV_ESC_CHECK_VERSION_STR, NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2), so "
                   "the trace's header has none; pass --driver-version (decode and stats then "
                   "use that branch's tables, replay needs it)\n");
    } else if (version_source != "--driver-version") {
      std::fprintf(stderr, "cudatool: driver version %s, from %s\n", io.driver_version->c_str(),
                   version_source.c_str());
    }
  }
  return report_diagnostics(diag);
}

}  // namespace

void register_import(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ImportCliOptions>();
  auto* cmd = app.add_subcommand(
      "import",
      "Convert a capture of the simpler JSON-lines format (tests/data/captures) to a trace");
  cmd->add_option("CAPTURE", o->capture, "capture file: JSON lines, plain, .xz or .zst")
      ->required();
  cmd->add_option("-o,--output", o->output, "trace file to write (.zst: compressed)")->required();
  cmd->add_option("--driver-version", o->driver_version,
                  "kernel driver version the capture was made with (default: the version its "
                  "NV_ESC_CHECK_VERSION_STR or build-version control names, when one does)");
  add_force_flag(cmd, o->force);
  cmd->add_option("--exit-status", o->exit_status,
                  "the traced program's exit status, when known (the capture does not say; without "
                  "it the trailer's exit_status is null)")
      ->check(CLI::Range(-255, 255));
  cmd->add_flag("--json", o->json, "print the summary as JSON (schema cudatool.import/1)");
  cmd->footer(
      "Examples:\n"
      "  cudatool import tests/data/captures/trace_a.jsonl.xz -o a.jsonl --driver-version "
      "580.159.04\n"
      "  cudatool import capture.jsonl -o capture.jsonl.zst --json\n"
      "  cudatool import guest.jsonl.xz -o guest.trace --driver-version 580.159.04 --exit-status "
      "1\n"
      "The trace's header names the driver version: --driver-version's, else the one the\n"
      "capture's calls name (import says which call); without one decode takes the newest\n"
      "branch's tables. A file that is not a capture (an empty one, a trace, one whose first line\n"
      "is not a JSON object) is refused, exit status 2.\n"
      "Every field of a capture line is kept (docs/trace-format.md, \"Imported captures\"). A\n"
      "line that is not a valid capture record is reported (line, offset, reason) and skipped;\n"
      "the exit status is then 2. The capture holds no exit status of the traced program: the\n"
      "trailer's exit_status is null unless --exit-status states it (replay --bisect then tells\n"
      "a failed run by its path instead, docs/replay.md).");
  cmd->callback([o, exit_code] { *exit_code = run_import(*o); });
}

}  // namespace cudatool::cli
