/* The function recorder started from the environment by a preload library (funcrec.h,
 * funcrec_load_start): at start, and after each dlopen, the loaded objects are looked at for the
 * plan's build id. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

#include "funcrec_int.h"

static int load_state; /* 0 not started, 1 recording (until installed), -1 off */

/* The first failure, into the spool (one writer wins) or, without one, on stderr. */
static void note_error(const char* why) {
  struct fr_spool_header* sp = fr_g.spool;
  if (sp == NULL) {
    fr_say("cudatool function recorder: ", why);
    fr_say("\n", NULL);
    return;
  }
  uint32_t expected = 0;
  if (!__atomic_compare_exchange_n(&sp->error_taken, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_RELAXED))
    return;
  size_t k = 0;
  for (; why[k] != '\0' && k + 1 < sizeof sp->error; ++k) sp->error[k] = why[k];
  sp->error[k] = '\0';
  __atomic_store_n(&sp->error_taken, 2, __ATOMIC_RELEASE);
}

static int visit(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  if (!funcrec_matches(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum)) return 0;
  char why[256] = "";
  const char* name = info->dlpi_name != NULL ? info->dlpi_name : "";
  if (funcrec_install(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, name, why, sizeof why) <
      0)
    note_error(why);
  return 1;
}

static void install_loaded(void) {
  if (load_state == 1 && !funcrec_installed()) dl_iterate_phdr(visit, NULL);
}

void funcrec_load_start(void) {
  if (load_state != 0) return;
  const char* plan = getenv(FR_ENV_PLAN);
  const char* spool = getenv(FR_ENV_SPOOL);
  if (plan == NULL || spool == NULL) {
    load_state = -1;
    return;
  }
  char why[256] = "";
  if (funcrec_init(plan, spool, why, sizeof why) != 0) {
    load_state = -1;
    note_error(why);
    return;
  }
  load_state = 1;
  install_loaded();
}

__attribute__((visibility("default"))) void* dlopen(const char* file, int mode) {
  static void* (*next)(const char*, int);
  if (next == NULL) next = (void* (*)(const char*, int))dlsym(RTLD_NEXT, "dlopen");
  if (next == NULL) return NULL;
  void* h = next(file, mode);
  if (h != NULL) {
    funcrec_load_start();
    install_loaded();
  }
  return h;
}
