// Statistics of a decoded trace (`cudatool stats`, docs/decode.md): counts by device, call,
// control command, class and thread; failures by status and errno; the RM object tree
// reconstructed from allocs and frees with each object's lifetime; milestones up to the first GPU
// context; the slowest calls.
//
// Fed one decoded event at a time (StatsBuilder::add), in trace order; memory grows with the
// number of distinct keys and RM objects, not with the number of events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/decode.hpp"

namespace cudatool::trace {

struct CountRow {
  std::string name;  // device path, call, control or class name ("0x…?" when unnamed)
  uint64_t key = 0;  // control id, class id, status, errno, tid (0 for devices and calls)
  uint64_t count = 0;
  uint64_t failed = 0;        // calls with errno or an NV_STATUS other than NV_OK
  uint64_t dur_total_ns = 0;  // sums of recorded durations (0 when none were recorded)
  uint64_t dur_max_ns = 0;
};

// One RM object: allocated by NV_ESC_RM_ALLOC (or ALLOC_MEMORY, DUP_OBJECT) with NV_OK.
struct ObjectInfo {
  uint32_t client = 0;
  uint32_t handle = 0;
  uint32_t parent = 0;  // 0 for a client
  std::optional<uint32_t> cls;
  std::string_view class_name;  // "" when the class has no name in the branch
  std::string_view rm_class;    // RM's implementation ("KernelChannel"), "" when unknown
  std::string_view created_by;  // the call
  int32_t tid = 0;
  uint64_t alloc_seq = 0;
  uint64_t alloc_t_ns = 0;  // completion time
  bool freed = false;
  uint64_t free_seq = 0;
  uint64_t free_t_ns = 0;
  // Freed with an ancestor (RM frees an object's children with it): the handle that was freed.
  std::optional<uint32_t> freed_with;
  std::vector<uint32_t> children;  // indices into TraceStats::objects, in allocation order
  bool orphan = false;             // its parent was not allocated in the trace
};

// The first successful allocation of an object of one RM class (client, device, subdevice,
// channel group, channel, context share).
struct Milestone {
  std::string_view what;      // "client", "device", "subdevice", "channel group", "channel", …
  std::string_view rm_class;  // "RmClientResource", "rm::Device", …, "KernelChannel"
  bool found = false;
  uint64_t seq = 0;
  uint64_t t_ns = 0;            // completion, since the trace's t0
  uint64_t since_first_ns = 0;  // since the first event of the trace
  uint32_t handle = 0;
  std::string_view class_name;
};

struct SlowCall {
  uint64_t seq = 0;
  uint64_t t_ns = 0;
  uint64_t dur_ns = 0;
  int32_t tid = 0;
  std::string call;  // "NV_ESC_RM_CONTROL NV2080_CTRL_CMD_GPU_GET_INFO_V2"
};

struct TraceStats {
  uint64_t events = 0;
  uint64_t ioctls = 0;
  uint64_t failed = 0;
  uint64_t first_t_ns = 0;     // entry of the first event
  uint64_t last_t_ns = 0;      // completion of the last
  uint64_t with_duration = 0;  // events that carry a duration
  // Sorted by count (descending), then name.
  std::vector<CountRow> by_device, by_call, by_control, by_class, by_thread;
  std::vector<CountRow> failures_by_status, failures_by_errno;
  // The object tree: clients in `roots` (allocation order), children per object.
  std::vector<ObjectInfo> objects;
  std::vector<uint32_t> roots;
  uint64_t objects_freed = 0;
  uint64_t objects_never_freed = 0;
  uint64_t frees_of_unknown = 0;     // frees of handles not allocated in the trace (NV_OK)
  uint64_t objects_not_tracked = 0;  // allocations past kMaxObjects
  std::vector<Milestone> milestones;
  // Time to first context: the milestone "channel" (see docs/decode.md), when found.
  const Milestone* first_context() const;
  std::vector<SlowCall> slowest;  // longest duration first
  // Environment events (v2): what the program asked of the driver's view of the system — not
  // counted under devices, but here, by kind and path ("stat /dev/nvidiactl") and by the call as
  // the program made it ("__xstat", "fopen", "openat").
  uint64_t env_events = 0;
  std::vector<CountRow> by_env_path, by_env_op;
};

class StatsBuilder {
 public:
  static constexpr size_t kMaxObjects = 4u << 20;

  explicit StatsBuilder(const rm::Tables& tables, size_t slowest = 10);
  void add(const Event& ev, const Decoded& d);
  TraceStats finish();

 private:
  struct Counter {
    uint64_t count = 0, failed = 0, dur_total = 0, dur_max = 0;
    void add(bool failed_call, uint64_t dur);
  };
  void alloc(const Event& ev, const Decoded& d, uint64_t t_end);
  void release(const Decoded& d, uint64_t seq, uint64_t t_end);
  void slow(const Event& ev, const Decoded& d);

  const rm::Tables& t_;
  size_t max_slowest_;
  TraceStats s_;
  bool any_ = false;
  std::unordered_map<std::string, Counter> devices_;
  std::string last_path_;
  Counter* last_device_ = nullptr;
  std::unordered_map<std::string_view, Counter> calls_;  // views into static tables
  std::unordered_map<uint64_t, Counter> unknown_requests_;
  std::unordered_map<uint32_t, Counter> controls_, classes_, statuses_, errnos_;
  std::unordered_map<int32_t, Counter> threads_;
  std::unordered_map<uint64_t, uint32_t> live_;  // (client << 32 | handle) -> object index
  std::unordered_map<std::string, Counter> env_paths_, env_ops_;
};

}  // namespace cudatool::trace
