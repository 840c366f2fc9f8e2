/* The preload shim's JSON writers (src/record/preload/shim_json.c), compiled into the unit tests
 * so that tests/unit/shim_json_test.cpp can hold them against the C++ writers the rest of the
 * project uses (json_escape_to, append_hex). */
#include "../../src/record/preload/shim_json.c"

#include "shim_json_probe.h"

size_t probe_put_string(char* out, const char* s) {
  struct out o = {.p = out};
  put_string(&o, s);
  return (size_t)(o.p - out);
}

size_t probe_put_bytes(char* out, const uint8_t* b, uint64_t n) {
  struct out o = {.p = out};
  put_bytes(&o, b, n);
  return (size_t)(o.p - out);
}

size_t probe_put_hex(char* out, uint64_t v) {
  struct out o = {.p = out};
  put_hex_raw(&o, v);
  return (size_t)(o.p - out);
}

size_t probe_put_u64(char* out, uint64_t v) {
  struct out o = {.p = out};
  put_u64(&o, v);
  return (size_t)(o.p - out);
}

size_t probe_stack_record(char* out, uint64_t id, const uint64_t* frames, int n) {
  return shim_format_stack_record(out, id, frames, n);
}
