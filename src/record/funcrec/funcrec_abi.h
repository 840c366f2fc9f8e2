/*
 * The two files between cudatool and the in-process function recorder (funcrec.h), plain C, read
 * by both sides:
 *
 *   - the PLAN (written by cudatool, record/function_plan.cpp; read-only for the recorder): which
 *     functions of one library build to patch, with the bytes their patch moves;
 *   - the SPOOL (created by cudatool, record/function_spool.cpp; written by the recorders of every
 *     traced process through MAP_SHARED mappings; read back by cudatool when the program ends):
 *     per thread, chunks of function events. What a recorder wrote is in the kernel's page cache
 *     at once, so a crash of the program loses nothing recorded.
 *
 * Version rule: FR_ABI_VERSION goes up with any change of a layout or a record's meaning below;
 * each side refuses a file of another version (the plan and the spool are made for one run by
 * the same cudatool, so there is nothing old to read).
 */
#ifndef CUDATOOL_FUNCREC_ABI_H
#define CUDATOOL_FUNCREC_ABI_H

#include <stdint.h>

#define FR_ABI_VERSION 1u

/* Environment the launcher sets for the traced program. */
#define FR_ENV_PLAN "CUDATOOL_FUNCREC_PLAN"   /* the plan file */
#define FR_ENV_SPOOL "CUDATOOL_FUNCREC_SPOOL" /* the spool file */
/* The recorder installs the plan into the loaded library whose GNU build id is the plan's. */

/* ---- plan ---- */
#define FR_PLAN_MAGIC 0x314e4c5046746475ULL /* "udtFPLN1" */
#define FR_MAX_DISPLACED 20
#define FR_MAX_FIXUPS 2

struct fr_plan_header {
  uint64_t magic;
  uint32_t version;     /* FR_ABI_VERSION */
  uint32_t header_size; /* sizeof(struct fr_plan_header) */
  uint32_t site_size;   /* sizeof(struct fr_plan_site) */
  uint32_t sites;       /* the fr_plan_site records that follow the header, by start */
  uint32_t build_id_len;
  uint8_t build_id[32]; /* NT_GNU_BUILD_ID of the library the plan is for */
  uint32_t reserved0;
  uint64_t text_lo, text_hi; /* ELF virtual addresses covering every site (patched with one
                                mprotect of the page range) */
};

struct fr_plan_site {
  uint64_t start;    /* ELF virtual address of the function */
  uint32_t function; /* its index in cudatool's function map (FunctionMap order) */
  uint8_t displaced; /* bytes moved to the trampoline: whole instructions, 5..FR_MAX_DISPLACED */
  uint8_t fixups;    /* 32-bit fields in them to adjust: RIP-relative disp32, jmp/jcc rel32 */
  uint8_t fix_offset[FR_MAX_FIXUPS];   /* offset of the field in the displaced bytes */
  uint8_t fix_insn_end[FR_MAX_FIXUPS]; /* end of its instruction (what the field is relative to) */
  uint8_t bytes[FR_MAX_DISPLACED];     /* the bytes the library must hold there */
  uint8_t reserved[2];
};

/* ---- spool ---- */
#define FR_SPOOL_MAGIC 0x314c4f4f50537564ULL /* "duSPOOL1" */
#define FR_CHUNK_MAGIC 0x4b4e4843u           /* "CHNK" */
#define FR_SPOOL_HEADER_SIZE 65536u
#define FR_MAX_TABLES 128
#define FR_PATH_MAX 256

/* One install of the plan in one process (one program image): where the library was loaded. */
struct fr_spool_table {
  uint32_t ready; /* written last (release): 1 when the rest is filled */
  int32_t pid;
  uint64_t base;          /* load bias: runtime address = base + ELF virtual address */
  uint64_t t_ns;          /* CLOCK_MONOTONIC when the patching was done */
  uint64_t install_ns;    /* how long patching took */
  uint32_t patched;       /* sites patched */
  uint32_t skipped;       /* sites of the plan left alone (bytes differ, trampoline out of reach) */
  char path[FR_PATH_MAX]; /* the library as the process loaded it (cut to fit, NUL-terminated) */
};

struct fr_spool_header {
  uint64_t magic;
  uint32_t version;     /* FR_ABI_VERSION */
  uint32_t chunk_size;  /* bytes per chunk, a multiple of the page size */
  uint64_t capacity;    /* chunks the file has room for after the header */
  uint64_t next_chunk;  /* chunks handed out (atomic); past capacity: none left */
  uint64_t next_table;  /* tables handed out (atomic) */
  uint64_t lost;        /* calls not recorded for want of a chunk (atomic) */
  uint32_t error_taken; /* 0 until a recorder claims `error` (atomic), 2 once it is written */
  uint32_t reserved0;
  char error[256]; /* why the first failed install failed (NUL-terminated) */
  uint64_t reserved[9];
  struct fr_spool_table tables[FR_MAX_TABLES];
};

/* A chunk: this header, then records up to `used` bytes after it. One thread of one process
 * writes it; `used` is stored (release) after each complete record. */
struct fr_chunk_header {
  uint32_t magic; /* FR_CHUNK_MAGIC */
  uint32_t table; /* index in fr_spool_header.tables of the install the addresses refer to */
  int32_t pid, tid;
  uint64_t part;   /* the thread's chunks counted from 0: a gap means a chunk was lost */
  uint64_t t0_ns;  /* CLOCK_MONOTONIC the first record's time is relative to */
  uint64_t used;   /* bytes of records after this header */
  uint32_t closed; /* 1 when the thread ended or moved to its next chunk */
  uint32_t reserved0;
  uint64_t reserved[2];
};

/* Records: one tag byte, then LEB128 numbers (u: unsigned; s: zigzag-signed). `dt` is ns since the
 * record before in the chunk (the first: since t0_ns). Function numbers index the plan's sites.
 *   ENTER   u function, u dt, s caller - the previous ENTER's caller in the chunk (the first:
 *           caller - 0): a call, `caller` the return address it will return to
 *   TAIL    u function, u dt: entered by a jump from the open function above it (a tail call);
 *           it returns where that one would have
 *   RETURN  u dt, s rax: the innermost open function returned `rax`
 *   UNWIND  u dt, u n: the n innermost open functions ended without returning (longjmp, a thread
 *           or process that ended inside them, an exception)
 *   DEVICE  u dt, u seq: a device call was made here; `seq` of its event in the trace
 *   LOST    u dt, u n: n calls were not recorded (a signal handler interrupted the recorder, the
 *           thread's call depth passed FR_MAX_DEPTH)
 *   INHERIT u n, n × u function: a forked child starts inside these open functions, outermost first
 */
enum fr_record {
  FR_ENTER = 1,
  FR_TAIL = 2,
  FR_RETURN = 3,
  FR_UNWIND = 4,
  FR_DEVICE = 5,
  FR_LOST = 6,
  FR_INHERIT = 7
};
#define FR_MAX_DEPTH 8192 /* open calls per thread the recorder keeps */

#endif /* CUDATOOL_FUNCREC_ABI_H */
