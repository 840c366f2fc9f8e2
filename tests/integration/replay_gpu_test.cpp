// The replay's fake GPU, on a fixture library (tests/fixtures/replay/nv_lib.c) replayed from
// its own recording on fake device nodes: the library picks its handles as libcuda does, maps a
// memory object as libcuda does (a fd of its own, mmapped at 0; a spare object of the same
// length mapped alike, so only MAP_MEMORY's fd tells the replay which mmap shows which),
// allocates a GPFIFO channel in it and submits work. Recorded on fake nodes
// nothing runs the channel and every ioctl fails; replayed with those answers made successes
// (--inject ret=0), the fake GPU carries out the host and copy-engine work, and completes a
// compute launch without executing it (or, with --execute stop, stops there with a report that
// names the semaphore the library waits for).
#include <gtest/gtest.h>
#include <fstream>

#include <filesystem>

#include "harness.hpp"
#include "replay_support.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

std::vector<std::string> lib_cmd(const std::string& dir, const std::string& mode,
                                 const std::string& timeout_ms = "300",
                                 const std::string& lib = fixtures_dir() + "/libnv_fixture.so") {
  return {fixtures_dir() + "/nv_lib_main", lib, dir, mode, timeout_ms};
}

struct LibRecording {
  std::string dir, trace;
  std::vector<json> printed;
  std::vector<std::string> injections;  // every allocation and the map answered with success
};

LibRecording record_lib(const std::string& name, const std::string& mode) {
  LibRecording r;
  r.dir = make_fake_devices(name);
  r.trace = temp_dir() + "/" + name + ".jsonl";
  std::vector<std::string> argv{cudatool_bin(), "trace", "--mode",    "preload",    "-q",
                                "-o",           r.trace, "--devices", r.dir + "/*", "--"};
  auto cmd = lib_cmd(r.dir, mode, "50");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  RunResult t = run(argv);
  EXPECT_EQ(t.status, 0) << t.err;
  r.printed = json_lines(t.out);
  TraceFile tf = load_trace(r.trace);
  for (const json& e : tf.events) {
    if (e["sys"] != "ioctl") continue;
    std::string req = e["req"];
    if (req == "0xc020462b" || req == "0xc038464e") {  // NV_ESC_RM_ALLOC (NVOS21), _MAP_MEMORY
      r.injections.push_back("--inject");
      r.injections.push_back("seq=" + std::to_string(e["seq"].get<int>()) + ",ret=0");
    }
  }
  // client, device, memory, spare memory, their two maps, channel
  EXPECT_EQ(r.injections.size(), 2u * 7);
  std::filesystem::remove_all(r.dir);
  return r;
}

json work_line(const std::vector<json>& printed) {
  for (const json& e : printed) {
    if (e.contains("work")) return e;
  }
  return json();
}

TEST(ReplayFakeGpu, HostAndCopyEngineWorkIsCarriedOut) {
  LibRecording rec = record_lib("rg-ce", "ce");
  json recorded = work_line(rec.printed);
  ASSERT_TRUE(recorded.is_object());
  EXPECT_EQ(recorded["host"], false);  // nothing executes a channel on fake nodes
  EXPECT_EQ(recorded["copied"], false);
  std::string replayed = temp_dir() + "/rg-ce-replayed.jsonl";
  std::vector<std::string> extra = rec.injections;
  extra.insert(extra.end(), {"-o", replayed});
  ReplayRun r = replay(rec.trace, extra, lib_cmd(rec.dir, "ce"));
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  // The library's allocs pass paramsSize 0: the replayed trace says, as the recording does, that
  // their parameters were read with the size RM gives the class (ab leaves those out against an
  // imported capture).
  auto class_sized = [](const std::string& path) {
    size_t n = 0;
    for (const json& e : load_trace(path).events) {
      for (const json& b : e.value("nested", json::array()))
        n += b.value("sized_by", "") == "class";
    }
    return n;
  };
  EXPECT_GT(class_sized(rec.trace), 0u);
  EXPECT_EQ(class_sized(replayed), class_sized(rec.trace));
  json work = work_line(json_lines(r.run.out));
  ASSERT_TRUE(work.is_object()) << r.run.out;
  EXPECT_EQ(work["host"], true) << r.report.dump(1);
  EXPECT_EQ(work["ce"], true);
  EXPECT_EQ(work["copied"], true);
  EXPECT_EQ(work["gp_get"], 1);  // GPGet followed GPPut
  EXPECT_EQ(r.report["fake_gpu"]["gpfifo_entries"], 1);
  EXPECT_EQ(r.report["fake_gpu"]["semaphore_releases"], 2);
  EXPECT_EQ(r.report["fake_gpu"]["mappings"], 2);  // the work's memory and the spare
  EXPECT_EQ(r.report["fake_gpu"]["mappings_known"], 2);
  EXPECT_EQ(r.report["injected"].size(), 7u);
  // The threads' and the child's controls were answered as recorded (ENOTTY on fake nodes).
  size_t controls = 0;
  for (const json& e : json_lines(r.run.out)) {
    if (e.contains("call") && e["call"].get<std::string>().rfind("control-", 0) == 0) {
      EXPECT_EQ(e["ret"], -1) << e.dump();
      ++controls;
    }
  }
  EXPECT_EQ(controls, 3u);
  EXPECT_EQ(r.report["end"], "exit");
}

