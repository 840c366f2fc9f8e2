// cudatool ab A B: where does run B first diverge from run A?
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "ab/compare.hpp"
#include "cli/ab_html.hpp"
#include "cli/ab_output.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/stack_output.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::cli {
namespace {

struct AbCliOptions {
  std::string a, b;
  std::string html;
  bool json = false;
  bool force = false;
  AbReportOptions report;
  StackOptions stacks;              // --api-lib, --lib-path: the API call each event was made under
  std::vector<std::string> ignore;  // --ignore SPEC
  std::vector<std::string> expect;  // --expect FILE
};

// --ignore and --expect as one list of known differences (ab/known.hpp); errors: a bad spec, a
// file that cannot be read or holds a bad line.
Result<std::vector<ab::KnownDifference>> known_differences(const AbCliOptions& o) {
  std::vector<ab::KnownDifference> out;
  for (const std::string& spec : o.ignore) {
    auto k = ab::parse_known(spec, "--ignore");
    if (!k) return k.error();
    out.push_back(std::move(*k));
  }
  for (const std::string& file : o.expect) {
    auto ks = ab::read_known_file(file);
    if (!ks) return ks.error();
    for (ab::KnownDifference& k : *ks) out.push_back(std::move(k));
  }
  return out;
}

// The API call in progress ("during cuCtxCreate_v2" in the verdict), from the stacks and module
// records of traces that have them (docs/decode.md, "Call stacks").
ab::NormalizeOptions normalize_options(const StackOptions& s) {
  ab::NormalizeOptions n;
  n.reader_api_namer = [s](const trace::TraceReader& reader) -> ab::ApiNamer {
    if (!reader.header().stacks) return {};
    trace::ResolverOptions r;
    r.lib_paths = s.lib_paths;
    r.api_lib = s.api_lib;
    return trace::make_api_namer(reader, std::move(r));
  };
  return n;
}

int run_ab(const AbCliOptions& o) {
  if (!o.html.empty() && !usable_output("--html", o.html, {o.a, o.b}, OutputKind::kHtml, o.force))
    return kExitBadInput;
  auto known = known_differences(o);
  if (!known) {
    print_error(known.error());
    return kExitBadInput;
  }
  // The two traces are read and normalised at the same time, one thread each.
  ab::NormalizedPair pair = ab::normalize_pair(o.a, o.b, normalize_options(o.stacks));
  Result<std::unique_ptr<ab::NormalizedTrace>>& ra = pair.a;
  Result<std::unique_ptr<ab::NormalizedTrace>>& rb = pair.b;
  if (!ra || !rb) {
    if (!ra) print_error(ra.error());
    if (!rb) print_error(rb.error());
    return kExitBadInput;
  }
  ab::CompareOptions co;
  co.known = std::move(*known);
  ab::Comparison c = ab::compare(**ra, **rb, co);
  AbReportOptions report = o.report;
  if (!o.html.empty()) {
    Result<AbHtmlStats> page = write_ab_html(c, o.html);
    if (!page) {
      print_error(page.error());
      return kExitBadInput;
    }
    report.html_path = o.html;
    report.html_bytes = page->bytes;
    report.html_events = page->events;
    if (!o.json) {
      fmt::print(stderr, "cudatool: wrote {} ({}, {} events decoded)\n", o.html,
                 human_size(page->bytes), page->events);
    }
  }
  emit(o.json ? render_ab_json(c, report) : render_ab_text(c, report));
  int bad = report_diagnostics((*ra)->diagnostics);
  bad = std::max(bad, report_diagnostics((*rb)->diagnostics));
  if (bad != kExitOk) return kExitBadInput;
  return c.equivalent() ? kExitOk : kExitFindings;
}

}  // namespace

