// `cudatool replay` with the real libcuda 580.159.04 (the shared data directory; unpacked into
// the build tree, never committed) answered from the real capture of work.c on an H200
// (tests/data/captures/trace_a, imported): cuInit and the device queries give what the recording
// says, the primary context is created (the fake GPU carries out the channels' semaphores),
// injections give the failures the H200 gave, the replayed trace compares with the recording,
// and a trace of another driver version is refused. Without the library: SKIPPED, and why.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "ab/normalize.hpp"
#include "harness.hpp"
#include "replay_support.hpp"
#include "rm/tables.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

uint32_t status_value_of(const rm::Tables& t, std::string_view name) {
  for (const rm::StatusEntry& e : t.statuses()) {
    if (e.name == name) return e.value;
  }
  ADD_FAILURE() << name;
  return 0;
}

// The capture imported as a trace (once per test binary and version).
std::string imported(const std::string& name, const std::string& version) {
  std::string out = temp_dir() + "/replay-" + name + "-" + version + ".jsonl";
  if (read_file(out).empty()) {
    RunResult r = run({cudatool_bin(), "import", captures_dir() + "/" + name + ".jsonl.xz", "-o",
                       out, "--driver-version", version});
    EXPECT_EQ(r.status, 0) << r.err;
  }
  return out;
}

// Each line cuda_probe printed, by call name (the last one of a name wins) and the device facts.
struct Probe {
  std::map<std::string, int> ret;
  json device;
  std::vector<std::string> order;
  // -1000 when the program never printed the call.
  [[nodiscard]] int ret_of(const std::string& call) const {
    auto it = ret.find(call);
    return it == ret.end() ? -1000 : it->second;
  }
};
Probe parse_probe(const std::string& out) {
  Probe p;
  for (const json& e : json_lines(out)) {
    if (e.contains("call")) {
      p.ret[e["call"]] = e.value("ret", -1);
      p.order.push_back(e["call"]);
    }
    if (e.contains("device")) p.device = e["device"];
  }
  return p;
}

class ReplayReal : public ::testing::Test {
 protected:
  void SetUp() override {
    build_ = shared_builds().front();
    CUDATOOL_REQUIRE_BUILD(build_);
    trace_ = imported("trace_a", build_.version);
  }
  ReplayRun replay_probe(const std::string& mode, std::vector<std::string> extra = {},
                         const std::string& trace = "", const std::vector<std::string>& args = {}) {
    extra.insert(extra.begin(), {"--deadline", "5"});
    std::vector<std::string> cmd = {cuda_probe_bin(), build_.lib_path, mode};
    cmd.insert(cmd.end(), args.begin(), args.end());
    return replay(trace.empty() ? trace_ : trace, extra, cmd, 180);
  }
  DriverBuild build_;
  std::string trace_;
};

TEST_F(ReplayReal, CuInitAndDeviceQueriesReturnTheRecordedValues) {
  std::set<std::string> nodes = host_nvidia_nodes();
  ReplayRun r = replay_probe("init");
  EXPECT_EQ(host_nvidia_nodes(), nodes) << "device nodes appeared on the host";
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  Probe p = parse_probe(r.run.out);
  EXPECT_EQ(p.ret_of("cuInit"), 0) << r.run.out << r.report.dump(1);
  ASSERT_TRUE(p.device.is_object()) << r.run.out;
  // What the recording says: the GPU's name (NV2080_CTRL_CMD_GPU_GET_NAME_STRING, as ab reads it)
  // and the driver version of the header.
  auto norm = ab::normalize_file(trace_);
  ASSERT_TRUE(norm);
  EXPECT_EQ(p.device["name"], (*norm)->gpu.name);
  EXPECT_EQ(p.device["count"], 1);
  // The H200 of trace_a as the driver API reported it on that machine (issue 14): libcuda turns
  // the recorded FB_GET_INFO_V2 and GR_GET_INFO answers into these.
  EXPECT_EQ(p.device["name"], "NVIDIA H200");
  EXPECT_EQ(p.device["cc"], "9.0");
  EXPECT_EQ(p.device["mem"].get<uint64_t>(), 150109880320u);
  EXPECT_EQ(p.device["sms"].get<int>(), 132);
  // The build-version strings the capture lacks were supplied from the header, and said so.
  EXPECT_FALSE(r.report["synthesized"].empty());
  EXPECT_EQ(r.report["end"], "exit");
  EXPECT_EQ(r.report["exit_status"], 0);
}