// The default, --execute none: the fake GPU reads the launch as the GPU would (the QMD nv_lib.c
// wrote: version 04_00, grid, block, program, constant buffer 0, a release semaphore) and
// completes it without executing it: the QMD's release and the host release after it come, the
// channel's entry is carried out, and the launch is reported with what its QMD says.
TEST(ReplayFakeGpu, ALaunchIsCompletedNotExecutedAndReported) {
  LibRecording rec = record_lib("rg-launch-done", "launch");
  std::vector<std::string> extra = rec.injections;
  extra.insert(extra.end(), {"--deadline", "5"});
  ReplayRun r = replay(rec.trace, extra, lib_cmd(rec.dir, "launch", "600000"), 60);
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_EQ(r.report["end"], "exit") << r.report.dump(1);
  uint64_t mem = 0;
  for (const json& e : json_lines(r.run.out)) {
    if (e.contains("mem")) mem = std::stoull(e["mem"].get<std::string>(), nullptr, 16);
  }
  ASSERT_NE(mem, 0u) << r.run.out;
  json work = work_line(json_lines(r.run.out));
  ASSERT_TRUE(work.is_object()) << r.run.out;
  EXPECT_EQ(work["qmd"], true) << "the QMD's release semaphore was not written";
  EXPECT_EQ(work["host"], true) << "the host release after the launch did not come";
  EXPECT_EQ(work["gp_get"], 1);
  const json& gpu = r.report["fake_gpu"];
  EXPECT_TRUE(gpu["unfinished"].empty()) << gpu.dump(1);
  EXPECT_EQ(gpu["executed"], false);
  EXPECT_EQ(gpu["execute"], "none");
  EXPECT_EQ(gpu["compute"]["launches"], 1);
  EXPECT_EQ(gpu["compute"]["stopped"], 0);
  ASSERT_EQ(gpu["launches"].size(), 1u) << gpu.dump(1);
  const json& l = gpu["launches"][0];
  auto hex = [](const json& v) { return std::stoull(v.get<std::string>(), nullptr, 16); };
  EXPECT_EQ(l["grid"], json::array({4, 1, 1}));
  EXPECT_EQ(l["block"], json::array({128, 1, 1}));
  EXPECT_EQ(l["qmd_version"], "04_00");
  EXPECT_EQ(hex(l["qmd"]), mem + 0x1400);
  EXPECT_EQ(hex(l["program"]), mem + 0x1200);
  EXPECT_EQ(hex(l["cb0"]), mem + 0x1600);
  EXPECT_EQ(l["cb0_size"], 0x240);
  EXPECT_EQ(l["class"], "0xcbc0");
  EXPECT_TRUE(l["kernel"].is_null());  // no CUDA image was opened
  EXPECT_TRUE(l["params"].is_null());
  EXPECT_TRUE(r.report["stall"].is_null());
}

