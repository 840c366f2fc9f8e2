#include "cli/stack_output.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/json_writer.hpp"
#include "cli/common.hpp"

namespace cudatool::cli {

void add_stack_options(CLI::App& cmd, StackOptions& o, bool with_show) {
  if (with_show) {
    cmd.add_flag("--stacks", o.show,
                 "print each event's call stack under it: address, module+offset, function "
                 "(traces recorded with stacks)");
  }
  cmd.add_option("--lib-path", o.lib_paths,
                 "directory holding the traced program's libraries, matched by build id, for a "
                 "trace recorded elsewhere (repeatable)");
  cmd.add_option("--api-lib", o.api_lib,
                 "glob over the file name of the library whose exported entry points are the "
                 "API calls an event is attributed to")
      ->capture_default_str();
}

std::unique_ptr<trace::StackResolver> make_resolver(const StackOptions& o) {
  trace::ResolverOptions r;
  r.lib_paths = o.lib_paths;
  r.api_lib = o.api_lib;
  return std::make_unique<trace::StackResolver>(std::move(r));
}

void append_frames_text(std::string& out, const std::vector<trace::ResolvedFrame>& frames,
                        const std::string& stack_error) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const trace::ResolvedFrame& f = frames[i];
    fmt::format_to(std::back_inserter(out), "          #{:<2} 0x{:012x}  {}", i, f.addr,
                   trace::StackResolver::module_text(f));
    if (!f.function.empty()) {
      out += "  ";
      out += trace::StackResolver::function_text(f);
    }
    out += '\n';
  }
  if (!stack_error.empty()) {
    fmt::format_to(std::back_inserter(out), "          [stack ends: {}]\n", stack_error);
  }
}

void write_frames_json(JsonWriter& w, const std::vector<trace::ResolvedFrame>& frames,
                       const std::string& stack_error) {
  w.key("stack").begin_array();
  for (const trace::ResolvedFrame& f : frames) {
    w.begin_object();
    w.kv_hex("addr", f.addr);
    if (f.module != nullptr) {
      w.kv("module", f.module->path).kv_hex("offset", f.offset);
    } else {
      w.key("module").null().key("offset").null();
    }
    write_function_json(w, f.function, f.function_offset);
    w.end_object();
  }
  w.end_array();
  w.kv_or_null("stack_error", stack_error);
}

void write_function_json(JsonWriter& w, std::string_view function, uint64_t offset) {
  w.kv_or_null("function", function);
  if (function.empty()) {
    w.key("function_offset").null();
  } else {
    w.kv_hex("function_offset", offset);
  }
}

std::string library_note(const trace::Library& lib) {
  std::string id = lib.build_id.empty() ? "no build id" : "build id " + lib.build_id.substr(0, 12);
  if (lib.named()) {
    return fmt::format("# names for {} ({}): {}, {} functions{}", lib.path, id, lib.file,
                       lib.functions, lib.api ? "; its exports are the API calls" : "");
  }
  return fmt::format("# no names for {} ({}): {}; its frames show as module+offset", lib.path, id,
                     lib.why);
}

void write_libraries_json(JsonWriter& w, const trace::StackResolver& res) {
  w.key("libraries").begin_array();
  for (const auto& lib : res.libraries()) {
    w.begin_object();
    w.kv("path", lib->path).kv_or_null("build_id", lib->build_id);
    w.kv_or_null("file", lib->file).kv("names", lib->named()).kv_or_null("why", lib->why);
    w.kv("api_library", lib->api).kv("functions", lib->functions);
    w.end_object();
  }
  w.end_array();
}

void append_api_stats_text(std::string& out, const trace::ApiStats& s, bool stacks,
                           const trace::StackResolver& res) {
  if (!stacks) {
    out +=
        "\ndevice calls per API call: none (the trace has no call stacks; cudatool trace records "
        "them unless --no-stacks)\n";
    return;
  }
  fmt::format_to(std::back_inserter(out),
                 "\ndevice calls per API call ({}): {} of {} device calls made during one, {} "
                 "outside any{}\n",
                 s.rows.size(), s.attributed, s.device_calls, s.with_stack - s.attributed,
                 s.with_stack < s.device_calls
                     ? fmt::format(", {} without a stack", s.device_calls - s.with_stack)
                     : "");
  for (const auto& lib : res.libraries()) {
    if (!lib->named()) out += "  " + library_note(*lib).substr(2) + "\n";
  }
  if (s.rows.empty()) return;
  TextTable t({"device calls", "ioctls", "failed", "threads", "api", "calls"},
              {true, true, true, true, false, false});
  for (const trace::ApiRow& r : s.rows) {
    std::string calls;
    for (size_t i = 0; i < r.calls.size() && i < 3; ++i) {
      calls += fmt::format("{}{} {}", i ? ", " : "", r.calls[i].first, r.calls[i].second);
    }
    if (r.calls.size() > 3) calls += fmt::format(", … {} more", r.calls.size() - 3);
    t.add({std::to_string(r.device_calls), std::to_string(r.ioctls), std::to_string(r.failed),
           std::to_string(r.threads), r.api, calls});
  }
  out += t.render("  ");
}

void write_api_stats_json(JsonWriter& w, const trace::ApiStats& s, bool stacks,
                          const trace::StackResolver& res) {
  w.key("api_calls");
  if (!stacks) {
    w.null();
    return;
  }
  w.begin_object();
  w.kv("device_calls", s.device_calls).kv("with_stack", s.with_stack);
  w.kv("attributed", s.attributed).kv("outside_api", s.with_stack - s.attributed);
  w.key("rows").begin_array();
  for (const trace::ApiRow& r : s.rows) {
    w.begin_object().kv("api", r.api).kv("device_calls", r.device_calls).kv("ioctls", r.ioctls);
    w.kv("failed", r.failed).kv("threads", r.threads).kv("dur_total_ns", r.dur_total_ns);
    w.key("calls").begin_array();
    for (const auto& [name, n] : r.calls)
      w.begin_object().kv("name", name).kv("count", n).end_object();
    w.end_array().end_object();
  }
  w.end_array();
  write_libraries_json(w, res);
  w.end_object();
}

}  // namespace cudatool::cli