TEST_F(ReplayReal, InjectedFbInfoFailureMakesCuInitFailWith100) {
  ReplayRun r = replay_probe(
      "init", {"--inject", "cmd=NV2080_CTRL_CMD_FB_GET_INFO_V2,nth=1,status=NV_ERR_NOT_SUPPORTED"});
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  Probe p = parse_probe(r.run.out);
  EXPECT_EQ(p.ret_of("cuInit"), 100) << r.run.out;  // CUDA_ERROR_NO_DEVICE
  ASSERT_EQ(r.report["injected"].size(), 1u);
  EXPECT_NE(r.report["injected"][0].get<std::string>().find("NV_ERR_NOT_SUPPORTED"),
            std::string::npos);
}

TEST_F(ReplayReal, PrimaryContextIsCreated) {
  ReplayRun r = replay_probe("ctx");
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  Probe p = parse_probe(r.run.out);
  EXPECT_EQ(p.ret_of("cuDevicePrimaryCtxRetain"), 0) << r.run.out << r.report.dump(1);
  EXPECT_EQ(p.ret_of("cuCtxSetCurrent"), 0);
  EXPECT_GT(r.report["fake_gpu"]["semaphore_releases"].get<uint64_t>(), 0u);
  // Every mmap of an RM device fd is tied to the memory object its NV_ESC_RM_MAP_MEMORY named
  // (through the fd in its argument): 30 in this recording's context creation.
  EXPECT_GT(r.report["fake_gpu"]["mappings"].get<uint64_t>(), 0u);
  EXPECT_EQ(r.report["fake_gpu"]["mappings_known"], r.report["fake_gpu"]["mappings"]);
}

TEST_F(ReplayReal, InjectedChannelFailuresMakeContextCreationFailWith801) {
  for (const char* spec :
       {"cmd=NV906F_CTRL_GET_CLASS_ENGINEID,nth=1,status=NV_ERR_NOT_SUPPORTED",
        "cmd=NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,nth=1,status=NV_ERR_NOT_SUPPORTED"}) {
    ReplayRun r = replay_probe("ctx", {"--inject", spec});
    ASSERT_TRUE(r.report.is_object()) << r.run.err;
    Probe p = parse_probe(r.run.out);
    EXPECT_EQ(p.ret_of("cuInit"), 0) << spec;
    EXPECT_EQ(p.ret_of("cuDevicePrimaryCtxRetain"), 801) << spec << "\n" << r.run.out;
  }
}

