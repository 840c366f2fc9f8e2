// `cudatool trace --functions` and `cudatool replay --functions` end to end: the fixture library
// of tests/fixtures/funcrec (known call tree, known return values) recorded in preload mode and
// replayed, and the real libcuda 580 replayed from cuInit to the primary context (SKIPPED
// without ../shared/data). Each checks the whole tree the trace holds: the API call, the library's
// functions under it (named by nm, or by cudatool's function map for libcuda), and each device
// call of the trace inside the function that made it; return values against what the program
// printed and what the trace's device events returned.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "analysis/function_names.hpp"
#include "harness.hpp"
#include "replay_support.hpp"
#include "rm/tables.hpp"
#include "stacks_support.hpp"
#include "trace/decode.hpp"
#include "trace/function_calls.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::test {
namespace {

using trace::FunctionCall;
using trace::ThreadCalls;

// The threads point into tables: built from this copy, which a move keeps in place.
struct ReadTrace {
  ReadTrace() = default;
  ReadTrace(const ReadTrace&) = delete;
  ReadTrace& operator=(const ReadTrace&) = delete;
  ReadTrace(ReadTrace&&) = default;  // a vector's move keeps its elements where they are
  trace::Header header;
  std::map<uint64_t, trace::Event> events;  // by seq
  std::vector<trace::FunctionTable> tables;
  std::vector<ThreadCalls> threads;
};

ReadTrace read_trace(const std::string& path) {
  ReadTrace t;
  auto r = trace::TraceReader::open(path);
  EXPECT_TRUE(static_cast<bool>(r)) << (r ? "" : r.error().message());
  if (!r) return t;
  t.header = (*r)->header();
  trace::Event ev;
  while ((*r)->next(ev)) t.events[ev.seq] = ev;
  t.tables = (*r)->function_tables();
  t.threads = trace::build_function_calls(t.tables, (*r)->function_blocks());
  return t;
}

// The fixture's functions by their start, as nm names them (a clone by the name before its dot).
std::map<uint64_t, std::string> fixture_names() {
  std::map<uint64_t, std::string> names;
  for (const auto& f : nm_functions(funcrec_lib())) {
    names[f.start] = f.name.substr(0, f.name.find('.'));
  }
  return names;
}

std::string call_name(const std::map<uint64_t, std::string>& names, const ThreadCalls& t,
                      const FunctionCall& c) {
  if (t.table_ptr == nullptr || c.function >= t.table_ptr->starts.size()) return "?";
  auto it = names.find(t.table_ptr->starts[c.function]);
  return it == names.end() ? "fn?" : it->second;
}

// "fr_device=35[fr_dev_open=3{open} fr_dev_ioctl=-1{ioctl} fr_leaf=36]{close}": a call, its
// return value, its callees, and the kinds of the device events made inside it (not inside a
// callee), as the trace's events name them.
std::string tree(const std::map<uint64_t, std::string>& names, const ReadTrace& tr,
                 const ThreadCalls& t, size_t i) {
  const FunctionCall& c = t.calls[i];
  std::string s = call_name(names, t, c);
  s += c.end == FunctionCall::End::kReturned ? "=" + std::to_string(static_cast<int32_t>(c.ret))
                                             : ":" + std::string(trace::call_end_name(c.end));
  std::string kids, devices;
  for (size_t k = i + 1; k < t.calls.size(); ++k) {
    if (t.calls[k].parent == static_cast<int64_t>(i)) {
      kids += (kids.empty() ? "" : " ") + tree(names, tr, t, k);
    }
  }
  for (const auto& d : t.devices) {
    if (d.call != static_cast<int64_t>(i)) continue;
    auto ev = tr.events.find(d.seq);
    devices += (devices.empty() ? "" : ",") +
               (ev == tr.events.end() ? std::string("?") : std::string(sys_name(ev->second.sys)));
  }
  if (!kids.empty()) s += "[" + kids + "]";
  if (!devices.empty()) s += "{" + devices + "}";
  return s;
}

// The tree of the outermost fr_device call of the thread that made it.
std::string device_tree(const ReadTrace& tr) {
  auto names = fixture_names();
  for (const auto& t : tr.threads) {
    for (size_t i = 0; i < t.calls.size(); ++i) {
      if (t.calls[i].parent < 0 && call_name(names, t, t.calls[i]) == "fr_device") {
        return tree(names, tr, t, i);
      }
    }
  }
  return "";
}

// What fr_probe printed for fr_device, and the trace's own ioctl and open results: the tree the
// recording must hold.
std::string expected_tree(const ReadTrace& tr, const std::string& out) {
  int printed = 0;
  for (const auto& j : json_lines(out)) {
    if (j.value("call", "") == "fr_device") printed = j.value("ret", 0);
  }
  int64_t fd = -100, ioctl_ret = -100;
  for (const auto& [seq, ev] : tr.events) {
    if (ev.sys == trace::Sys::kOpen && ev.path.find("fakedev") != std::string::npos) fd = ev.ret;
    if (ev.sys == trace::Sys::kIoctl) ioctl_ret = ev.ret;
  }
  return "fr_device=" + std::to_string(printed) + "[fr_dev_open=" + std::to_string(fd) +
         "{open} fr_dev_ioctl=" + std::to_string(ioctl_ret) +
         "{ioctl} fr_leaf=36]{close}";  // fr_leaf(5) = 7 * 5 + 1
}

struct Scratch {
  std::string dir, dev;
  Scratch() {
    dir = temp_dir() + "/functions-cmd";
    std::filesystem::create_directories(dir);
    dev = dir + "/fakedev";
    std::ofstream(dev) << "not a device";
  }
};

RunResult trace_fixture(const Scratch& s, const std::string& out, const std::string& lib,
                        const std::string& mode = "preload") {
  std::filesystem::remove(out);
  return run({"env",
              "FR_PROBE_LEAVE_TO_SHIM=1",
              cudatool_bin(),
              "trace",
              "--mode",
              mode,
              "--functions",
              "--functions-lib",
              lib,
              "--devices",
              s.dev,
              "--env",
              "none",
              "-o",
              out,
              "--json",
              "--",
              funcrec_probe_bin(),
              funcrec_lib(),
              "device",
              s.dev});
}

TEST(FunctionsCmd, TracePreloadRecordsTheFixtureTreeWithItsDeviceCalls) {
  Scratch s;
  std::string out = s.dir + "/trace.jsonl";
  RunResult r = trace_fixture(s, out, funcrec_lib());
  ASSERT_EQ(r.status, 0) << r.err;
  auto summary = nlohmann::json::parse(r.err.substr(r.err.find('{')), nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.err;
  EXPECT_EQ(summary["functions"]["active"], true) << r.err;
  EXPECT_EQ(summary["functions"]["tables"], 1) << r.err;
  ReadTrace tr = read_trace(out);
  EXPECT_EQ(tr.header.functions, "*");
  ASSERT_EQ(tr.tables.size(), 1u);
  EXPECT_EQ(tr.tables[0].skipped, 0u);
  EXPECT_EQ(device_tree(tr), expected_tree(tr, r.out));
  for (const auto& t : tr.threads) EXPECT_TRUE(t.notes.empty()) << t.notes.front();
}

TEST(FunctionsCmd, ReplayRecordsTheSameTreeWithTheReplayedCalls) {
  Scratch s;
  std::string recorded = s.dir + "/recorded.jsonl", replayed = s.dir + "/replayed.jsonl";
  RunResult r = trace_fixture(s, recorded, funcrec_lib());
  ASSERT_EQ(r.status, 0) << r.err;
  std::filesystem::remove(replayed);
  RunResult p = run({"env", "FR_PROBE_LEAVE_TO_SHIM=1", cudatool_bin(), "replay", recorded,
                     "--functions=fr_*", "--functions-lib", funcrec_lib(), "-o", replayed, "--json",
                     "--", funcrec_probe_bin(), funcrec_lib(), "device", s.dev});
  ASSERT_LE(p.status, 1) << p.err;
  auto report = nlohmann::json::parse(p.err.substr(p.err.find('{')), nullptr, false);
  ASSERT_TRUE(report.is_object()) << p.err;
  EXPECT_EQ(report["functions"]["globs"], "fr_*");
  ReadTrace tr = read_trace(replayed);
  EXPECT_EQ(tr.header.mode, "replay");
  EXPECT_EQ(tr.header.functions, "fr_*");
  ASSERT_EQ(tr.tables.size(), 1u);
  EXPECT_EQ(device_tree(tr), expected_tree(tr, p.out));
  EXPECT_EQ(device_tree(tr), device_tree(read_trace(recorded)));
}

// export --format perfetto: one slice per recorded call on the thread's track, named as nm names
// the function, each device call's slice inside the slice of the function that made it (the
// trace's own tree), and that one inside fr_device's; --no-functions leaves them out.
TEST(FunctionsCmd, PerfettoNestsTheDeviceCallsInTheFunctionsThatMadeThem) {
  Scratch s;
  std::string out = s.dir + "/perfetto.jsonl", json_path = s.dir + "/perfetto.json";
  RunResult r = trace_fixture(s, out, funcrec_lib());
  ASSERT_EQ(r.status, 0) << r.err;
  ReadTrace tr = read_trace(out);
  size_t calls = 0;
  for (const auto& t : tr.threads) calls += t.calls.size();
  ASSERT_GT(calls, 0u);
  RunResult e = run({cudatool_bin(), "export", out, "-o", json_path, "--force"});
  ASSERT_EQ(e.status, 0) << e.err;
  auto doc = nlohmann::json::parse(read_file(json_path), nullptr, false);
  ASSERT_TRUE(doc.is_object());
  std::vector<nlohmann::json> fns, devs;
  for (const auto& ev : doc["traceEvents"]) {
    if (ev["ph"] != "X") continue;
    (ev["cat"] == "function" ? fns : devs).push_back(ev);
  }
  EXPECT_EQ(fns.size(), calls);
  auto span = [](const nlohmann::json& ev) {
    double ts = ev["ts"].get<double>();
    return std::make_pair(ts, ts + ev["dur"].get<double>());
  };
  auto within = [&](const nlohmann::json& in, const nlohmann::json& out_ev) {
    auto [a0, a1] = span(in);
    auto [b0, b1] = span(out_ev);
    return in["tid"] == out_ev["tid"] && b0 <= a0 && a1 <= b1;
  };
  auto names = fixture_names();
  auto slice = [&](const std::string& name) -> const nlohmann::json* {
    for (const auto& f : fns) {
      if (f["name"] == name) return &f;
    }
    return nullptr;
  };
  const nlohmann::json* device = slice("fr_device");
  const nlohmann::json* dev_ioctl = slice("fr_dev_ioctl");
  ASSERT_TRUE(device && dev_ioctl) << doc.dump().substr(0, 2000);
  EXPECT_TRUE(within(*dev_ioctl, *device));
  // Where the trace puts each device call: the slice of that function holds it.
  for (const auto& t : tr.threads) {
    for (const auto& d : t.devices) {
      if (d.call < 0) continue;
      std::string fn = call_name(names, t, t.calls[d.call]);
      const nlohmann::json* holder = slice(fn);
      ASSERT_NE(holder, nullptr) << fn;
      bool found = false;
      for (const auto& dv : devs) found |= dv["args"]["seq"] == d.seq && within(dv, *holder);
      EXPECT_TRUE(found) << "seq " << d.seq << " not inside " << fn;
    }
  }
  RunResult none =
      run({cudatool_bin(), "export", out, "-o", json_path, "--force", "--no-functions", "--json"});
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_EQ(nlohmann::json::parse(none.out)["function_slices"], 0);
}

TEST(FunctionsCmd, AMapThatCannotBeReadLeavesTheTraceWithoutFunctionsAndSaysWhy) {
  Scratch s;
  std::string out = s.dir + "/nomap.jsonl";
  RunResult r = trace_fixture(s, out, s.dev);  // not an ELF file
  ASSERT_EQ(r.status, 0) << r.err;
  auto summary = nlohmann::json::parse(r.err.substr(r.err.find('{')), nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.err;
  EXPECT_EQ(summary["functions"]["active"], false);
  EXPECT_NE(summary["functions"]["why_not"].get<std::string>().find(s.dev), std::string::npos);
  ReadTrace tr = read_trace(out);
  EXPECT_TRUE(tr.tables.empty());
  EXPECT_EQ(tr.header.functions, "");
  EXPECT_FALSE(tr.events.empty());  // the device calls are there all the same
}

// ptrace mode preloads the recorder alone (libcudatool_funcrec.so) and places the device calls
// it sees among the function records by time: the same tree as preload mode's.
TEST(FunctionsCmd, TracePtraceRecordsTheSameTree) {
  Scratch s;
  std::string out = s.dir + "/trace-ptrace.jsonl";
  RunResult r = trace_fixture(s, out, funcrec_lib(), "ptrace");
  ASSERT_EQ(r.status, 0) << r.err;
  auto summary = nlohmann::json::parse(r.err.substr(r.err.find('{')), nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.err;
  EXPECT_EQ(summary["mode"], "ptrace") << r.err;
  EXPECT_EQ(summary["functions"]["active"], true) << r.err;
  ReadTrace tr = read_trace(out);
  EXPECT_EQ(tr.header.functions, "*");
  EXPECT_EQ(device_tree(tr), expected_tree(tr, r.out));
  for (const auto& t : tr.threads) EXPECT_TRUE(t.notes.empty()) << t.notes.front();
}

TEST(FunctionsCmd, WithPidItIsRefused) {
  RunResult r = run({cudatool_bin(), "trace", "--pid", "1", "--functions", "-o",
                     temp_dir() + "/ptrace-fn.jsonl"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cannot be used with --pid"), std::string::npos) << r.err;
}

// ab of two replays of one recording: equivalent at the function level; with the ioctl answered
// otherwise (ret 0 for the recorded -1), the first difference is the function that made it,
// with its device call and the return values up to fr_device.
TEST(FunctionsCmd, AbNamesTheFunctionThatMadeAChangedCall) {
  Scratch s;
  std::string recorded = s.dir + "/ab-recorded.jsonl";
  RunResult r = trace_fixture(s, recorded, funcrec_lib());
  ASSERT_EQ(r.status, 0) << r.err;
  ReadTrace rec = read_trace(recorded);
  uint64_t ioctl_seq = 0;
  for (const auto& [seq, ev] : rec.events) {
    if (ev.sys == trace::Sys::kIoctl) ioctl_seq = seq;
  }
  auto replayed = [&](const std::string& name, std::vector<std::string> extra) {
    std::string out = s.dir + "/" + name;
    std::filesystem::remove(out);
    std::vector<std::string> argv{
        "env",         "FR_PROBE_LEAVE_TO_SHIM=1", cudatool_bin(), "replay", recorded,
        "--functions", "--functions-lib",          funcrec_lib(),  "-o",     out,
        "-q"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--", funcrec_probe_bin(), funcrec_lib(), "device", s.dev});
    RunResult p = run(argv);
    EXPECT_LE(p.status, 1) << p.err;
    return out;
  };
  std::string a = replayed("ab-a.jsonl", {}), b = replayed("ab-b.jsonl", {});
  std::string c =
      replayed("ab-c.jsonl", {"--inject", "seq=" + std::to_string(ioctl_seq) + ",ret=0"});
  RunResult same = run({cudatool_bin(), "ab", "--json", a, b});
  auto js = nlohmann::json::parse(same.out, nullptr, false);
  ASSERT_TRUE(js.is_object()) << same.err;
  EXPECT_EQ(js["functions"]["compared"], true);
  EXPECT_TRUE(js["functions"]["first"].is_null()) << js["functions"].dump(1);
  RunResult diff = run({cudatool_bin(), "ab", "--json", a, c});
  EXPECT_EQ(diff.status, 1);
  auto jd = nlohmann::json::parse(diff.out, nullptr, false);
  ASSERT_TRUE(jd.is_object()) << diff.err;
  const auto& f = jd["functions"]["first"];
  ASSERT_TRUE(f.is_object()) << jd["functions"].dump(1);
  EXPECT_EQ(f["kind"], "return_value");
  // The function that made the ioctl: cudatool names it from the library's .symtab, or by its
  // address (nm gives both).
  std::string by_address;
  for (const auto& [start, name] : fixture_names()) {
    if (name == "fr_dev_ioctl") by_address = fmt::format("fn_{:x}", start);
  }
  ASSERT_EQ(f["path"].size(), 2u) << f.dump(1);
  EXPECT_EQ(f["path"][0]["function"], "fr_device");
  const std::string maker = f["path"][1]["function"];
  EXPECT_TRUE(maker == "fr_dev_ioctl" || maker == by_address) << maker << " " << by_address;
  // The ioctl's -1 and 0, as the int fr_dev_ioctl returned them (in eax).
  EXPECT_EQ(std::stoull(f["path"][1]["ret_a"].get<std::string>(), nullptr, 16) & 0xffffffff,
            0xffffffffu);
  EXPECT_EQ(f["path"][1]["ret_b"], "0x0");
  ASSERT_EQ(f["devices_b"].size(), 1u);
  EXPECT_EQ(f["devices_b"][0]["seq"], f["devices_a"][0]["seq"]);
}

// The real libcuda under replay: each API call cuda_probe printed is an outermost recorded call
// returning what it printed, and every device call of the program's thread lies inside one of
// them: API call → libcuda's functions → ioctl.
TEST(FunctionsCmdReal, ReplayedPrimaryContextHasTheWholeTree) {
  DriverBuild build = shared_builds().front();
  CUDATOOL_REQUIRE_BUILD(build);
  std::string dir = temp_dir() + "/functions-cmd-real";
  std::filesystem::create_directories(dir);
  std::string rec = dir + "/trace_a.jsonl", out = dir + "/replayed.jsonl";
  RunResult imp = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", rec,
                       "--driver-version", build.version});
  ASSERT_EQ(imp.status, 0) << imp.err;
  ReplayRun r = replay(rec, {"--deadline", "60", "--functions", "-o", out},
                       {cuda_probe_bin(), build.lib_path, "ctx"}, 600);
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  ASSERT_EQ(r.report["functions"]["active"], true) << r.run.err;
  EXPECT_TRUE(r.report["functions"]["problems"].empty()) << r.report["functions"].dump();
  ReadTrace tr = read_trace(out);
  EXPECT_EQ(tr.header.functions, "*");
  ASSERT_EQ(tr.tables.size(), 1u);

  auto img = DriverImage::open(build.lib_path);
  ASSERT_TRUE(static_cast<bool>(img));
  FunctionMap& map = (*img)->facet<FunctionMap>();
  add_driver_table_names(**img, map);
  auto name = [&](const FunctionCall& c) {
    const Function* f = map.at(tr.tables[0].starts.at(c.function));
    return f == nullptr ? std::string("?") : map.display_name(*f);
  };
  std::vector<std::pair<std::string, int>> printed;
  for (const auto& j : json_lines(r.run.out)) {
    if (j.contains("call")) printed.emplace_back(j["call"], j.value("ret", -1));
  }
  ASSERT_GE(printed.size(), 11u) << r.run.out;
  const ThreadCalls* main = nullptr;
  for (const auto& t : tr.threads) {
    if (main == nullptr || t.calls.size() > main->calls.size()) main = &t;
  }
  ASSERT_NE(main, nullptr);
  size_t next = 0;
  for (const auto& c : main->calls) {
    if (c.parent >= 0 || next == printed.size() || name(c) != printed[next].first) continue;
    EXPECT_EQ(static_cast<int32_t>(c.ret), printed[next].second) << printed[next].first;
    ++next;
  }
  EXPECT_EQ(next, printed.size());
  // Every device call of that thread: a replayed event of the trace, made inside a recorded call
  // whose outermost caller is an exported driver-API function (cu…).
  uint64_t marks = 0;
  for (const auto& d : main->devices) {
    ++marks;
    EXPECT_TRUE(tr.events.count(d.seq)) << "seq " << d.seq;
    ASSERT_GE(d.call, 0) << "seq " << d.seq << " outside every recorded call";
    int64_t root = d.call;
    while (main->calls[root].parent >= 0) root = main->calls[root].parent;
    EXPECT_EQ(name(main->calls[root]).rfind("cu", 0), 0u)
        << "seq " << d.seq << " under " << name(main->calls[root]);
  }
  uint64_t ioctls = 0;
  for (const auto& [seq, ev] : tr.events) {
    if (ev.tid == main->tid && ev.sys == trace::Sys::kIoctl) ++ioctls;
  }
  EXPECT_GT(ioctls, 0u);
  EXPECT_GE(marks, ioctls);  // each of the thread's ioctls is placed (opens, mmaps: more marks)
}

// ab of a replayed recording of the real libcuda against itself: equivalent at the function
// level too. Then issue 31's example: the same replay with one RM control failed
// (NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE, NV_ERR_NOT_SUPPORTED): the first difference is the
// libcuda function that made the control, returning the status it got; the path holds every
// caller up to the API call, each returning otherwise in B, the API call returning what the
// program printed (801). (Two plain replays of one recording are not equivalent yet: the fake
// GPU finishes work at its own pace, and libcuda waits for it on another path now and then.)
TEST(FunctionsCmdReal, AbOfAFunctionTraceAgainstItselfIsEquivalentAndAFailedControlIsTraced) {
  DriverBuild build = shared_builds().front();
  CUDATOOL_REQUIRE_BUILD(build);
  std::string dir = temp_dir() + "/functions-cmd-real-ab";
  std::filesystem::create_directories(dir);
  std::string rec = dir + "/trace_a.jsonl", a = dir + "/a.jsonl", b = dir + "/b.jsonl";
  RunResult imp = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", rec,
                       "--driver-version", build.version});
  ASSERT_EQ(imp.status, 0) << imp.err;
  ReplayRun ra = replay(rec, {"--deadline", "60", "--functions", "-o", a},
                        {cuda_probe_bin(), build.lib_path, "ctx"}, 600);
  ASSERT_TRUE(ra.report.is_object()) << ra.run.err;
  RunResult self = run({cudatool_bin(), "ab", "--json", a, a}, 300);
  EXPECT_EQ(self.status, 0) << self.err;
  auto js = nlohmann::json::parse(self.out, nullptr, false);
  ASSERT_TRUE(js.is_object()) << self.err;
  EXPECT_EQ(js["functions"]["compared"], true);
  EXPECT_GT(js["functions"]["calls_a"].get<uint64_t>(), 100000u);
  EXPECT_TRUE(js["functions"]["first"].is_null()) << js["functions"].dump(1);

  const std::string cmd = "NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE";
  ReplayRun rb = replay(rec,
                        {"--deadline", "60", "--functions", "-o", b, "--inject",
                         "cmd=" + cmd + ",nth=1,status=NV_ERR_NOT_SUPPORTED"},
                        {cuda_probe_bin(), build.lib_path, "ctx"}, 600);
  ASSERT_TRUE(rb.report.is_object()) << rb.run.err;
  int printed = 0;  // what cuDevicePrimaryCtxRetain returned to the program in B
  for (const auto& j : json_lines(rb.run.out)) {
    if (j.value("call", "") == "cuDevicePrimaryCtxRetain") printed = j.value("ret", 0);
  }
  ASSERT_NE(printed, 0) << rb.run.out;
  // The failed control in B's trace, as the decoder reads it: its seq and status.
  ReadTrace tb = read_trace(b);
  uint64_t failed_seq = 0;
  int64_t failed_status = -1;
  const rm::Tables& tables = rm::tables_for_driver(build.version);
  for (const auto& [seq, ev] : tb.events) {
    trace::Decoded d = trace::decode_event(tables, ev);
    const rm::CtrlEntry* c = d.cmd ? tables.find_control(*d.cmd) : nullptr;
    if (c != nullptr && c->name == cmd && d.status && *d.status != 0) {
      failed_seq = seq;
      failed_status = *d.status;
      break;
    }
  }
  ASSERT_NE(failed_seq, 0u) << "no failed " << cmd << " in B";

  RunResult ab = run({cudatool_bin(), "ab", "--json", a, b}, 300);
  EXPECT_EQ(ab.status, 1) << ab.err;
  auto j = nlohmann::json::parse(ab.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << ab.err;
  const auto& f = j["functions"]["first"];
  ASSERT_TRUE(f.is_object()) << j["functions"].dump(1);
  EXPECT_EQ(f["kind"], "return_value");
  const auto& path = f["path"];
  ASSERT_GE(path.size(), 3u);
  EXPECT_EQ(path.front()["function"], "cuDevicePrimaryCtxRetain");
  EXPECT_EQ(path.front()["ret_a"], "0x0");
  EXPECT_EQ(std::stoll(path.front()["ret_b"].get<std::string>(), nullptr, 16), printed);
  EXPECT_EQ(std::stoll(path.back()["ret_b"].get<std::string>(), nullptr, 16), failed_status);
  for (const auto& step : path) EXPECT_FALSE(step["same"].get<bool>()) << step.dump();
  ASSERT_EQ(f["devices_b"].size(), 1u) << f.dump(1);
  EXPECT_EQ(f["devices_b"][0]["seq"], failed_seq);
  EXPECT_NE(f["devices_b"][0]["call"].get<std::string>().find(cmd), std::string::npos);
}

}  // namespace
}  // namespace cudatool::test
