/* For the shim fuzz harnesses (fuzz/shim_*_probe.c). */
#pragma once

#include <stddef.h>

/* Fills the stack below the caller's frame with nonzero bytes, so that the code under test reading
 * a local it never wrote sees the same garbage every run instead of whatever happens to be there
 * (a CIE's augmentation string read one byte past its end looped only now and then). */
static __attribute__((noinline)) void paint_stack(void) {
  volatile unsigned char pad[16384];
  for (size_t i = 0; i < sizeof pad; ++i) pad[i] = 0xa5;
}
