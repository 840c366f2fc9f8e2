/*
 * The replay's video memory (docs/replay.md, "The fake GPU"): backing for the GPU virtual
 * address ranges that the answered map calls (NV_ESC_RM_MAP_MEMORY_DMA,
 * UVM_MAP_EXTERNAL_ALLOCATION) give memory no CPU mapping of the replay shows, so that the copy
 * engine's copies and fills, inline-to-memory writes and the QMDs and semaphores that live there
 * are carried out and read back (a host-to-device copy followed by a device-to-host copy returns
 * what was sent).
 *
 * Sparse and made lazily: a range costs nothing until it is written; each written 64 KiB chunk
 * of it is one anonymous mapping, made at its first write of a non-zero byte; what was never
 * written reads as zeros. Capped: past `cap_bytes` of chunks a write is dropped and counted (the
 * report says the cap was hit), never an allocation failure inside the program.
 *
 * Plain C for the replay shim: no allocation but the caller's (vm_ops: the shim maps with its
 * own system calls), no lock (the caller holds the fake GPU's). The chunk index is a table the
 * caller hands over (vm_table_bytes), open addressing keyed by the chunk's GPU address.
 */
#ifndef CUDATOOL_REPLAY_VIDMEM_H
#define CUDATOOL_REPLAY_VIDMEM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VM_CHUNK ((uint64_t)64 * 1024)
#define VM_MAX_RANGES 1024

struct vm_ops {
  void* ctx;
  /* n bytes of zeroed memory (NULL when there is none); given back with release. */
  void* (*alloc)(void* ctx, uint64_t n);
  void (*release)(void* ctx, void* p, uint64_t n);
};

struct vm_range {
  uint64_t va, len;
};

struct vm_chunk {
  uint64_t key; /* chunk index + 1; 0: empty; ~0: deleted */
  uint8_t* mem;
};

struct vidmem {
  struct vm_ops ops;
  struct vm_range ranges[VM_MAX_RANGES];
  uint32_t n_ranges;
  struct vm_chunk* table;
  uint32_t table_size; /* a power of two, at least twice max_chunks */
  uint32_t chunks, max_chunks;
  uint64_t cap_bytes;
  uint64_t dropped_bytes;  /* written past the cap: not kept */
  uint64_t dropped_writes; /* writes that lost bytes to the cap */
  uint64_t ranges_refused; /* ranges past VM_MAX_RANGES */
};

/* Bytes of table the cap needs (vm_init's `table`). */
uint64_t vm_table_bytes(uint64_t cap_bytes);
/* table: vm_table_bytes(cap_bytes) zeroed bytes. */
void vm_init(struct vidmem* v, const struct vm_ops* ops, uint64_t cap_bytes, void* table);

/* A GPU range whose memory the replay backs (an answered map of memory without a CPU mapping);
 * 0, or -1 when the range table is full (counted). */
int vm_add(struct vidmem* v, uint64_t va, uint64_t len);
/* Forgets the ranges inside [va, va + len) and gives back their chunks (an unmap or a free). */
void vm_remove(struct vidmem* v, uint64_t va, uint64_t len);
/* Whether [va, va + n) lies inside one backed range. */
int vm_covers(const struct vidmem* v, uint64_t va, uint64_t n);

/* Reads n bytes at va (zeros where nothing was written): n, or 0 when vm_covers says no. */
uint64_t vm_read(struct vidmem* v, uint64_t va, void* dst, uint64_t n);
/* Writes n bytes at va: n, 0 when vm_covers says no; fewer when the cap dropped some. Zeros
 * bound for a chunk never written make none (libcuda clears tens of MiB it never uses). */
uint64_t vm_write(struct vidmem* v, uint64_t va, const void* src, uint64_t n);
/* The backing of [va, va + n) when it lies in one chunk (made when `make`): for semaphores,
 * which are read and written atomically in place; NULL otherwise. */
uint8_t* vm_span(struct vidmem* v, uint64_t va, uint64_t n, int make);

/* Bytes of backing made so far. */
static inline uint64_t vm_backed_bytes(const struct vidmem* v) {
  return (uint64_t)v->chunks * VM_CHUNK;
}

#ifdef __cplusplus
}
#endif

#endif /* CUDATOOL_REPLAY_VIDMEM_H */