// The replayed trace (-o) of context creation against the recording, through `ab`: every
// divergence is of a kind docs/replay.md ("The replayed trace") explains, each traced to what
// the imported capture lacks or what the program did not do:
//   left out            the replayed run's closes, dups, execve and exit (the capture format
//                        records none), its class-sized allocation parameters, buffers behind
//                        pointer members and UVM argument bytes past 256 (the "capture" note);
//   missing_call         recorded calls the replay reports as skipped or not reached (cuda_probe
//                        ctx ends after context creation: no teardown; 9 GR mask controls libcuda
//                        skips without GR_GET_INFO's list);
//   different_parameters the lengths of external ranges, which libcuda sizes from allocation
//                        outputs the capture lacks.
// Anything else — a control answered with another status, a return that differs — fails.
TEST_F(ReplayReal, TheReplayedTraceDivergesOnlyWhereTheCaptureIsShort) {
  std::string replayed = temp_dir() + "/replay-ctx-o.jsonl";
  ReplayRun r = replay_probe("ctx", {"-o", replayed});
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  ASSERT_EQ(parse_probe(r.run.out).ret_of("cuCtxSetCurrent"), 0) << r.run.out;
  // The recorded calls the report says were never asked: runs of seqs (one thread).
  std::vector<std::pair<uint64_t, uint64_t>> never;
  for (const char* k : {"skipped", "not_reached"}) {
    for (const json& d : deviations(r.report, k)) {
      uint64_t first = d["recorded_seq"].get<uint64_t>();
      never.emplace_back(first, first + d["count"].get<uint64_t>());
    }
  }
  RunResult ab = run({cudatool_bin(), "ab", "--json", "--all", trace_, replayed});
  json v = json::parse(ab.out, nullptr, false);
  ASSERT_TRUE(v.is_object()) << ab.err;
  // What the capture does not hold (allocation parameters RM sizes by the class, the buffers
  // behind pointer members, UVM arguments past 256 bytes) is not compared: the divergences left
  // are the calls libcuda made differently for want of it — GR mask controls skipped without
  // GR_GET_INFO's list, and external ranges sized from allocation outputs the capture lacks.
  const std::set<std::string> sized_from_outputs = {"UVM_CREATE_EXTERNAL_RANGE",
                                                    "UVM_MAP_EXTERNAL_ALLOCATION", "UVM_FREE"};
  std::map<std::string, int> seen;
  for (const json& d : v["divergences"]) {
    std::string kind = d["kind"];
    ++seen[kind];
    const json& a = d["a"];
    if (kind == "missing_call") {
      uint64_t seq = a["seq"];
      bool reported = false;
      for (auto [lo, hi] : never) reported = reported || (seq >= lo && seq < hi);
      EXPECT_TRUE(reported) << "a missing call the report does not list: " << a["summary"];
    } else if (kind == "different_parameters") {
      std::string call = a["call"];
      // The same call on both sides, named alike (no object read past what the capture holds).
      EXPECT_EQ(a["summary"], d["b"]["summary"]) << d.dump();
      for (const json& f : d["fields"]) {
        EXPECT_TRUE(sized_from_outputs.count(call) && f["field"] == "arg.length")
            << call << ": " << f.dump();
      }
    } else {
      ADD_FAILURE() << "a divergence of kind " << kind << ": " << d.dump();
    }
  }
  const json* capture = nullptr;
  for (const json& n : v["notes"]) {
    if (n["what"] == "capture") capture = &n;
  }
  ASSERT_NE(capture, nullptr) << v["notes"].dump(1);
  std::string text = (*capture)["message"];
  EXPECT_NE(text.find("not compared in B: the parameters of "), std::string::npos) << text;
  EXPECT_NE(text.find("allocations with paramsSize 0"), std::string::npos) << text;
  EXPECT_NE(text.find("UVM argument"), std::string::npos) << text;
  // What the docs' table says, so that the docs stay true.
  EXPECT_GT(seen["missing_call"], 0);
  EXPECT_GT(seen["different_parameters"], 0);
  // The replayed run's closes, dups, exec and exit have nothing to meet in a capture (it holds
  // opens, mmaps and ioctls): left out of the alignment, each one, and a note says so — not
  // extra calls. (The replayed run makes no munmap before context creation.)
  size_t kinds = 0;
  for (const json& e : load_trace(replayed).events) {
    std::string sys = e["sys"];
    kinds += sys == "close" || sys == "dup" || sys == "execve" || sys == "exit" || sys == "munmap";
  }
  EXPECT_GT(kinds, 0u);
  EXPECT_EQ(v["alignment"]["left_out_b"], kinds) << v["alignment"].dump();
  EXPECT_EQ(v["alignment"]["left_out_a"], 0) << v["alignment"].dump();
  bool noted = false;
  for (const json& n : v["notes"]) noted = noted || n["what"] == "kinds";
  EXPECT_TRUE(noted) << v["notes"].dump(1);
  // The replayed trace holds the buffers a recording of this run would hold, found by the
  // recorders' planner in the live parameters, though the capture answered none of them: the
  // GR_GET_INFO list (grInfoListSize x NV2080_CTRL_GR_INFO, as the program passed it), the
  // channel lists, the three build-version strings — each named as the recorders name it.
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  const rm::StructEntry* gr_info = t.find_struct("NV2080_CTRL_GR_INFO");
  ASSERT_NE(gr_info, nullptr);
  std::map<std::string, int> roles;
  for (const json& e : load_trace(replayed).events) {
    if (!e.contains("nested")) continue;
    const json* params = nullptr;
    for (const json& n : e["nested"]) {
      std::string role = n["role"];
      if (role == "params") params = &n;
      if (role.rfind("params.", 0) != 0) continue;
      ++roles[role];
      EXPECT_EQ(role.find("+0x"), std::string::npos) << "an unnamed member: " << n.dump();
      if (role == "params.grInfoList") {
        ASSERT_NE(params, nullptr);
        std::string pre = (*params)["pre"];
        ASSERT_GE(pre.size(), 8u);
        uint32_t count = static_cast<uint32_t>(
            std::stoul(pre.substr(6, 2) + pre.substr(4, 2) + pre.substr(2, 2) + pre.substr(0, 2),
                       nullptr, 16));
        EXPECT_EQ(n["size"].get<uint64_t>(), count * static_cast<uint64_t>(gr_info->size))
            << n.dump();
      }
    }
  }
  EXPECT_EQ(roles["params.grInfoList"], 1) << ::testing::PrintToString(roles);
  for (const char* s :
       {"params.pDriverVersionBuffer", "params.pVersionBuffer", "params.pTitleBuffer"}) {
    EXPECT_EQ(roles[s], 1) << s;
  }
  EXPECT_GT(roles["params.pChannelList"], 0) << ::testing::PrintToString(roles);
}

