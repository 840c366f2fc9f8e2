// The seccomp filter the ptrace recorder installs in the traced program: only the system calls
// that can touch a device stop (SECCOMP_RET_TRACE); everything else runs at full speed.
#pragma once

#include <linux/filter.h>

#include <vector>

namespace cudatool::record {

// Not in every libc's <sys/syscall.h> yet (Linux 5.8 and 6.6); the seccomp filter and the ptrace
// recorder's path calls both name them.
inline constexpr int kSysFaccessat2 = 439;
inline constexpr int kSysFchmodat2 = 452;

// ioctl, open, openat, openat2, creat, close, close_range, dup, dup2, dup3, fcntl(F_DUPFD,
// F_DUPFD_CLOEXEC), mmap of a file (not MAP_ANONYMOUS), munmap, execve, execveat. x86-64 only;
// other architectures' calls (int 0x80 from 32-bit code) are allowed through unrecorded.
// `env_paths` (--env): also the calls on paths — stat, lstat, newfstatat and statx (not with
// AT_EMPTY_PATH: that is an fstat), access, faccessat, faccessat2, readlink, readlinkat, mknod,
// mknodat, mkdir, mkdirat, symlink, symlinkat, chmod, fchmodat, fchmodat2, chown, lchown,
// fchownat, unlink, unlinkat, rmdir.
std::vector<sock_filter> recorder_filter(bool env_paths = false);

// Installs `filter` in the calling process (after PR_SET_NO_NEW_PRIVS when the caller lacks
// CAP_SYS_ADMIN). For the child between fork and exec: uses only async-signal-safe calls.
// Returns 0 or an errno.
int install_filter(const std::vector<sock_filter>& filter);

}  // namespace cudatool::record
