/*
 * Benchmark load for call stacks (bench/stack_overhead.py): N NVIDIA-shaped ioctls (an RM
 * control, as bench/programs/trace_loop.c) made DEPTH frames below main, each frame a function
 * with unwind information (as the frames of libcuda are), so that a recorder that unwinds walks
 * DEPTH + 5 frames per ioctl (DEPTH of them, the loop — down(0) tail-calls it —, main, libc's
 * start-up and _start; bench/stack_overhead.py counts them in a recording).
 *
 *   stack_loop DEVICE N DEPTH
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

typedef struct {
  uint32_t hClient, hObject, cmd, flags;
  uint64_t params __attribute__((aligned(8)));
  uint32_t paramsSize, status;
} NVOS54_PARAMETERS; /* src/common/sdk/nvidia/inc/nvos.h */

static int fd;
static long n;

static __attribute__((noinline)) long calls(void) {
  uint8_t params[64] = {0};
  NVOS54_PARAMETERS p = {0xc1d00001, 0x5c000001, 0x20800101, 0, (uint64_t)(uintptr_t)params, 64, 0};
  unsigned long req = _IOWR('F', 0x2a, NVOS54_PARAMETERS);
  long sink = 0;
  for (long i = 0; i < n; ++i) sink += ioctl(fd, req, &p);
  return sink;
}

/* Not a tail call, and not one gcc can turn into a loop (it does so with `down(depth - 1) + depth`
 * alone: its accumulator transformation left one frame of twelve): the empty asm makes the result
 * opaque between the call and its use, so every level keeps its frame. */
static __attribute__((noinline)) long down(int depth) {
  if (depth == 0) return calls();
  long r = down(depth - 1);
  __asm__ volatile("" : "+r"(r));
  return r + depth;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: stack_loop DEVICE N DEPTH\n");
    return 2;
  }
  fd = open(argv[1], O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  n = atol(argv[2]);
  return down(atoi(argv[3])) == 12345 ? 3 : 0;
}
