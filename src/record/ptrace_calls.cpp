// The ptrace recorder's handlers: what to read at the entry of each recorded system call, and
// how its exit completes the event and the fd / mapping tables.
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>

#include "record/ptrace_recorder_impl.hpp"
#include "record/tracee_memory.hpp"

namespace cudatool::record {

int64_t PtraceRecorder::device_fd(const Thread& t, int fd) const {
  const auto& fds = t.proc->fds->fds;
  auto it = fds.find(fd);
  return it == fds.end() ? -1 : static_cast<int64_t>(it->second);
}

uint32_t PtraceRecorder::intern_device(const std::string& path) {
  uint32_t id = paths_.intern(path);
  if (path_kind_.size() <= id) path_kind_.resize(id + 1, NVTR_DEV_OTHER);
  path_kind_[id] = nvtr_dev_kind_of_path(path.c_str());
  return id;
}

std::string PtraceRecorder::resolve_path(Thread& t, int dirfd, const std::string& path) {
  if (!path.empty() && path[0] == '/') return absolute_path("/", path);
  std::string base;
  if (dirfd == AT_FDCWD) {
    base = read_link(fmt::format("/proc/{}/cwd", t.tid));
  } else if (int64_t id = device_fd(t, dirfd); id >= 0) {
    base = paths_.path(static_cast<uint32_t>(id));
  } else {
    base = read_link(fmt::format("/proc/{}/fd/{}", t.proc->tgid, dirfd));
  }
  if (base.empty()) return path;  // unknown base: keep the name as given
  return absolute_path(base, path);
}

Process::~Process() {
  if (mem_fd >= 0) close(mem_fd);
}

bool PtraceRecorder::in_stack(Thread& t, uint64_t addr, uint64_t size) {
  if (t.sp == 0 || addr < t.sp || size > UINT64_MAX - addr) return false;
  if (t.stack_hi == 0 || t.sp < t.stack_lo || t.sp >= t.stack_hi) {
    if (t.stack_probes >= 8) return false;  // a thread that keeps changing stacks
    ++t.stack_probes;
    t.stack_lo = t.stack_hi = 0;
    std::ifstream maps(fmt::format("/proc/{}/maps", t.tid));
    std::string line;
    while (std::getline(maps, line)) {
      uint64_t lo = 0, hi = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && t.sp >= lo && t.sp < hi) {
        t.stack_lo = lo;
        t.stack_hi = hi;
        break;
      }
    }
    if (t.stack_hi == 0) return false;
  }
  return addr + size <= t.stack_hi;
}

bool PtraceRecorder::stack_fill(Thread& t, const nvtr_buf_plan* plans, Buffer* const* bufs,
                                size_t n, bool after) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const nvtr_buf_plan& p = plans[i];
    if (p.size == 0 || p.size > opt_.max_buffer) continue;  // nothing to read
    if (p.bounded != 0 || !in_stack(t, p.addr, p.size)) return false;
    lo = std::min(lo, p.addr);
    hi = std::max(hi, p.addr + p.size);
  }
  if (hi == 0) return false;
  if (hi - lo > (64u << 10)) return false;  // far apart: two reads are better than one big one
  Process& proc = *t.proc;
  if (proc.mem_fd < 0) {
    proc.mem_fd = open(fmt::format("/proc/{}/mem", proc.tgid).c_str(), O_RDONLY | O_CLOEXEC);
    if (proc.mem_fd < 0) return false;
  }
  span_.resize(hi - lo);
  ssize_t r = pread(proc.mem_fd, span_.data(), span_.size(), static_cast<off_t>(lo));
  if (r < 0 || static_cast<uint64_t>(r) != span_.size()) return false;
  for (size_t i = 0; i < n; ++i) {
    const nvtr_buf_plan& p = plans[i];
    Buffer& b = *bufs[i];
    if (p.size == 0 || p.size > opt_.max_buffer) {
      auto none = [](uint64_t, uint8_t*, uint64_t) { return ReadResult{}; };
      fill_buffer(none, p, opt_.max_buffer, after, b);  // size 0 or over the cap: no read
      continue;
    }
    set_identity(p, b);
    (after ? b.after_error : b.before_error).clear();
    auto from = span_.begin() + static_cast<ptrdiff_t>(p.addr - lo);
    (after ? b.after : b.before).assign(from, from + static_cast<ptrdiff_t>(p.size));
  }
  return true;
}

void PtraceRecorder::fill(Thread& t, const nvtr_buf_plan* plans, Buffer* const* bufs, size_t n,
                          bool after) {
  if (n == 0) return;
  if (!stack_fill(t, plans, bufs, n, after)) {
    fill_buffers(t.tid, plans, bufs, n, opt_.max_buffer, after);
  }
}

