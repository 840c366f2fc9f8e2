#include "record/seccomp_filter.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace cudatool::record {
namespace {

constexpr uint32_t kArchOffset = offsetof(seccomp_data, arch);
constexpr uint32_t kNrOffset = offsetof(seccomp_data, nr);
// Low 32 bits of argument i (little-endian).
constexpr uint32_t arg_lo(int i) {
  return static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * i);
}

sock_filter stmt(uint16_t code, uint32_t k) {
  return BPF_STMT(code, k);
}
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

}  // namespace

std::vector<sock_filter> recorder_filter(bool env_paths) {
  const uint32_t kTrace = SECCOMP_RET_TRACE;
  const uint32_t kAllow = SECCOMP_RET_ALLOW;
  // Calls that always stop; mmap and fcntl (and newfstatat, statx) are checked further below.
  std::vector<uint32_t> always = {SYS_ioctl,  SYS_open,        SYS_openat,  SYS_openat2, SYS_creat,
                                  SYS_close,  SYS_close_range, SYS_dup,     SYS_dup2,    SYS_dup3,
                                  SYS_munmap, SYS_execve,      SYS_execveat};
  if (env_paths) {
    // Calls on paths (environment events): the path is checked by the recorder, which a filter
    // cannot do (it sees the pointer, not the string).
    always.insert(
        always.end(),
        {SYS_stat,       SYS_lstat,  SYS_access,   SYS_faccessat, kSysFaccessat2, SYS_readlink,
         SYS_readlinkat, SYS_mknod,  SYS_mknodat,  SYS_mkdir,     SYS_mkdirat,    SYS_symlink,
         SYS_symlinkat,  SYS_chmod,  SYS_fchmodat, kSysFchmodat2, SYS_chown,      SYS_lchown,
         SYS_fchownat,   SYS_unlink, SYS_unlinkat, SYS_rmdir});
  }
  std::vector<sock_filter> f;
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArchOffset));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
  f.push_back(stmt(BPF_RET | BPF_K, kAllow));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kNrOffset));
  // x32 system calls (nr | 0x40000000) are not recorded.
  f.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, kAllow));
  // The tail of the program, laid out after the list of equality tests (BPF jumps only forward):
  //   [trace_at]     ret TRACE
  //   [mmap_at]      A = flags; if (A & MAP_ANONYMOUS) ret ALLOW; ret TRACE
  //   [fcntl_at]     A = cmd; if (A == F_DUPFD || A == F_DUPFD_CLOEXEC) ret TRACE; ret ALLOW
  //   [fstatat_at]   A = flags (arg 3); if (A & AT_EMPTY_PATH) ret ALLOW; ret TRACE   (env only)
  //   [statx_at]     A = flags (arg 2); the same                                    (env only)
  // newfstatat and statx with AT_EMPTY_PATH are fstat of an fd (glibc's fstat is one): they do not
  // name a path, and stopping on them would cost every fstat of the program.
  size_t count = always.size();
  size_t first_test = f.size();
  size_t extra_tests = env_paths ? 4 : 2;
  size_t trace_at = first_test + count + extra_tests + 1;  // the tests, ret ALLOW
  size_t mmap_at = trace_at + 1;
  size_t fcntl_at = mmap_at + 4;
  size_t fstatat_at = fcntl_at + 5;
  size_t statx_at = fstatat_at + 4;
  auto to = [&](size_t target) { return static_cast<uint8_t>(target - f.size() - 1); };
  for (size_t i = 0; i < count; ++i) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, always[i], to(trace_at), 0));
  }
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, to(mmap_at), 0));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_fcntl, to(fcntl_at), 0));
  if (env_paths) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_newfstatat, to(fstatat_at), 0));
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_statx, to(statx_at), 0));
  }
  f.push_back(stmt(BPF_RET | BPF_K, kAllow));
  f.push_back(stmt(BPF_RET | BPF_K, kTrace));              // trace_at
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg_lo(3)));  // mmap_at
  f.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, kAllow));
  f.push_back(stmt(BPF_RET | BPF_K, kTrace));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg_lo(1)));  // fcntl_at
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, F_DUPFD, 2, 0));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, F_DUPFD_CLOEXEC, 1, 0));
  f.push_back(stmt(BPF_RET | BPF_K, kAllow));
  f.push_back(stmt(BPF_RET | BPF_K, kTrace));
  if (env_paths) {
    for (int arg : {3, 2}) {  // fstatat_at, statx_at
      f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg_lo(arg)));
      f.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, AT_EMPTY_PATH, 0, 1));
      f.push_back(stmt(BPF_RET | BPF_K, kAllow));
      f.push_back(stmt(BPF_RET | BPF_K, kTrace));
    }
  }
  return f;
}

int install_filter(const std::vector<sock_filter>& filter) {
  sock_fprog prog{static_cast<unsigned short>(filter.size()),
                  const_cast<sock_filter*>(filter.data())};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0) return 0;
  if (errno != EACCES) return errno;
  // Unprivileged: seccomp requires no_new_privs (set-user-ID programs run by the traced program
  // then run without their privileges).
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0) return 0;
  return errno;
}

}  // namespace cudatool::record
