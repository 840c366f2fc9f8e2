// `cudatool replay` on nv_client (tests/fixtures/nvtrace), replayed from its own recordings made
// here with `cudatool trace` on fake device nodes (which are deleted before the replay: nothing
// of them may be needed): RM control/alloc, XFER, UVM, bad pointers, mmap, dup, three threads, a
// forked child and an exec; injections, unrecorded calls, skipped calls; bad input.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "harness.hpp"
#include "replay_support.hpp"
#include "rm/tables.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

struct Recorded {
  std::string dir;    // the fake device directory (gone after record())
  std::string trace;  // preload-mode recording
  std::vector<json> printed;
};

// Records `nv_client DIR mode` (its words: the mode and its arguments) on fake device nodes (with
// ASLR off, as the replays run it, so that the pointers inside the parameters are the same in
// both), then deletes the nodes. `status`: cudatool trace's, the program's own (139 for a crash).
Recorded record(const std::string& name, const std::string& mode, int status = 0) {
  Recorded r;
  r.dir = make_fake_devices(name);
  r.trace = temp_dir() + "/" + name + ".jsonl";
  std::vector<std::string> argv{cudatool_bin(), "trace", "--mode",        "preload",    "-q",
                                "-o",           r.trace, "--devices",     r.dir + "/*", "--",
                                "setarch",      "-R",    nv_client_bin(), r.dir};
  std::istringstream words(mode);  // "poll 2": the mode and its arguments
  for (std::string w; words >> w;) argv.push_back(w);
  RunResult t = run(argv);
  EXPECT_EQ(t.status, status) << t.err;
  r.printed = load_printed(t.out);
  std::filesystem::remove_all(r.dir);
  return r;
}

// Stack addresses inside parameters differ between the recording and the replay (the replay's
// environment is not the recording's, so the stack starts elsewhere even with ASLR off): every
// aligned 8-byte word that is an address near the top of the user address space is masked.
std::string mask_stack(std::string hex) {
  for (size_t w = 0; w + 16 <= hex.size(); w += 16) {
    if (hex.compare(w + 12, 4, "0000") == 0 && hex.compare(w + 10, 2, "7f") == 0 &&
        hex[w + 8] == 'f') {
      hex.replace(w, 16, 16, 'S');
    }
  }
  return hex;
}

// What a call got back, independent of addresses, fds, pids and of which thread made it: the
// key names the call by what the program put in (request, the parameter bytes nv_client fills
// with a pattern of the command). Reads nv_client's printed lines and trace events alike.
struct Answer {
  long ret;
  int err;
  std::vector<std::string> posts;  // nested buffers after the call
  std::string arg_post;            // argument after the call, when it holds no pointer
  bool operator==(const Answer&) const = default;
};
std::multimap<std::string, Answer> answers(const std::vector<json>& calls) {
  std::multimap<std::string, Answer> m;
  for (const json& e : calls) {
    if (e.value("sys", "") != "ioctl") continue;
    std::string key = e["req"].get<std::string>();
    Answer a{e["ret"].get<long>(), e.value("errno", 0), {}, {}};
    const json nested = e.contains("nested") ? e["nested"] : json::array();  // (traces omit [])
    for (const json& n : nested) {
      key += "/" + mask_stack(n.value("pre", std::string("-")));
      a.posts.push_back(mask_stack(n.value("post", std::string("-"))));
    }
    const json& arg = e.contains("arg") ? e["arg"] : json();
    if (nested.empty()) {  // (an argument that is not a buffer is a plain value)
      a.arg_post = arg.is_object() ? mask_stack(arg.value("post", std::string("-"))) : arg.dump();
    }
    m.emplace(key, a);
  }
  return m;
}

void expect_same_answers(const std::vector<json>& recorded, const std::vector<json>& replayed,
                         const std::string& what) {
  auto a = answers(recorded), b = answers(replayed);
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_GT(a.size(), 30u) << what;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    ASSERT_EQ(ia->first, ib->first) << what;
    // (Equal keys keep the order of their calls; nv_client's threads use distinct commands.)
    EXPECT_EQ(ia->second.ret, ib->second.ret) << what << ": " << ia->first;
    EXPECT_EQ(ia->second.err, ib->second.err) << what << ": " << ia->first;
    EXPECT_EQ(ia->second.posts, ib->second.posts) << what << ": " << ia->first;
    EXPECT_EQ(ia->second.arg_post, ib->second.arg_post) << what << ": " << ia->first;
  }
}

