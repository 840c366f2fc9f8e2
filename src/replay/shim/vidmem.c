/* The replay's sparse, capped video memory (vidmem.h). */
#include "vidmem.h"

#include <string.h>

static uint32_t pow2_at_least(uint64_t n) {
  uint32_t p = 16;
  while (p < n && p < (1u << 30)) p <<= 1;
  return p;
}

uint64_t vm_table_bytes(uint64_t cap_bytes) {
  return (uint64_t)pow2_at_least(2 * (cap_bytes / VM_CHUNK) + 2) * sizeof(struct vm_chunk);
}

void vm_init(struct vidmem* v, const struct vm_ops* ops, uint64_t cap_bytes, void* table) {
  memset(v, 0, sizeof *v);
  v->ops = *ops;
  v->cap_bytes = cap_bytes;
  v->max_chunks = (uint32_t)(cap_bytes / VM_CHUNK);
  v->table = (struct vm_chunk*)table;
  v->table_size = pow2_at_least(2 * (uint64_t)v->max_chunks + 2);
}

int vm_add(struct vidmem* v, uint64_t va, uint64_t len) {
  if (len == 0 || va + len < va) return 0;
  for (uint32_t i = 0; i < v->n_ranges; ++i) {
    if (v->ranges[i].va == va && v->ranges[i].len == len) return 0; /* mapped again */
  }
  if (v->n_ranges == VM_MAX_RANGES) {
    ++v->ranges_refused;
    return -1;
  }
  v->ranges[v->n_ranges++] = (struct vm_range){va, len};
  return 0;
}

int vm_covers(const struct vidmem* v, uint64_t va, uint64_t n) {
  for (uint32_t i = 0; i < v->n_ranges; ++i) {
    const struct vm_range* r = &v->ranges[i];
    if (va >= r->va && va - r->va < r->len && n <= r->len - (va - r->va)) return 1;
  }
  return 0;
}

/* ---- the chunk index: open addressing, linear probing ---- */

static uint32_t slot_of(const struct vidmem* v, uint64_t key) {
  uint64_t h = key * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 32) & (v->table_size - 1);
}

static struct vm_chunk* find(struct vidmem* v, uint64_t index) {
  if (v->table == 0) return 0;
  uint64_t key = index + 1;
  for (uint32_t s = slot_of(v, key), k = 0; k < v->table_size;
       ++k, s = (s + 1) & (v->table_size - 1)) {
    if (v->table[s].key == key) return &v->table[s];
    if (v->table[s].key == 0) return 0;
  }
  return 0;
}

static uint8_t* chunk(struct vidmem* v, uint64_t index, int make) {
  struct vm_chunk* c = find(v, index);
  if (c != 0) return c->mem;
  if (!make || v->table == 0 || v->chunks >= v->max_chunks) return 0;
  uint8_t* mem = (uint8_t*)v->ops.alloc(v->ops.ctx, VM_CHUNK);
  if (mem == 0) return 0;
  uint64_t key = index + 1;
  uint32_t s = slot_of(v, key);
  while (v->table[s].key != 0 && v->table[s].key != ~0ull) s = (s + 1) & (v->table_size - 1);
  v->table[s] = (struct vm_chunk){key, mem};
  ++v->chunks;
  return mem;
}

void vm_remove(struct vidmem* v, uint64_t va, uint64_t len) {
  for (uint32_t i = 0; i < v->n_ranges; ++i) {
    struct vm_range r = v->ranges[i];
    if (r.va < va || r.va + r.len > va + len) continue;
    /* Chunks wholly inside the range go back (a chunk shared with a neighbouring range stays). */
    uint64_t first = (r.va + VM_CHUNK - 1) / VM_CHUNK, end = (r.va + r.len) / VM_CHUNK;
    for (uint64_t c = first; c < end && v->table != 0; ++c) {
      struct vm_chunk* e = find(v, c);
      if (e == 0) continue;
      v->ops.release(v->ops.ctx, e->mem, VM_CHUNK);
      e->key = ~0ull;
      e->mem = 0;
      --v->chunks;
    }
    v->ranges[i--] = v->ranges[--v->n_ranges];
  }
}

uint64_t vm_read(struct vidmem* v, uint64_t va, void* dst, uint64_t n) {
  if (!vm_covers(v, va, n)) return 0;
  uint8_t* out = (uint8_t*)dst;
  for (uint64_t done = 0; done < n;) {
    uint64_t at = va + done, in = at % VM_CHUNK, k = VM_CHUNK - in;
    if (k > n - done) k = n - done;
    const uint8_t* c = chunk(v, at / VM_CHUNK, 0);
    if (c != 0) {
      memcpy(out + done, c + in, k);
    } else {
      memset(out + done, 0, k);
    }
    done += k;
  }
  return n;
}

static int all_zero(const uint8_t* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    if (p[i] != 0) return 0;
  }
  return 1;
}

uint64_t vm_write(struct vidmem* v, uint64_t va, const void* src, uint64_t n) {
  if (!vm_covers(v, va, n)) return 0;
  const uint8_t* in_bytes = (const uint8_t*)src;
  uint64_t kept = 0;
  for (uint64_t done = 0; done < n;) {
    uint64_t at = va + done, in = at % VM_CHUNK, k = VM_CHUNK - in;
    if (k > n - done) k = n - done;
    uint8_t* c = chunk(v, at / VM_CHUNK, 0);
    if (c == 0 && all_zero(in_bytes + done, k)) { /* an unwritten chunk already reads so */
      kept += k;
      done += k;
      continue;
    }
    if (c == 0) c = chunk(v, at / VM_CHUNK, 1);
    if (c != 0) {
      memcpy(c + in, in_bytes + done, k);
      kept += k;
    }
    done += k;
  }
  if (kept < n) {
    v->dropped_bytes += n - kept;
    ++v->dropped_writes;
  }
  return kept;
}

uint8_t* vm_span(struct vidmem* v, uint64_t va, uint64_t n, int make) {
  if (n == 0 || n > VM_CHUNK - va % VM_CHUNK || !vm_covers(v, va, n)) return 0;
  uint8_t* c = chunk(v, va / VM_CHUNK, make);
  if (c == 0 && make) { /* the cap (or no memory): the write the caller meant is lost */
    v->dropped_bytes += n;
    ++v->dropped_writes;
  }
  return c == 0 ? 0 : c + va % VM_CHUNK;
}
