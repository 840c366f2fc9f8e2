// "Device calls per API call" (`cudatool stats`, docs/decode.md): the device calls of a trace
// grouped by the CUDA API call in progress when each was made (StackResolver::api_of).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trace/event.hpp"

namespace cudatool::trace {

struct ApiRow {
  std::string api;
  uint64_t device_calls = 0;  // open, close, dup, ioctl, mmap, munmap of a device
  uint64_t ioctls = 0;
  uint64_t failed = 0;  // errno, or an NV_STATUS other than NV_OK
  uint64_t dur_total_ns = 0;
  uint64_t threads = 0;  // distinct (pid, tid)
  // The decoded calls under it ("NV_ESC_RM_ALLOC"), most frequent first.
  std::vector<std::pair<std::string, uint64_t>> calls;
};

struct ApiStats {
  uint64_t device_calls = 0;
  uint64_t with_stack = 0;   // device calls that carry a stack
  uint64_t attributed = 0;   // … whose stack names an API call
  std::vector<ApiRow> rows;  // by device calls (descending), then name
};

class ApiStatsBuilder {
 public:
  // A device call (other events are ignored): its API call (none when the stack names none or
  // there is no stack), whether it failed, and the decoded call's name ("" when unknown).
  void add(const Event& ev, std::optional<std::string_view> api, bool failed,
           std::string_view call);
  ApiStats finish() const;

 private:
  struct Acc {
    ApiRow row;
    std::set<std::pair<int32_t, int32_t>> threads;
    std::map<std::string, uint64_t, std::less<>> calls;
  };
  ApiStats s_;
  std::map<std::string, Acc, std::less<>> by_api_;
};

// Whether `ev` is a call on a device (the calls a recorder gives a stack).
bool is_device_call(const Event& ev);

}  // namespace cudatool::trace