// nv_client replayed from its own recording (the same command, under setarch -R as recorded):
// every call answered from the recording, in order; what the program got back is byte for byte
// what it got from the recorder's run, and so is what the replayed trace (-o) says it got.
TEST(ReplayFixture, NvClientGetsItsRecordedAnswers) {
  Recorded rec = record("rp-same", "full");
  std::string replayed = temp_dir() + "/rp-same-replayed.jsonl";
  ReplayRun r =
      replay(rec.trace, {"-o", replayed}, {"setarch", "-R", nv_client_bin(), rec.dir, "full"}, 120);
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_EQ(r.run.status, 0) << r.report.dump(1);  // the verdict: faithful
  EXPECT_EQ(r.report["answered"], r.report["recorded_calls"]);
  expect_same_answers(rec.printed, load_printed(r.run.out), "what nv_client printed");
  expect_same_answers(load_trace(rec.trace).events, load_trace(replayed).events,
                      "the recording and the replayed trace");
  // ab on the two: equivalent (the 1 GiB buffer nobody reads is "over cap" in both; the three
  // racing workers keep their thread roles, which follow creation order).
  RunResult ab = run({cudatool_bin(), "ab", "--json", rec.trace, replayed});
  json verdict = json::parse(ab.out, nullptr, false);
  ASSERT_TRUE(verdict.is_object()) << ab.err;
  EXPECT_TRUE(verdict["equivalent"].get<bool>()) << verdict["divergences"].dump(1);
  EXPECT_EQ(ab.status, 0);
}

TEST(ReplayFixture, InjectionsChangeWhatTheProgramGets) {
  Recorded rec = record("rp-inject", "full");
  // The first RM control on nvidiactl, and the UVM_INITIALIZE: their recorded seqs.
  TraceFile t = load_trace(rec.trace);
  int64_t control = -1, uvm_init = -1;
  for (const json& e : t.events) {
    if (e["sys"] != "ioctl") continue;
    if (control < 0 && e["req"] == "0xc020462a") control = e["seq"];
    if (uvm_init < 0 && e["req"] == "0x30000001") uvm_init = e["seq"];
  }
  ASSERT_GE(control, 0);
  ASSERT_GE(uvm_init, 0);
  ReplayRun r = replay(rec.trace,
                       {"--inject", "seq=" + std::to_string(control) + ",status=0x56", "--inject",
                        "seq=" + std::to_string(uvm_init) + ",errno=EIO"},
                       {nv_client_bin(), rec.dir, "full"});
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_EQ(r.report["injected"].size(), 2u) << r.report.dump(1);
  auto printed = load_printed(r.run.out);
  int seen = 0;
  for (const json& e : printed) {
    if (e["sys"] != "ioctl") continue;
    if (e["req"] == "0x30000001") {
      EXPECT_EQ(e["ret"], -1);
      EXPECT_EQ(e["errno"], 5);
      ++seen;
    }
    if (e["req"] == "0xc020462a" && seen < 10) {
      // NVOS54 status (offset 28) after the call: NV_ERR_NOT_SUPPORTED, once.
      std::string post = e["arg"]["post"];
      if (post.substr(56, 8) == "56000000") seen += 10;
    }
  }
  EXPECT_EQ(seen, 11) << "the status injection or the errno injection did not show";
  // A spec that matches nothing, and one that does not parse: bad input.
  ReplayRun none = replay(rec.trace, {"--inject", "cmd=NV2080_CTRL_CMD_FB_GET_INFO_V2,status=1"},
                          {nv_client_bin(), rec.dir, "full"});
  EXPECT_EQ(none.run.status, 2) << none.run.err;
  EXPECT_NE(none.run.err.find("has 0 such calls"), std::string::npos) << none.run.err;
  ReplayRun bad =
      replay(rec.trace, {"--inject", "seq=x,status=1"}, {nv_client_bin(), rec.dir, "full"});
  EXPECT_EQ(bad.run.status, 2);
  EXPECT_NE(bad.run.err.find("'x' is not a number"), std::string::npos) << bad.run.err;
}

