#include "record/tracee_memory.hpp"

#include <sys/uio.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstring>
#include <iterator>

namespace cudatool::record {
namespace {

constexpr uint64_t kPage = 4096;
constexpr int kMaxIov = 1024;  // IOV_MAX

}  // namespace

ReadResult read_tracee(int pid, uint64_t addr, uint8_t* out, uint64_t size) {
  ReadResult res;
  if (size == 0) return res;
  if (addr == 0) {
    res.err = EFAULT;
    return res;
  }
  if (addr + size < addr) {
    res.err = EFAULT;
    return res;
  }
  iovec remote[kMaxIov];
  while (res.got < size) {
    // One remote iovec per page, so that the kernel stops exactly at the first unreadable page.
    int n = 0;
    uint64_t a = addr + res.got, left = size - res.got, planned = 0;
    while (n < kMaxIov && left > 0) {
      uint64_t in_page = kPage - (a % kPage);
      uint64_t take = in_page < left ? in_page : left;
      remote[n].iov_base = reinterpret_cast<void*>(a);
      remote[n].iov_len = take;
      ++n;
      a += take;
      left -= take;
      planned += take;
    }
    iovec local{out + res.got, planned};
    ssize_t r = process_vm_readv(pid, &local, 1, remote, static_cast<unsigned long>(n), 0);
    if (r < 0) {
      res.err = errno;
      return res;
    }
    res.got += static_cast<uint64_t>(r);
    if (static_cast<uint64_t>(r) < planned) {
      // Ask again from the page that failed, for its errno.
      uint8_t probe = 0;
      iovec l1{&probe, 1}, r1{reinterpret_cast<void*>(addr + res.got), 1};
      res.err = process_vm_readv(pid, &l1, 1, &r1, 1, 0) < 0 ? errno : EFAULT;
      return res;
    }
  }
  return res;
}

std::optional<std::string> read_tracee_string(int pid, uint64_t addr, size_t max) {
  std::string s;
  uint8_t buf[kPage];
  while (s.size() < max) {
    uint64_t a = addr + s.size();
    uint64_t take = kPage - (a % kPage);
    if (take > max - s.size()) take = max - s.size();
    ReadResult r = read_tracee(pid, a, buf, take);
    const void* nul = std::memchr(buf, 0, r.got);
    if (nul != nullptr) {
      s.append(reinterpret_cast<const char*>(buf), static_cast<const uint8_t*>(nul) - buf);
      return s;
    }
    if (r.got < take) return std::nullopt;
    s.append(reinterpret_cast<const char*>(buf), take);
  }
  return std::nullopt;
}

void fill_buffers(int pid, const nvtr_buf_plan* plans, Buffer* const* buffers, size_t n,
                  uint64_t cap, bool after) {
  auto reader = [pid](uint64_t a, uint8_t* o, uint64_t len) { return read_tracee(pid, a, o, len); };
  iovec local[16], remote[64];
  size_t nl = 0, nr = 0;
  uint64_t total = 0;
  bool fits = n <= std::size(local);
  for (size_t i = 0; i < n && fits; ++i) {
    const nvtr_buf_plan& p = plans[i];
    Buffer& b = *buffers[i];
    if (p.size == 0 || p.size > cap || p.addr == 0 || p.addr + p.size < p.addr) {
      fill_buffer(reader, p, cap, after, b);  // nothing to read, or an error without reading
      continue;
    }
    set_identity(p, b);
    std::vector<uint8_t>& bytes = after ? b.after : b.before;
    (after ? b.after_error : b.before_error).clear();
    bytes.resize(p.size);
    local[nl++] = {bytes.data(), p.size};
    for (uint64_t a = p.addr, left = p.size; left > 0 && fits;) {
      uint64_t take = kPage - (a % kPage);
      if (take > left) take = left;
      if (nr == std::size(remote)) {
        fits = false;
        break;
      }
      remote[nr++] = {reinterpret_cast<void*>(a), take};
      a += take;
      left -= take;
    }
    total += p.size;
  }
  if (fits && nr > 0) {
    ssize_t r = process_vm_readv(pid, local, nl, remote, nr, 0);
    if (r >= 0 && static_cast<uint64_t>(r) == total) return;
  } else if (fits) {
    return;  // nothing needed reading
  }
  // Something is not readable (or too many pieces): one buffer at a time, with exact errors.
  for (size_t i = 0; i < n; ++i) fill_buffer(reader, plans[i], cap, after, *buffers[i]);
}

void set_identity(const nvtr_buf_plan& plan, Buffer& b) {
  if (plan.index >= 0) {
    char role[256];
    b.role.assign(role, nvtr_role_format(&plan, role, sizeof role));
  } else {
    b.role = plan.role;
  }
  b.addr = plan.addr;
  b.size = plan.size;
  b.bounded = plan.bounded != 0;
  if (plan.class_sized != 0) {
    b.sized_by = "class";
  } else {
    b.sized_by.clear();
  }
}

std::string pointee_unrecorded(const nvtr_buf_plan& plan, uint64_t cap) {
  if (plan.size <= cap || std::strchr(plan.role, '.') == nullptr) return {};
  return fmt::format("count {} x {} bytes over --max-buffer ({})", plan.count, plan.elem, cap);
}

std::string errno_name(int err) {
  const char* n = strerrorname_np(err);
  return n != nullptr ? std::string(n) : fmt::format("errno {}", err);
}

std::string over_cap_error(uint64_t size, uint64_t cap) {
  return fmt::format("size {:#x} over cap {:#x}", size, cap);
}

std::string partial_error(int err, uint64_t got, uint64_t size) {
  std::string name = errno_name(err != 0 ? err : EFAULT);
  if (got == 0) return name;
  return fmt::format("{} after {} of {} bytes", name, got, size);
}

}  // namespace cudatool::record
