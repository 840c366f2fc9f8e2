// The ptrace recorder's environment events (docs/trace-format.md, "Environment events"): the
// calls on paths that the seccomp filter stops when --env is on (seccomp_filter.hpp), and opens
// of paths that are no device. At the entry the path is read and matched against --env; only a
// match waits for the exit, where the answer is read (the stat buffer, the link text) and an
// opened file is read by the recorder through /proc/PID/fd/N (the very file the program opened).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <fmt/format.h>
#include <cstring>

#include "record/env_files.hpp"
#include "record/ptrace_recorder_impl.hpp"
#include "record/seccomp_filter.hpp"
#include "record/tracee_memory.hpp"

namespace cudatool::record {
namespace {

// x86-64 struct stat (the kernel's, asm/stat.h): st_mode at 24, st_rdev at 40, st_size at 48.
// struct statx (linux/stat.h): stx_mode at 0x1c, stx_size at 0x28, stx_rdev_major/minor at 0x80.
constexpr uint64_t kStatRead = 56;
constexpr uint64_t kStatxRead = 0x88;

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// dev_t as glibc's makedev encodes it (sys/sysmacros.h).
uint64_t makedev_of(uint64_t ma, uint64_t mi) {
  return ((ma & 0xfffff000ULL) << 32) | ((ma & 0xfffULL) << 8) | ((mi & 0xffffff00ULL) << 12) |
         (mi & 0xffULL);
}

const char* open_op(int nr) {
  switch (nr) {
    case SYS_open:
      return "open";
    case SYS_creat:
      return "creat";
    case SYS_openat:
      return "openat";
    default:
      return "openat2";
  }
}

// The environment calls ptrace mode stops on: the call's name, its event kind, which argument
// is the path and which the directory fd (-1: AT_FDCWD).
struct EnvCall {
  int nr;
  const char* op;
  Sys sys;
  int path_at, dirfd_at;
};
constexpr EnvCall kEnvCalls[] = {
    {SYS_stat, "stat", Sys::kStat, 0, -1},
    {SYS_lstat, "lstat", Sys::kStat, 0, -1},
    {SYS_newfstatat, "newfstatat", Sys::kStat, 1, 0},
    {SYS_statx, "statx", Sys::kStat, 1, 0},
    {SYS_access, "access", Sys::kStat, 0, -1},
    {SYS_faccessat, "faccessat", Sys::kStat, 1, 0},
    {kSysFaccessat2, "faccessat2", Sys::kStat, 1, 0},
    {SYS_readlink, "readlink", Sys::kReadlink, 0, -1},
    {SYS_readlinkat, "readlinkat", Sys::kReadlink, 1, 0},
    {SYS_mknod, "mknod", Sys::kMknod, 0, -1},
    {SYS_mknodat, "mknodat", Sys::kMknod, 1, 0},
    {SYS_mkdir, "mkdir", Sys::kMknod, 0, -1},
    {SYS_mkdirat, "mkdirat", Sys::kMknod, 1, 0},
    {SYS_symlink, "symlink", Sys::kSymlink, 1, -1},
    {SYS_symlinkat, "symlinkat", Sys::kSymlink, 2, 1},
    {SYS_chmod, "chmod", Sys::kChmod, 0, -1},
    {SYS_fchmodat, "fchmodat", Sys::kChmod, 1, 0},
    {kSysFchmodat2, "fchmodat2", Sys::kChmod, 1, 0},
    {SYS_chown, "chown", Sys::kChmod, 0, -1},
    {SYS_lchown, "lchown", Sys::kChmod, 0, -1},
    {SYS_fchownat, "fchownat", Sys::kChmod, 1, 0},
    {SYS_unlink, "unlink", Sys::kUnlink, 0, -1},
    {SYS_unlinkat, "unlinkat", Sys::kUnlink, 1, 0},
    {SYS_rmdir, "rmdir", Sys::kUnlink, 0, -1},
};

const EnvCall* env_call(int nr) {
  for (const EnvCall& c : kEnvCalls) {
    if (c.nr == nr) return &c;
  }
  return nullptr;
}

// The call's other arguments into the event: mode, device, flags, symlink target, owner, and
// the buffer (`env_buf`) whose content is read at the call's exit (stat, readlink).
void read_env_args(int tid, int nr, const uint64_t* args, Event& ev, uint64_t& env_buf) {
  switch (nr) {
    case SYS_stat:
    case SYS_lstat:
      env_buf = args[1];
      break;
    case SYS_newfstatat:
      env_buf = args[2];
      ev.open_flags = static_cast<uint32_t>(args[3]);
      break;
    case SYS_statx:
      env_buf = args[4];
      ev.open_flags = static_cast<uint32_t>(args[2]);
      break;
    case SYS_access:
      ev.mode = static_cast<uint32_t>(args[1]);
      break;
    case SYS_faccessat:
      ev.mode = static_cast<uint32_t>(args[2]);
      break;
    case kSysFaccessat2:
      ev.mode = static_cast<uint32_t>(args[2]);
      ev.open_flags = static_cast<uint32_t>(args[3]);
      break;
    case SYS_readlink:
      env_buf = args[1];
      break;
    case SYS_readlinkat:
      env_buf = args[2];
      break;
    case SYS_mknod:
      ev.mode = static_cast<uint32_t>(args[1]);
      ev.rdev = static_cast<uint32_t>(args[2]);  // the kernel takes an unsigned int dev
      break;
    case SYS_mknodat:
      ev.mode = static_cast<uint32_t>(args[2]);
      ev.rdev = static_cast<uint32_t>(args[3]);
      break;
    case SYS_mkdir:
      ev.mode = S_IFDIR | (args[1] & 07777);
      break;
    case SYS_mkdirat:
      ev.mode = S_IFDIR | (args[2] & 07777);
      break;
    case SYS_symlink:
    case SYS_symlinkat:
      if (auto target = read_tracee_string(tid, args[0])) ev.target = *target;
      break;
    case SYS_chmod:
      ev.mode = static_cast<uint32_t>(args[1]);
      break;
    case SYS_fchmodat:
      ev.mode = static_cast<uint32_t>(args[2]);
      break;
    case kSysFchmodat2:
      ev.mode = static_cast<uint32_t>(args[2]);
      ev.open_flags = static_cast<uint32_t>(args[3]);
      break;
    case SYS_chown:
    case SYS_lchown:
    case SYS_fchownat: {
      int at = nr == SYS_fchownat ? 2 : 1;
      // uid/gid members (docs/trace-format.md: chown is a chmod event without `mode`).
      ev.extra.push_back({"uid", std::to_string(static_cast<int32_t>(args[at]))});
      ev.extra.push_back({"gid", std::to_string(static_cast<int32_t>(args[at + 1]))});
      if (nr == SYS_fchownat) ev.open_flags = static_cast<uint32_t>(args[4]);
      break;
    }
    case SYS_unlinkat:
      ev.open_flags = static_cast<uint32_t>(args[2]);
      break;
    default:
      break;
  }
}

}  // namespace

void clear_env_members(Event& ev) {
  ev.op.clear();
  ev.target.clear();
  ev.mode = ev.rdev = ev.st_size = 0;
  ev.has_stat = false;
  ev.content.reset();
  ev.entries.clear();
  ev.has_entries = false;
  ev.unrecorded.clear();
}

bool PtraceRecorder::start_env(Thread& t, int nr, Sys sys, const char* op, std::string path) {
  reset_event(t, sys);
  PendingCall& c = t.pending;
  Event& ev = c.ev;
  // Stacks are the device calls' (docs/trace-format.md): the last device call's frames must not
  // stay behind in this reused event.
  ev.stack.clear();
  ev.stack_error.clear();
  ev.op = op;
  ev.path = path;
  c.env_abs = std::move(path);
  c.env_nr = nr;
  c.env_buf = 0;
  t.pending_valid = true;
  return true;
}

bool PtraceRecorder::env_open_entry(Thread& t, int nr, const uint64_t* args,
                                    const std::string& path) {
  if (env_.spec().empty() || !env_.matches(path)) return false;
  start_env(t, nr, Sys::kFile, open_op(nr), path);
  Event& ev = t.pending.ev;
  ev.open_flags = open_flags(t.tid, nr, args);
  return true;
}

bool PtraceRecorder::on_env_entry(Thread& t, int nr, const uint64_t* args) {
  if (env_.spec().empty()) return false;
  const EnvCall* call = env_call(nr);
  if (call == nullptr) return false;
  auto raw = read_tracee_string(t.tid, args[call->path_at]);
  if (!raw || raw->empty()) return false;  // unreadable (the call fails with EFAULT), or ""
  int dirfd =
      call->dirfd_at >= 0 ? static_cast<int>(static_cast<int32_t>(args[call->dirfd_at])) : AT_FDCWD;
  std::string path = resolve_path(t, dirfd, *raw);
  if (!env_.matches(path)) return false;
  start_env(t, nr, call->sys, call->op, path);
  read_env_args(t.tid, nr, args, t.pending.ev, t.pending.env_buf);
  return true;
}

void PtraceRecorder::on_env_exit(Thread& t, int64_t rval, bool is_error) {
  PendingCall& c = t.pending;
  Event& ev = c.ev;
  int nr = c.env_nr;
  c.env_nr = -1;
  if (is_error) return;
  switch (nr) {
    case SYS_stat:
    case SYS_lstat:
    case SYS_newfstatat: {
      uint8_t st[kStatRead];
      if (read_tracee(t.tid, c.env_buf, st, sizeof st).got == sizeof st) {
        ev.mode = le(st + 24, 4);
        ev.rdev = le(st + 40, 8);
        ev.st_size = le(st + 48, 8);
        ev.has_stat = true;
      }
      break;
    }
    case SYS_statx: {
      uint8_t sx[kStatxRead];
      if (read_tracee(t.tid, c.env_buf, sx, sizeof sx).got == sizeof sx) {
        ev.mode = le(sx + 0x1c, 2);
        ev.st_size = le(sx + 0x28, 8);
        ev.rdev = makedev_of(le(sx + 0x80, 4), le(sx + 0x84, 4));
        ev.has_stat = true;
      }
      break;
    }
    case SYS_readlink:
    case SYS_readlinkat: {
      uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(rval), 4096);
      std::string s(n, '\0');
      ReadResult r = read_tracee(t.tid, c.env_buf, reinterpret_cast<uint8_t*>(s.data()), n);
      s.resize(r.got);
      ev.target = std::move(s);
      break;
    }
    case SYS_open:
    case SYS_creat:
    case SYS_openat:
    default:
      if (ev.sys != Sys::kFile) break;
      // The file the program opened, through its fd; the path when /proc is not there.
      std::string link = fmt::format("/proc/{}/fd/{}", t.proc->tgid, rval);
      struct stat st {};
      read_env_object(stat(link.c_str(), &st) == 0 ? link : c.env_abs,
                      env_open_reads(ev.open_flags), ev);
      break;
  }
}

}  // namespace cudatool::record