TEST(ReplayFixture, UnrecordedCallsGetThePolicyAndAStallIsStopped) {
  // Recorded: open and three RM controls (then a crash). Replayed: the same, then an RM control
  // of a new command every 20 ms: unrecorded, no twin, so NV_ERR_NOT_SUPPORTED, and no progress:
  // the deadline stops the program.
  Recorded rec = record("rp-few", "segv", 139);
  ReplayRun r = replay(rec.trace, {"--deadline", "1"}, {nv_client_bin(), rec.dir, "loop"}, 60);
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_EQ(r.run.status, 1);
  EXPECT_EQ(r.report["end"], "deadline");
  EXPECT_EQ(r.report["verdict"], 1);
  EXPECT_EQ(r.report["answered"], r.report["recorded_calls"]);
  ASSERT_TRUE(r.report["stall"].is_object());
  EXPECT_NE(r.report["stall"]["message"].get<std::string>().find("no progress"), std::string::npos)
      << r.report["stall"].dump(1);
  size_t not_supported = 0;
  for (const json& d : deviations(r.report, "unrecorded")) {
    not_supported += d["outcome"] == "unrecorded_not_supported";
  }
  EXPECT_GE(not_supported, 5u) << r.report["deviations"].dump(1);
  size_t loops = 0;
  for (const json& e : load_printed(r.run.out)) {
    if (e["sys"] != "ioctl") continue;
    std::string post = e["arg"]["post"];                        // NVOS54: cmd at 8, status at 28
    if (post.size() >= 64 && post.substr(18, 6) == "048020") {  // cmd 0x208004xx
      EXPECT_EQ(post.substr(56, 8), "56000000") << post;
      ++loops;
    }
  }
  EXPECT_GE(loops, 5u) << r.run.out;
  // Opens of a device path the recording never opened: ENOENT.
  ReplayRun u = replay(rec.trace, {}, {nv_client_bin(), rec.dir, "uvm"});
  ASSERT_TRUE(u.report.is_object()) << u.run.err;
  size_t no_device = 0;
  for (const json& d : deviations(u.report, "unrecorded")) no_device += d["outcome"] == "no_device";
  EXPECT_EQ(no_device, 1u) << u.report["deviations"].dump(1);
  for (const json& e : load_printed(u.run.out)) {
    if (e["sys"] == "open") {
      EXPECT_EQ(e["ret"], -1);
      EXPECT_EQ(e["errno"], ENOENT);
    }
  }
}

// Two threads make the same RM control on the same object, told apart only by their parameters
// (nv_client's race mode: the thread created second calls first). Each gets the answer its own
// recorded call was given — here injected, 0x1111 for thread 1 and 0x2222 for thread 2 — not the
// answer of the thread role whose turn it seemed to be (the role pick compares the inputs).
TEST(ReplayFixture, ThreadsMakingTheSameCallGetTheirOwnAnswers) {
  Recorded rec = record("rp-race", "race");
  std::map<std::string, int64_t> seq_of;  // thread number (params' first 4 bytes, hex) -> seq
  for (const json& e : load_trace(rec.trace).events) {
    if (e["sys"] != "ioctl" || e["req"] != "0xc020462a") continue;
    for (const json& n : e["nested"]) {
      if (n["role"] == "params") seq_of[n["pre"].get<std::string>().substr(0, 8)] = e["seq"];
    }
  }
  ASSERT_EQ(seq_of.size(), 2u) << "the recording holds both threads' controls";
  std::vector<std::string> inject;
  for (auto [id, value] : {std::pair{"01000000", "0x1111"}, {"02000000", "0x2222"}}) {
    std::string seq = "seq=" + std::to_string(seq_of.at(id));
    inject.insert(inject.end(), {"--inject", seq + ",ret=0", "--inject",
                                 seq + ",member=params+0x8,value=" + std::string(value)});
  }
  for (int round = 0; round < 3; ++round) {
    ReplayRun r = replay(rec.trace, inject, {nv_client_bin(), rec.dir, "race"});
    ASSERT_TRUE(r.report.is_object()) << r.run.err;
    EXPECT_EQ(r.report["answered"], r.report["recorded_calls"]) << r.report.dump(1);
    int seen = 0;
    for (const json& e : load_printed(r.run.out)) {
      if (e["sys"] != "ioctl" || e["req"] != "0xc020462a") continue;
      const json& n = e["nested"][0];
      std::string id = n["pre"].get<std::string>().substr(0, 8);
      std::string got = n["post"].get<std::string>().substr(16, 8);  // params+0x8, 4 bytes
      EXPECT_EQ(e["ret"], 0);
      EXPECT_EQ(got, id == "01000000" ? "11110000" : "22220000") << "thread " << id;
      ++seen;
    }
    EXPECT_EQ(seen, 2) << r.run.out;
  }
}

