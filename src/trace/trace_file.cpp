#include "trace/trace_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "trace/trace_json.hpp"

namespace cudatool::trace {

// ---------------------------------------------------------------------------------------------
// Writer

TraceWriter::TraceWriter(int fd, std::string path, Compression c)
    : fd_(fd), path_(std::move(path)), compression_(c) {}

TraceWriter::~TraceWriter() {
  (void)close();
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path) {
  bool zst = path.size() > 4 && path.compare(path.size() - 4, 4, ".zst") == 0;
  return create(path, zst ? Compression::kZstd : Compression::kNone);
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path, Compression c,
                                                         bool allow_mapping) {
  // Read-write: a shared writable mapping needs it; a file that may only be written (a device,
  // a pipe) is written with write().
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EISDIR)) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  if (fd < 0) return make_error(path, "", std::nullopt, std::strerror(errno));
  std::unique_ptr<TraceWriter> w(new TraceWriter(fd, path, c));
  if (c == Compression::kZstd) {
    w->zc_ = ZSTD_createCCtx();
    if (w->zc_ == nullptr) return make_error(path, "", std::nullopt, "zstd: out of memory");
    ZSTD_CCtx_setParameter(w->zc_, ZSTD_c_compressionLevel, 3);
  } else if (allow_mapping) {
    w->try_mapping();
  }
  return w;
}

void TraceWriter::try_mapping() {
  struct stat st {};
  if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return;  // a pipe, a terminal: write()
  // The first window proves that the file can be reserved (fallocate: no SIGBUS on a full disk
  // later) and mapped shared; otherwise the writer stays with write().
  if (fallocate(fd_, 0, 0, static_cast<off_t>(kWindow)) != 0) return;
  void* p = mmap(nullptr, kWindow, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    (void)!ftruncate(fd_, 0);
    return;
  }
  // No readahead: a write fault would otherwise have the kernel allocate and zero the pages
  // around it too, most of them never written in a short trace and freed again at the end.
  (void)madvise(p, kWindow, MADV_RANDOM);
  windows_.push_back(static_cast<char*>(p));
  reserved_ = kWindow;
  mapped_ = true;
}

Status TraceWriter::write_mapped(const char* p, size_t n) {
  while (n > 0) {
    if (off_ == reserved_) {
      if (fallocate(fd_, 0, static_cast<off_t>(reserved_), static_cast<off_t>(kWindow)) != 0) {
        return make_error(path_, "", std::nullopt,
                          fmt::format("fallocate: {}", std::strerror(errno)));
      }
      void* w = mmap(nullptr, kWindow, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                     static_cast<off_t>(reserved_));
      if (w == MAP_FAILED) {
        return make_error(path_, "", std::nullopt, fmt::format("mmap: {}", std::strerror(errno)));
      }
      (void)madvise(w, kWindow, MADV_RANDOM);
      windows_.push_back(static_cast<char*>(w));
      reserved_ += kWindow;
    }
    uint64_t in = off_ % kWindow;
    size_t take = std::min<uint64_t>(n, kWindow - in);
    if (off_ + take > populated_) populate(off_ + take);
    std::memcpy(windows_[off_ / kWindow] + in, p, take);
    off_ += take;
    p += take;
    n -= take;
  }
  return Status::success();
}

void TraceWriter::populate(uint64_t end) {
  // The pages ahead are made writable kPopulate bytes at a time, in one system call, instead of
  // one write fault per page (readahead, which would batch them, is off: above). Where the
  // kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) the pages fault in one by one.
  // The zeros written first put the pages into the page cache through write(): on ext4 that
  // costs a third of making the reserved (unwritten) blocks writable through the mapping, page
  // by page (3.7 MB of events: 1.1 ms against 3.5 ms). Nothing was written there yet: the
  // writer is the file's only writer, and populated_ stays ahead of off_.
  static const std::array<char, kPopulate> zeros{};
  while (populated_ < end && populated_ < reserved_) {
    uint64_t in = populated_ % kWindow;
    uint64_t len = std::min<uint64_t>(kPopulate, kWindow - in);
    (void)!pwrite(fd_, zeros.data(), len, static_cast<off_t>(populated_));  // best effort
    (void)madvise(windows_[populated_ / kWindow] + in, len, MADV_POPULATE_WRITE);
    populated_ += len;
  }
}

