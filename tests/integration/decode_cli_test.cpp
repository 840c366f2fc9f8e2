// `decode`, `stats` and `export` as a user runs them: the golden output of a slice of a real
// capture (and proof that a changed decode fails the comparison), hostile traces (one error per
// bad line, the rest decoded, exit 2), filter and branch options, and a trace recorded from the
// nv_client fixture (durations, failed calls).
//
// The golden file tests/golden/decode_trace_a_seq0-170.txt is real output of
//   cudatool import tests/data/captures/trace_a.jsonl.xz -o a.jsonl --driver-version 580.159.04
//   cudatool decode a.jsonl --filter 'seq<=170'
// (run in the directory of a.jsonl); CUDATOOL_UPDATE_GOLDEN=1 rewrites it from the current
// build (review the diff before committing).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "capture_data.hpp"
#include "harness.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

const char* kGolden = "tests/golden/decode_trace_a_seq0-170.txt";
const char* kSlice = "seq<=170";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) v.push_back(l);
  return v;
}

// 0 when equal, else the 1-based number of the first line that differs.
size_t first_difference(const std::string& a, const std::string& b) {
  auto x = lines_of(a), y = lines_of(b);
  for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    if (i >= x.size() || i >= y.size() || x[i] != y[i]) return i + 1;
  }
  return 0;
}

// The capture imported into `dir`/a.jsonl.
std::string import_capture(const std::string& name, const std::string& dir) {
  std::string out = dir + "/a.jsonl";
  RunResult r = run({cudatool_bin(), "import", captures_dir() + "/" + name, "-o", out,
                     "--driver-version", capture_driver_version()});
  EXPECT_EQ(r.status, 0) << r.err;
  return out;
}

std::string workdir(const std::string& name) {
  std::string d = temp_dir() + "/" + name;
  RunResult r = run({"mkdir", "-p", d});
  EXPECT_EQ(r.status, 0);
  return d;
}

RunResult decode_slice(const std::string& dir) {
  return sh("cd '" + dir + "' && '" + cudatool_bin() + "' decode a.jsonl --filter '" + kSlice +
            "'");
}

// Replaces line `seq` of a trace text with what `edit` makes of it.
std::string edit_event(const std::string& text, uint64_t seq,
                       const std::function<std::string(std::string)>& edit) {
  std::string out;
  std::string key = "{\"seq\":" + std::to_string(seq) + ",";
  for (const std::string& l : lines_of(text)) out += (l.rfind(key, 0) == 0 ? edit(l) : l) + "\n";
  return out;
}

TEST(DecodeGolden, SliceOfARealCaptureMatchesTheGoldenFile) {
  std::string dir = workdir("golden");
  import_capture("trace_a.jsonl.xz", dir);
  RunResult r = decode_slice(dir);
  ASSERT_EQ(r.status, 0) << r.err;
  std::string path = source_dir() + "/" + kGolden;
  if (const char* u = getenv("CUDATOOL_UPDATE_GOLDEN"); u != nullptr && *u == '1') {
    std::ofstream(path, std::ios::binary) << r.out;
    std::cout << "rewrote " << path << "\n";
  }
  std::string golden = read_file(path);
  ASSERT_FALSE(golden.empty()) << path << " is missing";
  size_t at = first_difference(golden, r.out);
  EXPECT_EQ(at, 0u) << "decode output differs from " << kGolden << " at line " << at << ":\n  "
                    << (at ? lines_of(golden)[std::min(at, lines_of(golden).size()) - 1] : "")
                    << "\n  "
                    << (at ? lines_of(r.out)[std::min(at, lines_of(r.out).size()) - 1] : "");
  EXPECT_EQ(lines_of(golden).size(), 173u);  // the header line, seq 0..170, the summary line

  // The comparison fails on a changed decode: the status of seq 4's control set to 0x1f, its
  // control command id changed, one event dropped. Each time the first difference is the line of
  // that event (line 1 is the header, so seq N is line N + 2).
  std::string trace = read_file(dir + "/a.jsonl");
  auto patch_post = [](std::string l, size_t byte, const std::string& hex) {
    size_t p = l.find("\"post\":\"") + 8 + 2 * byte;
    l.replace(p, hex.size(), hex);
    return l;
  };
  struct Change {
    std::string what;
    std::string text;
    size_t line;
  };
  std::vector<Change> changes{
      {"status", edit_event(trace, 4, [&](std::string l) { return patch_post(l, 28, "1f"); }), 6},
      {"command", edit_event(trace, 10, [&](std::string l) { return patch_post(l, 8, "05"); }), 12},
      {"dropped", edit_event(trace, 20, [](const std::string&) { return std::string(); }), 22},
  };
  for (const Change& c : changes) {
    std::string d = workdir("golden-" + c.what);
    write_temp("golden-" + c.what + "/a.jsonl", c.text);  // the same name: the header agrees
    RunResult m = decode_slice(d);
    EXPECT_EQ(m.status, 0) << m.err;
    EXPECT_EQ(first_difference(golden, m.out), c.line) << c.what;
  }
}

