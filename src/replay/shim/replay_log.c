/* The log of replayed calls (replay_abi.h): each record is reserved by advancing the shared write
 * offset, filled in place, and committed by writing its kind last, so that a record cut short by
 * a crash reads as incomplete, not as garbage. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "funcrec.h"
#include "replay_shim.h"

static uint64_t align8(uint64_t n) {
  return (n + 7) & ~(uint64_t)7;
}

int rs_log_begin(struct rs_rec* w, uint32_t sys, uint64_t payload) {
  uint64_t need = align8(sizeof(struct rp_log_rec) + payload);
  if (need > 0xffffffffULL) need = 0xfffffff8ULL;
  uint64_t off = __atomic_fetch_add(&rs.log->write_off, need, __ATOMIC_ACQ_REL);
  if (off + need > rs.log->capacity || off + need < off) {
    __atomic_fetch_add(&rs.log->lost, 1, __ATOMIC_RELAXED);
    w->r = NULL;
    return 0;
  }
  struct rp_log_rec* r = (struct rp_log_rec*)((char*)rs.log + off);
  memset(r, 0, sizeof *r);
  r->size = (uint32_t)need;
  r->seq = __atomic_fetch_add(&rs.st->seq, 1, __ATOMIC_RELAXED);
  /* --functions: where among the calls of libcuda's functions this device call is made */
  if (sys >= RP_OPEN && sys <= RP_MUNMAP) funcrec_mark_device(r->seq);
  r->t_ns = rt_now_ns();
  r->pid = rt_pid;
  r->tid = rt_tid();
  r->fd = -1;
  r->path = -1;
  r->answered = -1;
  w->r = r;
  w->next = (uint8_t*)(r + 1);
  w->end = (uint8_t*)r + need;
  w->sys = sys; /* written at commit */
  return 1;
}

struct rp_log_buf* rs_log_buf(struct rs_rec* w, uint16_t role, uint32_t ptr_off, uint64_t addr,
                              uint32_t size) {
  uint64_t need = sizeof(struct rp_log_buf) + align8(2 * (uint64_t)size);
  if (w->r == NULL || (uint64_t)(w->end - w->next) < need) return NULL;
  struct rp_log_buf* b = (struct rp_log_buf*)w->next;
  memset(b, 0, sizeof *b);
  b->role = role;
  b->ptr_off = ptr_off;
  b->addr = addr;
  b->size = size;
  b->pre_len = (uint32_t)rs_read(addr, b + 1, size);
  w->next += need;
  ++w->r->nbufs;
  return b;
}

void rs_log_post(struct rp_log_buf* b) {
  if (b == NULL) return;
  b->post_len = (uint32_t)rs_read(b->addr, (uint8_t*)(b + 1) + b->size, b->size);
}

void rs_log_text(struct rs_rec* w, const char* s) {
  if (w->r == NULL || s == NULL) return;
  size_t n = strlen(s) + 1;
  if ((size_t)(w->end - w->next) < n) n = (size_t)(w->end - w->next);
  if (n == 0) return;
  memcpy(w->next, s, n);
  w->next[n - 1] = '\0';
  w->next += n;
}

void rs_log_bytes(struct rs_rec* w, const void* p, uint64_t n) {
  if (w->r == NULL || n > (uint64_t)(w->end - w->next)) return;
  memcpy(w->next, p, n);
  w->next += n;
}

void rs_log_commit(struct rs_rec* w) {
  if (w->r == NULL) return;
  __atomic_store_n(&w->r->sys, w->sys, __ATOMIC_RELEASE);
  w->r = NULL;
}

/* A file the program opened that holds a CUDA image (a cubin: ELF of machine EM_CUDA; a fatbin)
 * is logged (RP_LOG_IMAGE), so that cudatool can name the kernels of the launches by their code
 * (work.c loads its cubin by a relative path, which only the open shows). */
void rs_log_cuda_image(int fd, const char* abs) {
  uint8_t h[20];
  int saved = errno;
  long n = rt_sys6(SYS_pread64, fd, (long)h, sizeof h, 0, 0, 0);
  errno = saved;
  uint32_t magic = 0;
  uint16_t machine = 0;
  if (n < (long)sizeof h) return;
  memcpy(&magic, h, 4);
  memcpy(&machine, h + 18, 2);
  int cubin = memcmp(h, "\177ELF", 4) == 0 && machine == 190; /* EM_CUDA */
  if (!cubin && magic != 0xba55ed50u) return;                 /* fatbin's magic */
  struct rs_rec w;
  if (!rs_log_begin(&w, RP_LOG_IMAGE, strlen(abs) + 1)) return;
  w.r->fd = fd;
  rs_log_text(&w, abs);
  rs_log_commit(&w);
}