// The rest of work.c: alloc, copy, module, launch, sync, copy back. libcuda makes the launch as
// recorded (cuLaunchKernel 0); the fake GPU carries out the compute class's inline-to-memory
// writes (the module's code, the constant buffer, the QMDs) and completes the launch without
// executing it: its QMD's release semaphore is written, so cuCtxSynchronize returns at once (no
// MC_SERVICE_INTERRUPTS polls answered NOT_SUPPORTED), and the launch is reported: the kernel
// named by its code in the cubin the program opened (kern_sm90.cubin: add1), grid and block as
// cuda_probe passed them, and the two parameters cut by add1's KPARAM layout: the device pointer
// cuMemAlloc returned and N. The copy back returns what was sent: the 1 MiB went to video memory
// the replay backs and came back (as_sent); nothing was computed (bad = N).
TEST_F(ReplayReal, AKernelLaunchIsCompletedNotExecutedAndReported) {
  ReplayRun r = replay_probe("work", {}, "", {fixtures_dir() + "/kern_sm90.cubin"});
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  Probe p = parse_probe(r.run.out);
  EXPECT_EQ(p.ret_of("cuModuleLoad"), 0) << r.run.out;
  EXPECT_EQ(p.ret_of("cuLaunchKernel"), 0) << r.run.out;
  EXPECT_EQ(p.ret_of("cuCtxSynchronize"), 0) << r.run.out;
  EXPECT_EQ(p.ret_of("cuMemcpyDtoH_v2"), 0) << r.run.out;
  EXPECT_EQ(r.report["end"], "exit") << r.report.dump(1);
  uint64_t dptr = 0;
  int64_t bad = -1, as_sent = -1;
  for (const json& e : json_lines(r.run.out)) {
    if (e.contains("dptr")) dptr = std::stoull(e["dptr"].get<std::string>(), nullptr, 16);
    if (e.contains("bad")) {
      bad = e["bad"];
      as_sent = e.value("as_sent", -1);
    }
  }
  ASSERT_NE(dptr, 0u) << r.run.out;
  EXPECT_EQ(as_sent, 1 << 18) << "the copy back did not return what was sent: " << r.run.out;
  EXPECT_EQ(bad, 1 << 18) << "the kernel's result came back without a kernel run: " << r.run.out;
  const json& gpu = r.report["fake_gpu"];
  EXPECT_TRUE(gpu["unfinished"].empty()) << gpu.dump(1);
  EXPECT_EQ(gpu["executed"], false);
  EXPECT_EQ(gpu["compute"]["stopped"], 0);
  EXPECT_GT(gpu["vidmem"]["backed_bytes"].get<uint64_t>(), 0u) << gpu["vidmem"].dump();
  ASSERT_EQ(gpu["launches"].size(), 1u) << gpu.dump(1);
  const json& l = gpu["launches"][0];
  EXPECT_EQ(l["kernel"], "add1") << l.dump(1);
  EXPECT_EQ(l["grid"], json::array({1024, 1, 1}));
  EXPECT_EQ(l["block"], json::array({256, 1, 1}));
  ASSERT_TRUE(l["params"].is_array()) << l.dump(1);
  ASSERT_EQ(l["params"].size(), 2u) << l.dump(1);
  EXPECT_EQ(l["params"][0]["value"], dptr) << l.dump(1);
  EXPECT_EQ(l["params"][1]["value"], 1 << 18) << l.dump(1);
  for (const json& d : deviations(r.report, "unrecorded")) {
    EXPECT_NE(d["outcome"], "unrecorded_not_supported")
        << "a call the recording does not answer: " << d.dump();
  }
}

