#include "record/ptrace_stacks.hpp"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cstdio>

namespace cudatool::record {
namespace {

// No separate debug files: the unwind tables (.eh_frame) are in the mapped files themselves, and
// looking for debug files (or asking a debuginfod server) would cost more than the stack.
int no_debuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word,
                 char**) {
  return -1;
}

char* no_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {dwfl_linux_proc_find_elf, no_debuginfo, nullptr,
                                   &no_debuginfo_path};

bool read_all(const std::string& path, std::string& out) {
  out.clear();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return n == 0;
}

struct Walk {
  trace::Event* ev = nullptr;
  size_t frames = 0;
  std::string error;
};

int on_frame(Dwfl_Frame* state, void* arg) {
  auto* w = static_cast<Walk*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(state, &pc, &activation)) {
    w->error = fmt::format("libdw: {}", dwfl_errmsg(-1));
    return DWARF_CB_ABORT;
  }
  // After the first, only the frame a signal interrupted is an activation: the one before it was
  // the signal trampoline. The stack of a handler stops there (as in preload mode).
  if (w->frames > 0 && activation) {
    w->error = "signal frame";
    return DWARF_CB_ABORT;
  }
  if (w->frames == StackRecorder::kMaxFrames) {
    w->error = fmt::format("frame limit {}", StackRecorder::kMaxFrames);
    return DWARF_CB_ABORT;
  }
  if (pc == 0) return DWARF_CB_ABORT;  // a zero return address ends the stack
  w->ev->stack.push_back(pc);
  ++w->frames;
  return DWARF_CB_OK;
}

bool same_module(const trace::Module& a, const trace::Module& b) {
  return a.lo == b.lo && a.hi == b.hi && a.base == b.base && a.path == b.path &&
         a.build_id == b.build_id;
}

}  // namespace

ProcessStacks::~ProcessStacks() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
}

void ProcessStacks::reset() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
  dwfl_ = nullptr;
  attached_ = false;
  dirty_ = true;
  written_.clear();
}

void StackRecorder::refresh(ProcessStacks& p, int pid, std::vector<trace::Module>& records) {
  p.dirty_ = false;
  if (!read_all(fmt::format("/proc/{}/maps", pid), maps_)) return;
  for (trace::Module& m : modules_from_maps(parse_maps(maps_), pid, &files_)) {
    bool known = false;
    for (const trace::Module& w : p.written_) known = known || same_module(w, m);
    if (known) continue;
    p.written_.push_back(m);
    records.push_back(std::move(m));
  }
  // The same text tells libdwfl where each file is mapped (one read of the maps for both).
  if (p.dwfl_ == nullptr) p.dwfl_ = dwfl_begin(&kCallbacks);
  if (p.dwfl_ == nullptr) return;
  FILE* f = fmemopen(maps_.data(), maps_.size(), "r");
  if (f == nullptr) return;
  dwfl_report_begin(p.dwfl_);
  dwfl_linux_proc_maps_report(p.dwfl_, f);
  dwfl_report_end(p.dwfl_, nullptr, nullptr);
  fclose(f);
  if (!p.attached_) p.attached_ = dwfl_linux_proc_attach(p.dwfl_, pid, true) == 0;
}

void StackRecorder::capture(ProcessStacks& p, int pid, int tid, trace::Event& ev,
                            std::vector<trace::Module>& records) {
  ev.stack.clear();
  ev.stack_error.clear();
  if (p.dirty_) refresh(p, pid, records);
  if (p.dwfl_ == nullptr || !p.attached_) {
    ev.stack_error = fmt::format("libdw: cannot attach to process {}: {}", pid, dwfl_errmsg(-1));
    return;
  }
  Walk w;
  w.ev = &ev;
  int rc = dwfl_getthread_frames(p.dwfl_, tid, on_frame, &w);
  if (!w.error.empty()) {
    ev.stack_error = std::move(w.error);
  } else if (rc == -1) {
    uint64_t last = ev.stack.empty() ? 0 : ev.stack.back();
    ev.stack_error = fmt::format("libdw: {} after 0x{:x}", dwfl_errmsg(-1), last);
  }
}

}  // namespace cudatool::record
