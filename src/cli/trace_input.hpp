// What `decode`, `stats` and `export` share: opening a trace, choosing the decoder branch from its
// header (or --branch), streaming the reader's per-line errors to stderr, and buffered output.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.hpp"
#include "rm/tables.hpp"
#include "trace/event_filter.hpp"
#include "trace/trace_file.hpp"

namespace CLI {
class App;
}

namespace cudatool {
class JsonWriter;
}

namespace cudatool::cli {

struct TraceInput {
  std::string path;
  std::unique_ptr<trace::TraceReader> reader;
  const rm::Tables* tables = nullptr;
  // How the branch was chosen: "driver" (same major as the trace's driver), "nearest" (no branch
  // of that major), "newest" (the trace names no driver version), "option" (--branch).
  std::string chosen_by;
  // One line for people: "r580 (tables of 580.142) for driver 580.159.04, the same major".
  std::string branch_text;
};

// Opens the trace and picks the branch; prints a one-line error and returns null on failure
// (unreadable trace, unknown --branch).
std::unique_ptr<TraceInput> open_trace_input(const std::string& path, const std::string& branch);

// --filter's expression compiled against the input's tables; prints the error and returns
// nullopt when it does not parse.
std::optional<trace::EventFilter> open_filter(const std::string& expr, const TraceInput& in);

// The --branch option text, shared by the three commands.
std::string branch_option_help();

// {"id": "r580", "release": "580.142", "commit": "…", "chosen_by": "driver"} and the driver
// version of the header.
void write_branch_json(JsonWriter& w, const TraceInput& in);

// Prints the reader's diagnostics that have arrived since the last call, one line each on stderr
// ("cudatool: error: a.jsonl line 12: …"), as they happen.
class DiagnosticStream {
 public:
  void flush(const Diagnostics& d);
  // At the end: how many there were (including those Diagnostics did not keep).
  [[nodiscard]] uint64_t count(const Diagnostics& d) const { return d.count(); }

 private:
  size_t printed_ = 0;
  bool said_more_ = false;
};

// Output in 256 KiB writes to a file descriptor (stdout, or a file for export -o).
class OutBuffer {
 public:
  explicit OutBuffer(int fd = 1) : fd_(fd) { buf_.reserve(kFlushAt + 65536); }
  ~OutBuffer() { flush(); }
  OutBuffer(const OutBuffer&) = delete;
  OutBuffer& operator=(const OutBuffer&) = delete;
  std::string& str() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= kFlushAt) flush();
  }
  void flush();
  // False when a write failed (a full disk, a closed pipe).
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  static constexpr size_t kFlushAt = 256 * 1024;
  int fd_;
  std::string buf_;
  bool ok_ = true;
};

}  // namespace cudatool::cli
