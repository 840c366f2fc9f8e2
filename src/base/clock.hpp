// The monotonic clock in nanoseconds, for durations and deadlines (never a date).
#pragma once

#include <chrono>
#include <cstdint>

namespace cudatool {

inline uint64_t monotonic_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace cudatool
