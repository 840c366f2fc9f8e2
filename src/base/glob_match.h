/*
 * The --devices glob: '*' (any run of bytes, '/' included), '?' (one byte), '[…]' (a set, with
 * ranges and a leading '!' or '^' to negate) and '\' (the next byte literally) — fnmatch(3)
 * without flags, for byte strings. Plain C without allocation or locale, so that the ptrace
 * recorder and the preload shim (which may run inside a signal handler) decide alike.
 */
#ifndef CUDATOOL_TRACE_GLOB_MATCH_H
#define CUDATOOL_TRACE_GLOB_MATCH_H

#include <stddef.h>

/* One bracket set at p (after '['): sets *end past ']' and returns whether c is in it; returns -1
 * when the set is not closed (then '[' is an ordinary byte). */
static inline int nvtr_glob_set(const char* p, unsigned char c, const char** end) {
  int negate = 0, match = 0;
  if (*p == '!' || *p == '^') {
    negate = 1;
    ++p;
  }
  const char* start = p;
  while (*p != '\0' && (*p != ']' || p == start)) {
    unsigned char lo = (unsigned char)*p, hi = lo;
    if (*p == '\\' && p[1] != '\0') lo = hi = (unsigned char)*++p;
    if (p[1] == '-' && p[2] != '\0' && p[2] != ']') {
      hi = (unsigned char)p[2];
      p += 2;
    }
    if (c >= lo && c <= hi) match = 1;
    ++p;
  }
  if (*p != ']') return -1;
  *end = p + 1;
  return match != negate;
}

static inline int nvtr_glob_match(const char* pat, const char* s) {
  const char* star_p = NULL; /* pattern after the last '*' */
  const char* star_s = NULL; /* where that '*' 's match currently ends */
  while (*s != '\0') {
    if (*pat == '*') {
      while (*pat == '*') ++pat;
      if (*pat == '\0') return 1;
      star_p = pat;
      star_s = s;
      continue;
    }
    int ok = 0;
    const char* next = pat + 1;
    if (*pat == '?') {
      ok = 1;
    } else if (*pat == '[') {
      int r = nvtr_glob_set(pat + 1, (unsigned char)*s, &next);
      ok = r < 0 ? (*s == '[') : r;
      if (r < 0) next = pat + 1;
    } else if (*pat == '\\' && pat[1] != '\0') {
      ok = pat[1] == *s;
      next = pat + 2;
    } else {
      ok = *pat != '\0' && *pat == *s;
    }
    if (ok) {
      pat = next;
      ++s;
    } else if (star_p != NULL) {
      pat = star_p;
      s = ++star_s;
    } else {
      return 0;
    }
  }
  while (*pat == '*') ++pat;
  return *pat == '\0';
}

/* A comma-separated list of globs: does any match? */
static inline int nvtr_glob_list_match(const char* list, const char* s) {
  char one[512];
  while (*list != '\0') {
    size_t n = 0;
    while (list[n] != '\0' && list[n] != ',') ++n;
    if (n > 0 && n < sizeof one) {
      for (size_t i = 0; i < n; ++i) one[i] = list[i];
      one[n] = '\0';
      if (nvtr_glob_match(one, s)) return 1;
    }
    list += n;
    if (*list == ',') ++list;
  }
  return 0;
}

#endif /* CUDATOOL_TRACE_GLOB_MATCH_H */
