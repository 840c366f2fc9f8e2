// Call stacks of a trace, resolved: each frame (a code address of a traced process) to the module
// that holds it (`module+offset`), to the function around it, named by the project's one naming
// source (analysis/: the FunctionMap's exports and `fn_<addr>`, the names libcuda's routing
// tables give — dispatch `.impl`, cuGetProcAddress, export-table slots — and .symtab where the
// file has one), and the CUDA API call in progress: the outermost frame in an API library
// (`--api-lib`, default libcuda.so*) whose function is an API entry point (an export, a
// cuGetProcAddress name, or the implementation behind an export).
//
// Traces recorded elsewhere: a module's file is taken from its recorded path when the build id
// there matches the record's, else from the search directories (`--lib-path`, matched by build
// id); otherwise its frames are `module+offset` only and Library::why says why.
//
//   StackResolver res(options);
//   while (reader.next(ev)) {
//     res.follow(reader.modules(), ev);          // keeps the module map current (every event)
//     auto api = res.api_of(ev);                 // "cuDevicePrimaryCtxRetain", or nothing
//     res.frames(ev, frames);                    // module, offset, function, offset in it
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.hpp"
#include "trace/event.hpp"
#include "trace/module_map.hpp"

namespace cudatool {
class DriverImage;
class FunctionMap;
}  // namespace cudatool

namespace cudatool::trace {

inline constexpr std::string_view kDefaultApiLib = "libcuda.so*";

struct ResolverOptions {
  std::vector<std::string> lib_paths;   // searched by build id when a file is absent or other
  std::string api_lib{kDefaultApiLib};  // glob over a module's file name (any case)
  // Opens a module file; the default takes regular files only (never a FIFO or a device) and
  // maps them with DriverImage::open. The fuzzer and tests give their own.
  std::function<Result<std::unique_ptr<DriverImage>>(const std::string& path)> open;
};

// A file that names the frames of one module (one per recorded path and build id).
struct Library {
  std::string path;      // as recorded
  std::string build_id;  // as recorded ("" when the object has none)
  std::string file;      // the file names come from ("" when none)
  std::string why;       // why there are no names ("" when there are)
  bool api = false;      // the file name matches --api-lib
  uint64_t functions = 0;
  [[nodiscard]] bool named() const { return why.empty(); }
};

struct ResolvedFrame {
  uint64_t addr = 0;
  const Module* module = nullptr;    // null: no module of the process holds the address
  const Library* library = nullptr;  // with the module
  uint64_t offset = 0;               // addr - module->base: an ELF virtual address of the file
  std::string_view function;         // "" when unknown (no names, or no function holds it)
  uint64_t function_offset = 0;      // addr - the function's start
  std::string_view api;              // the API entry point this function is, "" when none
};

class StackResolver {
 public:
  explicit StackResolver(ResolverOptions options = {});
  ~StackResolver();
  StackResolver(const StackResolver&) = delete;
  StackResolver& operator=(const StackResolver&) = delete;

  // Call for every event in file order, with the reader's module records so far.
  void follow(const std::vector<Module>& records, const Event& ev);
  [[nodiscard]] const ModuleMap& modules() const { return map_; }

  // The frames of ev.stack, innermost first. Return addresses (every frame but a ptrace trace's
  // first, which is the system call's own address, and even that one is after the instruction)
  // are looked up at addr - 1, so that a call that ends its function names that function.
  void frames(const Event& ev, std::vector<ResolvedFrame>& out);
  // The CUDA API call in progress when `ev` was made: the outermost frame whose function is an
  // API entry point of an API library. Nothing when the stack has none (or no names).
  std::optional<std::string_view> api_of(const Event& ev);

  // Every library met so far, in order of first use.
  [[nodiscard]] const std::vector<std::unique_ptr<Library>>& libraries() const { return libs_; }
  // The libraries met since the last call (to say, as they appear, where names come from).
  std::vector<const Library*> take_new_libraries();

  // "libcuda.so.1+0x2a3b47" / "cuCtxCreate_v2+0x1f" / "fn_2a3b00+0x47" texts for one frame.
  static std::string module_text(const ResolvedFrame& f);
  static std::string function_text(const ResolvedFrame& f);

 private:
  struct Loaded;
  struct Resolved;
  Loaded& load(const Module& m);
  const Resolved& resolve(Loaded& lib, uint64_t offset);
  bool is_api_lib(std::string_view path) const;
  std::string find_in_lib_paths(const std::string& build_id, const std::string& path,
                                std::string* tried);

  ResolverOptions opt_;
  ModuleMap map_;
  std::vector<std::unique_ptr<Library>> libs_;
  size_t libs_reported_ = 0;
  std::map<std::string, std::unique_ptr<Loaded>> loaded_;  // path + '\0' + build id
  std::unordered_map<const Module*, Loaded*> by_module_;
  // --lib-path contents by build id (scanned once).
  bool scanned_ = false;
  std::unordered_map<std::string, std::string> by_build_id_;
  std::vector<ResolvedFrame> scratch_;
};

// For ab's seam (NormalizeOptions::api_namer, "during X"): names the API call of the events that
// `reader` returns, one resolver per trace. The reader must outlive the function; call it for
// every event in order (it follows the module map).
class TraceReader;
std::function<std::optional<std::string>(const Event&)> make_api_namer(const TraceReader& reader,
                                                                       ResolverOptions options);

}  // namespace cudatool::trace