// A poll the program repeats more often than the recording holds: each repeat is answered like
// the nearest recorded twin (here the second, whose answer is injected: ret 0 and 0x5151 at
// params+0x8), reported as unrecorded_twin, and makes no progress.
TEST(ReplayFixture, RepeatedPollsGetTheirNearestTwinsAnswer) {
  Recorded rec = record("rp-poll", "poll 2");
  std::vector<int64_t> seqs;
  for (const json& e : load_trace(rec.trace).events) {
    if (e["sys"] == "ioctl" && e["req"] == "0xc020462a") seqs.push_back(e["seq"]);
  }
  ASSERT_EQ(seqs.size(), 2u);
  std::string second = "seq=" + std::to_string(seqs[1]);
  ReplayRun r = replay(
      rec.trace,
      {"--inject", second + ",ret=0", "--inject", second + ",member=params+0x8,value=0x5151"},
      {nv_client_bin(), rec.dir, "poll", "5"});
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_EQ(r.report["answered"], r.report["recorded_calls"]);  // every recorded call, once
  EXPECT_EQ(r.report["by_outcome"]["unrecorded_twin"], 3) << r.report["by_outcome"];
  EXPECT_EQ(r.report["verdict"], 1);
  std::vector<std::string> got;
  for (const json& e : load_printed(r.run.out)) {
    if (e["sys"] != "ioctl") continue;
    got.push_back(std::to_string(e["ret"].get<long>()) + " " +
                  e["nested"][0]["post"].get<std::string>().substr(16, 8));
  }
  ASSERT_EQ(got.size(), 5u) << r.run.out;
  EXPECT_EQ(got[0].substr(0, 2), "-1");  // the first, as recorded: ENOTTY on a fake node
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(got[i], "0 51510000") << "call " << i;
  std::set<std::string> calls;  // the call's name: one for the three repeats
  for (const json& d : deviations(r.report, "unrecorded")) {
    if (d["outcome"] == "unrecorded_twin") {
      EXPECT_EQ(d["recorded_seq"], seqs[1]) << d.dump();
      calls.insert(d["call"].get<std::string>());
    }
  }
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(*calls.begin(), "NV_ESC_RM_CONTROL cmd=0x20800700");  // nv_client's poll: no name
  // The text report shows the three repeats as one line: the first and the two more like it.
  RunResult t = run({cudatool_bin(), "replay", rec.trace, "--inject", second + ",ret=0", "--",
                     nv_client_bin(), rec.dir, "poll", "5"});
  EXPECT_EQ(t.status, 1) << t.err;
  std::vector<std::string> lines;
  std::istringstream in(t.err);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" unrecorded: ") != std::string::npos) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 1u) << t.err;
  std::string want =
      "like its nearest recorded twin (seq " + std::to_string(seqs[1]) + ") (and 2 more like it: #";
  EXPECT_NE(lines[0].find(want), std::string::npos) << lines[0];
}

