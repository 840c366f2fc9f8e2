// Trace files (docs/trace-format.md): the streaming writer the recorders and `import` use, and the
// tolerant reader that `decode`, `stats`, `ab` and the tests use.
//
// Reader in short:
//
//   auto r = trace::TraceReader::open(path);          // plain or zstd, by magic bytes
//   if (!r) { print_error(r.error()); return 2; }     // unreadable, no header, newer version
//   const trace::Header& h = (*r)->header();
//   trace::Event ev;                                   // reused: little allocation per event
//   while ((*r)->next(ev)) { … }
//   if ((*r)->trailer()) …                             // absent when the recorder was killed
//   for (auto& e : (*r)->diagnostics().items()) …      // one per bad line, cut last line, …
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.hpp"
#include "trace/event.hpp"
#include "trace/line_source.hpp"

struct ZSTD_CCtx_s;

namespace cudatool::trace {

class TraceWriter {
 public:
  enum class Compression { kNone, kZstd };

  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Creates or truncates `path`; zstd when its name ends in ".zst". A plain trace going to a
  // regular file is written through a shared mapping of the file (space reserved ahead with
  // fallocate): each line is in the page cache when write_*() returns, without a system call per
  // line, and close() cuts the file to its length. Killed before close(), the file ends with the
  // unused reserved space as NUL bytes, which readers report and skip.
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& path);
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& path, Compression c,
                                                     bool allow_mapping = true);
  // Appends to an open file descriptor (taken over: closed by close()). For plain text only.
  static std::unique_ptr<TraceWriter> adopt_fd(int fd, std::string name);

  // Each call writes one whole line and hands it to the kernel before returning (zstd: a flushed
  // block), so that a kill of the process loses nothing written.
  Status write_header(const Header& h);
  Status write_event(const Event& e);
  // A module record (v2): before the first event whose stack needs it.
  Status write_module(const Module& m);
  // A stack record (v3): before the first event that names it with stack_ref.
  Status write_stack_record(const StackRecord& s);
  // Function records (v4): a table before the blocks that name it.
  Status write_function_table(const FunctionTable& t);
  Status write_function_block(const FunctionBlock& b);
  // From now on write_event() writes each distinct stack once, as a stack record, and names it by
  // its id in the events that have it (ids from 1; after kMaxStackRecords distinct stacks, the
  // rest inline). Only for a writer that is the one source of stack records in its file.
  void use_stack_records() { stack_records_on_ = true; }
  static constexpr size_t kMaxStackRecords = 1u << 16;
  Status write_trailer(const Trailer& t);
  // Writes bytes that are already complete trace lines (the preload spool).
  Status write_raw_lines(std::string_view lines);
  // Ends the zstd frame and closes the file. Idempotent.
  Status close();

  [[nodiscard]] uint64_t events_written() const { return events_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  TraceWriter(int fd, std::string path, Compression c);
  Status emit(std::string_view text, bool end_frame = false);
  Status write_all(const char* p, size_t n);
  Status write_mapped(const char* p, size_t n);
  void try_mapping();

  int fd_ = -1;
  std::string path_;
  Compression compression_;
  ZSTD_CCtx_s* zc_ = nullptr;
  std::string line_;
  std::string zbuf_;
  uint64_t events_ = 0;
  struct FramesHash {
    size_t operator()(const std::vector<uint64_t>& f) const noexcept;
  };
  bool stack_records_on_ = false;
  std::unordered_map<std::vector<uint64_t>, uint64_t, FramesHash> stack_ids_;
  // Mapped output: the file is `reserved_` bytes long, `off_` of them written; windows_[i] maps
  // [i * kWindow, (i + 1) * kWindow).
  static constexpr uint64_t kWindow = 16u << 20;
  bool mapped_ = false;
  uint64_t off_ = 0;
  uint64_t reserved_ = 0;
  uint64_t populated_ = 0;  // made writable up to here (populate)
  static constexpr uint64_t kPopulate = 64u << 10;
  void populate(uint64_t end);
  std::vector<char*> windows_;
};

