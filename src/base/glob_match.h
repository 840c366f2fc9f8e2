/*
 * The one glob matcher of cudatool: fnmatch(3) without flags, for byte strings — '*' (any run of
 * bytes, '/' included), '?' (one byte), '[…]' (a set, with ranges and a leading '!' or '^' to
 * negate; an unclosed '[' is an ordinary byte) and '\' (the next byte literally). With
 * CUDATOOL_GLOB_FOLD_CASE, ASCII letters match either case (the --filter language).
 *
 * Plain C without allocation, locale or libc calls, so that the ptrace recorder, the recording
 * and replaying preload shims (which may run inside a signal handler), ab and the decoder's
 * filters decide alike; C++ gets cudatool::glob_match over string views below.
 */
#ifndef CUDATOOL_BASE_GLOB_MATCH_H
#define CUDATOOL_BASE_GLOB_MATCH_H

#include <stddef.h>

#define CUDATOOL_GLOB_FOLD_CASE 1 /* flags: ASCII letters match either case */

static inline unsigned char cudatool_glob_fold(unsigned char c, int flags) {
  return (flags & CUDATOOL_GLOB_FOLD_CASE) && c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a')
                                                                   : c;
}

/* One bracket set at p[i] (just after '['), p holding n bytes: sets *end past ']' and returns
 * whether c is in it; returns -1 when the set is not closed (then '[' is an ordinary byte). */
static inline int cudatool_glob_set(const char* p, size_t n, size_t i, unsigned char c, int flags,
                                    size_t* end) {
  int negate = 0, match = 0;
  if (i < n && (p[i] == '!' || p[i] == '^')) {
    negate = 1;
    ++i;
  }
  size_t start = i;
  c = cudatool_glob_fold(c, flags);
  while (i < n && (p[i] != ']' || i == start)) {
    unsigned char lo = (unsigned char)p[i], hi;
    if (p[i] == '\\' && i + 1 < n) lo = (unsigned char)p[++i];
    hi = lo;
    if (i + 2 < n && p[i + 1] == '-' && p[i + 2] != ']') {
      hi = (unsigned char)p[i + 2];
      i += 2;
    }
    lo = cudatool_glob_fold(lo, flags);
    hi = cudatool_glob_fold(hi, flags);
    if (c >= lo && c <= hi) match = 1;
    ++i;
  }
  if (i >= n) return -1;
  *end = i + 1;
  return match != negate;
}

/* Does pattern p (pn bytes) match all of s (sn bytes)? Linear backtracking over the last '*'. */
static inline int cudatool_glob_match_n(const char* p, size_t pn, const char* s, size_t sn,
                                        int flags) {
  size_t pi = 0, si = 0;
  size_t star_p = (size_t)-1; /* pattern after the last '*' */
  size_t star_s = 0;          /* where that '*' 's match currently ends */
  while (si < sn) {
    if (pi < pn && p[pi] == '*') {
      while (pi < pn && p[pi] == '*') ++pi;
      if (pi == pn) return 1;
      star_p = pi;
      star_s = si;
      continue;
    }
    int ok = 0;
    size_t next = pi + 1;
    unsigned char c = (unsigned char)s[si];
    if (pi < pn) {
      if (p[pi] == '?') {
        ok = 1;
      } else if (p[pi] == '[') {
        int r = cudatool_glob_set(p, pn, pi + 1, c, flags, &next);
        if (r < 0) next = pi + 1;
        ok = r < 0 ? c == '[' : r;
      } else if (p[pi] == '\\' && pi + 1 < pn) {
        ok = cudatool_glob_fold((unsigned char)p[pi + 1], flags) == cudatool_glob_fold(c, flags);
        next = pi + 2;
      } else {
        ok = cudatool_glob_fold((unsigned char)p[pi], flags) == cudatool_glob_fold(c, flags);
      }
    }
    if (ok) {
      pi = next;
      ++si;
    } else if (star_p != (size_t)-1) {
      pi = star_p;
      si = ++star_s;
    } else {
      return 0;
    }
  }
  while (pi < pn && p[pi] == '*') ++pi;
  return pi == pn;
}

static inline size_t cudatool_glob_len(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

/* NUL-terminated pattern and text, case-sensitive (the --devices and --env globs). */
static inline int nvtr_glob_match(const char* pat, const char* s) {
  return cudatool_glob_match_n(pat, cudatool_glob_len(pat), s, cudatool_glob_len(s), 0);
}

/* A comma-separated list of globs: does any match? */
static inline int nvtr_glob_list_match(const char* list, const char* s) {
  size_t sn = cudatool_glob_len(s);
  while (*list != '\0') {
    size_t n = 0;
    while (list[n] != '\0' && list[n] != ',') ++n;
    if (n > 0 && cudatool_glob_match_n(list, n, s, sn, 0)) return 1;
    list += n;
    if (*list == ',') ++list;
  }
  return 0;
}

#ifdef __cplusplus
#include <string_view>

namespace cudatool {

inline bool glob_match(std::string_view pattern, std::string_view text, bool fold_case = false) {
  return cudatool_glob_match_n(pattern.data(), pattern.size(), text.data(), text.size(),
                               fold_case ? CUDATOOL_GLOB_FOLD_CASE : 0) != 0;
}

}  // namespace cudatool
#endif

#endif /* CUDATOOL_BASE_GLOB_MATCH_H */
