// Synthetic large traces for `cudatool ab` benchmarks: the pattern of a real trace repeated until
// N events, each repetition with fresh RM handles and user pointers, as another run of the same
// program would have them.
//
//   ab_gen IN.trace OUT.trace --events N [--run K] [--mutate-status INDEX] [--drop INDEX]
//          [--stop INDEX]
//
// --run K picks the handle and pointer values of one "run": two files made with different K from
// the same IN differ in every handle, pointer and time but are the same conversation (ab must
// call them equivalent). --mutate-status sets the NV_STATUS of the RM control at or after event
// INDEX to NV_ERR_INVALID_ARGUMENT; --drop leaves event INDEX out; --stop ends the trace before
// event INDEX (a run that stopped early; its trailer says exit status 1).
//
// Handles are the values RM alloc/free/control calls name (trace::decode_event's h_client,
// h_parent, h_object), replaced wherever they occur as aligned 32-bit words of any buffer;
// pointers are aligned 64-bit words in the user range 0x7f0000000000–0x800000000000 (stacks,
// mmap areas), shifted by a page-aligned amount per repetition and run.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/bytes.hpp"
#include "trace/decode.hpp"
#include "trace/trace_file.hpp"

using namespace cudatool;

namespace {

constexpr uint64_t kLow = 0x7f0000000000ULL, kHigh = 0x800000000000ULL;

struct Options {
  std::string in, out;
  uint64_t events = 100000;
  uint64_t run = 0;
  int64_t mutate_status = -1;
  int64_t drop = -1;
  int64_t stop = -1;
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: ab_gen IN.trace OUT.trace --events N [--run K] [--mutate-status INDEX] "
               "[--drop INDEX] [--stop INDEX]\n");
  std::exit(2);
}

uint32_t new_handle(uint32_t h, uint64_t rep, uint64_t run) {
  // Client handles (0xc1d0….) keep their prefix, as RM's do; others move in their 24 bits.
  if ((h >> 16) == 0xc1d0) return 0xc1d00000u | ((h + rep * 64 + run * 7) & 0xffffu);
  return (h & 0xff000000u) | ((h + rep * 0x1000 + run * 0x100000) & 0x00ffffffu);
}

uint64_t new_pointer(uint64_t p, uint64_t rep, uint64_t run) {
  uint64_t delta = (rep * 0x200 + run * 0x3456) << 12;
  uint64_t q = p + delta;
  return q < kHigh ? q : p;
}

