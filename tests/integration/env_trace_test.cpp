// Environment events (docs/trace-format.md): `cudatool trace --env` in both modes against
// env_client (tests/fixtures/envtrace), which looks at a fake copy of the driver's view of the
// system from threads and a forked child and prints every call with what it got back. The trace
// must hold exactly those calls (the stat answers, the bytes read, the names listed, the link
// texts, the failed mknods), and nothing on paths outside --env; it decodes, filters, counts and
// A/B-compares, and a changed byte of a file's content is a divergence that names the file.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "base/glob_match.h"
#include "env_check.hpp"
#include "harness.hpp"
#include "trace/trace_file.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// The fixture's printed environment calls, as the recorder `mode` must see them.
std::vector<json> env_calls(const std::vector<json>& printed, const std::string& mode) {
  std::vector<json> v;
  for (const json& e : printed) {
    if (!is_env_sys(e["sys"])) continue;
    if (e.value("env", true) == false) continue;
    if (e.contains("only") && e["only"] != mode) continue;
    v.push_back(e);
  }
  return v;
}

std::vector<json> env_events(const TraceFile& t) {
  std::vector<json> v;
  for (const json& e : t.events) {
    if (is_env_sys(e["sys"])) v.push_back(e);
  }
  return v;
}

size_t count_lines(const std::string& text, const std::string& needle = "") {
  size_t n = 0;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) n += !l.empty() && l[0] != '#' && l.find(needle) != std::string::npos;
  return n;
}

class EnvTrace : public ::testing::TestWithParam<std::string> {
 protected:
  std::string mode() const { return GetParam(); }
  // Records env_client on `tree`; devices: none of the fixture's paths.
  RunResult record(const EnvTree& tree, const std::string& out, const std::string& what,
                   const std::string& env) {
    return run({cudatool_bin(), "trace", "--mode", mode(), "-q", "-o", out, "--devices",
                tree.root + "/no-device/*", "--env", env, "--", env_client_bin(), tree.root, what});
  }
};

TEST_P(EnvTrace, RecordsExactlyTheEnvironmentCallsMade) {
  EnvTree tree = make_env_tree(mode() + "-env-full");
  std::string out = temp_dir() + "/" + mode() + "-env-full.jsonl";
  RunResult r = record(tree, out, "full", tree.env);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<json> printed = load_printed(r.out);
  std::vector<json> calls = env_calls(printed, mode());
  ASSERT_GT(calls.size(), 40u) << r.out;
  TraceFile t = load_trace(out);
  EXPECT_TRUE(t.bad_lines.empty());
  EXPECT_EQ(t.header["env"], tree.env);
  std::vector<json> rec = env_events(t);
  for (const auto& p : match_env_exactly(calls, rec, mode())) ADD_FAILURE() << p;

  // Nothing outside --env: every recorded path matches a glob, and the fixture's calls on
  // other/file (which it did make, successfully) are absent.
  size_t outside_made = 0;
  for (const json& e : printed) outside_made += e.value("env", true) == false && e["ret"] >= 0;
  EXPECT_EQ(outside_made, 2u) << "the fixture's calls outside --env did not succeed";
  for (const json& e : rec) {
    std::string p = e["path"];
    EXPECT_TRUE(nvtr_glob_list_match(tree.env.c_str(), p.c_str())) << e.dump();
    EXPECT_EQ(p.find("/other/"), std::string::npos) << e.dump();
  }

  // What libcuda's probes depend on, said outright (the exact match covers it; these name it).
  auto find = [&](const std::string& sys, const std::string& path, int err) {
    return std::count_if(rec.begin(), rec.end(), [&](const json& e) {
      return e["sys"] == sys && e["path"] == path && e.value("errno", 0) == err;
    });
  };
  std::string ctl = tree.root + "/dev/nvidiactl";
  EXPECT_EQ(find("mknod", ctl, EEXIST), 1) << "the failed mknod (EEXIST)";
  EXPECT_GE(find("stat", ctl, ENOENT), 1) << "the stat of the missing node";
  auto bounded = std::find_if(rec.begin(), rec.end(), [&](const json& e) {
    return e["path"] == tree.root + "/proc/driver/nvidia/registry";
  });
  ASSERT_NE(bounded, rec.end());
  EXPECT_EQ((*bounded)["content"].value("bounded", false), true);
  auto dir = std::find_if(rec.begin(), rec.end(), [&](const json& e) {
    return e["sys"] == "file" && e["path"] == tree.root + "/sys/bus/pci/devices";
  });
  ASSERT_NE(dir, rec.end());
  EXPECT_EQ((*dir)["entries"], json({"0000:00:00.0", "0000:45:00.0"}));

  // Threads and the forked child appear.
  std::set<int> tids, pids;
  for (const json& e : calls) {
    tids.insert(e["tid"].get<int>());
    pids.insert(e["pid"].get<int>());
  }
  EXPECT_GE(tids.size(), 5u);  // main, three workers, the child
  EXPECT_EQ(pids.size(), 2u);

  // The comparison can fail: a content byte changed, an event dropped, one invented.
  for (int change = 0; change < 3; ++change) {
    auto wrong = rec;
    auto it = std::find_if(wrong.begin(), wrong.end(), [](const json& e) {
      return e.contains("content") && e["content"].value("post", std::string()).size() > 8;
    });
    ASSERT_NE(it, wrong.end());
    if (change == 0) {
      std::string post = (*it)["content"]["post"];
      post[3] = post[3] == '0' ? '1' : '0';
      (*it)["content"]["post"] = post;
    } else if (change == 1) {
      wrong.erase(it);
    } else {
      wrong.push_back(*it);
    }
    EXPECT_FALSE(match_env_exactly(calls, wrong, mode()).empty()) << "change " << change;
  }

  // Our own reader reads every environment event back, members included.
  auto reader = trace::TraceReader::open(out);
  ASSERT_TRUE(reader) << reader.error().message();
  trace::Event ev;
  size_t files = 0, with_content = 0;
  while ((*reader)->next(ev)) {
    if (ev.sys != trace::Sys::kFile) continue;
    ++files;
    with_content += ev.content.has_value();
  }
  EXPECT_TRUE((*reader)->diagnostics().empty());
  size_t want_files = 0, want_content = 0;
  for (const json& e : rec) {
    want_files += e["sys"] == "file";
    want_content += e.contains("content");
  }
  EXPECT_EQ(files, want_files);
  EXPECT_EQ(with_content, want_content);
}

