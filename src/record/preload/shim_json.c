/* One event as one line of the trace format (docs/trace-format.md), members in the order
 * src/trace/trace_json.cpp writes them, strings escaped as json_escape_to does. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "shim.h"

static const char kHex[] = "0123456789abcdef";

struct out {
  char* p;
  uint64_t max_buffer; /* the recording's --max-buffer, for the notes of buffers over it */
};

static void put(struct out* o, const char* s) {
  size_t n = strlen(s);
  memcpy(o->p, s, n);
  o->p += n;
}

/* Two digits per value, constant data: events are written from the loader's constructors on,
 * before any constructor of this file would have filled a table. */
static const char kPairs[513] = /* two hex digits per byte value */
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
    "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
    "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
    "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
    "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
    "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
static const char kDecimal[201] = /* two decimal digits per value 0..99 */
    "0001020304050607080910111213141516171819202122232425262728293031"
    "3233343536373839404142434445464748495051525354555657585960616263"
    "6465666768697071727374757677787980818283848586878889909192939495"
    "96979899";

/* Decimal, two digits per step from a table (seq, t, dur, pid, tid, ret, sizes: every event). */
static void put_u64(struct out* o, uint64_t v) {
  char tmp[24];
  char* p = tmp + sizeof tmp;
  while (v >= 100) {
    p -= 2;
    memcpy(p, kDecimal + 2 * (v % 100), 2);
    v /= 100;
  }
  if (v >= 10) {
    p -= 2;
    memcpy(p, kDecimal + 2 * v, 2);
  } else {
    *--p = (char)('0' + v);
  }
  size_t n = (size_t)(tmp + sizeof tmp - p);
  memcpy(o->p, p, n);
  o->p += n;
}

static void put_i64(struct out* o, int64_t v) {
  if (v < 0) {
    *o->p++ = '-';
    put_u64(o, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u64(o, (uint64_t)v);
  }
}

#ifdef __SSE2__
/* The 16 bytes of v as 32 lowercase hex digits in two registers, in order: each byte's high
 * nibble, then its low one. */
static inline void hex16_regs(__m128i v, __m128i* first, __m128i* second) {
  const __m128i nib = _mm_set1_epi8(0x0f), nine = _mm_set1_epi8(9);
  const __m128i zero = _mm_set1_epi8('0'), gap = _mm_set1_epi8('a' - '0' - 10);
  __m128i lo = _mm_and_si128(v, nib);
  __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), nib);
  __m128i a = _mm_unpacklo_epi8(hi, lo), b = _mm_unpackhi_epi8(hi, lo);
  *first = _mm_add_epi8(_mm_add_epi8(a, zero), _mm_and_si128(_mm_cmpgt_epi8(a, nine), gap));
  *second = _mm_add_epi8(_mm_add_epi8(b, zero), _mm_and_si128(_mm_cmpgt_epi8(b, nine), gap));
}

static inline void hex16(char* dst, __m128i v) {
  __m128i a, b;
  hex16_regs(v, &a, &b);
  _mm_storeu_si128((__m128i*)dst, a);
  _mm_storeu_si128((__m128i*)(dst + 16), b);
}
#endif

/* Lowercase hex without leading zeros ("0" for 0): every stack frame and address of an event
 * goes through here. With SSE2, v is shifted so that its first digit leads and all 16 digits are
 * stored at once (the bounds of shim_event_bound leave room for them); the cursor then moves by
 * the digits that count. */
static void put_hex_raw(struct out* o, uint64_t v) {
  int digits = v == 0 ? 1 : (67 - __builtin_clzll(v)) / 4;
#ifdef __SSE2__
  __m128i a, b;
  hex16_regs(_mm_cvtsi64_si128((long long)__builtin_bswap64(v << (4 * (16 - digits)))), &a, &b);
  _mm_storeu_si128((__m128i*)o->p, a);
  o->p += digits;
#else
  char* end = o->p + digits;
  char* p = end;
  for (; digits >= 2; digits -= 2, v >>= 8) {
    p -= 2;
    memcpy(p, kPairs + 2 * (v & 0xff), 2);
  }
  if (digits == 1) *--p = kHex[v & 15];
  o->p = end;
#endif
}

static void put_hex(struct out* o, uint64_t v) {
  *o->p++ = '"';
  *o->p++ = '0';
  *o->p++ = 'x';
  put_hex_raw(o, v);
  *o->p++ = '"';
}

