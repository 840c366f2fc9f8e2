/*
 * Benchmark load for call stacks (bench/stack_overhead.py): N NVIDIA-shaped ioctls (an RM
 * control, as bench/programs/trace_loop.c) made DEPTH frames below main, each frame a function
 * with unwind information (as the frames of libcuda are), so that a recorder that unwinds walks
 * DEPTH + 5 frames per ioctl (DEPTH of them, the loop — down(0) tail-calls it —, main, libc's
 * start-up and _start; bench/stack_overhead.py counts them in a recording).
 *
 *   stack_loop DEVICE N DEPTH [SITES]
 *
 * SITES (1 to 8, default 1): the ioctls are made in turn from that many functions, so that no
 * two consecutive calls have the same stack. The preload shim remembers its last 4 walks of a
 * thread (src/record/preload/unwind.c): up to 4 sites it reuses them, from 5 on it walks every
 * stack and checks 4 memories in vain first (its worst case).
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
static int sites = 1;

/* The call sites: the same call from eight functions (the asm keeps gcc from merging them). */
#define SITE(k)                                                               \
  static __attribute__((noinline)) long site##k(unsigned long req, void* p) { \
    long r = ioctl(fd, req, p);                                               \
    __asm__ volatile("" : "+r"(r));                                           \
    return r + k;                                                             \
  }
SITE(0)
SITE(1)
SITE(2)
SITE(3)
SITE(4)
SITE(5)
SITE(6)
SITE(7)
static long (*const site[8])(unsigned long, void*) = {site0, site1, site2, site3,
                                                      site4, site5, site6, site7};

static __attribute__((noinline)) long calls(void) {
  uint8_t params[64] = {0};
  NVOS54_PARAMETERS p = {0xc1d00001, 0x5c000001, 0x20800101, 0, (uint64_t)(uintptr_t)params, 64, 0};
  unsigned long req = _IOWR('F', 0x2a, NVOS54_PARAMETERS);
  long sink = 0;
  if (sites == 1) {
    for (long i = 0; i < n; ++i) sink += ioctl(fd, req, &p);
  } else {
    for (long i = 0; i < n; ++i) sink += site[i % sites](req, &p);
  }
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
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: stack_loop DEVICE N DEPTH [SITES]\n");
    return 2;
  }
  if (argc == 5) sites = atoi(argv[4]);
  if (sites < 1 || sites > 8) {
    fprintf(stderr, "stack_loop: SITES is 1 to 8\n");
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