// Stacks belong to device calls: an environment call made after one carries none of its frames
// (the ptrace recorder reuses one event per thread, and once left the last device call's stack
// on every environment event after it, so that decode attributed them to that call's frames).
TEST_P(EnvTrace, EnvironmentCallsAfterADeviceCallCarryNoStack) {
  EnvTree tree = make_env_tree(mode() + "-env-stacks");
  std::string out = temp_dir() + "/" + mode() + "-env-stacks.jsonl";
  // The fixture's write-only open of dev/nvidia-scratch is the one device call; the unlink of that
  // path and the rest of the run's environment calls come after it.
  RunResult r = run({cudatool_bin(), "trace", "--mode", mode(), "-q", "-o", out, "--devices",
                     tree.root + "/dev/nvidia-scratch", "--env", tree.env, "--", env_client_bin(),
                     tree.root, "full"});
  ASSERT_EQ(r.status, 0) << r.err;
  TraceFile t = load_trace(out);
  EXPECT_TRUE(t.bad_lines.empty());
  size_t device_with_stack = 0, env_after = 0;
  for (const json& e : t.events) {
    if (e["sys"] == "open" && e["path"] == tree.root + "/dev/nvidia-scratch") {
      device_with_stack += e.contains("stack") && !e["stack"].empty();
    } else if (is_env_sys(e["sys"]) && device_with_stack > 0) {
      ++env_after;
      EXPECT_FALSE(e.contains("stack") || e.contains("stack_ref") || e.contains("stack_error"))
          << e.dump();
    }
  }
  EXPECT_EQ(device_with_stack, 1u) << "the device open and its stack";
  EXPECT_GT(env_after, 3u) << "environment calls after the device call";
}

// realpath resolves a PCI device's link: one event in preload mode (the libc call, its answer);
// under ptrace, the readlink system calls glibc's realpath makes on the path's components — the
// one on the device's link (in --env) gives the link's text.
TEST_P(EnvTrace, RealpathIsRecorded) {
  EnvTree tree = make_env_tree(mode() + "-env-realpath");
  std::string out = temp_dir() + "/" + mode() + "-env-realpath.jsonl";
  RunResult r = record(tree, out, "realpath", tree.env);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<json> printed = env_calls(load_printed(r.out), mode());
  ASSERT_EQ(printed.size(), 1u) << r.out;
  std::string link = tree.root + "/sys/bus/pci/devices/0000:45:00.0";
  ASSERT_EQ(printed[0]["target"], tree.root + "/sys/devices/pci0000:40/0000:45:00.0");
  std::vector<json> rec = env_events(load_trace(out));
  if (mode() == "preload") {
    for (const auto& p : match_env_exactly(printed, rec, mode())) ADD_FAILURE() << p;
    return;
  }
  ASSERT_FALSE(rec.empty());
  for (const json& e : rec) EXPECT_EQ(e["sys"], "readlink") << e.dump();
  auto it = std::find_if(rec.begin(), rec.end(), [&](const json& e) { return e["path"] == link; });
  ASSERT_NE(it, rec.end());
  EXPECT_EQ((*it)["target"], "../../../devices/pci0000:40/0000:45:00.0");
}

