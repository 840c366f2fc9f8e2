// `--functions[=GLOBS]` of `trace` and `replay`, on cudatool's side: before the run, the patch
// plan of the library the program will load (analysis/patch_plan) and the spool, named to the
// shims by environment variables; after it, the trace's function records.
//
//   FunctionRecorder fr = FunctionRecorder::prepare(opts);   // never fails the run
//   if (!fr.active()) say(fr.why_not());                      // "… runs without function events"
//   spec.set_env += fr.env();                                 // the shim installs the plan
//   … run …
//   FunctionRecorder::Result r = fr.finish(t0_ns);            // tables, blocks, what went wrong
//   FunctionOutcome out = fr.write_into(writer, t0_ns);       // or: finish and write in one
//
// When the plan cannot be made (no library, a function map that cannot be read, no build id,
// nothing patchable) the run goes on without function events and why_not() says why.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/patch_plan.hpp"
#include "record/function_spool.hpp"
#include "trace/function_events.hpp"

namespace cudatool {
class DriverImage;
}
namespace cudatool::trace {
class TraceWriter;
}

namespace cudatool::record {

// What `--functions` did in one run, for the commands' summaries (text and JSON `functions`).
struct FunctionOutcome {
  std::string globs;     // as asked; "" when --functions was not given
  bool active = false;   // a plan was made and handed to the shims
  std::string library;   // the library planned
  std::string why_not;   // why the run went on without function events ("" when active)
  uint64_t planned = 0;  // functions the plan patches
  uint64_t tables = 0, blocks = 0, records_bytes = 0;  // written into the trace
  uint64_t lost = 0;                                   // calls not recorded for want of room
  std::vector<std::string> problems;                   // what was left out, and why
};

struct FunctionRecorderOptions {
  std::string globs = "*";
  // The library to plan: the first of these that can be planned (a file a command-line argument
  // names, the system's libcuda.so.1); the recorder installs the plan only into a loaded library
  // of the same build id.
  std::vector<std::string> libraries;
  std::string dir;  // private directory for plan.bin and spool.bin; "" makes one (removed after)
  uint64_t spool_chunks = kDefaultSpoolChunks;
};

class FunctionRecorder {
 public:
  static FunctionRecorder prepare(const FunctionRecorderOptions& o);
  FunctionRecorder(FunctionRecorder&&) noexcept;
  FunctionRecorder& operator=(FunctionRecorder&&) noexcept;
  ~FunctionRecorder();

  [[nodiscard]] bool active() const { return active_; }
  // Why nothing will be recorded (one sentence per library tried); "" when active.
  [[nodiscard]] const std::string& why_not() const { return why_not_; }
  // CUDATOOL_FUNCREC_PLAN and _SPOOL for the program; empty when not active.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> env() const;
  [[nodiscard]] const std::string& library() const { return library_; }
  [[nodiscard]] const PatchPlan& plan() const { return plan_; }
  [[nodiscard]] uint64_t prepare_ns() const { return prepare_ns_; }

  struct Result {
    std::vector<trace::FunctionTable> tables;
    std::vector<trace::FunctionBlock> blocks;
    std::vector<std::string> problems;  // what was left out, and what stopped a recorder
    uint64_t lost = 0;                  // calls not recorded for want of spool room
  };
  // Reads the spool (untrusted: the program wrote it); times relative to the trace's t0.
  Result finish(uint64_t t0_ns, uint64_t first_table_id = 1);

  // A device call's seq as the shims numbered it → as the trace numbers it (replay renumbers);
  // nullopt drops the mark. Empty: unchanged.
  using SeqMap = std::function<std::optional<uint64_t>(uint64_t)>;
  // finish(), then the tables and blocks written to `w` (before its trailer). Not active: writes
  // nothing and says why. `placed`: device calls a tracer saw from outside (ptrace mode), placed
  // into their threads' records by time (trace::place_device_calls).
  FunctionOutcome write_into(trace::TraceWriter& w, uint64_t t0_ns, const SeqMap& seq_of = {},
                             const std::vector<trace::TimedDeviceCall>* placed = nullptr);
  // What was asked and planned (before the run): the outcome without the written counts.
  [[nodiscard]] FunctionOutcome outcome() const;

 private:
  FunctionRecorder() = default;
  bool try_library(const std::string& path, const FunctionRecorderOptions& o, std::string& why);

  bool active_ = false;
  std::string globs_, why_not_, library_, plan_path_, spool_path_;
  std::string own_dir_;  // made by prepare(): removed with its files
  std::unique_ptr<DriverImage> img_;
  PatchPlan plan_;
  uint64_t prepare_ns_ = 0;
};

// The libraries `--functions` plans for a command: each argument that names an existing file
// called libcuda.so* (cuda_probe LIB, a program told where its driver is), then the system's
// libcuda.so.1 (ld.so's search) when there is one.
std::vector<std::string> function_libraries_for(const std::vector<std::string>& command);
// `given` (--functions-lib) alone when not empty, else function_libraries_for(command).
std::vector<std::string> function_libraries(const std::string& given,
                                            const std::vector<std::string>& command);

}  // namespace cudatool::record