std::unique_ptr<TraceWriter> TraceWriter::adopt_fd(int fd, std::string name) {
  return std::unique_ptr<TraceWriter>(new TraceWriter(fd, std::move(name), Compression::kNone));
}

Status TraceWriter::write_all(const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return make_error(path_, "", std::nullopt, fmt::format("write: {}", std::strerror(errno)));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::success();
}

Status TraceWriter::emit(std::string_view text, bool end_frame) {
  if (fd_ < 0) return make_error(path_, "", std::nullopt, "trace file is closed");
  if (mapped_) return write_mapped(text.data(), text.size());
  if (compression_ == Compression::kNone) return write_all(text.data(), text.size());
  // zstd: compress and flush, so that what was written decodes without the rest of the frame.
  ZSTD_inBuffer in{text.data(), text.size(), 0};
  ZSTD_EndDirective mode = end_frame ? ZSTD_e_end : ZSTD_e_flush;
  while (true) {
    zbuf_.resize(ZSTD_CStreamOutSize());
    ZSTD_outBuffer out{zbuf_.data(), zbuf_.size(), 0};
    size_t left = ZSTD_compressStream2(zc_, &out, &in, mode);
    if (ZSTD_isError(left)) {
      return make_error(path_, "", std::nullopt, fmt::format("zstd: {}", ZSTD_getErrorName(left)));
    }
    if (Status st = write_all(zbuf_.data(), out.pos); !st.ok()) return st;
    if (left == 0 && in.pos == in.size) break;
  }
  return Status::success();
}

Status TraceWriter::write_header(const Header& h) {
  line_.clear();
  append_header_line(line_, h);
  return emit(line_);
}

size_t TraceWriter::FramesHash::operator()(const std::vector<uint64_t>& f) const noexcept {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ f.size();
  for (uint64_t a : f) {
    h ^= a;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  }
  return static_cast<size_t>(h);
}

Status TraceWriter::write_event(const Event& e) {
  uint64_t ref = 0;
  if (stack_records_on_ && !e.stack.empty()) {
    if (auto it = stack_ids_.find(e.stack); it != stack_ids_.end()) {
      ref = it->second;
    } else if (stack_ids_.size() < kMaxStackRecords) {
      StackRecord rec{stack_ids_.size() + 1, e.stack};
      if (Status st = write_stack_record(rec); !st.ok()) return st;
      ref = rec.id;
      stack_ids_.emplace(std::move(rec.stack), ref);
    }
  }
  line_.clear();
  append_event_line(line_, e, ref);
  Status st = emit(line_);
  if (st.ok()) ++events_;
  return st;
}

Status TraceWriter::write_module(const Module& m) {
  line_.clear();
  append_module_line(line_, m);
  return emit(line_);
}

Status TraceWriter::write_function_table(const FunctionTable& t) {
  line_.clear();
  append_function_table_line(line_, t);
  return emit(line_);
}

Status TraceWriter::write_function_block(const FunctionBlock& b) {
  line_.clear();
  append_function_block_line(line_, b);
  return emit(line_);
}

Status TraceWriter::write_stack_record(const StackRecord& s) {
  line_.clear();
  append_stack_record_line(line_, s);
  return emit(line_);
}

Status TraceWriter::write_trailer(const Trailer& t) {
  line_.clear();
  append_trailer_line(line_, t);
  return emit(line_);
}

Status TraceWriter::write_raw_lines(std::string_view lines) {
  return emit(lines);
}

Status TraceWriter::close() {
  Status st;
  if (fd_ >= 0) {
    if (zc_ != nullptr) st = emit("", true);
    if (mapped_) {
      for (char* w : windows_) munmap(w, kWindow);
      windows_.clear();
      mapped_ = false;
      if (ftruncate(fd_, static_cast<off_t>(off_)) != 0) {
        st =
            make_error(path_, "", std::nullopt, fmt::format("ftruncate: {}", std::strerror(errno)));
      }
    }
    if (::close(fd_) != 0 && st.ok()) {
      st = make_error(path_, "", std::nullopt, fmt::format("close: {}", std::strerror(errno)));
    }
    fd_ = -1;
  }
  if (zc_ != nullptr) {
    ZSTD_freeCCtx(zc_);
    zc_ = nullptr;
  }
  return st;
}

