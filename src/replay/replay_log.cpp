#include "replay/replay_log.hpp"

#include <fmt/format.h>
#include <algorithm>

namespace cudatool::replay {
namespace {

constexpr uint64_t kHead = 64;  // the first record starts here (session.cpp)

Error damaged(uint64_t off, std::string field, std::string reason) {
  return make_error(fmt::format("replay log record at 0x{:x}", off), std::move(field), off,
                    std::move(reason));
}

}  // namespace

Result<ReplayLog> parse_log(ByteView bytes) {
  ReplayLog log;
  Cursor head(bytes);
  uint64_t magic = head.u64(), write_off = head.u64(), capacity = head.u64();
  log.lost = head.u64();
  if (!head.ok() || magic != RP_LOG_MAGIC) {
    return make_error("replay log", "magic", 0, "not a replay log");
  }
  (void)capacity;
  uint64_t end = std::min<uint64_t>(write_off, bytes.size());
  uint64_t off = kHead;
  while (off < end) {
    if (sizeof(rp_log_rec) > end - off) {
      log.diagnostics.report(damaged(off, "size", "record header runs past the end"));
      break;
    }
    Cursor c(bytes, off);
    uint32_t size = c.u32();
    uint32_t sys = c.u32();
    if (size < sizeof(rp_log_rec) || size % 8 != 0 || size > end - off) {
      log.diagnostics.report(damaged(off, "size", fmt::format("bad record size {}", size)));
      break;
    }
    if (sys == 0) {  // reserved, never committed
      ++log.incomplete;
      off += size;
      continue;
    }
    LogRecord r;
    r.sys = sys;
    r.seq = c.u64();
    r.t_ns = c.u64();
    r.dur_ns = c.u64();
    r.pid = c.s32();
    r.tid = c.s32();
    r.fd = c.s32();
    r.path = c.s32();
    r.req = c.u32();
    r.outcome = c.u32();
    r.ret = c.s64();
    r.err = c.s32();
    r.answered = c.s32();
    r.addr = c.u64();
    r.len = c.u64();
    r.prot = c.u64();
    r.flags = c.u64();
    r.off = c.u64();
    r.child = c.s32();
    uint32_t nbufs = c.u32();
    c.seek(off + sizeof(rp_log_rec));
    ByteView rec = *bytes.sub(off, size);
    Cursor b(rec, sizeof(rp_log_rec));
    bool bad = false;
    for (uint32_t i = 0; i < nbufs && !bad; ++i) {
      LogBuffer lb;
      uint16_t role = b.u16();
      uint16_t flags = b.u16();
      lb.ptr_off = b.u32();
      lb.addr = b.u64();
      lb.size = b.u32();
      uint32_t pre = b.u32(), post = b.u32();
      uint32_t bound = b.u32();
      if ((flags & RP_LOG_BUF_BOUNDED) != 0) lb.bound = bound;
      if ((flags & RP_LOG_BUF_OVER_CAP) != 0) lb.over = bound;
      lb.class_sized = (flags & RP_LOG_BUF_CLASS_SIZED) != 0;
      uint64_t room = (2 * static_cast<uint64_t>(lb.size) + 7) & ~uint64_t{7};
      if (!b.ok() || pre > lb.size || post > lb.size || room > b.remaining()) {
        log.diagnostics.report(
            damaged(off, fmt::format("bufs[{}]", i), "buffer runs past the record"));
        bad = true;
        break;
      }
      lb.role = role & 0xff;
      lb.parent = static_cast<uint8_t>(role >> 8);
      ByteView data = b.bytes(room);
      lb.pre.assign(data.data(), data.data() + pre);
      lb.post.assign(data.data() + lb.size, data.data() + lb.size + post);
      r.bufs.push_back(std::move(lb));
    }
    if (!bad &&
        (sys == RP_LOG_ENV || sys == RP_OPEN || sys == RP_LOG_REFUSED || sys == RP_LOG_EXEC ||
         sys == RP_LOG_IMAGE) &&
        b.remaining() > 0) {
      auto s = rec.cstring(b.pos());
      if (s) r.text = std::string(*s);
    }
    if (!bad && sys == RP_LOG_LAUNCH) {
      ByteView rest = b.bytes(b.remaining());
      r.payload.assign(rest.data(), rest.data() + rest.size());
    }
    if (!bad) log.records.push_back(std::move(r));
    off += size;
  }
  std::stable_sort(log.records.begin(), log.records.end(),
                   [](const LogRecord& a, const LogRecord& b) { return a.seq < b.seq; });
  return log;
}

}  // namespace cudatool::replay