static void put_bytes(struct out* o, const uint8_t* b, uint64_t n) {
  *o->p++ = '"';
  char* p = o->p;
  uint64_t i = 0;
#ifdef __SSE2__
  for (; i + 16 <= n; i += 16) hex16(p + 2 * i, _mm_loadu_si128((const __m128i*)(b + i)));
#endif
  for (; i < n; ++i) memcpy(p + 2 * i, kPairs + 2 * b[i], 2);
  o->p = p + 2 * n;
  *o->p++ = '"';
}

#ifdef __SSE2__
/* Copies whole aligned 16-byte runs of s that need no escape (0x20 <= c < 0x7f, not '"' or
 * '\\'; a NUL ends a run), returning where the copy stopped. The loads are aligned, so they
 * never reach a page the string does not (the device path of every event goes through here);
 * not instrumented in the unit tests' copy (tests/unit/shim_json_probe.c) for the same reason. */
static __attribute__((no_sanitize_address)) const char* put_plain_runs(struct out* o,
                                                                       const char* s) {
  while (((uintptr_t)s & 15) == 0) {
    __m128i v = _mm_load_si128((const __m128i*)s);
    /* signed compares: bytes >= 0x80 are negative, so below 0x20 */
    __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                            _mm_cmpgt_epi8(v, _mm_set1_epi8(0x7e))),
                               _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                            _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
    if (_mm_movemask_epi8(bad) != 0) break;
    _mm_storeu_si128((__m128i*)o->p, v);
    o->p += 16;
    s += 16;
  }
  return s;
}
#endif

/* As json_escape_to (src/base/json_writer.cpp): bytes >= 0x7f and controls as \u00XX. */
static void put_string(struct out* o, const char* s) {
  *o->p++ = '"';
  for (;; ++s) {
#ifdef __SSE2__
    s = put_plain_runs(o, s);
#endif
    unsigned char c = (unsigned char)*s;
    if (c == '\0') break;
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x7f) {
      *o->p++ = (char)c;
    } else if (c == '"') {
      put(o, "\\\"");
    } else if (c == '\\') {
      put(o, "\\\\");
    } else if (c == '\n') {
      put(o, "\\n");
    } else if (c == '\r') {
      put(o, "\\r");
    } else if (c == '\t') {
      put(o, "\\t");
    } else {
      put(o, "\\u00");
      *o->p++ = kHex[c >> 4];
      *o->p++ = kHex[c & 15];
    }
  }
  *o->p++ = '"';
}

/* A literal of known length (no strlen in the hot path); KEY writes ,"name": */
#define PUTLIT(o, lit)                    \
  do {                                    \
    memcpy((o)->p, lit, sizeof(lit) - 1); \
    (o)->p += sizeof(lit) - 1;            \
  } while (0)
#define KEY(o, name) PUTLIT(o, ",\"" name "\":")

static const char* errno_name(int e) {
  switch (e) {
    case EFAULT:
      return "EFAULT";
    case ESRCH:
      return "ESRCH";
    case EPERM:
      return "EPERM";
    case ENOMEM:
      return "ENOMEM";
    case EIO:
      return "EIO";
    case EINVAL:
      return "EINVAL";
    case ENOSYS:
      return "ENOSYS";
    default:
      return NULL;
  }
}

static void put_error(struct out* o, const struct shim_buf* b, int after) {
  uint64_t got = after ? b->post_len : b->pre_len;
  int err = after ? b->post_err : b->pre_err;
  *o->p++ = '"';
  if (b->over_cap) {
    put(o, "size 0x");
    put_hex_raw(o, b->plan.size);
    put(o, " over cap 0x");
    put_hex_raw(o, o->max_buffer);
  } else {
    const char* name = errno_name(err != 0 ? err : EFAULT);
    if (name != NULL) {
      put(o, name);
    } else {
      put(o, "errno ");
      put_u64(o, (uint64_t)err);
    }
    if (got > 0) {
      put(o, " after ");
      put_u64(o, got);
      put(o, " of ");
      put_u64(o, b->plan.size);
      put(o, " bytes");
    }
  }
  *o->p++ = '"';
}

/* Whether one side has an error to report (mirrors fill_buffer in tracee_memory.hpp). */
static int side_failed(const struct shim_buf* b, int after) {
  if (b->plan.size == 0) return 0;
  if (b->over_cap) return 1;
  uint64_t got = after ? b->post_len : b->pre_len;
  if (got == b->plan.size) return 0;
  return !(b->plan.bounded && got > 0);
}

/* The role as the trace writes it ("params.list[3].ptr" for an element of an array rule). */
static void put_role(struct out* o, const struct nvtr_buf_plan* p) {
  if (p->index < 0) {
    put_string(o, p->role);
    return;
  }
  char role[256];
  nvtr_role_format(p, role, sizeof role);
  put_string(o, role);
}

