/* The call as the program made it (hooks.h shim_perform): through the next definition of the
 * function (libc's, or another interposer's), resolved on first use. The behaviours call it; it
 * calls nothing of theirs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#include "hooks.h"

const struct shim_fn_info shim_fn[SHIM_C_COUNT] = {
#define SHIM_INFO(k, fn, ret, path, dirfd, path2, op) {#fn, ret, path, dirfd, path2, op},
    SHIM_HOOKS(SHIM_INFO)
#undef SHIM_INFO
};

/* The next definition of each function (RTLD_NEXT), resolved on first use. */
static void* _Atomic real[SHIM_C_COUNT];

typedef long (*fn6)(long, long, long, long, long, long);
typedef long (*fn7)(long, long, long, long, long, long, long);

long shim_perform(const struct shim_call* c) {
  void* f = real[c->kind];
  if (f == NULL) {
    f = dlsym(RTLD_NEXT, shim_fn[c->kind].name);
    real[c->kind] = f;
  }
  if (f == NULL) {
    errno = ENOSYS;
    return -1;
  }
  if (c->kind == SHIM_C_SYSCALL) {
    return ((fn7)f)(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
  }
  /* Every interposed function takes at most six integer or pointer arguments, passed in the
   * same registers whatever their declared types (x86-64 SysV). */
  long r = ((fn6)f)(c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
  return shim_fn[c->kind].ret == R_LONG ? r : (long)(int)r;
}
