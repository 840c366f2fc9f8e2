// Shared by the fuzz targets: an invariant that does not hold is a finding — say which, then
// abort so that libFuzzer keeps the input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(c)                                                                 \
  do {                                                                                \
    if (!(c)) {                                                                       \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)