static void put_buffer(struct out* o, const struct shim_buf* b) {
  PUTLIT(o, "{\"role\":");
  put_role(o, &b->plan);
  PUTLIT(o, ",\"addr\":");
  put_hex(o, b->plan.addr);
  PUTLIT(o, ",\"size\":");
  put_u64(o, b->plan.size);
  if (b->plan.bounded) PUTLIT(o, ",\"bounded\":true");
  if (b->plan.class_sized) PUTLIT(o, ",\"sized_by\":\"class\"");
  for (int after = 0; after < 2; ++after) {
    uint64_t got = after ? b->post_len : b->pre_len;
    int failed = side_failed(b, after);
    if (got > 0 || (!failed && b->plan.size > 0)) {
      if (after) {
        KEY(o, "post");
      } else {
        KEY(o, "pre");
      }
      put_bytes(o, after ? b->post : b->pre, got);
    }
    if (failed) {
      if (after) {
        KEY(o, "post_error");
      } else {
        KEY(o, "pre_error");
      }
      put_error(o, b, after);
    }
  }
  *o->p++ = '}';
}

static const char* sys_name(int sys) {
  switch (sys) {
    case SHIM_OPEN:
      return "open";
    case SHIM_CLOSE:
      return "close";
    case SHIM_DUP:
      return "dup";
    case SHIM_IOCTL:
      return "ioctl";
    case SHIM_MMAP:
      return "mmap";
    case SHIM_MUNMAP:
      return "munmap";
    case SHIM_EXECVE:
      return "execve";
    case SHIM_STAT:
      return "stat";
    case SHIM_FILE:
      return "file";
    case SHIM_MKNOD:
      return "mknod";
    case SHIM_SYMLINK:
      return "symlink";
    case SHIM_READLINK:
      return "readlink";
    case SHIM_CHMOD:
      return "chmod";
    case SHIM_UNLINK:
      return "unlink";
    default:
      return "fork";
  }
}

/* Whether buffer `b` is of the second level and was not read for being over the cap. */
static int pointee_over_cap(const struct shim_buf* b) {
  return b->over_cap && strchr(b->plan.role, '.') != NULL;
}

/* v2: what the recorder could not record of an ioctl, as tracee_memory.cpp pointee_unrecorded
 * and ptrace_calls.cpp read_pointees write it. */
static void put_unrecorded(struct out* o, const struct shim_event* ev) {
  int first = 1;
  for (int i = 1; i < ev->nbufs; ++i) {
    const struct shim_buf* b = &ev->bufs[i];
    if (!pointee_over_cap(b)) continue;
    if (first) {
      KEY(o, "unrecorded");
      *o->p++ = '[';
    } else {
      *o->p++ = ',';
    }
    first = 0;
    PUTLIT(o, "{\"what\":");
    put_role(o, &b->plan);
    PUTLIT(o, ",\"why\":\"count ");
    put_u64(o, b->plan.count);
    PUTLIT(o, " x ");
    put_u64(o, b->plan.elem);
    PUTLIT(o, " bytes over --max-buffer (");
    put_u64(o, o->max_buffer);
    PUTLIT(o, ")\"}");
  }
  if (ev->pointees_dropped > 0) {
    if (first) {
      KEY(o, "unrecorded");
      *o->p++ = '[';
    } else {
      *o->p++ = ',';
    }
    first = 0;
    PUTLIT(o, "{\"what\":");
    put_string(o, ev->pointees_dropped_role);
    PUTLIT(o, ",\"why\":\"");
    put_u64(o, (uint64_t)ev->pointees_dropped);
    PUTLIT(o, " more buffers behind pointer members: at most ");
    put_u64(o, NVTR_MAX_POINTEES);
    PUTLIT(o, " per call\"}");
  }
  if (!first) *o->p++ = ']';
}