void rewrite(std::vector<uint8_t>& b, const std::set<uint32_t>& handles, uint64_t rep,
             uint64_t run) {
  for (size_t off = 0; off + 8 <= b.size(); off += 8) {
    uint64_t v = load_le<uint64_t>(b.data() + off);
    if (v >= kLow && v < kHigh) store_le<uint64_t>(b.data() + off, new_pointer(v, rep, run));
  }
  for (size_t off = 0; off + 4 <= b.size(); off += 4) {
    uint32_t v = load_le<uint32_t>(b.data() + off);
    if (v >= 0x10000 && handles.count(v))
      store_le<uint32_t>(b.data() + off, new_handle(v, rep, run));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> uint64_t {
      if (i + 1 >= argc) usage();
      return std::strtoull(argv[++i], nullptr, 0);
    };
    if (a == "--events") {
      o.events = value();
    } else if (a == "--run") {
      o.run = value();
    } else if (a == "--mutate-status") {
      o.mutate_status = static_cast<int64_t>(value());
    } else if (a == "--drop") {
      o.drop = static_cast<int64_t>(value());
    } else if (a == "--stop") {
      o.stop = static_cast<int64_t>(value());
    } else if (!a.empty() && a[0] == '-') {
      usage();
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 2) usage();
  o.in = pos[0];
  o.out = pos[1];

  auto r = trace::TraceReader::open(o.in);
  if (!r) {
    std::fprintf(stderr, "ab_gen: %s\n", r.error().message().c_str());
    return 2;
  }
  trace::Header header = (*r)->header();
  const rm::Tables& t = rm::tables_for_driver(header.driver_version.value_or(""));
  std::vector<trace::Event> pattern;
  std::set<uint32_t> handles;
  trace::Event ev;
  trace::Decoded d;
  while ((*r)->next(ev)) {
    trace::decode_event(t, ev, d);
    for (auto h : {d.h_client, d.h_parent, d.h_object}) {
      if (h && *h >= 0x10000) handles.insert(*h);
    }
    pattern.push_back(ev);
  }
  if (pattern.empty()) {
    std::fprintf(stderr, "ab_gen: %s has no events\n", o.in.c_str());
    return 2;
  }
  const rm::StructEntry* nvos54 = t.find_struct("NVOS54_PARAMETERS");
  const rm::FieldEntry* status = nvos54 ? t.find_field(*nvos54, "status") : nullptr;

  auto w = trace::TraceWriter::create(o.out);
  if (!w) {
    std::fprintf(stderr, "ab_gen: %s\n", w.error().message().c_str());
    return 2;
  }
  header.argv = {"ab_gen", o.in, "--run", std::to_string(o.run)};
  header.source = o.in;
  if (!(*w)->write_header(header)) return 2;
  uint64_t written = 0, t_ns = 0;
  bool mutated = false;
  for (uint64_t i = 0; written < o.events; ++i) {
    uint64_t rep = i / pattern.size();
    trace::Event e = pattern[i % pattern.size()];
    if (static_cast<int64_t>(i) == o.drop) continue;
    if (static_cast<int64_t>(written) == o.stop) break;
    e.seq = written;
    t_ns += 20000 + (i * 7919 + o.run * 104729) % 5000;  // times differ between runs
    e.t_ns = t_ns;
    e.tid = static_cast<int32_t>(1000 + o.run);
    e.pid = e.tid;
    if (e.arg) {
      rewrite(e.arg->before, handles, rep, o.run);
      rewrite(e.arg->after, handles, rep, o.run);
      if (e.arg->addr >= kLow && e.arg->addr < kHigh)
        e.arg->addr = new_pointer(e.arg->addr, rep, o.run);
    }
    for (trace::Buffer& b : e.nested) {
      rewrite(b.before, handles, rep, o.run);
      rewrite(b.after, handles, rep, o.run);
      if (b.addr >= kLow && b.addr < kHigh) b.addr = new_pointer(b.addr, rep, o.run);
    }
    if (e.sys == trace::Sys::kMmap || e.sys == trace::Sys::kMunmap) {
      if (e.addr >= kLow && e.addr < kHigh) e.addr = new_pointer(e.addr, rep, o.run);
      uint64_t ret = static_cast<uint64_t>(e.ret);
      if (ret >= kLow && ret < kHigh) e.ret = static_cast<int64_t>(new_pointer(ret, rep, o.run));
    }
    if (!mutated && o.mutate_status >= 0 && static_cast<int64_t>(written) >= o.mutate_status &&
        status != nullptr && e.sys == trace::Sys::kIoctl && (e.request & 0xffff) == 0x462a &&
        e.arg && e.arg->after.size() >= status->offset + 4) {
      store_le<uint32_t>(e.arg->after.data() + status->offset, 0x1f);  // NV_ERR_INVALID_ARGUMENT
      mutated = true;
      std::fprintf(stderr, "ab_gen: status of event %llu set to NV_ERR_INVALID_ARGUMENT\n",
                   static_cast<unsigned long long>(written));
    }
    if (!(*w)->write_event(e)) return 2;
    ++written;
  }
  trace::Trailer tr;
  tr.events = written;
  tr.reason = "exit";
  tr.exit_status = o.stop >= 0 ? 1 : 0;
  if (!(*w)->write_trailer(tr) || !(*w)->close()) return 2;
  return 0;
}
