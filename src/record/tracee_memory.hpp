// Reading the memory of a traced process (process_vm_readv), page by page so that a buffer that
// runs into unmapped memory yields its readable prefix, never a crash or a wrong byte.
// Not /proc/PID/mem: it is cheaper per call here, but it reads through PROT_NONE pages
// (FOLL_FORCE) and would record bytes the program itself, and the driver, cannot read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rm/nv_ioctl_abi.h"
#include "trace/event.hpp"

namespace cudatool::record {

using trace::Buffer;

struct ReadResult {
  uint64_t got = 0;  // bytes read from the start
  int err = 0;       // errno of the first unreadable page when got < size
};

// Reads up to `size` bytes at `addr` of process `pid` into `out`.
ReadResult read_tracee(int pid, uint64_t addr, uint8_t* out, uint64_t size);

// A NUL-terminated string (a path) of at most `max` bytes; nothing when unreadable or too long.
std::optional<std::string> read_tracee_string(int pid, uint64_t addr, size_t max = 4096);

// "EFAULT", "ESRCH", … (the symbolic name; "errno 123" when it has none).
std::string errno_name(int err);

// Fills the `before` (or `after`) side of `b` as `plan` says: the bytes, or the reason they could
// not be read (size over the cap, a NULL or bad pointer, a prefix only).
// `reader(addr, out, size)` reads memory; it is read_tracee for one process, or a fake in tests.
template <class Reader>
void fill_buffer(Reader&& reader, const nvtr_buf_plan& plan, uint64_t cap, bool after, Buffer& b);

// Fills one side of several buffers of process `pid` with one process_vm_readv when they are all
// readable (the common case: one system call per stop instead of one per buffer); falls back to
// fill_buffer per buffer when one is not. plans[i] goes to buffers[i].
void fill_buffers(int pid, const nvtr_buf_plan* plans, Buffer* const* buffers, size_t n,
                  uint64_t cap, bool after);

// Text of the errors written into Buffer::before_error / after_error.
std::string over_cap_error(uint64_t size, uint64_t cap);
std::string partial_error(int err, uint64_t got, uint64_t size);

// What the plan says of the buffer whatever its bytes: role ("params.list[3].ptr" for an
// element of an array rule), address, size, bound, and "class" in sized_by for RM alloc
// parameters sized by the class.
void set_identity(const nvtr_buf_plan& plan, Buffer& b);

// Why a second-level buffer (role "params.<member>") was not read, for Event::unrecorded; ""
// when it was, or when the plan is not of the second level.
std::string pointee_unrecorded(const nvtr_buf_plan& plan, uint64_t cap);

template <class Reader>
void fill_buffer(Reader&& reader, const nvtr_buf_plan& plan, uint64_t cap, bool after, Buffer& b) {
  set_identity(plan, b);
  std::vector<uint8_t>& bytes = after ? b.after : b.before;
  std::string& error = after ? b.after_error : b.before_error;
  bytes.clear();
  error.clear();
  if (plan.size == 0) return;
  if (plan.size > cap) {
    error = over_cap_error(plan.size, cap);
    return;
  }
  bytes.resize(plan.size);
  ReadResult r = reader(plan.addr, bytes.data(), plan.size);
  bytes.resize(r.got);
  if (r.got == plan.size) return;
  if (plan.bounded && r.got > 0) return;  // a bound: the readable prefix is the answer
  error = partial_error(r.err, r.got, plan.size);
}

}  // namespace cudatool::record