// A trace with every kind of damage a hostile file can hold, between good events.
TEST(DecodeHostile, OneErrorPerBadLineTheRestDecoded) {
  std::string dir = workdir("hostile");
  std::string good = read_file(import_capture("trace_a.jsonl.xz", dir));
  auto lines = lines_of(good);
  ASSERT_GT(lines.size(), 50u);
  std::string header = lines[0];
  std::vector<std::string> events(lines.begin() + 1, lines.end() - 1);  // without the trailer
  std::string text = header + "\n";
  size_t good_events = 0, bad = 0;
  auto add_good = [&](size_t i) {
    text += events[i] + "\n";
    ++good_events;
  };
  auto add_bad = [&](const std::string& l) {
    text += l + "\n";
    ++bad;
  };
  for (size_t i = 0; i < 10; ++i) add_good(i);
  add_bad(R"({"seq":900,"t":1,"pid":0,"tid":1,"sys":"ioctl","fd":)");                    // cut JSON
  add_bad("not json at all");                                                            // garbage
  add_bad(R"({"seq":901,"t":1,"pid":0,"tid":"abc","sys":"open","path":"/x","ret":3})");  // type
  add_bad(R"({"seq":902,"t":1,"pid":0,"tid":1,"sys":"ioctl","fd":3,"path":"/dev/nvidiactl",)"
          R"("req":"0xc020462a","ret":0,"arg":{"role":"arg","addr":"0x0","size":32,"pre":"zz"}})");
  for (size_t i = 10; i < 20; ++i) add_good(i);
  // Valid lines with wrong sizes: a 3-byte RM control argument, a 4 MiB argument for a 32-byte
  // request, an argument whose size field claims 2^40 bytes. Decoded (partially), not errors.
  text += R"({"seq":904,"t":1,"pid":0,"tid":1,"sys":"ioctl","fd":3,"path":"/dev/nvidiactl",)"
          R"("req":"0xc020462a","ret":0,"arg":{"role":"arg","addr":"0x0","size":32,"pre":"010203",)"
          R"("post":"010203"}})"
          "\n";
  std::string huge(8u << 20, 'a');
  text += R"({"seq":905,"t":1,"pid":0,"tid":1,"sys":"ioctl","fd":3,"path":"/dev/nvidiactl",)"
          R"("req":"0xc020462a","ret":0,"arg":{"role":"arg","addr":"0x0","size":4194304,"post":")" +
          huge + "\"}}\n";
  text += R"({"seq":906,"t":1,"pid":0,"tid":1,"sys":"ioctl","fd":3,"path":"/dev/nvidia-uvm",)"
          R"("req":"0x21","ret":0,"arg":{"role":"arg","addr":"0x0","size":1099511627776,)"
          R"("post":"00"}})"
          "\n";
  good_events += 3;
  for (size_t i = 20; i < 30; ++i) add_good(i);
  add_bad(events[30].substr(0, events[30].size() / 2));  // the last line, cut by a kill
  text.pop_back();                                       // … without its newline
  std::string path = write_temp("hostile/bad.jsonl", text);

  RunResult d = run({cudatool_bin(), "decode", path});
  EXPECT_EQ(d.status, 2);
  auto errors = lines_of(d.err);
  EXPECT_EQ(errors.size(), bad) << d.err;
  for (const std::string& e : errors) {
    EXPECT_EQ(e.rfind("cudatool: error: " + path + " line ", 0), 0u) << e;
  }
  auto out = lines_of(d.out);
  ASSERT_GE(out.size(), 2u);
  EXPECT_EQ(out.size(), good_events + 2) << d.out.substr(0, 2000);  // header and summary lines
  EXPECT_NE(out.back().find(std::to_string(good_events) + " events"), std::string::npos);
  EXPECT_NE(out.back().find(std::to_string(bad) + " bad lines"), std::string::npos);
  EXPECT_NE(d.out.find("[partial: argument: 3 bytes, NVOS54_PARAMETERS is 32"), std::string::npos);

  RunResult s = run({cudatool_bin(), "stats", "--json", path});
  EXPECT_EQ(s.status, 2);
  EXPECT_EQ(lines_of(s.err).size(), bad);
  json sj = json::parse(s.out);
  EXPECT_EQ(sj["events"], good_events);
  EXPECT_EQ(sj["diagnostics"].size(), bad);

  std::string pf = dir + "/bad.perfetto.json";
  RunResult x = run({cudatool_bin(), "export", path, "-o", pf});
  EXPECT_EQ(x.status, 2);
  EXPECT_EQ(lines_of(x.err).size(), bad);
  json xj = json::parse(read_file(pf));
  size_t slices = 0;
  for (const json& e : xj["traceEvents"]) slices += e["ph"] == "X";
  EXPECT_EQ(slices, good_events);
}

