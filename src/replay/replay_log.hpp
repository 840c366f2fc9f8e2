// The log the replay shims write (replay_abi.h), read back: one record per replayed call. The
// file is shared with the replayed program, so it is read as untrusted input (ByteView, every
// size checked against what remains); damage is reported and reading stops there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"
#include "record/shim_abi/replay_abi.h"

namespace cudatool::replay {

struct LogBuffer {
  uint16_t role = 0;  // rp_buf; RP_BUF_MEMBER with the parent buffer in `parent`
  uint8_t parent = 0;
  uint32_t ptr_off = 0;
  uint64_t addr = 0;
  uint32_t size = 0;
  uint32_t bound = 0;        // read with this bound (no size known): the trace's size, bounded
  uint32_t over = 0;         // not read, this size being over NVTR_MAX_BUFFER
  bool class_sized = false;  // alloc parameters with paramsSize 0, sized by the class
  std::vector<uint8_t> pre, post;
};

struct LogRecord {
  uint32_t sys = 0;  // rp_sys or RP_LOG_*
  uint64_t seq = 0;
  uint64_t t_ns = 0, dur_ns = 0;
  int32_t pid = 0, tid = 0, fd = -1, path = -1;
  uint32_t req = 0;
  uint32_t outcome = 0;
  int64_t ret = 0;
  int32_t err = 0;
  int32_t answered = -1;
  uint64_t addr = 0, len = 0, prot = 0, flags = 0, off = 0;
  int32_t child = 0;
  std::vector<LogBuffer> bufs;
  std::string text;              // environment calls, refusals, CUDA images: the path or message
  std::vector<uint8_t> payload;  // RP_LOG_LAUNCH: rp_log_launch, the code, c[0]
};

struct ReplayLog {
  std::vector<LogRecord> records;  // sorted by seq
  uint64_t lost = 0;               // records that did not fit
  uint64_t incomplete = 0;         // reserved, never committed (a crash inside the shim)
  Diagnostics diagnostics;
};

// Reads a whole log file image. Errors: not a log (magic).
Result<ReplayLog> parse_log(ByteView bytes);

}  // namespace cudatool::replay
