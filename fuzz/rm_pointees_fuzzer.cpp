// Fuzzes the recorders' planner for the second level (rm/nv_ioctl_abi.h over the generated rules
// of rm/generated/rm_params.h): random argument and parameter bytes, counts and sizes, through
// nvtr_plan_arg / nvtr_plan_nested / nvtr_plan_xfer_inner / nvtr_plan_pointees, then the
// decoder over an event holding those buffers. Input layout (little-endian; the seeds in
// fuzz/corpus/rm_pointees_fuzzer are calls of tests/fixtures/nvparams in it):
//   u8 branch index, u8 max plans (1..NVTR_MAX_POINTEES), u32 request, u16 argument length,
//   argument bytes, u16 XFER target length, its bytes, then the parameter bytes (the rest).
// Invariants: no read outside the given bytes (each piece is its own heap allocation, so ASan
// sees one byte past), no more plans than asked, every plan of a rule of the branch, inside its
// array, sized count x element unless bounded, never NULL or empty; a class-sized plan has the
// size of the decoder's table.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "fuzz_check.hpp"
#include "rm/nv_ioctl_abi.h"
#include "rm/tables.hpp"
#include "trace/decode.hpp"

namespace {

std::vector<uint8_t> take(cudatool::Cursor& c, uint64_t n) {
  cudatool::ByteView v = c.bytes(std::min<uint64_t>(n, c.remaining()));
  return std::vector<uint8_t>(v.data(), v.data() + v.size());
}

// A heap copy of exactly v.size() bytes (new[0] for none): a read one byte past is ASan's.
uint8_t* exact_copy(const std::vector<uint8_t>& v) {
  auto* p = new uint8_t[v.size()];
  if (!v.empty()) std::memcpy(p, v.data(), v.size());
  return p;
}

void check_pointees(const nvtr_rm_branch* rm, const cudatool::rm::Tables& t, const nvtr_buf_plan& p,
                    const std::vector<uint8_t>& bytes, int max, cudatool::trace::Event& ev) {
  nvtr_buf_plan out[NVTR_MAX_POINTEES];
  int dropped = -1;
  // An exactly sized copy: a read past the end is a heap overflow ASan reports.
  uint8_t* copy = exact_copy(bytes);
  int n = nvtr_plan_pointees(rm, &p, copy, bytes.size(), out, max, &dropped);
  delete[] copy;
  FUZZ_CHECK(n >= 0 && n <= max && dropped >= 0);
  auto kind = static_cast<cudatool::rm::PointerKind>(p.rule_kind);
  for (int i = 0; i < n; ++i) {
    const nvtr_buf_plan& q = out[i];
    FUZZ_CHECK(q.role != nullptr && std::strncmp(q.role, "params.", 7) == 0);
    FUZZ_CHECK(q.addr != 0 && q.size != 0);
    char role[256];
    size_t len = nvtr_role_format(&q, role, sizeof role);
    FUZZ_CHECK(len < sizeof role && std::strlen(role) == len);
    const cudatool::rm::PointerRule* r = t.find_pointer_rule(kind, p.rule_key, role);
    FUZZ_CHECK(r != nullptr);
    FUZZ_CHECK(bytes.size() >= r->params_size);
    if (r->array_off != cudatool::rm::kNoMember) {
      FUZZ_CHECK(q.index >= 0 && static_cast<uint32_t>(q.index) < r->array_max);
    } else {
      FUZZ_CHECK(q.index == -1);
    }
    if ((r->flags & cudatool::rm::kPointerBounded) != 0) {
      FUZZ_CHECK(q.bounded == 1 && q.size == NVTR_UVM_BOUNDED_READ);
    } else if (q.elem != 0 && q.count > UINT64_MAX / q.elem) {
      FUZZ_CHECK(q.size == UINT64_MAX);
    } else {
      FUZZ_CHECK(q.size == q.count * q.elem && q.elem == r->elem_size);
    }
    cudatool::trace::Buffer b;
    b.role = role;
    b.addr = q.addr;
    b.size = q.size;
    uint64_t keep = std::min<uint64_t>(q.size, 4096);
    b.after.assign(bytes.begin(),
                   bytes.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(keep, bytes.size())));
    ev.nested.push_back(std::move(b));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  ByteView in(data, size);
  Cursor c(in);
  uint8_t branch = c.u8();
  int max = 1 + c.u8() % NVTR_MAX_POINTEES;
  uint32_t req = c.u32();
  std::vector<uint8_t> arg = take(c, c.u16());
  std::vector<uint8_t> xfer = take(c, c.u16());
  std::vector<uint8_t> params = take(c, c.remaining());

  auto branches = rm::all_branches();
  size_t b = branch % branches.size();
  const rm::Tables& t = branches[b];
  const nvtr_rm_branch* rm = &nvtr_rm_branches[b];
  trace::Event ev;
  ev.sys = trace::Sys::kIoctl;
  ev.path = "/dev/nvidiactl";
  ev.request = req;
  trace::Buffer a;
  a.role = "arg";
  a.after = arg;
  ev.arg = a;

  nvtr_buf_plan first[2];
  uint8_t* arg_copy = exact_copy(arg);
  int n = nvtr_plan_nested(NVTR_DEV_RM, req, arg_copy, arg.size(), rm, first);
  FUZZ_CHECK(n >= 0 && n <= 2);
  if (n >= 1 && std::strcmp(first[0].role, "xfer") == 0) {
    trace::Buffer x;
    x.role = "xfer";
    x.after = xfer;
    ev.nested.push_back(x);
    uint8_t* xfer_copy = exact_copy(xfer);
    n = nvtr_plan_xfer_inner(arg_copy, xfer_copy, xfer.size(), rm, first);
    delete[] xfer_copy;
    FUZZ_CHECK(n >= 0 && n <= 2);
  }
  delete[] arg_copy;
  for (int i = 0; i < n; ++i) {
    const nvtr_buf_plan& p = first[i];
    if (p.class_sized != 0) {
      const rm::ClassEntry* e = t.find_class(p.rule_key);
      FUZZ_CHECK(e != nullptr && e->alloc_params_size > 0 &&
                 p.size == static_cast<uint64_t>(e->alloc_params_size));
    }
    if (std::strcmp(p.role, "params") != 0) continue;
    trace::Buffer pb;
    pb.role = "params";
    pb.after = params;
    ev.nested.push_back(pb);
    check_pointees(rm, t, p, params, max, ev);
  }
  // The decoder over the same event: the buffers behind pointers decoded by their rules.
  trace::Decoded d;
  trace::decode_event(t, ev, d);
  std::string line = trace::format_line(d);
  FUZZ_CHECK(!line.empty());
  return 0;
}