TEST(DecodeCli, FilterSelectsWhatAnIndependentCountSays) {
  std::string dir = workdir("filter");
  std::string trace = import_capture("trace_a.jsonl.xz", dir);
  std::vector<json> lines = capture_lines("trace_a.jsonl.xz");
  auto nr_of = [](const json& j) {
    return std::stoul(j["req"].get<std::string>(), nullptr, 16) & 0xff;
  };
  size_t frees = 0, uvm = 0, opens_mmaps = 0, late = 0;
  for (const json& j : lines) {
    std::string sys = j["sys"];
    if (sys == "ioctl" && j["path"] != "/dev/nvidia-uvm" && nr_of(j) == 0x29) ++frees;
    if (j.value("path", "") == "/dev/nvidia-uvm") ++uvm;
    if (sys == "open" || sys == "mmap") ++opens_mmaps;
    if (j["seq"].get<uint64_t>() >= 700 && sys == "ioctl") ++late;
  }
  std::map<std::string, size_t> want{{"call=NV_ESC_RM_FREE", frees},
                                     {"device=uvm", uvm},
                                     {"sys=open or sys=mmap", opens_mmaps},
                                     {"sys=ioctl and seq>=700", late},
                                     {"failed", 0}};
  for (const auto& [expr, n] : want) {
    RunResult r = run({cudatool_bin(), "decode", trace, "--json", "--filter", expr});
    ASSERT_EQ(r.status, 0) << expr << ": " << r.err;
    auto out = lines_of(r.out);
    EXPECT_EQ(out.size(), n + 2) << expr;
    EXPECT_EQ(json::parse(out.back())["summary"]["shown"], n) << expr;
  }
  // api= on a capture (no call stacks) selects nothing, and the summary says why.
  RunResult api = run({cudatool_bin(), "decode", trace, "--json", "--filter", "api=cuInit"});
  ASSERT_EQ(api.status, 0) << api.err;
  json summary = json::parse(lines_of(api.out).back())["summary"];
  EXPECT_EQ(summary["shown"], 0);
  EXPECT_NE(summary["note"].get<std::string>().find("the trace has no call stacks"),
            std::string::npos)
      << summary;
  RunResult api_text = run({cudatool_bin(), "decode", trace, "--filter", "api=cuInit"});
  EXPECT_NE(api_text.out.find("0 shown (--filter api=cuInit: the trace has no call stacks"),
            std::string::npos)
      << api_text.out;
  for (const char* bad : {"stauts=NV_OK", "status=NV_OKK", "(tid=1", "tid=", "x && || y"}) {
    RunResult r = run({cudatool_bin(), "decode", trace, "--filter", bad});
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_EQ(r.out, "") << bad;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("cudatool: error: --filter '", 0), 0u) << r.err;
    RunResult x = run({cudatool_bin(), "export", trace, "-o", dir + "/x.json", "--filter", bad});
    EXPECT_EQ(x.status, 2) << bad;
  }
}

TEST(DecodeCli, BranchIsChosenSaidAndOverridable) {
  std::string dir = workdir("branch");
  std::string trace = import_capture("trace_a.jsonl.xz", dir);
  const rm::Tables& mine = *rm::choose_branch(capture_driver_version()).tables;
  RunResult r = run({cudatool_bin(), "decode", trace, "--filter", "seq<0"});
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("decoding with branch " + std::string(mine.info().id)), std::string::npos)
      << r.out;
  const rm::Tables& oldest = rm::all_branches().front();
  r = run({cudatool_bin(), "decode", trace, "--json", "--branch", std::string(oldest.info().id),
           "--filter", "seq<0"});
  ASSERT_EQ(r.status, 0) << r.err;
  json h = json::parse(lines_of(r.out).front());
  EXPECT_EQ(h["branch"]["id"], oldest.info().id);
  EXPECT_EQ(h["branch"]["chosen_by"], "option");
  r = run({cudatool_bin(), "stats", trace, "--branch", "r1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--branch 'r1'"), std::string::npos) << r.err;
  // A trace that names no driver version: the newest branch, and the output says so.
  std::string bare = dir + "/bare.jsonl";
  r = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", bare});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no call of the capture names its driver version"), std::string::npos)
      << r.err;
  r = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", bare, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out)["driver_version"].is_null()) << r.out;
  r = run({cudatool_bin(), "stats", "--json", bare});
  ASSERT_EQ(r.status, 0);
  json s = json::parse(r.out);
  EXPECT_EQ(s["branch"]["id"], rm::all_branches().back().info().id);
  EXPECT_EQ(s["branch"]["chosen_by"], "newest");
  EXPECT_TRUE(s["driver_version"].is_null());
}