// ---------------------------------------------------------------------------------------------
// Reader

Result<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path, uint64_t max_line) {
  auto src = LineSource::open(path, max_line);
  if (!src) return src.error();
  return start(std::move(*src));
}

Result<std::unique_ptr<TraceReader>> TraceReader::from_memory(std::string bytes, std::string name,
                                                              uint64_t max_line) {
  return start(LineSource::from_memory(std::move(bytes), std::move(name), max_line));
}

Result<std::unique_ptr<TraceReader>> TraceReader::start(std::unique_ptr<LineSource> src) {
  std::unique_ptr<TraceReader> r(new TraceReader(std::move(src)));
  std::string_view line;
  uint64_t off = 0;
  bool complete = true;
  if (!r->src_->next(line, off, complete)) {
    if (const auto& e = r->src_->stream_error()) return *e;
    return make_error(r->src_->name(), "", 0, "empty file: no trace header");
  }
  r->line_no_ = 1;
  std::string name = r->src_->name();
  if (classify_line(line) != LineKind::kHeader) {
    return make_error(name + " line 1", "", 0,
                      "not a cudatool trace (the first line has no \"cudatool_trace\" version); "
                      "a capture of the simpler format is converted with `cudatool import`");
  }
  Status st = parse_header_line(line, off, r->header_);
  if (!st.ok()) {
    Error e = st.error();
    e.structure = name + " line 1 (header)";
    return e;
  }
  if (r->header_.format_version > kFormatVersion) {
    return make_error(name + " line 1 (header)", "cudatool_trace", 0,
                      fmt::format("trace format version {} is newer than this cudatool reads "
                                  "(version {}); use a newer cudatool",
                                  r->header_.format_version, kFormatVersion));
  }
  return r;
}

void TraceReader::report(uint64_t offset, std::string field, std::string reason) {
  diag_.report(make_error(fmt::format("{} line {}", src_->name(), line_no_), std::move(field),
                          offset, std::move(reason)));
}

bool TraceReader::take(std::string_view piece, uint64_t offset, bool complete, Event& ev) {
  if (piece.empty()) return false;
  if (!complete) {
    // The recorder was stopped while writing this line. If it still parses (only the newline is
    // missing) it is kept.
    Status st = parse_event_line(piece, offset, ev);
    if (st.ok() && classify_line(piece) == LineKind::kEvent) {
      resolve_stack(ev, offset);
      return true;
    }
    truncated_ = true;
    report(offset, "",
           fmt::format("last line is incomplete ({} bytes; the recorder was stopped while "
                       "writing it): ignored",
                       piece.size()));
    return false;
  }
  switch (classify_line(piece)) {
    case LineKind::kTrailer: {
      Trailer t;
      Status st = parse_trailer_line(piece, offset, t);
      if (!st.ok()) {
        report(st.error().offset.value_or(offset), st.error().field, st.error().reason);
      } else {
        trailer_ = std::move(t);
      }
      return false;
    }
    case LineKind::kHeader:
      report(offset, "", "a second trace header (traces concatenated?): ignored");
      return false;
    case LineKind::kModule: {
      Module m;
      Status st = parse_module_line(piece, offset, m);
      if (!st.ok()) {
        report(st.error().offset.value_or(offset), st.error().field, st.error().reason);
      } else {
        modules_.push_back(std::move(m));
      }
      return false;
    }
    case LineKind::kStackRecord: {
      StackRecord rec;
      Status st = parse_stack_record_line(piece, offset, rec);
      if (!st.ok()) {
        report(st.error().offset.value_or(offset), st.error().field, st.error().reason);
      } else if (auto [it, fresh] = stack_records_.try_emplace(rec.id, std::move(rec.stack));
                 !fresh && it->second != rec.stack) {
        report(offset, "id",
               fmt::format("a second stack record {} with other frames: ignored", rec.id));
      }
      return false;
    }
    case LineKind::kFunctionTable:
    case LineKind::kFunctionBlock:
      take_function_line(piece, offset);
      return false;
    case LineKind::kEvent:
      break;
  }
  if (trailer_ && !after_trailer_reported_) {
    after_trailer_reported_ = true;
    report(offset, "", "events after the trailer line (read anyway)");
  }
  Status st = parse_event_line(piece, offset, ev);
  if (!st.ok()) {
    report(st.error().offset.value_or(offset), st.error().field, st.error().reason);
    return false;
  }
  resolve_stack(ev, offset);
  return true;
}