TEST_P(EnvTrace, EnvNoneRecordsNoEnvironmentEvent) {
  EnvTree tree = make_env_tree(mode() + "-env-none");
  std::string out = temp_dir() + "/" + mode() + "-env-none.jsonl";
  RunResult r = record(tree, out, "full", "none");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_GT(env_calls(load_printed(r.out), mode()).size(), 40u);
  TraceFile t = load_trace(out);
  EXPECT_FALSE(t.header.contains("env")) << t.header.dump();
  EXPECT_TRUE(env_events(t).empty());
}

INSTANTIATE_TEST_SUITE_P(Modes, EnvTrace, ::testing::Values("ptrace", "preload"),
                         [](const auto& info) { return info.param; });

// One recording, through the tools that read traces: decode (text and JSON), the filter
// language, stats, and ab against a second recording and against a copy with one byte of a
// file's content changed.
class EnvTools : public EnvTrace {};

TEST_P(EnvTools, DecodeFilterStatsAndAb) {
  EnvTree tree = make_env_tree(mode() + "-env-tools");
  std::string a = temp_dir() + "/" + mode() + "-env-a.jsonl";
  std::string b = temp_dir() + "/" + mode() + "-env-b.jsonl";
  RunResult ra = record(tree, a, "full", tree.env);
  ASSERT_EQ(ra.status, 0) << ra.err;
  RunResult rb = record(tree, b, "full", tree.env);
  ASSERT_EQ(rb.status, 0) << rb.err;
  std::vector<json> rec = env_events(load_trace(a));
  std::vector<json> printed = env_calls(load_printed(ra.out), mode());

  // decode: one line per event; the filter selects by kind, path and op.
  auto count_rec = [&](auto pred) { return std::count_if(rec.begin(), rec.end(), pred); };
  RunResult d = run({cudatool_bin(), "decode", a, "--filter", "sys=mknod"});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(count_lines(d.out),
            static_cast<size_t>(count_rec([](const json& e) { return e["sys"] == "mknod"; })))
      << d.out;
  // The successful __xmknod (or the FIFO the fixture made instead) reads as the fixture made it.
  for (const json& e : printed) {
    if (e["sys"] != "mknod" || e["ret"] != 0 || e["op"] == "mkdir") continue;
    uint64_t mode = std::stoull(e["mode"].get<std::string>(), nullptr, 16);
    uint64_t rdev = std::stoull(e["rdev"].get<std::string>(), nullptr, 16);
    char perms[8];
    snprintf(perms, sizeof perms, "%04llo", static_cast<unsigned long long>(mode & 07777));
    std::string want =
        "mknod " + e["path"].get<std::string>() + " " +
        (S_ISCHR(mode) ? "char " + std::to_string(major(rdev)) + ":" + std::to_string(minor(rdev))
                       : std::string("fifo")) +
        " " + perms;
    EXPECT_NE(d.out.find(want), std::string::npos) << want << "\n" << d.out;
  }
  std::string sys_glob = tree.root + "/sys/*";
  d = run({cudatool_bin(), "decode", a, "--filter", "path=" + sys_glob});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(count_lines(d.out), static_cast<size_t>(count_rec([&](const json& e) {
              return e["path"].get<std::string>().rfind(tree.root + "/sys/", 0) == 0;
            })))
      << d.out;
  EXPECT_GT(count_lines(d.out), 5u);
  d = run({cudatool_bin(), "decode", a, "--filter", "sys=file and path=*/params"});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(count_lines(d.out), 4u) << d.out;  // the main thread's fopen and the three workers'
  std::ifstream params(tree.root + "/proc/driver/nvidia/params", std::ios::binary);
  std::string params_text((std::istreambuf_iterator<char>(params)), {});
  EXPECT_NE(d.out.find(std::to_string(params_text.size()) + " bytes \"ResmanDebugLevel: "),
            std::string::npos)
      << d.out;
  // The JSON twin holds the content itself.
  d = run({cudatool_bin(), "decode", a, "--json", "--filter", "sys=file and path=*/params"});
  ASSERT_EQ(d.status, 0) << d.err;
  size_t objects = 0;
  std::istringstream lines(d.out);
  for (std::string line; std::getline(lines, line);) {
    json j = json::parse(line);
    if (!j.contains("args")) continue;
    ++objects;
    std::string content;
    for (const json& f : j["args"]) {
      if (f["name"] == "content") content = f["value"];
    }
    EXPECT_EQ(content, params_text) << line;
  }
  EXPECT_EQ(objects, 4u);

  // stats: the environment events by path and by call.
  RunResult s = run({cudatool_bin(), "stats", a, "--json"});
  ASSERT_EQ(s.status, 0) << s.err;
  json st = json::parse(s.out);
  EXPECT_EQ(st["environment"]["events"], rec.size());
  bool params_row = false;
  for (const json& row : st["environment"]["by_path"]) {
    if (row["name"] == "file " + tree.root + "/proc/driver/nvidia/params") {
      params_row = row["count"] == 4;
    }
  }
  EXPECT_TRUE(params_row) << st["environment"].dump();
  for (const json& row : st["devices"]) {
    EXPECT_EQ(row["name"].get<std::string>().find(tree.root), std::string::npos)
        << "an environment path counted as a device: " << row.dump();
  }

  // export: the environment events are slices of their own category, and no slice is "unknown".
  std::string pf = temp_dir() + "/" + mode() + "-env.perfetto.json";
  RunResult x = run({cudatool_bin(), "export", a, "--format", "perfetto", "-o", pf});
  ASSERT_EQ(x.status, 0) << x.err;
  json pj = json::parse(read_file(pf));
  size_t env_slices = 0, process_slices = 0;
  for (const json& e : pj["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_NE(e["cat"], "unknown") << e.dump();
    env_slices += e["cat"] == "environment";
    process_slices += e["cat"] == "process";
  }
  EXPECT_EQ(env_slices, rec.size());
  EXPECT_GE(process_slices, 2u) << "the execve and the exit";

  // ab: two recordings of the same program are equivalent.
  RunResult ab = run({cudatool_bin(), "ab", a, b});
  EXPECT_EQ(ab.status, 0) << ab.out << ab.err;
  // One byte of params' content changed in B: a divergence at that call, naming the file and the
  // content byte.
  std::string changed = temp_dir() + "/" + mode() + "-env-b-changed.jsonl";
  {
    std::ifstream in(b);
    std::ofstream o(changed);
    bool done = false;
    for (std::string line; std::getline(in, line);) {
      if (!done &&
          line.find("\"path\":\"" + tree.root + "/proc/driver/nvidia/params\"") !=
              std::string::npos &&
          line.find("\"content\"") != std::string::npos) {
        json j = json::parse(line);
        std::string post = j["content"]["post"];
        post[9] = post[9] == '0' ? '1' : '0';  // byte 4
        j["content"]["post"] = post;
        line = j.dump();
        done = true;
      }
      o << line << "\n";
    }
    ASSERT_TRUE(done);
  }
  ab = run({cudatool_bin(), "ab", a, changed, "--json"});
  EXPECT_EQ(ab.status, 1) << ab.out << ab.err;
  json j = json::parse(ab.out);
  EXPECT_EQ(j["counts"]["different_parameters"], 1) << ab.out;
  // What the program read differs, and it went on alike: an answer without visible consequence
  // (docs/ab.md), listed under the verdict, with no first divergence.
  EXPECT_TRUE(j["first"].is_null()) << ab.out;
  ASSERT_EQ(j["verdict"]["without_consequence"].size(), 1u) << ab.out;
  const json& div = j["verdict"]["without_consequence"][0];
  EXPECT_EQ(div["kind"], "different_parameters");
  EXPECT_NE(div["a"]["summary"].get<std::string>().find("/proc/driver/nvidia/params"),
            std::string::npos)
      << div.dump();
  bool content_field = false;
  for (const json& f : div["fields"]) content_field |= f["field"] == "content+0x4";
  EXPECT_TRUE(content_field) << div.dump();
  ab = run({cudatool_bin(), "ab", a, changed});
  EXPECT_EQ(ab.status, 1);
  EXPECT_NE(ab.out.find("content+0x4"), std::string::npos) << ab.out;
}

INSTANTIATE_TEST_SUITE_P(Modes, EnvTools, ::testing::Values("ptrace", "preload"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cudatool::test