// mknod, chmod, chown, unlink and symlink of the recording's device paths are answered (0) and
// never carried out: the deleted fake device directory is not re-created (as root, too).
TEST(ReplayFixture, DeviceNodeChangesAreAnsweredNotMade) {
  Recorded rec = record("rp-nodes", "nodes");
  std::set<std::string> before = host_nvidia_nodes();
  ReplayRun r = replay(rec.trace, {}, {nv_client_bin(), rec.dir, "nodes"});
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  std::set<std::string> ops;
  for (const json& e : load_printed(r.run.out)) {
    if (e["sys"] != "node") continue;
    EXPECT_EQ(e["ret"], 0) << e.dump();
    ops.insert(e["op"].get<std::string>());
  }
  EXPECT_EQ(ops, (std::set<std::string>{"mknod", "chmod", "chown", "unlink", "symlink"}));
  EXPECT_FALSE(std::filesystem::exists(rec.dir)) << rec.dir << " was re-created";
  EXPECT_GE(r.report["environment_calls"].get<uint64_t>(), 5u);
  EXPECT_EQ(host_nvidia_nodes(), before);
}

TEST(ReplayFixture, SkippedCallsAreReported) {
  // The full recording answers the UVM-only program: the rest of it is never asked.
  Recorded full = record("rp-full2", "full");
  ReplayRun s = replay(full.trace, {}, {nv_client_bin(), full.dir, "uvm"});
  ASSERT_TRUE(s.report.is_object()) << s.run.err;
  EXPECT_EQ(s.report["verdict"], 1);
  uint64_t never = 0;
  for (const char* k : {"skipped", "not_reached"}) {
    for (const json& d : deviations(s.report, k)) never += d["count"].get<uint64_t>();
  }
  EXPECT_EQ(never + s.report["answered"].get<uint64_t>(),
            s.report["recorded_calls"].get<uint64_t>());
  EXPECT_GT(never, 20u);
  EXPECT_GT(s.report["answered"].get<uint64_t>(), 3u);
}

// The bisect on a planted culprit of four answers among 24 that differ (the proof of issue 14):
// nv_client's quorum mode fails only when four given controls of its 24 all fail. BAD is its
// recording on fake nodes (every control failed with ENOTTY: exit 1); GOOD is the same recording
// with every control answered NV_OK (exit 0). ddmin must name exactly those four.
TEST(ReplayFixture, BisectFindsTheFourAnswersThatTogetherFail) {
  Recorded bad = record("rp-quorum", "quorum", 1);
  std::string good_text;
  size_t controls = 0;
  std::istringstream lines(read_file(bad.trace));
  for (std::string line; std::getline(lines, line);) {
    // ordered_json: the header's first member must stay first ("cudatool_trace").
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    if (j.value("sys", "") == "ioctl" && j.value("req", "") == "0xc020462a") {
      ASSERT_EQ(j["ret"], -1) << line;
      j["ret"] = 0;
      j.erase("errno");
      ++controls;
    }
    if (j.contains("end")) j["end"]["exit_status"] = 0;
    good_text += j.dump() + "\n";
  }
  ASSERT_EQ(controls, 24u);
  std::string good = write_temp("rp-quorum-good.jsonl", good_text);
  std::string report = temp_dir() + "/rp-quorum-bisect.json";
  RunResult r = run({cudatool_bin(), "replay", "--json", "--report", report, "--bisect", good,
                     bad.trace, "--", nv_client_bin(), bad.dir, "quorum"},
                    300);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 1) << r.err;  // 1: a culprit set was found
  json rep = json::parse(read_file(report), nullptr, false);
  ASSERT_TRUE(rep.is_object()) << r.err;
  EXPECT_EQ(rep["schema"], "cudatool.replay-bisect/1");
  EXPECT_TRUE(rep["found"].get<bool>()) << rep["message"];
  ASSERT_EQ(rep["diffs"].size(), 24u) << rep["diffs"].dump(1);
  // The culprit: the diffs of commands 0x20800503, …508, …50e, …515, and nothing else.
  std::set<std::string> cmds;
  for (const json& k : rep["culprit"]) {
    std::string what = rep["diffs"][k.get<size_t>()]["what"];
    size_t at = what.find("0x208005");
    ASSERT_NE(at, std::string::npos) << what;
    cmds.insert(what.substr(at, 10));
  }
  EXPECT_EQ(cmds, (std::set<std::string>{"0x20800503", "0x20800508", "0x2080050e", "0x20800515"}))
      << rep["message"];
  // The two baselines first (none: passes, all: fails), then ddmin's tries, each recorded.
  ASSERT_GE(rep["tries"].size(), 3u);
  EXPECT_EQ(rep["tries"][0]["subset"].size(), 0u);
  EXPECT_FALSE(rep["tries"][0]["failed"].get<bool>());
  EXPECT_EQ(rep["tries"][1]["subset"].size(), 24u);
  EXPECT_TRUE(rep["tries"][1]["failed"].get<bool>());
  std::cout << "bisect of the four-answer culprit among 24: " << rep["tries"].size() << " tries, "
            << rep["wall_s"].get<double>() << " s wall\n";
  // The same culprit when failing is told by the program's output (--fails-if), not its status;
  // a pattern that never shows: no culprit (BAD's answers all together do not fail), exit 0.
  for (auto [regex, found] : {std::pair{"quorum l[o]st", true}, {"never printed", false}}) {
    std::string rp = temp_dir() + "/rp-quorum-bisect-regex.json";
    RunResult f = run({cudatool_bin(), "replay", "--json", "--report", rp, "--bisect", good,
                       bad.trace, "--fails-if", regex, "--", nv_client_bin(), bad.dir, "quorum"},
                      300);
    EXPECT_EQ(f.status, found ? 1 : 0) << regex << ": " << f.err;
    json fr = json::parse(read_file(rp), nullptr, false);
    ASSERT_TRUE(fr.is_object()) << f.err;
    EXPECT_NE(fr["criterion"].get<std::string>().find(regex), std::string::npos) << fr["criterion"];
    EXPECT_EQ(fr["found"].get<bool>(), found) << fr["message"];
    if (found) {
      EXPECT_EQ(fr["culprit"], rep["culprit"]);
    } else {
      EXPECT_FALSE(fr["tries"][1]["failed"].get<bool>()) << "all of BAD's answers";
    }
  }
}

