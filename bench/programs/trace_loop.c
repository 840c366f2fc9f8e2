/*
 * Benchmark load for `cudatool trace` (bench/trace_overhead.py): N device-shaped ioctls (an RM
 * control, NVOS54 with 64 bytes of nested parameters, on a fake device node: the kernel answers
 * ENOTTY) interleaved with M other system calls (getppid through libc).
 *
 *   trace_loop DEVICE N M [gr]
 *
 * gr: the RM control is NV2080_CTRL_CMD_GR_GET_INFO (ctrl2080gr.h) with a 5-element
 * NV2080_CTRL_GR_INFO list behind its grInfoList pointer: one buffer of the second level per call.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

typedef struct {
  uint32_t hClient, hObject, cmd, flags;
  uint64_t params __attribute__((aligned(8)));
  uint32_t paramsSize, status;
} NVOS54_PARAMETERS; /* src/common/sdk/nvidia/inc/nvos.h */

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: trace_loop DEVICE N M [gr]\n");
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
  uint32_t list[10] = {1, 0, 2, 0, 3, 0, 4, 0, 5, 0}; /* 5 x NV2080_CTRL_GR_INFO {index, data} */
  if (argc == 5) {
    /* NV2080_CTRL_GR_GET_INFO_PARAMS: grInfoListSize, grInfoList at 8, grRouteInfo; 32 bytes */
    uint32_t n5 = 5;
    uint64_t ptr = (uint64_t)(uintptr_t)list;
    memcpy(params, &n5, 4);
    memcpy(params + 8, &ptr, 8);
    p.cmd = 0x20801201;
    p.paramsSize = 32;
  }
  unsigned long req = _IOWR('F', 0x2a, NVOS54_PARAMETERS);
  long sink = 0;
  for (long i = 0; i < most; ++i) {
    if (i < n) sink += ioctl(fd, req, &p);
    if (i < m) sink += getppid();
  }
  return sink == 12345 ? 3 : 0;
}