void PtraceRecorder::read_ioctl_buffers(Thread& t, PendingCall& c, bool after) {
  Event& ev = c.ev;
  if (!after) {
    int kind = path_kind_[static_cast<size_t>(c.path_id)];
    c.arg_plan = nvtr_plan_arg(kind, static_cast<uint32_t>(ev.request), c.args[2], uvm_);
    if (!ev.arg) ev.arg.emplace();  // reused: its vectors keep their capacity
    Buffer* arg = &*ev.arg;
    // The argument, and (one read for both) where the last nested buffer of this thread was.
    Buffer guess;
    bool guessed = false;
    if (t.guess_size > 0 && c.arg_plan.size > 0 && kind == NVTR_DEV_RM) {
      nvtr_buf_plan two[2] = {c.arg_plan, nvtr_plan("params", t.guess_addr, t.guess_size, 0)};
      Buffer* both[2] = {arg, &guess};
      fill(t, two, both, 2, false);
      guessed = guess.before_error.empty() && guess.before.size() == t.guess_size;
    } else {
      fill(t, &c.arg_plan, &arg, 1, false);
    }
    nvtr_buf_plan plans[2];
    int n = nvtr_plan_nested(kind, static_cast<uint32_t>(ev.request), ev.arg->before.data(),
                             ev.arg->before.size(), rm_, plans);
    c.nested.assign(plans, plans + n);
    ev.nested.resize(static_cast<size_t>(n));
    Buffer* bufs[4] = {};
    int first = 0;
    if (n > 0 && guessed && plans[0].addr >= t.guess_addr && plans[0].size <= t.guess_size &&
        plans[0].addr - t.guess_addr <= t.guess_size - plans[0].size) {
      // Read already: the bytes are the same as a read of their own (the thread is stopped).
      Buffer& b = ev.nested[0];
      set_identity(plans[0], b);
      b.before_error.clear();
      auto from = guess.before.begin() + static_cast<ptrdiff_t>(plans[0].addr - t.guess_addr);
      b.before.assign(from, from + static_cast<ptrdiff_t>(plans[0].size));
      first = 1;
    }
    for (int i = first; i < n; ++i) bufs[i - first] = &ev.nested[static_cast<size_t>(i)];
    fill(t, plans + first, bufs, static_cast<size_t>(n - first), false);
    if (n > 0 && plans[0].size > 0 && plans[0].size <= 4096 && plans[0].addr != 0) {
      t.guess_addr = plans[0].addr;
      t.guess_size = plans[0].size;
    }
    // An XFER's target holds the parameters of another escape, with its own nested buffers.
    if (n == 1 && std::string_view(plans[0].role) == "xfer") {
      const Buffer& x = ev.nested[0];
      nvtr_buf_plan inner[2];
      int m =
          nvtr_plan_xfer_inner(ev.arg->before.data(), x.before.data(), x.before.size(), rm_, inner);
      ev.nested.resize(static_cast<size_t>(1 + m));
      for (int i = 0; i < m; ++i) {
        c.nested.push_back(inner[i]);
        bufs[i] = &ev.nested[static_cast<size_t>(1 + i)];
      }
      fill(t, inner, bufs, static_cast<size_t>(m), false);
    }
    read_pointees(t, c);
    return;
  }
  // After the call: the argument and every nested buffer in one read when all are readable.
  constexpr size_t kMax = 4 + NVTR_MAX_POINTEES;
  nvtr_buf_plan plans[kMax];
  Buffer* bufs[kMax] = {};
  size_t n = 0;
  if (ev.arg) {
    plans[n] = c.arg_plan;
    bufs[n++] = &*ev.arg;
  }
  for (size_t i = 0; i < c.nested.size() && i < ev.nested.size() && n < kMax; ++i) {
    plans[n] = c.nested[i];
    bufs[n++] = &ev.nested[i];
  }
  fill(t, plans, bufs, n, true);
}

// The second level: the buffers behind pointer members of the parameters RM follows
// (nv_ioctl_abi.h nvtr_plan_pointees), planned from the parameters' bytes before the call.
void PtraceRecorder::read_pointees(Thread& t, PendingCall& c) {
  Event& ev = c.ev;
  nvtr_buf_plan plans[NVTR_MAX_POINTEES];
  int n = 0;
  size_t first_level = std::min(c.nested.size(), ev.nested.size());
  for (size_t i = 0; i < first_level && n < NVTR_MAX_POINTEES; ++i) {
    const std::vector<uint8_t>& bytes = ev.nested[i].before;
    int dropped = 0;
    n += nvtr_plan_pointees(rm_, &c.nested[i], bytes.data(), bytes.size(), plans + n,
                            NVTR_MAX_POINTEES - n, &dropped);
    if (dropped > 0) {
      ev.unrecorded.push_back(
          {std::string(c.nested[i].role),
           fmt::format("{} more buffers behind pointer members: at most {} per call", dropped,
                       NVTR_MAX_POINTEES)});
    }
  }
  if (n == 0) return;
  ev.nested.resize(first_level + static_cast<size_t>(n));
  Buffer* bufs[NVTR_MAX_POINTEES] = {};
  for (int i = 0; i < n; ++i) {
    c.nested.push_back(plans[i]);
    bufs[i] = &ev.nested[first_level + static_cast<size_t>(i)];
  }
  fill(t, plans, bufs, static_cast<size_t>(n), false);
  for (int i = 0; i < n; ++i) {
    std::string why = pointee_unrecorded(plans[i], opt_.max_buffer);
    if (!why.empty()) ev.unrecorded.push_back({bufs[i]->role, std::move(why)});
  }
}

