// What one breakpoint costs a ptrace recorder: the parent resumes a child that executes int3 N
// times and, at each stop, reads what a function recorder would (the registers, the return
// address on the stack). The measure behind recording functions in-process in ptrace mode too
// (docs/PERFORMANCE.md, "Function recording"): two stops per call (entry and return).
//   cc -O2 -o int3_stop bench/programs/int3_stop.c && ./int3_stop 100000
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}
int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  pid_t pid = fork();
  if (pid == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    raise(SIGSTOP);
    for (long i = 0; i < n; ++i) __asm__ volatile("int3");
    _exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  double t0 = now();
  long stops = 0;
  struct user_regs_struct regs;
  for (;;) {
    ptrace(PTRACE_CONT, pid, 0, 0);
    waitpid(pid, &st, 0);
    if (WIFEXITED(st)) break;
    ++stops;
    ptrace(PTRACE_GETREGS, pid, 0, &regs);  // what a recorder reads at a breakpoint: rip, rsp, rax
    (void)ptrace(PTRACE_PEEKDATA, pid, regs.rsp, 0);  // the return address
  }
  double t = now() - t0;
  printf("%ld stops in %.3f s: %.2f us per stop\n", stops, t, t / stops * 1e6);
  return 0;
}
