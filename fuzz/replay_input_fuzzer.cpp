// Fuzzes what the replay layer parses (src/replay/): the first byte picks the parser, the rest is
// its input —
//   'i'  an --inject spec (inject.cpp)
//   'l'  the shims' log, read back by cudatool (replay_log.cpp): a file the replayed program can
//        write over, so untrusted
//   other: a trace, read, normalised and built into an answer table (answers.cpp), with and
//        without an injection (the selector byte picks one of three); the table must hold together
//        (every section inside it, patches inside the blob, bucket lists inside the list array).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "record/shim_abi/replay_abi.h"
#include "replay/answers.hpp"
#include "replay/inject.hpp"
#include "replay/replay_log.hpp"

namespace {

using namespace cudatool;
using namespace cudatool::replay;

void check_table(const AnswerTable& t) {
  FUZZ_CHECK(t.bytes.size() >= sizeof(rp_table));
  const auto* h = reinterpret_cast<const rp_table*>(t.bytes.data());
  uint64_t size = t.bytes.size();
  FUZZ_CHECK(h->size == size);
  auto inside = [&](uint64_t off, uint64_t n, uint64_t each) {
    return off <= size && n * each <= size - off;
  };
  FUZZ_CHECK(inside(h->off_events, h->n_events, sizeof(rp_event)));
  FUZZ_CHECK(inside(h->off_patches, h->n_patches, sizeof(rp_patch)));
  FUZZ_CHECK(inside(h->off_buckets, h->n_buckets, sizeof(rp_bucket)));
  FUZZ_CHECK(inside(h->off_lists, h->n_lists, sizeof(uint32_t)));
  FUZZ_CHECK(inside(h->off_blob, h->blob_size, 1));
  FUZZ_CHECK(inside(h->off_strings, h->strings_size, 1));
  FUZZ_CHECK(h->n_events == t.calls.size());
  const auto* ev = reinterpret_cast<const rp_event*>(t.bytes.data() + h->off_events);
  const auto* pa = reinterpret_cast<const rp_patch*>(t.bytes.data() + h->off_patches);
  for (uint32_t i = 0; i < h->n_events; ++i) {
    FUZZ_CHECK(ev[i].patch_first <= h->n_patches);
    FUZZ_CHECK(ev[i].patch_count <= h->n_patches - ev[i].patch_first);
    FUZZ_CHECK(ev[i].id.path < h->n_paths);
    FUZZ_CHECK(ev[i].role < h->n_roles);
  }
  for (uint32_t i = 0; i < h->n_patches; ++i) {
    FUZZ_CHECK(pa[i].data <= h->blob_size && pa[i].len <= h->blob_size - pa[i].data);
    FUZZ_CHECK(pa[i].buf < RP_BUF_COUNT);
  }
  const auto* bk = reinterpret_cast<const rp_bucket*>(t.bytes.data() + h->off_buckets);
  for (uint32_t i = 0; i < h->n_buckets; ++i) {
    if (bk[i].hash == 0) continue;
    FUZZ_CHECK(bk[i].list <= h->n_lists && bk[i].count <= h->n_lists - bk[i].list);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 'i') {
    auto r = parse_injection(rest);
    if (r) FUZZ_CHECK(r->seq || !r->cmd.empty() || !r->cls.empty() || !r->call.empty());
    return 0;
  }
  if (data[0] == 'l') {
    auto log = parse_log(ByteView(data + 1, size - 1));
    if (log) {
      for (const LogRecord& r : log->records) {
        for (const LogBuffer& b : r.bufs)
          FUZZ_CHECK(b.pre.size() <= b.size && b.post.size() <= b.size);
      }
    }
    return 0;
  }
  auto rec = recording_from_memory(std::string(rest), "fuzz.trace");
  if (!rec) return 0;
  // Two tables per input (a table costs most of an execution): with one of three kinds of
  // injection, which the selector byte picks (an injection that matches nothing fails the whole
  // table, so they are not combined), and with none.
  static const char* const kSpecs[] = {"seq=1,status=0x56",
                                       "call=NV_ESC_RM_CONTROL,nth=2,errno=EIO",
                                       "seq=2,member=params+0x4,value=9"};
  auto inj = parse_injection(kSpecs[data[0] % 3]);
  FUZZ_CHECK(inj);
  TableOptions o;
  o.injections.push_back(*inj);
  auto t = build_answer_table(*rec, o);
  if (t) check_table(*t);
  t = build_answer_table(*rec, TableOptions{});
  if (t) check_table(*t);
  return 0;
}
