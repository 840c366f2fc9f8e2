/*
 * libcudatool_funcrec.so: the function recorder alone as a preload library (no device-call shim),
 * started from the environment (funcrec_load_start: CUDATOOL_FUNCREC_PLAN, _SPOOL), which installs
 * the plan into the library of its build id when the program loads it. What `cudatool trace
 * --mode ptrace --functions` preloads (ptrace records the device calls from outside); the tests
 * also load it beside the replay shim to record the real libcuda under `cudatool replay`.
 */
#include "funcrec.h"

__attribute__((constructor)) static void funcrec_preload_init(void) {
  funcrec_load_start();
}