void register_ab(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<AbCliOptions>();
  auto* cmd = app.add_subcommand(
      "ab",
      "Where does trace B first diverge from trace A? (handles, pointers, fds, times and "
      "threads normalised; docs/ab.md)");
  cmd->add_option("A", o->a, "the reference trace (e.g. bare metal)")->required();
  cmd->add_option("B", o->b, "the trace to compare (e.g. the guest)")->required();
  add_force_flag(cmd, o->force);
  cmd->add_flag("--json", o->json, "print the comparison as JSON (schema cudatool.ab/1)");
  cmd->add_option("--context", o->report.context,
                  "calls shown before and after the first divergence (default 5)")
      ->check(CLI::Range(0u, 100000u));
  cmd->add_flag("--all", o->report.all, "list every divergence, grouped by kind");
  cmd->add_option("--html", o->html,
                  "also write the comparison as one self-contained HTML page: the runs side by "
                  "side, every call expandable to its decoded members, a filter box");
  cmd->add_option(
      "--ignore", o->ignore,
      "a known difference to hide (repeatable): a call (NV2080_CTRL_CMD_GR_GET_TPC_MASK), "
      "a member (params.tpcMask, tpcMask) or CALL:MEMBER, globs allowed; a note counts "
      "what it hid");
  cmd->add_option("--expect", o->expect,
                  "a file of known differences, one --ignore SPEC per line ('#' comments)")
      ->check(CLI::ExistingFile);
  add_stack_options(*cmd, o->stacks, false);
  cmd->footer(
      "Examples:\n"
      "  cudatool import tests/data/captures/trace_a.jsonl.xz -o a.trace --driver-version "
      "580.159.04\n"
      "  cudatool import tests/data/captures/trace_b.jsonl.xz -o b.trace --driver-version "
      "580.159.04\n"
      "  cudatool ab a.trace b.trace                 # two runs of one program: equivalent\n"
      "  cudatool ab host.trace guest.trace --context 10\n"
      "  cudatool ab host.trace guest.trace --all    # every divergence, by kind\n"
      "  cudatool ab host.trace guest.trace --json | jq '.first.divergence.fields'\n"
      "  cudatool ab host.trace guest.trace --html report.html   # open it in a browser\n"
      "  cudatool ab a.jsonl b.jsonl --api-lib 'libmycuda*'   # 'during myCtxCreate' (stacks)\n"
      "  cudatool ab host.trace guest.trace --ignore NV2080_CTRL_CMD_GR_GET_TPC_MASK\n"
      "  cudatool ab host.trace guest.trace --expect known-machine-differences.txt\n"
      "\n"
      "Before comparing, each trace is normalised: RM handles become names by parent, class and\n"
      "order of creation (c1/80#0/2080#0: the first NV20_SUBDEVICE_0 of the first NV01_DEVICE_0\n"
      "of client c1), pointers the buffer or mapping they point into (params+0x10,\n"
      "map2@/dev/nvidiactl#4+0x40) or a name by first appearance per member (va:pChannelList#3),\n"
      "fds the device and order of opening (/dev/nvidiactl#1), the GPU's UUID, PCI location,\n"
      "gpuId, board id and serial gpu#0, gpu#0.pci …; times and sequence numbers are\n"
      "ignored and threads are matched by the order in which they were created. A member that\n"
      "holds a handle RM assigns anew each run is renamed by the rules listed in docs/ab.md.\n"
      "The events of each thread are aligned by what was asked, so inserted, missing and\n"
      "reordered calls are found; the report starts with the first divergence and its\n"
      "context, decoded (escape, control command, class, status by name), with the members that\n"
      "differ. The first divergence is the first with consequences (a call made in one run only,\n"
      "another status or return, a call asked differently); answers that differed before it\n"
      "without visible consequence (floorsweeping masks, clocks) are listed under it. Traces\n"
      "from different drivers or GPU models are flagged before anything else; each run's GPUs\n"
      "are named, and a note says when they differ. A run that stops early (a failure, a\n"
      "teardown, an exit) is one finding: the calls of the other run that it never made are\n"
      "counted, not listed (--all lists them). --ignore and --expect hide known differences of\n"
      "the two machines, and a note counts what they hid. Events the other\n"
      "recording could not have held are left out, and a note says how many and why: exits of\n"
      "threads against preload mode or a replayed run, environment reads outside the other's\n"
      "--env globs, closes, dups, munmaps, execs and exits against an imported capture. Nor is\n"
      "what a capture does not hold of a call compared against one: allocation parameters passed\n"
      "with paramsSize 0, buffers behind pointer members, UVM argument bytes past 256.\n"
      "\n"
      "Exit status: 0 equivalent (known differences hidden), 1 divergent (also when only answers\n"
      "differed, without consequence), 2 bad input (unreadable file, not a trace, damaged lines:\n"
      "the comparison of what could be read is still printed; a bad --ignore or --expect).");
  cmd->callback([o, exit_code] { *exit_code = run_ab(*o); });
}

}  // namespace cudatool::cli