// Issue #35: a control no header define names (0x20800145, in the capture) prints by the name
// the tables give it, with RM's handler beside it as a note, in text and in JSON; the tables
// flag the name as not a define's.
TEST(DecodeCli, CommandsWithoutADefineKeepTheHandlerAsANote) {
  std::string dir = workdir("handler");
  std::string trace = import_capture("trace_a.jsonl.xz", dir);
  const rm::Tables& t = *rm::choose_branch(capture_driver_version()).tables;
  const rm::CtrlEntry* c = t.find_control(0x20800145);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->flags & rm::kCtrlNameFromNvoc, 0u);
  EXPECT_FALSE(c->handler.empty());
  EXPECT_EQ(c->name.rfind("NV2080_CTRL_CMD_", 0), 0u) << c->name;
  RunResult r = run({cudatool_bin(), "decode", trace, "--filter", "ctrl=0x20800145"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("cmd=" + std::string(c->name) + " (no header define; RM handler " +
                       std::string(c->handler) + ")"),
            std::string::npos)
      << r.out;
  r = run({cudatool_bin(), "decode", trace, "--json", "--filter", "ctrl=0x20800145"});
  ASSERT_EQ(r.status, 0) << r.err;
  bool seen = false;
  for (const std::string& l : lines_of(r.out)) {
    json e = json::parse(l);
    if (!e.contains("args")) continue;
    for (const auto& a : e["args"]) {
      if (a["name"] != "cmd") continue;
      EXPECT_EQ(a["symbol"], c->name);
      EXPECT_EQ(a["handler"], c->handler);
      seen = true;
    }
  }
  EXPECT_TRUE(seen) << r.out;
}

// A trace recorded by cudatool itself (ptrace mode) from nv_client: durations, calls that
// failed with ENOTTY on the fake device nodes, several threads and processes.
TEST(DecodeCli, RecordedTraceHasDurationsFailuresAndSlowestCalls) {
  std::string dev = make_fake_devices("decode-rec");
  std::string trace = temp_dir() + "/decode-rec.jsonl";
  RunResult t = run({cudatool_bin(), "trace", "-q", "-o", trace, "--devices", dev + "/*", "--",
                     nv_client_bin(), dev, "full"});
  ASSERT_EQ(t.status, 0) << t.err;
  TraceFile tf = load_trace(trace);
  uint64_t enotty = 0, max_dur = 0;
  std::map<int64_t, uint64_t> by_tid;
  for (const json& e : tf.events) {
    if (e.value("errno", 0) == ENOTTY) ++enotty;
    max_dur = std::max<uint64_t>(max_dur, e.value("dur", uint64_t{0}));
    ++by_tid[e["tid"].get<int64_t>()];
  }
  ASSERT_GT(enotty, 0u);
  RunResult r = run({cudatool_bin(), "stats", "--json", trace});
  ASSERT_EQ(r.status, 0) << r.err;
  json s = json::parse(r.out);
  EXPECT_EQ(s["events"], tf.events.size());
  uint64_t got_enotty = 0;
  for (const json& f : s["failures"]["by_errno"]) {
    if (f["name"] == "ENOTTY") got_enotty = f["count"];
  }
  EXPECT_EQ(got_enotty, enotty);
  std::map<int64_t, uint64_t> threads;
  for (const json& x : s["threads"]) threads[x["tid"].get<int64_t>()] = x["count"];
  EXPECT_EQ(threads, by_tid);
  ASSERT_FALSE(s["slowest"].empty());
  EXPECT_EQ(s["slowest"][0]["dur_ns"], max_dur);
  EXPECT_GT(s["with_duration"].get<uint64_t>(), 0u);
  // The text form says the same; decode shows the failures.
  RunResult d = run({cudatool_bin(), "decode", trace, "--filter", "errno=ENOTTY"});
  ASSERT_EQ(d.status, 0) << d.err;
  // One line per selected event; the rest are '#' comments (the branch, the names of the
  // modules its stacks resolve through, the count).
  uint64_t event_lines = 0;
  for (const std::string& l : lines_of(d.out)) event_lines += l.empty() || l[0] != '#' ? 1 : 0;
  EXPECT_EQ(event_lines, enotty);
  EXPECT_NE(d.out.find(fmt::format("# {} events, {} shown", tf.events.size(), enotty)),
            std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find(" = -1 ENOTTY"), std::string::npos);
}

}  // namespace
}  // namespace cudatool::test