// --execute stop: the fake GPU stops at the launch, and libcuda's cuCtxSynchronize gives up
// after its MC_SERVICE_INTERRUPTS polls; the report names the QMD's release semaphore (not
// "0x0 = 0x0") and counts the launch as not carried out: a finding.
TEST_F(ReplayReal, AKernelLaunchStoppedAtIsReported) {
  ReplayRun r =
      replay_probe("work", {"--execute", "stop"}, "", {fixtures_dir() + "/kern_sm90.cubin"});
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  const json& gpu = r.report["fake_gpu"];
  EXPECT_EQ(gpu["compute"]["stopped"], 1) << gpu.dump(1);
  EXPECT_TRUE(gpu["launches"].empty());
  bool at_launch = false;
  for (const json& u : gpu["unfinished"]) at_launch = at_launch || u["stop"] == "launch";
  EXPECT_TRUE(at_launch) << gpu.dump(1);
  EXPECT_EQ(r.report["verdict"], 1);
}

// The docs' bisect: GOOD is a replay of cuInit, BAD the same with FB_GET_INFO_V2 made to fail
// (both written with -o). The candidates are the calls BAD answered differently — not the closes
// whose fd naming shifted, nor the exit — and the culprit is the one status that differs.
TEST_F(ReplayReal, BisectNamesTheFailedControlAlone) {
  std::string good = temp_dir() + "/real-bisect-good.jsonl",
              bad = temp_dir() + "/real-bisect-bad.jsonl";
  ReplayRun g = replay_probe("init", {"-o", good});
  ASSERT_EQ(parse_probe(g.run.out).ret_of("cuInit"), 0) << g.run.out;
  ReplayRun b = replay_probe(
      "init", {"-o", bad, "--inject",
               "cmd=NV2080_CTRL_CMD_FB_GET_INFO_V2,nth=1,status=NV_ERR_NOT_SUPPORTED"});
  ASSERT_EQ(parse_probe(b.run.out).ret_of("cuInit"), 100) << b.run.out;
  std::string report = temp_dir() + "/real-bisect.json";
  RunResult r = run({cudatool_bin(), "replay", "--json", "--report", report, "--bisect", good, bad,
                     "--", cuda_probe_bin(), build_.lib_path, "init"},
                    600);
  EXPECT_EQ(r.status, 1) << r.err;
  json rep = json::parse(read_file(report), nullptr, false);
  ASSERT_TRUE(rep.is_object()) << r.err;
  ASSERT_TRUE(rep["found"].get<bool>()) << rep["message"];
  for (const json& d : rep["diffs"]) {
    std::string what = d["what"];
    EXPECT_NE(what.rfind("close", 0), 0u) << "a close is not an answer: " << d.dump();
    EXPECT_NE(what.rfind("exit", 0), 0u) << "the exit is not an answer: " << d.dump();
  }
  ASSERT_EQ(rep["culprit"].size(), 1u) << rep.dump(1);
  const json& c = rep["diffs"][rep["culprit"][0].get<size_t>()];
  EXPECT_NE(c["what"].get<std::string>().find("NV2080_CTRL_CMD_FB_GET_INFO_V2"), std::string::npos)
      << c.dump();
  EXPECT_NE(c["change"].get<std::string>().find("NV_ERR_NOT_SUPPORTED"), std::string::npos)
      << c.dump();
  std::cout << "bisect of the FB_GET_INFO_V2 failure: " << rep["diffs"].size() << " candidates, "
            << rep["tries"].size() << " tries, " << rep["wall_s"].get<double>() << " s wall\n";
}