/* The members of an environment event before `ret` (write_environment in trace_json.cpp). */
static void put_environment(struct out* o, const struct shim_event* ev, const char* path) {
  KEY(o, "op");
  put_string(o, ev->op != NULL ? ev->op : "");
  KEY(o, "path");
  put_string(o, path);
  int answer = 0;
  switch (ev->sys) {
    case SHIM_STAT:
      if (ev->flags != 0) {
        KEY(o, "flags");
        put_hex(o, ev->flags);
      }
      if (ev->has_stat) {
        answer = 1;
      } else if (ev->mode != 0) {
        KEY(o, "mode");
        put_hex(o, ev->mode);
      }
      break;
    case SHIM_FILE:
      KEY(o, "flags");
      put_hex(o, ev->flags);
      answer = ev->has_stat;
      break;
    case SHIM_MKNOD:
      KEY(o, "mode");
      put_hex(o, ev->mode);
      KEY(o, "rdev");
      put_hex(o, ev->rdev);
      break;
    case SHIM_SYMLINK:
    case SHIM_READLINK:
      KEY(o, "target");
      put_string(o, ev->target != NULL ? ev->target : "");
      break;
    case SHIM_CHMOD:
      if (ev->flags != 0) {
        KEY(o, "flags");
        put_hex(o, ev->flags);
      }
      if (!ev->has_owner) {
        KEY(o, "mode");
        put_hex(o, ev->mode);
      }
      break;
    case SHIM_UNLINK:
      if (ev->flags != 0) {
        KEY(o, "flags");
        put_hex(o, ev->flags);
      }
      break;
  }
  if (answer) {
    KEY(o, "mode");
    put_hex(o, ev->mode);
    KEY(o, "rdev");
    put_hex(o, ev->rdev);
    KEY(o, "size");
    put_u64(o, ev->st_size);
  }
}

static const char* env_errno_name(int e) {
  switch (e) {
    case ENOENT:
      return "ENOENT";
    case EACCES:
      return "EACCES";
    case EISDIR:
      return "EISDIR";
    case EAGAIN:
      return "EAGAIN";
    case ENXIO:
      return "ENXIO";
    case ENODEV:
      return "ENODEV";
    default:
      return errno_name(e);
  }
}

/* After `ret`: the content buffer, the directory's names, what was left out. */
static void put_environment_data(struct out* o, const struct shim_event* ev) {
  if (ev->has_content) {
    KEY(o, "content");
    PUTLIT(o, "{\"role\":\"content\",\"addr\":\"0x0\",\"size\":");
    put_u64(o, ev->content_len);
    if (ev->content_bounded) PUTLIT(o, ",\"bounded\":true");
    if (ev->content_len > 0 || ev->content_err == 0) {
      KEY(o, "post");
      put_bytes(o, ev->content, ev->content_len);
    }
    if (ev->content_err != 0) {
      KEY(o, "post_error");
      const char* name = env_errno_name(ev->content_err);
      if (name != NULL) {
        put_string(o, name);
      } else {
        PUTLIT(o, "\"errno ");
        put_u64(o, (uint64_t)ev->content_err);
        *o->p++ = '"';
      }
    }
    *o->p++ = '}';
  }
  if (ev->has_entries) {
    KEY(o, "entries");
    *o->p++ = '[';
    for (uint64_t at = 0, i = 0; at < ev->entries_len; ++i) {
      if (i > 0) *o->p++ = ',';
      put_string(o, ev->entries + at);
      at += strlen(ev->entries + at) + 1;
    }
    *o->p++ = ']';
  }
  if (ev->entries_truncated || (ev->has_entries && ev->content_err != 0)) {
    KEY(o, "unrecorded");
    PUTLIT(o, "[{\"what\":\"entries\",\"why\":");
    put_string(o, ev->entries_truncated ? "more names than the recorder's bound of 256 KiB"
                                        : "the directory could not be read to its end");
    PUTLIT(o, "}]");
  }
  if (ev->has_owner) {
    KEY(o, "uid");
    put_i64(o, ev->uid);
    KEY(o, "gid");
    put_i64(o, ev->gid);
  }
}

static void put_frames(struct out* o, const uint64_t* frames, int n) {
  *o->p++ = '[';
  for (int i = 0; i < n; ++i) {
    if (i > 0) *o->p++ = ',';
    put_hex(o, frames[i]);
  }
  *o->p++ = ']';
}

size_t shim_format_stack_record(char* buf, uint64_t id, const uint64_t* frames, int n) {
  struct out o = {buf, 0};
  PUTLIT(&o, "{\"stack_record\":{\"id\":");
  put_u64(&o, id);
  KEY(&o, "stack");
  put_frames(&o, frames, n);
  PUTLIT(&o, "}}\n");
  return (size_t)(o.p - buf);
}