class TraceReader {
 public:
  // Opens a trace and reads its header. Errors: the file cannot be read; it is empty; its first
  // line is not a trace header (e.g. a capture: use `cudatool import`); its format version is
  // newer than this build reads.
  static Result<std::unique_ptr<TraceReader>> open(const std::string& path,
                                                   uint64_t max_line = LineSource::kDefaultMaxLine);
  static Result<std::unique_ptr<TraceReader>> from_memory(
      std::string bytes, std::string name, uint64_t max_line = LineSource::kDefaultMaxLine);

  [[nodiscard]] const Header& header() const { return header_; }

  // Fills `ev` with the next event (reusing its storage); false at the end of the trace. A line
  // that is not a valid event is reported to diagnostics() — one error naming the line number,
  // the offset and the reason — and skipped; so is a last line cut by a kill of the recorder.
  // Events of kinds this build does not know come back as Sys::kUnknown with their members in
  // `extra`. An event that names a stack record (v3 "stack_ref") comes back with the record's
  // frames in `stack`; one naming a record the trace does not hold before it comes back without a
  // stack, its stack_error saying so, and is reported.
  bool next(Event& ev);

  // The trailer line, once next() has returned false; empty when the recorder did not finish.
  [[nodiscard]] const std::optional<Trailer>& trailer() const { return trailer_; }
  // The module records (v2) read so far, in file order: every module an event's stack refers to
  // precedes that event, so after next() returned it they are all here.
  [[nodiscard]] const std::vector<Module>& modules() const { return modules_; }
  // Function tables and blocks (v4) read so far, in file order (a recorder writes a thread's
  // blocks when they fill or the program ends: read the whole trace before using them; see
  // trace/function_calls.hpp). A second table of one id is reported and left out.
  [[nodiscard]] const std::vector<FunctionTable>& function_tables() const { return fn_tables_; }
  [[nodiscard]] const std::vector<FunctionBlock>& function_blocks() const { return fn_blocks_; }
  [[nodiscard]] const Diagnostics& diagnostics() const { return diag_; }
  // Line number (1-based) of the line the last event came from.
  [[nodiscard]] uint64_t line_number() const { return line_no_; }
  // The last line was incomplete (and ignored): the recorder was stopped while writing it.
  [[nodiscard]] bool truncated() const { return truncated_; }
  [[nodiscard]] std::string_view compression() const { return src_->compression(); }

 private:
  explicit TraceReader(std::unique_ptr<LineSource> src) : src_(std::move(src)) {}
  static Result<std::unique_ptr<TraceReader>> start(std::unique_ptr<LineSource> src);
  void report(uint64_t offset, std::string field, std::string reason);
  // Parses one NUL-free piece of a line; true when it produced an event in ev.
  bool take(std::string_view piece, uint64_t offset, bool complete, Event& ev);
  // A function table or block line (v4).
  void take_function_line(std::string_view piece, uint64_t offset);
  // Fills ev.stack from the stack record ev.stack_ref names (v3).
  void resolve_stack(Event& ev, uint64_t offset);

  std::unique_ptr<LineSource> src_;
  Header header_;
  std::optional<Trailer> trailer_;
  std::vector<Module> modules_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> stack_records_;  // v3: id → frames
  std::vector<FunctionTable> fn_tables_;                               // v4
  std::vector<FunctionBlock> fn_blocks_;
  Diagnostics diag_;
  uint64_t line_no_ = 0;
  bool truncated_ = false;
  bool after_trailer_reported_ = false;
  bool stream_checked_ = false;
  // The rest of a line that holds NUL bytes (preallocated space of a preload trace), still to be
  // split into pieces.
  std::string_view rest_;
  uint64_t rest_offset_ = 0;
  bool rest_complete_ = true;
};

}  // namespace cudatool::trace
