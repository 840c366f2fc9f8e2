// Function events (trace format v4): the records of a FunctionBlock decoded, and written.
//
// A block's data is a run of records, each a tag byte and LEB128 numbers (u: unsigned,
// s: zigzag-signed; the layout the in-process recorder writes, src/record/funcrec/funcrec_abi.h):
//
//   1 ENTER   u function, u dt, s caller delta   a call; caller = the return address, as a delta
//                                                 from the previous ENTER's caller in the block
//   2 TAIL    u function, u dt                   entered by a tail jump from the open function
//   3 RETURN  u dt, s rax                        the innermost open function returned rax
//   4 UNWIND  u dt, u n                          the n innermost open functions ended without
//                                                 returning (longjmp, thread or process end)
//   5 DEVICE  u dt, u seq                        the device call `seq` was made here
//   6 LOST    u dt, u n                          n calls were not recorded
//   7 INHERIT u n, n x u function                a forked child starts inside these open
//                                                 functions, outermost first
//
// dt is ns since the previous record of the block (the first: since the block's t).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "trace/event.hpp"

namespace cudatool::trace {

struct FunctionEvent {
  enum class Kind : uint8_t { kEnter = 1, kTail, kReturn, kUnwind, kDevice, kLost, kInherit };
  Kind kind = Kind::kEnter;
  uint64_t t_ns = 0;      // since the trace's t0
  uint32_t function = 0;  // kEnter, kTail, kInherit: the number in the block's table
  // kEnter: the caller's return address; kReturn: rax; kUnwind, kLost: the count; kDevice: seq
  uint64_t value = 0;
};
std::string_view function_event_kind_name(FunctionEvent::Kind k);  // "enter", "tail", …

// Appends the events of `b`'s records to `out` (kInherit: one event per inherited function).
// Stops at the first record that cannot be read (an unknown tag, a number cut by the end, a
// number over 64 bits, an INHERIT longer than the block): the error names the block (pid, tid,
// part), the record's index and its offset in the data; the events before it are kept.
Status decode_function_block(const FunctionBlock& b, std::vector<FunctionEvent>& out);

// Rewrites the seqs of `b`'s DEVICE records through `seq_of` (a replay numbers its trace's events
// anew); a seq it gives nullopt for loses its record. The other records are written back as they
// were. A record that cannot be read: the error of decode_function_block, and `b` cut before it.
Status remap_device_seqs(FunctionBlock& b,
                         const std::function<std::optional<uint64_t>(uint64_t)>& seq_of);

// A device call a tracer outside the process saw (ptrace mode), by its thread and time.
struct TimedDeviceCall {
  int32_t pid = 0, tid = 0;
  uint64_t t_ns = 0;  // since the trace's t0, on the clock the records are timed by
  uint64_t seq = 0;
};
// Adds a DEVICE record for each call to the blocks of its thread (pid, tid), where it falls among
// their records in time: a thread's part takes the calls made before the next part's first
// record. Calls of threads without blocks are left out; so are those of a block that cannot be
// decoded (left as it was; the first such error is returned, the other blocks done).
Status place_device_calls(std::vector<FunctionBlock>& blocks, std::vector<TimedDeviceCall> calls);

// Builds a block's data record by record (tests, fuzz seeds, the recorders' C++ twin).
class FunctionRecordWriter {
 public:
  explicit FunctionRecordWriter(uint64_t t0_ns) : last_t_(t0_ns) {}
  void enter(uint32_t function, uint64_t t, uint64_t caller);
  void tail(uint32_t function, uint64_t t);
  void ret(uint64_t t, uint64_t rax);
  void unwind(uint64_t t, uint64_t n);
  void device(uint64_t t, uint64_t seq);
  void lost(uint64_t t, uint64_t n);
  void inherit(const std::vector<uint32_t>& functions);
  [[nodiscard]] const std::vector<uint8_t>& data() const { return data_; }
  [[nodiscard]] uint64_t records() const { return records_; }

 private:
  void u(uint64_t v);
  void s(int64_t v);
  void dt(uint64_t t);
  std::vector<uint8_t> data_;
  uint64_t last_t_ = 0, last_caller_ = 0, records_ = 0;
};

// A table's starts as LEB128 deltas (the first from 0), and back. Decoding refuses a start that
// does not rise (two functions at one address) and numbers over 64 bits.
std::vector<uint8_t> encode_function_starts(const std::vector<uint64_t>& starts);
Status decode_function_starts(const std::vector<uint8_t>& data, std::vector<uint64_t>& out);

}  // namespace cudatool::trace