size_t shim_event_bound(const struct shim_event* ev) {
  size_t n = 640 + (ev->path != NULL ? 6 * strlen(ev->path) : 0);
  if (ev->sys >= SHIM_STAT) {
    n += 320 + (ev->target != NULL ? 6 * strlen(ev->target) : 0) + 2 * ev->content_len +
         6 * ev->entries_len + 3 * (ev->entries_len + 1);
  }
  for (int i = 0; i < ev->nbufs; ++i) {
    n += 320 + 2 * ev->bufs[i].pre_len + 2 * ev->bufs[i].post_len;
    if (ev->bufs[i].plan.index >= 0 || strchr(ev->bufs[i].plan.role, '.') != NULL) {
      n += 3 * 256 + 160; /* a role of up to 255 bytes, escaped, twice; its unrecorded note */
    }
  }
  n += 24 * (size_t)ev->nframes + (ev->stack_error != NULL ? 32 + 6 * strlen(ev->stack_error) : 0);
  return n;
}

static void put_fd_path(struct out* o, int fd, const char* path) {
  KEY(o, "fd");
  put_i64(o, fd);
  KEY(o, "path");
  put_string(o, path);
}

/* The members of a device call (or execve, fork) before `ret` (write_event in trace_json.cpp). */
static void put_call(struct out* o, const struct shim_event* ev, const char* path) {
  switch (ev->sys) {
    case SHIM_OPEN:
      KEY(o, "path");
      put_string(o, path);
      KEY(o, "flags");
      put_hex(o, ev->flags);
      break;
    case SHIM_CLOSE:
    case SHIM_DUP:
      put_fd_path(o, ev->fd, path);
      break;
    case SHIM_IOCTL:
      put_fd_path(o, ev->fd, path);
      KEY(o, "req");
      put_hex(o, ev->req);
      break;
    case SHIM_MMAP:
      put_fd_path(o, ev->fd, path);
      KEY(o, "addr");
      put_hex(o, ev->addr);
      KEY(o, "len");
      put_u64(o, ev->len);
      KEY(o, "prot");
      put_u64(o, ev->prot);
      KEY(o, "flags");
      put_hex(o, ev->flags);
      KEY(o, "off");
      put_hex(o, ev->off);
      break;
    case SHIM_MUNMAP:
      KEY(o, "addr");
      put_hex(o, ev->addr);
      KEY(o, "len");
      put_u64(o, ev->len);
      if (path[0] != '\0') {
        KEY(o, "path");
        put_string(o, path);
      }
      break;
    case SHIM_EXECVE:
      KEY(o, "path");
      put_string(o, path);
      break;
    case SHIM_FORK:
      KEY(o, "child");
      put_i64(o, ev->child);
      break;
    default:
      break;
  }
}

size_t shim_format_event(char* buf, uint64_t seq, const struct shim_event* ev,
                         uint64_t max_buffer) {
  struct out o = {buf, max_buffer};
  PUTLIT(&o, "{\"seq\":");
  put_u64(&o, seq);
  KEY(&o, "t");
  put_u64(&o, ev->t);
  if (ev->has_dur) {
    KEY(&o, "dur");
    put_u64(&o, ev->dur);
  }
  KEY(&o, "pid");
  put_i64(&o, ev->pid);
  KEY(&o, "tid");
  put_i64(&o, ev->tid);
  KEY(&o, "sys");
  put_string(&o, sys_name(ev->sys));
  const char* path = ev->path != NULL ? ev->path : "";
  if (ev->sys >= SHIM_STAT) {
    put_environment(&o, ev, path);
  } else {
    put_call(&o, ev, path);
  }
  KEY(&o, "ret");
  put_i64(&o, ev->ret);
  if (ev->err != 0) {
    KEY(&o, "errno");
    put_i64(&o, ev->err);
  }
  if (ev->sys == SHIM_IOCTL && ev->nbufs > 0) {
    KEY(&o, "arg");
    put_buffer(&o, &ev->bufs[0]);
    if (ev->nbufs > 1) {
      KEY(&o, "nested");
      *o.p++ = '[';
      for (int i = 1; i < ev->nbufs; ++i) {
        if (i > 1) *o.p++ = ',';
        put_buffer(&o, &ev->bufs[i]);
      }
      *o.p++ = ']';
    }
    put_unrecorded(&o, ev);
  }
  if (ev->nframes > 0 && ev->stack_ref != 0) { /* v3: named by its record */
    KEY(&o, "stack_ref");
    put_u64(&o, ev->stack_ref);
  } else if (ev->nframes > 0) { /* v2 */
    KEY(&o, "stack");
    put_frames(&o, ev->frames, ev->nframes);
  }
  if (ev->stack_error != NULL) {
    KEY(&o, "stack_error");
    put_string(&o, ev->stack_error);
  }
  if (ev->sys >= SHIM_STAT) put_environment_data(&o, ev);
  *o.p++ = '}';
  *o.p++ = '\n';
  return (size_t)(o.p - buf);
}