uint64_t open_flags(int tid, int nr, const uint64_t* args) {
  if (nr == SYS_open) return args[1];
  if (nr == SYS_openat) return args[2];
  if (nr == SYS_creat) return O_CREAT | O_WRONLY | O_TRUNC;
  uint64_t flags = 0;
  if (read_tracee(tid, args[2], reinterpret_cast<uint8_t*>(&flags), 8).got != 8) return 0;
  return flags;
}

void PtraceRecorder::reset_event(Thread& t, Sys sys) {
  Event& ev = t.pending.ev;
  ev.seq = 0;
  ev.t_ns = t.pending.t_entry - t0_;
  ev.dur_ns = 0;
  ev.has_duration = false;
  ev.pid = t.proc->tgid;
  ev.tid = t.tid;
  ev.sys = sys;
  ev.sys_raw.assign(sys_name(sys));
  ev.fd = -1;
  ev.path.clear();
  ev.request = 0;
  ev.ret = 0;
  ev.err = 0;
  ev.open_flags = ev.addr = ev.len = ev.prot = ev.map_flags = ev.offset = 0;
  ev.child_pid = 0;
  clear_env_members(ev);
  if (sys != Sys::kIoctl) {
    ev.arg.reset();
    ev.nested.clear();  // an ioctl resizes them (each side is rewritten when read)
  }
  ev.unrecorded.clear();
  ev.extra.clear();
}

bool PtraceRecorder::start_device(Thread& t, Sys sys, int64_t path_id) {
  reset_event(t, sys);
  PendingCall& c = t.pending;
  c.path_id = path_id;
  if (path_id >= 0) c.ev.path.assign(paths_.path(static_cast<uint32_t>(path_id)));
  t.pending_valid = true;
  capture_stack(t, c.ev);
  return true;
}

bool PtraceRecorder::open_entry(Thread& t, int nr, const uint64_t* args) {
  bool at = nr == SYS_openat || nr == SYS_openat2;
  int dirfd = at ? static_cast<int>(static_cast<int32_t>(args[0])) : AT_FDCWD;
  auto raw = read_tracee_string(t.tid, at ? args[1] : args[0]);
  if (!raw) return false;
  std::string path = resolve_path(t, dirfd, *raw);
  if (!devices_.matches(path)) return env_open_entry(t, nr, args, path);
  start_device(t, Sys::kOpen, intern_device(path));
  t.pending.ev.open_flags = open_flags(t.tid, nr, args);
  return true;
}