void TraceReader::take_function_line(std::string_view piece, uint64_t offset) {
  if (classify_line(piece) == LineKind::kFunctionBlock) {
    FunctionBlock b;
    Status st = parse_function_block_line(piece, offset, b);
    if (!st.ok()) {
      report(st.error().offset.value_or(offset), st.error().field, st.error().reason);
    } else {
      fn_blocks_.push_back(std::move(b));
    }
    return;
  }
  FunctionTable t;
  Status st = parse_function_table_line(piece, offset, t);
  if (!st.ok()) {
    report(st.error().offset.value_or(offset), st.error().field, st.error().reason);
    return;
  }
  for (const auto& have : fn_tables_) {
    if (have.id == t.id) {
      report(offset, "id", fmt::format("a second function table {}: ignored", t.id));
      return;
    }
  }
  fn_tables_.push_back(std::move(t));
}

void TraceReader::resolve_stack(Event& ev, uint64_t offset) {
  if (ev.stack_ref == 0) return;
  if (!ev.stack.empty()) {
    report(
        offset, "stack_ref",
        fmt::format("both a stack and stack_ref {}: the stack written inline kept", ev.stack_ref));
    return;
  }
  auto it = stack_records_.find(ev.stack_ref);
  if (it == stack_records_.end()) {
    std::string why =
        fmt::format("stack record {} is not in the trace before this event", ev.stack_ref);
    report(offset, "stack_ref", why);
    if (ev.stack_error.empty()) ev.stack_error = std::move(why);
    return;
  }
  ev.stack = it->second;
}

bool TraceReader::next(Event& ev) {
  while (true) {
    // Pieces of a line that holds NUL bytes: space a preload recorder reserved and did not fill
    // (it was killed), or preallocated space at the end of the file.
    while (!rest_.empty()) {
      size_t nul = rest_.find('\0');
      std::string_view piece = rest_.substr(0, nul);
      uint64_t piece_off = rest_offset_;
      bool last_piece = nul == std::string_view::npos;
      if (last_piece) {
        rest_ = {};
      } else {
        size_t end = rest_.find_first_not_of('\0', nul);
        size_t nuls = (end == std::string_view::npos ? rest_.size() : end) - nul;
        report(rest_offset_ + nul, "",
               fmt::format("{} NUL bytes: space reserved by a recorder that stopped before "
                           "filling it",
                           nuls));
        rest_offset_ += nul + nuls;
        rest_ = end == std::string_view::npos ? std::string_view() : rest_.substr(end);
      }
      if (take(piece, piece_off, last_piece ? rest_complete_ : true, ev)) return true;
    }
    // The commonest case of all: a whole event line in a plain file, parsed where it stands (its
    // end found by parsing it, not by a scan before).
    uint64_t off = 0;
    if (!trailer_) {
      std::string_view text = src_->unread(off);
      size_t length = 0;
      if (text.starts_with(kEventLineStart) && parse_first_event_line(text, off, ev, length)) {
        src_->skip(length + 1);
        ++line_no_;
        resolve_stack(ev, off);
        return true;
      }
    }
    std::string_view line;
    bool complete = true;
    if (!src_->next(line, off, complete)) {
      if (!stream_checked_) {
        stream_checked_ = true;
        if (const auto& e = src_->stream_error()) {
          diag_.report(*e);
          truncated_ = true;
        }
      }
      return false;
    }
    ++line_no_;
    // The common case first: a whole event line that parses. A line holding NUL bytes never
    // parses (JSON has no place for them), so the scan for them below is needed only when this
    // fails; it then starts over on the slow path, which reports what is wrong.
    if (complete && !trailer_ && classify_line(line) == LineKind::kEvent &&
        parse_event_line(line, off, ev).ok()) {
      resolve_stack(ev, off);
      return true;
    }
    if (line.find('\0') != std::string_view::npos) {
      rest_ = line;
      rest_offset_ = off;
      rest_complete_ = complete;
      continue;
    }
    if (take(line, off, complete, ev)) return true;
  }
}

}  // namespace cudatool::trace
