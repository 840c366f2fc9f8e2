// The compute launches of a replay (docs/replay.md, "The fake GPU"): the fake GPU logs each launch
// it completed without executing it (RP_LOG_LAUNCH: the QMD's figures, the code at the program
// address, constant buffer 0) and each CUDA image file the program opened (RP_LOG_IMAGE); the
// kernel is named by its code among those images, and its parameters are cut from c[0].
#include <fmt/format.h>
#include <algorithm>

#include "replay/session_parts.hpp"

namespace cudatool::replay {

namespace {

// rp_log_launch, field by field (the log is untrusted input): false when the payload is short.
bool read_launch(const std::vector<uint8_t>& payload, LaunchRecord& out) {
  ByteView v(payload.data(), payload.size());
  Cursor c(v, 0);
  rp_log_launch& l = out.launch;
  l.channel = c.u32();
  l.cls = c.u32();
  l.qmd_va = c.u64();
  l.program = c.u64();
  for (uint32_t& g : l.grid) g = c.u32();
  for (uint32_t& b : l.block) b = c.u32();
  l.shared_bytes = c.u32();
  l.registers = c.u32();
  l.qmd_major = c.u32();
  l.qmd_minor = c.u32();
  l.cb0_va = c.u64();
  l.cb0_size = c.u32();
  l.code_len = c.u32();
  l.cb0_len = c.u32();
  l.pad = c.u32();
  if (!c.ok() || l.code_len > RP_LAUNCH_CODE || l.cb0_len > RP_LAUNCH_CB0 ||
      uint64_t{l.code_len} + l.cb0_len > c.remaining()) {
    return false;
  }
  ByteView code = c.bytes(l.code_len), cb0 = c.bytes(l.cb0_len);
  out.code.assign(code.data(), code.data() + code.size());
  out.cb0.assign(cb0.data(), cb0.data() + cb0.size());
  return true;
}

}  // namespace

void add_launches(const ReplayLog& log, ReplayReport& rep) {
  KernelIndex index;
  for (const LogRecord& r : log.records) {
    if (r.sys != RP_LOG_IMAGE || r.text.empty()) continue;
    if (std::find(rep.images.begin(), rep.images.end(), r.text) == rep.images.end()) {
      rep.images.push_back(r.text);
      index.add_file(r.text);
    }
  }
  for (const LogRecord& r : log.records) {
    if (r.sys != RP_LOG_LAUNCH) continue;
    LaunchRecord l;
    l.seq = r.seq;
    l.t_ns = r.t_ns;
    l.pid = r.pid;
    if (!read_launch(r.payload, l)) continue;
    l.kernel = index.match(ByteView(l.code.data(), l.code.size()));
    if (l.kernel) l.params = decode_params(*l.kernel, ByteView(l.cb0.data(), l.cb0.size()));
    rep.launches.push_back(std::move(l));
  }
}

std::string launch_line(const LaunchRecord& l) {
  const rp_log_launch& x = l.launch;
  std::string params;
  for (const LaunchParam& p : l.params) {
    params += params.empty() ? "" : ", ";
    params += p.value ? fmt::format("0x{:x}", *p.value)
                      : fmt::format("{} bytes at +0x{:x}", p.size, p.offset);
  }
  std::string name = l.kernel ? l.kernel->name : fmt::format("kernel at 0x{:x}", x.program);
  return fmt::format(
      "{} grid {}x{}x{} block {}x{}x{} shared {} B ({}) on channel 0x{:x} (class 0x{:x}){}", name,
      x.grid[0], x.grid[1], x.grid[2], x.block[0], x.block[1], x.block[2], x.shared_bytes,
      l.kernel ? "params " + (params.empty() ? std::string("none") : params)
               : "no image the program opened has its code",
      x.channel, x.cls, l.kernel && !l.kernel->image.empty() ? " — " + l.kernel->image : "");
}

}  // namespace cudatool::replay
