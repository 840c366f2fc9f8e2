// cudatool abi LIB [--trace T…] | abi OLD NEW: the kernel-driver requests a libcuda build's code
// can make, with their layouts from the build's branch, and what changed between two builds
// (docs/abi.md).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "analysis/abi_layout.hpp"
#include "analysis/abi_surface.hpp"
#include "base/json_writer.hpp"
#include "cli/abi_output.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/function_output.hpp"
#include "cli/trace_input.hpp"
#include "trace/decode.hpp"

namespace cudatool::cli {
namespace {

struct AbiOptions {
  std::vector<std::string> libs;
  std::vector<std::string> traces;
  NameOptions names;
  bool json = false;
  bool markdown = false;
};

// The requests a trace holds, read with the surface's branch: escapes by number, UVM ioctls by
// request, control commands and allocated classes from the RM calls' arguments.
bool read_trace(const std::string& path, const rm::Tables& t, AbiTraceFacts& facts) {
  auto in = open_trace_input(path, std::string(t.info().id));
  if (!in) return false;
  DiagnosticStream diag;
  trace::Event ev;
  trace::Decoded d;
  while (in->reader->next(ev)) {
    diag.flush(in->reader->diagnostics());
    if (ev.sys != trace::Sys::kIoctl) continue;
    trace::decode_event(t, ev, d);
    if (d.device == rm::Device::kUvm) {
      ++facts.requests[{AbiKind::kUvm, static_cast<uint32_t>(d.request)}];
      continue;
    }
    if (d.ioc_type != 0x46) continue;
    ++facts.requests[{AbiKind::kEscape, d.nr}];
    if (d.cmd) ++facts.requests[{AbiKind::kControl, *d.cmd}];
    if (d.h_class && d.call.find("ALLOC") != std::string_view::npos) {
      ++facts.requests[{AbiKind::kClass, *d.h_class}];
    }
  }
  diag.flush(in->reader->diagnostics());
  facts.files.push_back(path);
  return true;
}

int run_surface(const AbiOptions& o) {
  auto img = open_library(o.libs[0]);
  if (!img) return kExitBadInput;
  const FunctionMap& map = named_function_map(*img, o.names);
  const AbiSurface& s = img->facet<AbiSurface>();
  AbiTraceFacts facts;
  for (const auto& t : o.traces) {
    if (!read_trace(t, s.tables(), facts)) return kExitBadInput;
  }
  const AbiTraceFacts* trace = o.traces.empty() ? nullptr : &facts;
  std::string out;
  if (o.json) {
    JsonWriter w(out);
    write_abi_json(w, s, map, img->path(), trace);
    w.finish();
  } else if (o.markdown) {
    out = abi_markdown(s, map, img->path(), trace);
  } else {
    out = abi_text(s, map, img->path(), trace);
  }
  emit(out);
  int rc = report_diagnostics(img->diagnostics());
  if (rc != kExitOk) return rc;
  if (trace != nullptr) {
    for (const auto& [k, n] : facts.requests) {
      if (s.find(k.first, k.second) == nullptr) return kExitFindings;
    }
  }
  return kExitOk;
}

int run_diff(const AbiOptions& o) {
  if (!o.traces.empty()) {
    print_error("--trace takes one library: abi LIB --trace T");
    return kExitBadInput;
  }
  auto a = open_library(o.libs[0]);
  if (!a) return kExitBadInput;
  auto b = open_library(o.libs[1]);
  if (!b) return kExitBadInput;
  const AbiSurface& sa = a->facet<AbiSurface>();
  const AbiSurface& sb = b->facet<AbiSurface>();
  AbiDiff d = diff_abi(sa, sb);
  std::string out;
  if (o.json) {
    JsonWriter w(out);
    write_abi_diff_json(w, d, sa, sb);
    w.finish();
  } else if (o.markdown) {
    out = abi_diff_markdown(d, sa, sb, a->path(), b->path());
  } else {
    out = abi_diff_text(d, sa, sb, a->path(), b->path());
  }
  emit(out);
  int rc = report_diagnostics(a->diagnostics());
  int rc2 = report_diagnostics(b->diagnostics());
  return rc != kExitOk ? rc : rc2;
}

}  // namespace

void register_abi(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<AbiOptions>();
  auto* cmd = app.add_subcommand(
      "abi",
      "Which kernel-driver requests a build's code makes, with their layouts; what changed "
      "between two builds");
  // Unbounded, checked below: CLI11 2.1 writes a bound of 2 as "LIB(1x)" in the usage line.
  cmd->add_option("LIB", o->libs, "library (LIB), or two (OLD NEW) to compare")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--trace", o->traces,
                  "mark the requests seen in these traces and list those the surface misses")
      ->expected(1, -1);
  cmd->add_flag("--json", o->json, "print JSON (schema cudatool.abi/1)");
  cmd->add_flag("--markdown", o->markdown, "print Markdown tables (for docs and pull requests)");
  add_names_option(cmd, o->names);
  cmd->footer(
      "The surface: every escape (NV_ESC_*), RM control command, allocation class and UVM ioctl\n"
      "whose constant the library's code moves into a register or memory, or loads as a vector\n"
      "constant, read with the tables of the build's driver branch (as decode chooses it).\n"
      "Confidence: high (a value no ordinary integer is likely to be, or a UVM request moved into\n"
      "ioctl's request argument, in a function whose direct calls reach ioctl), medium (a\n"
      "16-bit id there), low (a small value, or no call path to an ioctl). See docs/abi.md.\n"
      "Exit status: 0 ok, 1 a trace request the surface misses, 2 bad input.\n"
      "Examples:\n"
      "  cudatool abi libcuda.so.580.159.04\n"
      "  cudatool abi libcuda.so.580.159.04 --json | jq '.requests[] | select(.simple|not) | "
      ".name'\n"
      "  cudatool abi libcuda.so.580.159.04 --trace a.jsonl     # recall against a run\n"
      "  cudatool abi libcuda.so.535.261.03 libcuda.so.580.159.04 --markdown");
  cmd->callback([o, exit_code] {
    if (o->json && o->markdown) {
      print_error("--json and --markdown exclude each other");
      *exit_code = kExitBadInput;
      return;
    }
    if (o->libs.size() > 2) {
      print_error(fmt::format("abi: {} libraries given: one (LIB), or two (OLD NEW) to compare",
                              o->libs.size()));
      *exit_code = kExitBadInput;
      return;
    }
    *exit_code = o->libs.size() == 2 ? run_diff(*o) : run_surface(*o);
  });
}

}  // namespace cudatool::cli
