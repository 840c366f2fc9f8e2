/*
 * The in-process function recorder: records every call of the patched functions of one library
 * (entry, caller, return value, time) per thread into the spool (funcrec_abi.h), as uftrace's
 * dynamic patching does, from a plan cudatool made (analysis/patch_plan.hpp).
 *
 * Installing: one mprotect of the library's text makes it writable; each planned function's
 * first whole instructions (>= 5 bytes) move to a trampoline allocated within ±2 GiB, and a
 * `jmp rel32` to it takes their place. The trampoline pushes the function's number and jumps to
 * the entry hook, which records the entry and replaces the return address on the stack with the
 * return trampoline; the original goes on a per-thread shadow stack. The return trampoline
 * records rax and returns to the caller.
 *
 * Calls that skip returns close cleanly: a call whose return slot is at or above an open one's
 * (longjmp left it) closes it (UNWIND record); a return pops every open call deeper than itself.
 * A signal handler that interrupts the recorder in the same thread is not recorded (LOST).
 *
 * Plain C for arbitrary programs: its own system calls, memory only from mmap, no lock; the
 * hooks touch only general registers (built with -mgeneral-regs-only) and save every register
 * a caller may keep a value in across a call, so the patched functions see nothing of them.
 * Install before other threads run the library's code (the preload shim does it when the library
 * is loaded): a thread inside a prologue being rewritten would run half of it.
 */
#ifndef CUDATOOL_FUNCREC_H
#define CUDATOOL_FUNCREC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Maps the plan and the spool (paths, usually from FR_ENV_PLAN / FR_ENV_SPOOL) and registers the
 * fork and thread-exit handlers. 0 on success; -1 with `why` (NUL-terminated) saying why. */
int funcrec_init(const char* plan_path, const char* spool_path, char* why, size_t why_len);

/* Patches the plan's functions in the library loaded at `base` (the load bias) whose program
 * headers are `phdr` / `phnum` (dl_iterate_phdr's), if its build id is the plan's. `path` names it
 * in the spool. Returns the number of functions patched, or -1 with `why`. Once per process image.
 */
int funcrec_install(uint64_t base, const void* phdr, int phnum, const char* path, char* why,
                    size_t why_len);

/* Whether funcrec_install() has patched a library in this process. */
int funcrec_installed(void);

/* Whether the object with these program headers, loaded at `base`, is the plan's build. */
int funcrec_matches(uint64_t base, const void* phdr, int phnum);

/* The recorder from the environment, for a preload library: maps FR_ENV_PLAN and FR_ENV_SPOOL
 * when both are set, installs the plan into the library of its build id if it is loaded, and
 * otherwise when a dlopen loads it (funcrec_load.c defines `dlopen`, which the preload library
 * exports: the program's calls come there first). A failure goes into the spool for cudatool to
 * report (else to stderr). Idempotent; the first call decides. */
void funcrec_load_start(void);

/* A DEVICE record in the calling thread's stream: the device call `seq` is made here. */
void funcrec_mark_device(uint64_t seq);

/* For stack walkers: a return address read from the stack slot at `slot` that is the return
 * trampoline stands for the caller's real one, which this gives (the calling thread's own
 * stack only); any other value comes back unchanged. */
uint64_t funcrec_real_return(uint64_t value, uint64_t slot);

/* Marks the calling thread's chunk closed (the thread or process is ending). Called by the
 * thread-exit handler; the process-exit path of the host calls it for the last thread. */
void funcrec_thread_end(void);

#ifdef __cplusplus
}
#endif

#endif /* CUDATOOL_FUNCREC_H */