TEST(ReplayFixture, BadInputIsRefusedClearly) {
  Recorded rec = record("rp-bad", "uvm");
  std::string text = read_file(rec.trace);
  // Not a trace; a header only (no device calls); a trace cut in the middle of a line; hostile
  // member values.
  std::string garbage = write_temp("rp-garbage.jsonl", "this is not a trace\n");
  std::string header_only = write_temp("rp-header.jsonl", text.substr(0, text.find('\n') + 1));
  std::string cut = write_temp("rp-cut.jsonl", text.substr(0, text.size() * 2 / 3));
  std::string hostile = text;
  for (std::string from : {"\"size\":", "\"req\":\"0x"}) {
    for (size_t at = hostile.find(from); at != std::string::npos; at = hostile.find(from, at + 1)) {
      hostile.insert(at + from.size(), from[1] == 's' ? "99999999999" : "ff");
    }
  }
  std::string hostile_path = write_temp("rp-hostile.jsonl", hostile);
  for (const std::string& t : {garbage, header_only}) {
    ReplayRun r = replay(t, {}, {nv_client_bin(), rec.dir, "uvm"});
    EXPECT_EQ(r.run.status, 2) << t << ": " << r.run.err;
    EXPECT_FALSE(r.run.timed_out);
    EXPECT_NE(r.run.err.find("error"), std::string::npos) << r.run.err;
  }
  for (const std::string& t : {cut, hostile_path}) {
    ReplayRun r = replay(t, {}, {nv_client_bin(), rec.dir, "uvm"}, 60);
    EXPECT_FALSE(r.run.timed_out) << t;
    EXPECT_TRUE(r.run.status == 1 || r.run.status == 2) << t << ": " << r.run.err;
    EXPECT_EQ(r.run.signal, 0) << t;
  }
  // A trace cut in the middle of a line: the damaged line is named once (with the file, not
  // twice), the replay answers from the rest, and the exit status says bad input.
  {
    ReplayRun r = replay(cut, {}, {nv_client_bin(), rec.dir, "uvm"}, 60);
    EXPECT_EQ(r.run.status, 2) << r.run.err;
    EXPECT_NE(r.run.err.find("(skipped: the replay answers from the rest of the trace)"),
              std::string::npos)
        << r.run.err;
    EXPECT_EQ(r.run.err.find(cut + ": " + cut), std::string::npos) << r.run.err;
    EXPECT_TRUE(r.report.is_object()) << "the report is still printed: " << r.run.err;
  }
  // No command, two traces without --bisect, a negative deadline: usage errors.
  EXPECT_EQ(run({cudatool_bin(), "replay", rec.trace}).status, 2);
  EXPECT_EQ(run({cudatool_bin(), "replay", rec.trace, rec.trace, "--", "true"}).status, 2);
  EXPECT_EQ(run({cudatool_bin(), "replay", "--deadline", "-1", rec.trace, "--", "true"}).status, 2);
  // --bisect with one trace: the command's path was taken as BAD.trace, and the error says so.
  RunResult one = run({cudatool_bin(), "replay", "--bisect", rec.trace, "--", "/bin/true"});
  EXPECT_EQ(one.status, 2);
  EXPECT_NE(one.err.find("'/bin/true' was taken as BAD.trace"), std::string::npos) << one.err;
  // A report file that cannot be written is refused before the program runs, not lost after.
  RunResult unwritable = run({cudatool_bin(), "replay", "--report", "/nonexistent-dir/r.txt",
                              rec.trace, "--", nv_client_bin(), rec.dir, "uvm"});
  EXPECT_EQ(unwritable.status, 2);
  EXPECT_NE(unwritable.err.find("--report /nonexistent-dir/r.txt: cannot write"), std::string::npos)
      << unwritable.err;
  EXPECT_EQ(unwritable.err.find("recorded calls"), std::string::npos) << "nothing was run";
  // An output that is the trace read (another spelling of it, too) is refused before anything
  // runs, and the trace is left as it was.
  const std::string dir = rec.trace.substr(0, rec.trace.rfind('/'));
  const std::string other_spelling = dir + "/./" + rec.trace.substr(rec.trace.rfind('/') + 1);
  for (const char* opt : {"-o", "--report"}) {
    RunResult self = run({cudatool_bin(), "replay", opt, other_spelling, rec.trace, "--",
                          nv_client_bin(), rec.dir, "uvm"});
    EXPECT_EQ(self.status, 2) << opt;
    EXPECT_NE(self.err.find("is the input"), std::string::npos) << self.err;
    EXPECT_EQ(read_file(rec.trace), text) << opt << " changed the trace";
  }
  // --keep: a directory that holds files (or a file) is never replaced; a new one is made and
  // kept, holding what the replay wrote.
  std::filesystem::create_directories(temp_dir() + "/rp-keep-full");
  const std::string full = write_temp("rp-keep-full/notes.txt", "mine\n");
  const std::string full_dir = full.substr(0, full.rfind('/'));
  for (const std::string& k : {full_dir, full}) {
    RunResult keep = run(
        {cudatool_bin(), "replay", "--keep", k, rec.trace, "--", nv_client_bin(), rec.dir, "uvm"});
    EXPECT_EQ(keep.status, 2) << k;
    EXPECT_NE(keep.err.find("exists and is not an empty directory"), std::string::npos) << keep.err;
    EXPECT_EQ(read_file(full), "mine\n");
  }
  const std::string fresh = full_dir + "-new";
  std::filesystem::remove_all(fresh);
  ReplayRun kept = replay(rec.trace, {"--keep", fresh}, {nv_client_bin(), rec.dir, "uvm"});
  EXPECT_TRUE(kept.report.is_object()) << kept.run.err;
  EXPECT_TRUE(std::filesystem::exists(fresh + "/answers.bin")) << kept.run.err;
  EXPECT_TRUE(std::filesystem::exists(fresh + "/root")) << kept.run.err;
  std::filesystem::remove_all(fresh);
  EXPECT_EQ(run({cudatool_bin(), "replay", "--bisect", rec.trace, "--keep", fresh, rec.trace, "--",
                 "/bin/true"})
                .status,
            2);
  EXPECT_FALSE(std::filesystem::exists(fresh));
}

}  // namespace
}  // namespace cudatool::test
