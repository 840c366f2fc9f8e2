#include "base/prefault.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 (include/uapi/asm-generic/mman-common.h)
#endif

namespace cudatool {

void prefault_for_write(void* p, size_t bytes) {
  static const uintptr_t kPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto lo = reinterpret_cast<uintptr_t>(p);
  if (p == nullptr || bytes == 0 || bytes > UINTPTR_MAX - lo) return;
  uintptr_t first = (lo + kPage - 1) & ~(kPage - 1);
  uintptr_t end = (lo + bytes) & ~(kPage - 1);
  if (end <= first || (end - first) / kPage < 16) return;
  // Best effort: EINVAL on older kernels, ENOMEM under pressure; the pages then fault as usual.
  (void)madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE);
}

}  // namespace cudatool