// --execute stop: a GPU that never finishes compute work. The channel stops at the launch, and
// the report names what the program waits for: the QMD's own release semaphore (not the host
// release after it), with its address and payload as the QMD gives them.
TEST(ReplayFakeGpu, ALaunchStoppedAtIsNotExecutedAndTheWaitIsReported) {
  LibRecording rec = record_lib("rg-launch", "launch");
  std::vector<std::string> extra = rec.injections;
  extra.insert(extra.end(), {"--deadline", "1", "--execute", "stop"});
  ReplayRun r = replay(rec.trace, extra, lib_cmd(rec.dir, "launch", "600000"), 60);
  EXPECT_FALSE(r.run.timed_out);
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_EQ(r.run.status, 1);
  EXPECT_EQ(r.report["end"], "deadline");
  uint64_t mem = 0;
  for (const json& e : json_lines(r.run.out)) {
    if (e.contains("mem")) mem = std::stoull(e["mem"].get<std::string>(), nullptr, 16);
  }
  ASSERT_NE(mem, 0u) << r.run.out;
  const json& stall = r.report["stall"];
  ASSERT_TRUE(stall.is_object());
  ASSERT_EQ(stall["waits"].size(), 1u) << stall.dump(1);
  // The QMD's release: semaphore at mem + 0xc20, payload 0x5eed (nv_lib.c's write_qmd).
  EXPECT_EQ(std::stoull(stall["waits"][0]["gpu_va"].get<std::string>(), nullptr, 16), mem + 0xc20);
  EXPECT_EQ(stall["waits"][0]["payload"], "0x5eed");
  std::string msg = stall["message"];
  EXPECT_NE(msg.find("libnv_fixture.so waits at libnv_fixture.so+0x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nvf_run"), std::string::npos) << msg;
  EXPECT_NE(msg.find("= 0x5eed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("replay does not execute compute work"), std::string::npos) << msg;
  EXPECT_EQ(r.report["fake_gpu"]["gpfifo_entries"], 0);  // the entry that holds the launch stays
  EXPECT_EQ(r.report["fake_gpu"]["launches_reached"], 1);
  EXPECT_EQ(r.report["fake_gpu"]["compute"]["stopped"], 1);
  EXPECT_TRUE(r.report["fake_gpu"]["launches"].empty());
  ASSERT_EQ(r.report["fake_gpu"]["unfinished"].size(), 1u) << r.report["fake_gpu"].dump(1);
  const json& u = r.report["fake_gpu"]["unfinished"][0];
  EXPECT_EQ(u["stop"], "launch");
  EXPECT_EQ(u["pending_entries"], 1);
  EXPECT_EQ(u["launches"], 1);
}

// The same stop, but the library gives up waiting after 300 ms and the program ends by itself:
// the run ends with "exit", yet the compute work that was never done is reported, and it is a
// finding.
TEST(ReplayFakeGpu, ALaunchNotWaitedForIsStillReported) {
  LibRecording rec = record_lib("rg-launch-exit", "launch");
  std::vector<std::string> extra = rec.injections;
  extra.insert(extra.end(), {"--execute", "stop"});
  ReplayRun r = replay(rec.trace, extra, lib_cmd(rec.dir, "launch"), 60);
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_EQ(r.report["end"], "exit");
  EXPECT_TRUE(r.report["stall"].is_null());
  json work = work_line(json_lines(r.run.out));
  ASSERT_TRUE(work.is_object()) << r.run.out;
  EXPECT_EQ(work["host"], false);  // the release after the launch never came
  EXPECT_EQ(r.report["fake_gpu"]["launches_reached"], 1);
  ASSERT_EQ(r.report["fake_gpu"]["unfinished"].size(), 1u) << r.report["fake_gpu"].dump(1);
  EXPECT_NE(r.report["fake_gpu"]["unfinished"][0]["message"].get<std::string>().find(
                "replay does not execute compute work"),
            std::string::npos);
  EXPECT_EQ(r.report["verdict"], 1);
  EXPECT_EQ(r.run.status, 1);
}

// The trace's driver version against the library the program loaded: read from the library's
// strings ("Version X. Copyright", as `cudatool info` reads it), so a copy named libcuda.so.1 is
// checked, and a file name that claims another version does not fool the check.
TEST(ReplayFakeGpu, TheLibraryIsCheckedByTheVersionInItsStrings) {
  LibRecording rec = record_lib("rg-version", "host");
  auto with_version = [&](const std::string& v) {  // the recording, its header claiming driver v
    std::string text = read_file(rec.trace);
    size_t nl = text.find('\n');
    nlohmann::ordered_json header = nlohmann::ordered_json::parse(text.substr(0, nl));
    header["driver_version"] = v;
    std::string path = temp_dir() + "/rg-version-" + v + ".jsonl";
    std::ofstream(path, std::ios::binary) << header.dump() << text.substr(nl);
    return path;
  };
  std::string dir = temp_dir() + "/rg-version-libs";
  std::filesystem::create_directories(dir);
  auto copy_as = [&](const std::string& name) {
    std::filesystem::copy_file(fixtures_dir() + "/libnv_fixture.so", dir + "/" + name,
                               std::filesystem::copy_options::overwrite_existing);
    return dir + "/" + name;
  };
  std::string plain = copy_as("libcuda.so.1"), lying = copy_as("libcuda.so.580.159.04");
  // The versions agree: the program runs and is answered.
  ReplayRun same =
      replay(with_version("999.88.77"), rec.injections, lib_cmd(rec.dir, "host", "300", plain));
  ASSERT_TRUE(same.report.is_object()) << same.run.err;
  EXPECT_EQ(same.report["end"], "exit") << same.report.dump(1);
  EXPECT_TRUE(same.report["refusal"].is_null());
  // Another version: refused, both named, whatever the file is called.
  for (const std::string& lib : {plain, lying}) {
    ReplayRun r =
        replay(with_version("580.159.04"), rec.injections, lib_cmd(rec.dir, "host", "300", lib));
    ASSERT_TRUE(r.report.is_object()) << r.run.err;
    EXPECT_EQ(r.run.status, 2) << lib;
    EXPECT_EQ(r.report["end"], "refused") << lib;
    std::string why = r.report["refusal"].is_string() ? r.report["refusal"] : "";
    EXPECT_NE(why.find(lib + " (driver 999.88.77 from its strings)"), std::string::npos) << why;
    EXPECT_NE(why.find("recorded with driver 580.159.04"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace cudatool::test
