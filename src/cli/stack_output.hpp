// What `decode` and `stats` share for call stacks (docs/decode.md, "Call stacks"): the options
// (--stacks, --lib-path, --api-lib), the resolver they configure, and the text and JSON of one
// event's frames and of the libraries that name them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trace/api_stats.hpp"
#include "trace/stack_resolver.hpp"

namespace CLI {
class App;
}

namespace cudatool {
class JsonWriter;
}

namespace cudatool::cli {

struct StackOptions {
  std::vector<std::string> lib_paths;
  std::string api_lib{trace::kDefaultApiLib};
  bool show = false;  // --stacks (decode only): every frame under its event
};

// Adds --lib-path and --api-lib (and, with `with_show`, --stacks) to a command.
void add_stack_options(CLI::App& cmd, StackOptions& o, bool with_show);
std::unique_ptr<trace::StackResolver> make_resolver(const StackOptions& o);

// "          #0 0x7f…  libc.so.6+0xfdd6b  ioctl+0x3b\n" per frame, then the stack_error line.
void append_frames_text(std::string& out, const std::vector<trace::ResolvedFrame>& frames,
                        const std::string& stack_error);
// "function": name, "function_offset": "0x…" (both null when the name is unknown).
void write_function_json(JsonWriter& w, std::string_view function, uint64_t offset);
// "stack": [{"addr", "module", "offset", "function", "function_offset"}…], "stack_error".
void write_frames_json(JsonWriter& w, const std::vector<trace::ResolvedFrame>& frames,
                       const std::string& stack_error);
// "# names for libstackfix.so (build id 3f2a…): /path, 14 functions" or "# no names for …: why".
std::string library_note(const trace::Library& lib);
// [{"path", "build_id", "file", "names", "why", "api_library", "functions"}…]
void write_libraries_json(JsonWriter& w, const trace::StackResolver& res);

// `stats`: "device calls per API call" as a table (or why there is none), and its JSON twin
// ("api_calls": {...} or null when the trace has no stacks).
void append_api_stats_text(std::string& out, const trace::ApiStats& s, bool stacks,
                           const trace::StackResolver& res);
void write_api_stats_json(JsonWriter& w, const trace::ApiStats& s, bool stacks,
                          const trace::StackResolver& res);

}  // namespace cudatool::cli
