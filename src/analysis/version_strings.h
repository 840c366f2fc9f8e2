/*
 * The driver version NVIDIA builds into libcuda's strings, found in a run of bytes; plain C, so
 * that cudatool (DriverImage::driver_version, C++) and the replay shim (the library check at the
 * first device open, src/replay/shim/replay_calls.c) read it alike:
 *
 *   NVTR_VERSION_COPYRIGHT  "Version 580.159.04. Copyright (C) … NVIDIA Corporation." (550+)
 *   NVTR_VERSION_PROFILES   "nvidia-application-profiles-580.159.04-rc" (every branch seen)
 *
 * A version is digits '.' digits ['.' digits]: 470.256.02, 555.58.02, 580.159.04.
 */
#ifndef CUDATOOL_VERSION_STRINGS_H
#define CUDATOOL_VERSION_STRINGS_H

#include <stddef.h>
#include <string.h>

enum { NVTR_VERSION_COPYRIGHT = 0, NVTR_VERSION_PROFILES = 1 };
#define NVTR_VERSION_MAX 24 /* longest version text kept, NUL included */
/* The most bytes a match spans (prefix, version, suffix): a chunked reader overlaps by this. */
#define NVTR_VERSION_SPAN 64u

/* The length of the version at the start of s[0, n) (0: none). */
static inline size_t nvtr_version_length(const char* s, size_t n) {
  size_t i = 0;
  int groups = 0;
  while (groups < 3) {
    size_t start = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) break;
    ++groups;
    if (i + 1 < n && s[i] == '.' && groups < 3 && s[i + 1] >= '0' && s[i + 1] <= '9') {
      ++i;
      continue;
    }
    break;
  }
  return groups >= 2 ? i : 0;
}

/* The first version string of `kind` in p[0, n): copies the version (NUL-terminated) to out and
 * returns its prefix's offset in p, or -1. */
static inline long nvtr_find_version(const char* p, size_t n, int kind,
                                     char out[NVTR_VERSION_MAX]) {
  const char* prefix = kind == NVTR_VERSION_PROFILES ? "nvidia-application-profiles-" : "Version ";
  const char* suffix = kind == NVTR_VERSION_PROFILES ? "-rc" : ". Copyright ";
  size_t pl = strlen(prefix), sl = strlen(suffix);
  for (size_t at = 0; at + pl <= n;) {
    const char* hit = (const char*)memmem(p + at, n - at, prefix, pl);
    if (hit == NULL) return -1;
    size_t off = (size_t)(hit - p), v = off + pl;
    size_t len = nvtr_version_length(p + v, n - v);
    if (len > 0 && len < NVTR_VERSION_MAX && v + len + sl <= n &&
        memcmp(p + v + len, suffix, sl) == 0) {
      memcpy(out, p + v, len);
      out[len] = '\0';
      return (long)off;
    }
    at = off + 1;
  }
  return -1;
}

#endif