// Issue 32: GOOD and BAD are imports of two captures, which hold no exit status. BAD is trace_b
// made into another machine's run that failed: its GPU's UUID is another (everywhere, as the
// machine answers it), one GPC's TPC mask is another (floorsweeping), and a later
// NV2080_CTRL_CMD_FB_GET_INFO_V2 failed with NV_ERR_NOT_SUPPORTED, after which BAD's calls end.
// Without an exit status a try fails as BAD failed when the replayed program does not reach
// GOOD's call where BAD's path departs; the culprit is the planted status alone — the TPC mask
// is a candidate that does not make cuInit fail, the UUID none at all.
TEST_F(ReplayReal, BisectBetweenTwoImportsWithoutAnExitStatusFindsAPlantedFailure) {
  const rm::Tables& t = rm::tables_for_driver(build_.version);
  const rm::StructEntry* nvos54 = t.find_struct("NVOS54_PARAMETERS");
  const rm::StructEntry* tpc = t.find_struct("NV2080_CTRL_GR_GET_TPC_MASK_PARAMS");
  ASSERT_TRUE(nvos54 && tpc);
  uint32_t cmd_off = t.find_field(*nvos54, "cmd")->offset;
  uint32_t status_off = t.find_field(*nvos54, "status")->offset;
  uint32_t mask_off = t.find_field(*tpc, "tpcMask")->offset;
  auto cmd_id = [&](std::string_view name) {
    for (const rm::CtrlEntry& c : t.controls()) {
      if (c.name == name) return c.id;
    }
    ADD_FAILURE() << name;
    return 0u;
  };
  const uint32_t kTpc = cmd_id("NV2080_CTRL_CMD_GR_GET_TPC_MASK"),
                 kFbInfo = cmd_id("NV2080_CTRL_CMD_FB_GET_INFO_V2");
  // A little-endian word of a capture's hex string, and a replacement of it.
  auto word = [](const std::string& hex, uint32_t off) {
    return hex.size() < 2 * (off + 4)
               ? 0u
               : static_cast<uint32_t>(
                     std::stoul(hex.substr(2 * off + 6, 2) + hex.substr(2 * off + 4, 2) +
                                    hex.substr(2 * off + 2, 2) + hex.substr(2 * off, 2),
                                nullptr, 16));
  };
  auto set_word = [](std::string& hex, uint32_t off, uint32_t v) {
    char b[9];
    snprintf(b, sizeof b, "%02x%02x%02x%02x", v & 0xff, v >> 8 & 0xff, v >> 16 & 0xff, v >> 24);
    hex.replace(2 * off, 8, b);
  };
  RunResult xz = run({"xz", "-dc", captures_dir() + "/trace_b.jsonl.xz"});
  ASSERT_EQ(xz.status, 0) << xz.err;
  std::string bad_text, uuid;
  int tpc_seen = 0, seq_tpc = -1, seq_fail = -1;
  std::istringstream lines(xz.out);
  for (std::string line; std::getline(lines, line);) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);
    std::string pre = j.value("pre", ""), post = j.value("post", "");
    uint32_t cmd = j.value("req", "") == "0xc020462a" ? word(pre, cmd_off) : 0;
    if (cmd == kTpc && ++tpc_seen == 2) {  // GPC 1: one TPC off
      std::string np = j["npost"];
      set_word(np, mask_off, word(np, mask_off) & ~2u);
      j["npost"] = np;
      seq_tpc = j["seq"];
    }
    if (cmd == kFbInfo && tpc_seen > 0) {
      set_word(post, status_off, status_value_of(t, "NV_ERR_NOT_SUPPORTED"));
      j["post"] = post;
      seq_fail = j["seq"];
    }
    bad_text += j.dump() + "\n";
    if (seq_fail >= 0) break;  // BAD's calls end there
  }
  ASSERT_GE(seq_tpc, 0);
  ASSERT_GT(seq_fail, seq_tpc);
  // Another board: the UUID the H200 answered (the GID in binary, the UVM calls), everywhere.
  std::string gid = "5b57e3bf3ef89827e2df30d462191363", other = "00112233445566778899aabbccddeeff";
  size_t replaced = 0;
  for (size_t at = bad_text.find(gid); at != std::string::npos; at = bad_text.find(gid, at)) {
    bad_text.replace(at, gid.size(), other);
    ++replaced;
  }
  ASSERT_GT(replaced, 0u);
  std::string bad_capture = write_temp("real-bisect-bad-capture.jsonl", bad_text);
  std::string bad = temp_dir() + "/real-bisect-bad-import.jsonl";
  RunResult imp =
      run({cudatool_bin(), "import", bad_capture, "-o", bad, "--driver-version", build_.version});
  ASSERT_EQ(imp.status, 0) << imp.err;
  std::string good = imported("trace_a", build_.version);
  for (const std::string& p : {good, bad}) {
    EXPECT_TRUE(load_trace(p).trailer["exit_status"].is_null()) << p;
  }
  std::string report = temp_dir() + "/real-bisect-imports.json";
  RunResult r = run({cudatool_bin(), "replay", "--json", "--report", report, "--bisect", good, bad,
                     "--", cuda_probe_bin(), build_.lib_path, "init"},
                    600);
  EXPECT_EQ(r.status, 1) << r.err;
  json rep = json::parse(read_file(report), nullptr, false);
  ASSERT_TRUE(rep.is_object()) << r.err;
  EXPECT_EQ(rep["criterion_kind"], "path") << rep["criterion"];
  EXPECT_EQ(rep["departure"], seq_fail + 1) << rep["criterion"];
  ASSERT_TRUE(rep["found"].get<bool>()) << rep["message"];
  std::set<uint64_t> candidates;
  for (const json& d : rep["diffs"]) candidates.insert(d["bad_seq"].get<uint64_t>());
  EXPECT_EQ(candidates,
            (std::set<uint64_t>{static_cast<uint64_t>(seq_tpc), static_cast<uint64_t>(seq_fail)}))
      << rep["diffs"].dump(1);
  ASSERT_EQ(rep["culprit"].size(), 1u) << rep.dump(1);
  const json& c = rep["diffs"][rep["culprit"][0].get<size_t>()];
  EXPECT_EQ(c["bad_seq"], seq_fail);
  EXPECT_NE(c["change"].get<std::string>().find("NV_ERR_NOT_SUPPORTED"), std::string::npos);
  EXPECT_FALSE(rep["tries"][0]["failed"].get<bool>());
  EXPECT_TRUE(rep["tries"][1]["failed"].get<bool>());
  std::cout << "bisect between two imports without an exit status: " << rep["diffs"].size()
            << " candidates, " << rep["tries"].size() << " tries, " << rep["wall_s"].get<double>()
            << " s wall\n";
}

