/* The preload shim's JSON writers, for tests/unit/shim_json_test.cpp (shim_json_probe.c). Each
 * writes at out (room enough: 6 bytes per input byte + 2) and returns the count written. */
#ifndef CUDATOOL_TESTS_SHIM_JSON_PROBE_H
#define CUDATOOL_TESTS_SHIM_JSON_PROBE_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
size_t probe_put_string(char* out, const char* s); /* a JSON string, quotes included */
size_t probe_put_bytes(char* out, const uint8_t* b, uint64_t n); /* "hex", quotes included */
size_t probe_put_hex(char* out, uint64_t v); /* lowercase hex, no leading zeros, no quotes */
size_t probe_put_u64(char* out, uint64_t v); /* decimal */
/* v3 stack record line, '\n' included (room: SHIM_STACK_RECORD_BOUND(n) = 64 + 21 n) */
size_t probe_stack_record(char* out, uint64_t id, const uint64_t* frames, int n);
#ifdef __cplusplus
}
#endif
#endif
