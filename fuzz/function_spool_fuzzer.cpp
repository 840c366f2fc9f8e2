// Fuzzes the reader of the function recorder's spool (src/record/function_spool.hpp): the file
// the traced program's recorders wrote, so untrusted. Damaged headers must be errors, damaged
// chunks left out with a reason, and what is read must turn into trace records and calls without
// a crash. A spool's header is 64 KiB: the input's first bytes fill its fields (the first byte
// 0: the input is the whole file as it is) and the rest is the chunk area.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "record/funcrec/funcrec_abi.h"

#include "fuzz_check.hpp"
#include "record/function_spool.hpp"
#include "trace/function_calls.hpp"

namespace {

// A spool header with its counters and up to 4 tables from `in`, then the rest of `in`.
std::vector<uint8_t> synthetic_spool(const uint8_t* in, size_t n) {
  std::vector<uint8_t> out(FR_SPOOL_HEADER_SIZE, 0);
  auto put = [&](size_t off, const void* v, size_t len) { std::memcpy(out.data() + off, v, len); };
  uint64_t magic = FR_SPOOL_MAGIC;
  uint32_t version = FR_ABI_VERSION;
  put(offsetof(fr_spool_header, magic), &magic, 8);
  put(offsetof(fr_spool_header, version), &version, 4);
  size_t used = std::min<size_t>(n, 8);
  uint32_t chunk = 64 + (used > 1 ? (in[0] | in[1] << 8) % 4096 : 0);
  put(offsetof(fr_spool_header, chunk_size), &chunk, 4);
  uint64_t next_chunk = used > 2 ? in[2] : 0, next_table = used > 3 ? in[3] % 5 : 0;
  put(offsetof(fr_spool_header, next_chunk), &next_chunk, 8);
  put(offsetof(fr_spool_header, next_table), &next_table, 8);
  size_t tables = std::min(n - used, 4 * sizeof(fr_spool_table));
  std::memcpy(out.data() + offsetof(fr_spool_header, tables), in + used, tables);
  used += tables;
  out.insert(out.end(), in + used, in + n);
  uint64_t capacity = (out.size() - FR_SPOOL_HEADER_SIZE) / chunk;
  put(offsetof(fr_spool_header, capacity), &capacity, 8);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  std::vector<uint8_t> bytes = size > 0 && data[0] == 0
                                   ? std::vector<uint8_t>(data + 1, data + size)
                                   : synthetic_spool(data, size);
  auto spool = record::read_function_spool(ByteView(bytes.data(), bytes.size()), "fuzz");
  if (!spool) return 0;
  for (const auto& c : spool->chunks) FUZZ_CHECK(c.data.size() <= bytes.size());
  // Tables as function_records() makes them, without a library: starts from a small plan.
  std::vector<trace::FunctionTable> tables;
  for (const auto& t : spool->tables) {
    trace::FunctionTable ft;
    ft.id = t.index + 1;
    ft.starts = {0x1000, 0x1100};
    tables.push_back(ft);
  }
  std::vector<trace::FunctionBlock> blocks;
  for (const auto& c : spool->chunks) {
    trace::FunctionBlock b;
    b.table = c.table + 1;
    b.pid = c.pid;
    b.tid = c.tid;
    b.part = c.part;
    b.t_ns = c.t0_ns;
    b.data = c.data;
    blocks.push_back(std::move(b));
  }
  trace::CallLimits lim;
  lim.max_depth = 64;
  lim.max_calls = 100000;
  (void)trace::build_function_calls(tables, blocks, lim);
  return 0;
}