TEST_F(ReplayReal, ATraceOfAnotherDriverIsRefused) {
  std::string other = imported("trace_a", "550.163.01");
  ReplayRun r = replay_probe("init", {}, other);
  EXPECT_EQ(r.run.status, 2) << r.run.err;
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_EQ(r.report["end"], "refused");
  std::string why = r.report["refusal"];
  EXPECT_NE(why.find("580.159.04"), std::string::npos) << why;
  EXPECT_NE(why.find("550.163.01"), std::string::npos) << why;
  EXPECT_NE(why.find("(driver 580.159.04 from its strings)"), std::string::npos) << why;
  // The same library under a name without its version (a plain libcuda.so.1): still refused,
  // by the version in its strings.
  std::string plain = temp_dir() + "/plain-lib/libcuda.so.1";
  std::filesystem::create_directories(temp_dir() + "/plain-lib");
  std::filesystem::copy_file(build_.lib_path, plain,
                             std::filesystem::copy_options::overwrite_existing);
  ReplayRun p = replay(other, {"--deadline", "5"}, {cuda_probe_bin(), plain, "init"}, 180);
  ASSERT_TRUE(p.report.is_object()) << p.run.err;
  EXPECT_EQ(p.report["end"], "refused");
  EXPECT_EQ(p.run.status, 2);
  std::string why_plain = p.report["refusal"].is_string() ? p.report["refusal"] : "";
  EXPECT_NE(why_plain.find(plain + " (driver 580.159.04 from its strings)"), std::string::npos)
      << why_plain;
}

}  // namespace
}  // namespace cudatool::test