bool PtraceRecorder::on_entry(Thread& t, int nr, const uint64_t* args) {
  PendingCall& c = t.pending;
  c.nr = nr;
  for (int i = 0; i < 6; ++i) c.args[static_cast<size_t>(i)] = args[i];
  c.t_entry = now_ns();
  c.path_id = -1;
  c.env_nr = -1;
  c.nested.clear();
  auto fd_arg = [&](int i) { return static_cast<int>(static_cast<int32_t>(args[i])); };
  switch (nr) {
    case SYS_ioctl: {
      int64_t id = device_fd(t, fd_arg(0));
      if (id < 0) return false;
      start_device(t, Sys::kIoctl, id);
      c.ev.fd = fd_arg(0);
      c.ev.request = static_cast<uint32_t>(args[1]);  // the kernel takes an unsigned int
      read_ioctl_buffers(t, c, false);
      return true;
    }
    case SYS_open:
    case SYS_creat:
    case SYS_openat:
    case SYS_openat2:
      return open_entry(t, nr, args);
    case SYS_close: {
      int64_t id = device_fd(t, fd_arg(0));
      if (id < 0) return false;
      start_device(t, Sys::kClose, id);
      c.ev.fd = fd_arg(0);
      return true;
    }
    case SYS_close_range: {
      auto lo = static_cast<uint32_t>(args[0]), hi = static_cast<uint32_t>(args[1]);
      for (const auto& [fd, id] : t.proc->fds->fds) {
        if (static_cast<uint32_t>(fd) >= lo && static_cast<uint32_t>(fd) <= hi) {
          start_device(t, Sys::kClose, -1);
          return true;
        }
      }
      return false;
    }
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
    case SYS_fcntl: {
      int64_t id = device_fd(t, fd_arg(0));
      bool replaces = (nr == SYS_dup2 || nr == SYS_dup3) && device_fd(t, fd_arg(1)) >= 0;
      if (id < 0 && !replaces) return false;
      start_device(t, Sys::kDup, id);
      c.ev.fd = fd_arg(0);
      return true;
    }
    case SYS_mmap: {
      // Code mapped from a file (a dlopen, the loader): the module map changes (v2, stacks).
      if ((args[2] & PROT_EXEC) != 0 && (args[3] & MAP_ANONYMOUS) == 0) t.proc->stacks.mark_dirty();
      int64_t id = device_fd(t, fd_arg(4));
      if (id < 0) return false;
      start_device(t, Sys::kMmap, id);
      c.ev.fd = fd_arg(4);
      c.ev.addr = args[0];
      c.ev.len = args[1];
      c.ev.prot = args[2];
      c.ev.map_flags = args[3];
      c.ev.offset = args[5];
      return true;
    }
    case SYS_munmap: {
      if (!overlaps(t.proc->maps, args[0], args[1])) return false;
      start_device(t, Sys::kMunmap, -1);
      c.ev.addr = args[0];
      c.ev.len = args[1];
      return true;
    }
    case SYS_execve:
    case SYS_execveat: {
      uint64_t name = nr == SYS_execve ? args[0] : args[1];
      auto raw = read_tracee_string(t.tid, name);
      t.exec_path = raw ? *raw : std::string();
      if (nr == SYS_execveat && raw) t.exec_path = resolve_path(t, fd_arg(0), *raw);
      t.exec_t = c.t_entry;
      return false;  // success shows as PTRACE_EVENT_EXEC
    }
    default:
      return on_env_entry(t, nr, args);
  }
}

void PtraceRecorder::on_exit(Thread& t, int64_t rval, bool is_error) {
  t.pending_valid = false;
  PendingCall& c = t.pending;
  Event& ev = c.ev;
  uint64_t end = now_ns();
  ev.has_duration = true;
  ev.dur_ns = end - c.t_entry;
  if (is_error) {
    ev.ret = -1;
    ev.err = static_cast<int32_t>(-rval);
  } else {
    ev.ret = rval;
  }
  if (c.env_nr >= 0) {
    on_env_exit(t, rval, is_error);
    emit(ev);
    return;
  }
  auto& fds = t.proc->fds->fds;
  switch (c.nr) {
    case SYS_ioctl:
      read_ioctl_buffers(t, c, true);
      break;
    case SYS_open:
    case SYS_creat:
    case SYS_openat:
    case SYS_openat2:
      if (!is_error) fds[static_cast<int>(rval)] = static_cast<uint32_t>(c.path_id);
      break;
    case SYS_close:
      // Linux releases the fd even when close reports an error other than EBADF.
      if (!is_error || ev.err != EBADF) fds.erase(ev.fd);
      break;
    case SYS_close_range: {
      if (is_error || (c.args[2] & CLOSE_RANGE_CLOEXEC) != 0) return;  // cloexec: seen at exec
      auto lo = static_cast<uint32_t>(c.args[0]), hi = static_cast<uint32_t>(c.args[1]);
      std::vector<std::pair<int, uint32_t>> closed;
      for (const auto& [fd, id] : fds) {
        if (static_cast<uint32_t>(fd) >= lo && static_cast<uint32_t>(fd) <= hi) {
          closed.emplace_back(fd, id);
        }
      }
      std::sort(closed.begin(), closed.end());
      for (const auto& [fd, id] : closed) {
        fds.erase(fd);
        Event one = ev;
        one.fd = fd;
        one.path = paths_.path(id);
        one.ret = 0;
        emit(one);
      }
      return;
    }
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
    case SYS_fcntl:
      if (is_error) break;
      if (c.path_id < 0) {
        // dup2/dup3 of another file over a device fd: the device fd is gone, nothing to record.
        fds.erase(static_cast<int>(rval));
        return;
      }
      fds[static_cast<int>(rval)] = static_cast<uint32_t>(c.path_id);
      break;
    case SYS_mmap:
      if (!is_error) {
        t.proc->maps[static_cast<uint64_t>(rval)] =
            DeviceMapping{ev.len, static_cast<uint32_t>(c.path_id)};
      }
      break;
    case SYS_munmap:
      if (!is_error) {
        int64_t id = unmap_range(t.proc->maps, ev.addr, ev.len);
        if (id >= 0) ev.path = paths_.path(static_cast<uint32_t>(id));
      }
      break;
    default:
      break;
  }
  emit(ev);
}

}  // namespace cudatool::record
