// Fuzzes the RM/UVM ioctl decoders (trace/decode.hpp): bytes → one trace event → decode → text and
// JSON renderings. Input layout (all little-endian; fuzz/seeds/rm_decode_fuzzer.sh writes the
// real captures in it):
//   u8 branch index, u8 device (index into kPaths), u8 flags (bit 0: nested role "xfer" instead
//   of "params"; bit 1: drop the argument), u64 request, u16 argument length, argument bytes,
//   then the nested buffer (the rest).
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/bytes.hpp"
#include "base/json_writer.hpp"
#include "trace/decode.hpp"

namespace {

constexpr const char* kPaths[] = {"/dev/nvidiactl",
                                  "/dev/nvidia0",
                                  "/dev/nvidia-uvm",
                                  "/dev/nvidia-uvm-tools",
                                  "/dev/nvidia-modeset",
                                  "/dev/null",
                                  "",
                                  "/dev/nvidia-caps/nvidia-cap1"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  ByteView in(data, size);
  Cursor c(in);
  uint8_t branch = c.u8();
  uint8_t device = c.u8();
  uint8_t flags = c.u8();
  uint64_t request = c.u64();
  uint16_t arg_len = c.u16();
  ByteView arg = c.bytes(std::min<uint64_t>(arg_len, c.remaining()));
  ByteView rest = in.clamp(c.pos(), size);

  auto branches = rm::all_branches();
  const rm::Tables& t = branches[branch % branches.size()];
  trace::Event ev;
  ev.sys = trace::Sys::kIoctl;
  ev.path = kPaths[device % (sizeof kPaths / sizeof kPaths[0])];
  ev.request = request;
  if ((flags & 2) == 0) {
    trace::Buffer b;
    b.role = "arg";
    b.after.assign(arg.data(), arg.data() + arg.size());
    ev.arg = std::move(b);
  }
  if (!rest.empty()) {
    trace::Buffer n;
    n.role = (flags & 1) ? "xfer" : "params";
    n.before.assign(rest.data(), rest.data() + rest.size());
    ev.nested.push_back(std::move(n));
  }
  trace::Decoded d;
  trace::decode_event(t, ev, d);
  std::string line = trace::format_line(d);
  std::string json;
  JsonWriter w(json, false);
  trace::write_json(w, d);
  return 0;
}
