// The --filter language, trace statistics (object tree, lifetimes, milestones, failures) and the
// Perfetto writer, on synthetic events built with the generated layouts of the branch (member
// offsets are looked up, not typed in). The real captures are checked in
// tests/integration/decode_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "rm/tables.hpp"
#include "rm_synth.hpp"
#include "trace/decode.hpp"
#include "trace/event_filter.hpp"
#include "trace/perfetto.hpp"
#include "trace/trace_stats.hpp"

namespace cudatool::trace {
namespace {

using namespace rm::synth;  // put(), escape_nr(), class_id(), control_id(), status_value()

const rm::Tables& t580() {
  return rm::synth::tables();
}

// A little trace: each call appends an event with the next seq, 1 µs apart, 100 ns long.
struct Builder {
  std::vector<Event> events;
  int32_t tid = 100;

  Event& add(Sys sys, std::string path) {
    Event ev;
    ev.seq = events.size();
    ev.t_ns = 1000 * (events.size() + 1);
    ev.dur_ns = 100 + 10 * events.size();
    ev.has_duration = true;
    ev.pid = 100;
    ev.tid = tid;
    ev.sys = sys;
    ev.path = std::move(path);
    events.push_back(std::move(ev));
    return events.back();
  }
  void escape(std::string_view name, std::string_view type, std::vector<uint8_t> arg,
              std::string path = "/dev/nvidiactl") {
    Event& ev = add(Sys::kIoctl, std::move(path));
    ev.fd = 3;
    ev.request = rm_request(name, arg.size());
    ev.arg = arg_buffer(std::move(arg));
    (void)type;
  }
  std::vector<uint8_t> zeros(std::string_view type) {
    return std::vector<uint8_t>(static_cast<size_t>(t580().find_struct(type)->size));
  }
  void alloc(uint32_t root, uint32_t parent, uint32_t handle, std::string_view cls,
             std::string_view status = "NV_OK") {
    auto a = zeros("NVOS21_PARAMETERS");
    put(a, "NVOS21_PARAMETERS", "hRoot", root);
    put(a, "NVOS21_PARAMETERS", "hObjectParent", parent);
    put(a, "NVOS21_PARAMETERS", "hObjectNew", handle);
    put(a, "NVOS21_PARAMETERS", "hClass", class_id(cls));
    put(a, "NVOS21_PARAMETERS", "status", status_value(status));
    escape("NV_ESC_RM_ALLOC", "NVOS21_PARAMETERS", a);
  }
  void free(uint32_t root, uint32_t parent, uint32_t handle) {
    auto a = zeros("NVOS00_PARAMETERS");
    put(a, "NVOS00_PARAMETERS", "hRoot", root);
    put(a, "NVOS00_PARAMETERS", "hObjectParent", parent);
    put(a, "NVOS00_PARAMETERS", "hObjectOld", handle);
    escape("NV_ESC_RM_FREE", "NVOS00_PARAMETERS", a);
  }
  void control(uint32_t client, uint32_t object, std::string_view cmd, std::string_view status) {
    auto a = zeros("NVOS54_PARAMETERS");
    put(a, "NVOS54_PARAMETERS", "hClient", client);
    put(a, "NVOS54_PARAMETERS", "hObject", object);
    put(a, "NVOS54_PARAMETERS", "cmd", control_id(cmd));
    put(a, "NVOS54_PARAMETERS", "status", status_value(status));
    escape("NV_ESC_RM_CONTROL", "NVOS54_PARAMETERS", a);
  }
  void failed_open(std::string path, int err) {
    Event& ev = add(Sys::kOpen, std::move(path));
    ev.ret = -1;
    ev.err = err;
  }
};

// client 0xc1 -> device 0x10 -> subdevice 0x11; channel group 0x20 -> channel 0x21 (failed once,
// then allocated) -> compute 0x22; a control that fails; frees of the channel group (taking the
// channel and compute with it) and of a handle never allocated.
Builder sample() {
  Builder b;
  b.failed_open("/dev/nvidia7", ENOENT);
  b.alloc(0, 0, 0xc1, "NV01_ROOT_CLIENT");
  b.alloc(0xc1, 0xc1, 0x10, "NV01_DEVICE_0");
  b.alloc(0xc1, 0x10, 0x11, "NV20_SUBDEVICE_0");
  b.control(0xc1, 0x11, "NV2080_CTRL_CMD_GPU_GET_INFO_V2", "NV_OK");
  b.control(0xc1, 0x11, "NV2080_CTRL_CMD_GPU_GET_INFO_V2", "NV_ERR_INVALID_ARGUMENT");
  b.alloc(0xc1, 0x10, 0x20, "KEPLER_CHANNEL_GROUP_A");
  b.tid = 101;
  b.alloc(0xc1, 0x20, 0x21, "HOPPER_CHANNEL_GPFIFO_A", "NV_ERR_NO_MEMORY");
  b.alloc(0xc1, 0x20, 0x21, "HOPPER_CHANNEL_GPFIFO_A");
  b.alloc(0xc1, 0x21, 0x22, "HOPPER_COMPUTE_A");
  b.free(0xc1, 0x10, 0x20);
  b.free(0xc1, 0x10, 0x99);
  return b;
}

// --- filter ------------------------------------------------------------------------------------

std::vector<uint64_t> matching(const Builder& b, std::string_view expr) {
  auto f = EventFilter::parse(expr, t580());
  EXPECT_TRUE(f) << expr << ": " << (f ? "" : f.error().message());
  std::vector<uint64_t> seqs;
  if (!f) return seqs;
  Decoded d;
  for (const Event& ev : b.events) {
    decode_event(t580(), ev, d);
    if (f->matches(ev, d)) seqs.push_back(ev.seq);
  }
  return seqs;
}

using Seqs = std::vector<uint64_t>;

TEST(EventFilter, SelectsByNamesGlobsNumbersAndFlags) {
  Builder b = sample();
  EXPECT_EQ(matching(b, ""), (Seqs{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(matching(b, "status!=NV_OK"), (Seqs{5, 7}));
  EXPECT_EQ(matching(b, "failed"), (Seqs{0, 5, 7}));
  EXPECT_EQ(matching(b, "not failed and sys=ioctl"), (Seqs{1, 2, 3, 4, 6, 8, 9, 10, 11}));
  EXPECT_EQ(matching(b, "class=*CHANNEL*"), (Seqs{6, 7, 8}));
  EXPECT_EQ(matching(b, "class=hopper_channel_gpfifo_a"), (Seqs{7, 8}));  // any case
  EXPECT_EQ(matching(b, "ctrl=NV2080_CTRL_CMD_GPU_*"), (Seqs{4, 5}));
  EXPECT_EQ(matching(b, "call=NV_ESC_RM_FREE,NV_ESC_RM_CONTROL"), (Seqs{4, 5, 10, 11}));
  EXPECT_EQ(matching(b, "call!=NV_ESC_RM_ALLOC and sys=ioctl"), (Seqs{4, 5, 10, 11}));
  EXPECT_EQ(matching(b, "tid=101"), (Seqs{7, 8, 9, 10, 11}));
  EXPECT_EQ(matching(b, "seq>=3 && seq<5"), (Seqs{3, 4}));
  EXPECT_EQ(matching(b, "t>10us"), (Seqs{10, 11}));
  EXPECT_EQ(matching(b, "dur>=0.2us"), (Seqs{10, 11}));
  EXPECT_EQ(matching(b, "errno=ENOENT"), (Seqs{0}));
  EXPECT_EQ(matching(b, "errno=2"), (Seqs{0}));
  EXPECT_EQ(matching(b, "device=gpu"), (Seqs{0}));
  EXPECT_EQ(matching(b, "path=/dev/nvidia[0-9]"), (Seqs{0}));
  EXPECT_EQ(matching(b, "handle=0x21"), (Seqs{7, 8, 9}));
  EXPECT_EQ(matching(b, "object=0x21 or (class=NV01_DEVICE_0 ret=0)"), (Seqs{2, 7, 8}));
  EXPECT_EQ(matching(b, "client=0xc1 and not parent=0x20"), (Seqs{2, 3, 4, 5, 6, 9, 10, 11}));
  EXPECT_EQ(matching(b, "status=0x1f"), (Seqs{5}));  // NV_ERR_INVALID_ARGUMENT by number
  EXPECT_EQ(matching(b, "ret<0"), (Seqs{0}));
  EXPECT_EQ(matching(b, "unknown or partial"), (Seqs{}));
  EXPECT_EQ(matching(b, "notes"), (Seqs{4, 5}));  // paramsSize 0: the table's structure is larger
  // A comparison on a field the event lacks is false for = and != alike.
  EXPECT_EQ(matching(b, "status!=NV_OK or status=NV_OK"),
            (Seqs{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(EventFilter, BadExpressionsAreOneLineErrorsWithAColumn) {
  struct Case {
    const char* expr;
    const char* says;
  };
  for (const Case& c : {
           Case{"stauts=NV_OK", "column 1: unknown field 'stauts'"},
           Case{"status=NV_OKK", "column 8: no status named 'NV_OKK'"},
           Case{"status=NV_OKK", "did you mean NV_OK?"},
           Case{"class=HOPPER_CHANEL_GPFIFO_A", "did you mean HOPPER_CHANNEL_GPFIFO_A?"},
           Case{"ctrl=NV2080_CTRL_CMD_NO_SUCH", "no ctrl named"},
           Case{"call=NV_ESC_RM_CONTROLL", "did you mean NV_ESC_RM_CONTROL?"},
           Case{"(call=UVM_FREE", "column 1: '(' is not closed"},
           Case{"call=UVM_FREE)", "column 14: unexpected ')'"},
           Case{"status", "field 'status' needs a comparison"},
           Case{"faild", "unknown word 'faild'"},
           Case{"seq<", "column 5: expected a value after 'seq<'"},
           Case{"seq<abc", "seq takes a number"},
           Case{"status<3", "'<' compares numbers"},
           Case{"seq<1,2", "a list of values needs = or !="},
           Case{"t>1.5hours", "t takes a time"},
           Case{"sys=iotcl", "no event kind 'iotcl'"},
           Case{"device=gpu0", "no device kind 'gpu0'"},
           Case{"errno=EFOO", "no errno named 'EFOO'"},
           Case{"a & b", "a lone '&'"},
           Case{"tid=1 or", "expected a condition at the end"},
           Case{"and tid=1", "expected a condition"},
           Case{"path='/dev/x", "quote ' is not closed"},
           Case{"tid=99999999999999999999999", "tid takes a number"},
           Case{"'tid'=1", "a quoted value 'tid' where a field or flag was expected"},
       }) {
    auto f = EventFilter::parse(c.expr, t580());
    ASSERT_FALSE(f) << c.expr;
    std::string m = f.error().message();
    EXPECT_NE(m.find(c.says), std::string::npos) << c.expr << " -> " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.rfind("--filter '", 0), 0u) << m;
  }
  // Deep nesting is refused, not a stack overflow.
  std::string deep(100000, '(');
  EXPECT_FALSE(EventFilter::parse(deep + "tid=1", t580()));
  EXPECT_FALSE(EventFilter::parse(std::string(5000, '!') + "tid=1", t580()));
  EXPECT_TRUE(EventFilter::parse("  ", t580()));
}

// --- stats -------------------------------------------------------------------------------------

TraceStats stats_of(const Builder& b, size_t slowest = 3) {
  StatsBuilder sb(t580(), slowest);
  Decoded d;
  for (const Event& ev : b.events) {
    decode_event(t580(), ev, d);
    sb.add(ev, d);
  }
  return sb.finish();
}

const CountRow* row(const std::vector<CountRow>& rows, std::string_view name) {
  for (const CountRow& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(TraceStats, CountsFailuresTreeLifetimesAndMilestones) {
  Builder b = sample();
  TraceStats s = stats_of(b);
  EXPECT_EQ(s.events, 12u);
  EXPECT_EQ(s.ioctls, 11u);
  EXPECT_EQ(s.failed, 3u);
  EXPECT_EQ(s.with_duration, 12u);
  ASSERT_NE(row(s.by_call, "NV_ESC_RM_ALLOC"), nullptr);
  EXPECT_EQ(row(s.by_call, "NV_ESC_RM_ALLOC")->count, 7u);
  EXPECT_EQ(row(s.by_call, "NV_ESC_RM_ALLOC")->failed, 1u);
  EXPECT_EQ(row(s.by_call, "open")->failed, 1u);
  EXPECT_EQ(row(s.by_device, "/dev/nvidiactl")->count, 11u);
  EXPECT_EQ(row(s.by_control, "NV2080_CTRL_CMD_GPU_GET_INFO_V2")->count, 2u);
  EXPECT_EQ(row(s.by_control, "NV2080_CTRL_CMD_GPU_GET_INFO_V2")->failed, 1u);
  EXPECT_EQ(row(s.by_class, "HOPPER_CHANNEL_GPFIFO_A")->count, 2u);
  EXPECT_EQ(row(s.by_thread, "101")->count, 5u);
  ASSERT_EQ(s.failures_by_status.size(), 2u);
  EXPECT_EQ(row(s.failures_by_status, "NV_ERR_INVALID_ARGUMENT")->count, 1u);
  EXPECT_EQ(row(s.failures_by_status, "NV_ERR_NO_MEMORY")->count, 1u);
  ASSERT_EQ(s.failures_by_errno.size(), 1u);
  EXPECT_EQ(s.failures_by_errno[0].name, "ENOENT");

  // The tree: 6 objects (the failed alloc made none); the channel group's free took the
  // channel and compute object with it; the free of 0x99 named nothing allocated.
  ASSERT_EQ(s.objects.size(), 6u);
  ASSERT_EQ(s.roots.size(), 1u);
  const ObjectInfo& client = s.objects[s.roots[0]];
  EXPECT_EQ(client.handle, 0xc1u);
  EXPECT_EQ(client.class_name, "NV01_ROOT_CLIENT");
  EXPECT_FALSE(client.freed);
  ASSERT_EQ(client.children.size(), 1u);
  const ObjectInfo& device = s.objects[client.children[0]];
  EXPECT_EQ(device.handle, 0x10u);
  ASSERT_EQ(device.children.size(), 2u);  // subdevice, channel group
  const ObjectInfo& group = s.objects[device.children[1]];
  EXPECT_EQ(group.handle, 0x20u);
  EXPECT_TRUE(group.freed);
  EXPECT_EQ(group.free_seq, 10u);
  EXPECT_FALSE(group.freed_with);
  ASSERT_EQ(group.children.size(), 1u);
  const ObjectInfo& channel = s.objects[group.children[0]];
  EXPECT_EQ(channel.alloc_seq, 8u);  // the successful one
  EXPECT_EQ(channel.alloc_t_ns, b.events[8].t_ns + b.events[8].dur_ns);
  EXPECT_EQ(channel.rm_class, "KernelChannel");
  EXPECT_TRUE(channel.freed);
  EXPECT_EQ(channel.freed_with, 0x20u);
  EXPECT_EQ(s.objects[channel.children[0]].freed_with, 0x20u);
  EXPECT_EQ(s.objects_freed, 3u);
  EXPECT_EQ(s.objects_never_freed, 3u);
  EXPECT_EQ(s.frees_of_unknown, 1u);

  // Time to first context: the first successful channel allocation, from the first event.
  const Milestone* fc = s.first_context();
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->seq, 8u);
  EXPECT_EQ(fc->since_first_ns, b.events[8].t_ns + b.events[8].dur_ns - b.events[0].t_ns);
  EXPECT_EQ(fc->class_name, "HOPPER_CHANNEL_GPFIFO_A");
  std::map<std::string_view, const Milestone*> ms;
  for (const Milestone& m : s.milestones) ms[m.what] = &m;
  EXPECT_EQ(ms["client"]->seq, 1u);
  EXPECT_EQ(ms["subdevice"]->seq, 3u);
  EXPECT_EQ(ms["channel group"]->seq, 6u);
  EXPECT_FALSE(ms["context share"]->found);
  // The slowest calls: the last three (durations grow with seq), longest first.
  ASSERT_EQ(s.slowest.size(), 3u);
  EXPECT_EQ(s.slowest[0].seq, 11u);
  EXPECT_EQ(s.slowest[2].seq, 9u);
  EXPECT_EQ(s.slowest[2].call, "NV_ESC_RM_ALLOC HOPPER_COMPUTE_A");
}

TEST(TraceStats, FreeingTheClientFreesEverythingAndHandlesAreReused) {
  Builder b;
  b.alloc(0, 0, 0xc1, "NV01_ROOT_CLIENT");
  b.alloc(0xc1, 0xc1, 0x10, "NV01_DEVICE_0");
  b.alloc(0xc1, 0x10, 0x11, "NV20_SUBDEVICE_0");
  b.alloc(0xc1, 0x77, 0x12, "NV01_MEMORY_SYSTEM");  // parent never allocated: under the client
  b.free(0xc1, 0xc1, 0xc1);
  b.alloc(0, 0, 0xc1, "NV01_ROOT_CLIENT");  // the handle again: a new object
  TraceStats s = stats_of(b);
  ASSERT_EQ(s.objects.size(), 5u);
  EXPECT_EQ(s.roots.size(), 2u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(s.objects[i].freed) << i;
    EXPECT_EQ(s.objects[i].free_seq, 4u);
  }
  EXPECT_TRUE(s.objects[3].orphan);
  EXPECT_FALSE(s.objects[4].freed);
  EXPECT_EQ(s.first_context(), nullptr);  // no channel
}

TEST(TraceStats, NoDurationsNoSlowest) {
  Builder b = sample();
  for (Event& ev : b.events) ev.has_duration = false;
  TraceStats s = stats_of(b);
  EXPECT_EQ(s.with_duration, 0u);
  EXPECT_TRUE(s.slowest.empty());
  EXPECT_EQ(s.first_context()->since_first_ns, b.events[8].t_ns - b.events[0].t_ns);
}

// --- perfetto ----------------------------------------------------------------------------------

TEST(Perfetto, CompleteSlicesPerThreadWithMetadata) {
  Builder b = sample();
  Header h;
  h.argv = {"./work"};
  PerfettoWriter w(t580(), h, "sample.jsonl");
  std::string out;
  w.begin(out);
  Decoded d;
  for (const Event& ev : b.events) {
    decode_event(t580(), ev, d);
    w.add(out, ev, d);
  }
  w.finish(out, b.events.size(), 0);
  auto j = nlohmann::json::parse(out);
  ASSERT_TRUE(j["traceEvents"].is_array());
  size_t slices = 0, threads = 0, processes = 0;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e["ph"].is_string());
    if (e["ph"] == "M") {
      (e["name"] == "thread_name" ? threads : processes) += 1;
      continue;
    }
    ASSERT_EQ(e["ph"], "X");
    uint64_t seq = e["args"]["seq"];
    const Event& ev = b.events[seq];
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), static_cast<double>(ev.t_ns) / 1000.0);
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), static_cast<double>(ev.dur_ns) / 1000.0);
    EXPECT_EQ(e["tid"], ev.tid);
    EXPECT_EQ(e["pid"], ev.pid);
    ++slices;
  }
  EXPECT_EQ(slices, b.events.size());
  EXPECT_EQ(threads, 2u);
  EXPECT_EQ(processes, 1u);
  // Names: the call with its control command or class.
  EXPECT_NE(out.find("\"name\":\"NV_ESC_RM_CONTROL NV2080_CTRL_CMD_GPU_GET_INFO_V2\""),
            std::string::npos);
  EXPECT_NE(out.find("\"name\":\"NV_ESC_RM_ALLOC HOPPER_CHANNEL_GPFIFO_A\""), std::string::npos);
  EXPECT_EQ(j["metadata"]["events"], b.events.size());
}

}  // namespace
}  // namespace cudatool::trace
