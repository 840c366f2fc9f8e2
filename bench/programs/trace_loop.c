/*
 * Benchmark load for `cudatool trace` (bench/trace_overhead.py): N device-shaped ioctls (an RM
 * control, NVOS54 with 64 bytes of nested parameters, on a fake device node: the kernel answers
 * ENOTTY) interleaved with M other system calls (getppid through libc).
 *
 *   trace_loop DEVICE N M
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

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: trace_loop DEVICE N M\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  long n = atol(argv[2]), m = atol(argv[3]);
  long most = n > m ? n : m;
  uint8_t params[64] = {0};
  NVOS54_PARAMETERS p = {0xc1d00001, 0x5c000001, 0x20800101, 0, (uint64_t)(uintptr_t)params, 64, 0};
  unsigned long req = _IOWR('F', 0x2a, NVOS54_PARAMETERS);
  long sink = 0;
  for (long i = 0; i < most; ++i) {
    if (i < n) sink += ioctl(fd, req, &p);
    if (i < m) sink += getppid();
  }
  return sink == 12345 ? 3 : 0;
}
