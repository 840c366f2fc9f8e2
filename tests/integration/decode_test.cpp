// `decode`, `stats` and `export` on the real captures of tests/data/captures (H200, driver
// 580.159.04), imported with `cudatool import --driver-version <the README's version>`.
//
// Expected values come from the captures themselves, read here with xz + nlohmann
// (capture_data.cpp) and counted by this test from the raw argument bytes, with the layouts of
// nvos.h typed in below (cited), independently of cudatool's reader, tables and decoders. The
// golden file of a decoded slice was made from real output (see kGolden) and is diffed; the test
// shows that a changed decode fails the diff.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/hex.hpp"
#include "capture_data.hpp"
#include "harness.hpp"
#include "rm/tables.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// src/common/sdk/nvidia/inc/nvos.h (x86-64 layouts of the RM escape arguments):
// NVOS54_PARAMETERS (control, 32 bytes): hClient 0, hObject 4, cmd 8, flags 12, params 16,
// paramsSize 24, status 28. NVOS21_PARAMETERS (alloc, 32 bytes): hRoot 0, hObjectParent 4,
// hObjectNew 8, hClass 12, pAllocParms 16, paramsSize 24, status 28. NVOS64_PARAMETERS (alloc,
// 48 bytes): … hClass 12, pAllocParms 16, pRightsRequested 24, paramsSize 32, flags 36, status 40.
// NVOS00_PARAMETERS (free, 16 bytes): hRoot 0, hObjectParent 4, hObjectOld 8, status 12.
// NVOS02_PARAMETERS (alloc memory, first in nv_ioctl_nvos02_parameters_with_fd, 56 bytes):
// hRoot 0, hObjectParent 4, hObjectNew 8, hClass 12, flags 16, pMemory 24, limit 32, status 40.
// Escape numbers: nv_escape.h (NV_ESC_RM_FREE 0x29, _CONTROL 0x2a, _ALLOC 0x2b, _ALLOC_MEMORY
// 0x27). Channel classes are the *6f GPFIFO classes (cl906f.h … clc86f.h: xx6f).
constexpr uint32_t kFree = 0x29, kControl = 0x2a, kAlloc = 0x2b, kAllocMemory = 0x27;

// t_us of a capture line in ns, rounded as the importer documents (docs/trace-format.md).
uint64_t t_ns_of(const json& line) {
  return static_cast<uint64_t>(std::llround(line["t_us"].get<double>() * 1000.0));
}

uint32_t u32_at(const std::vector<uint8_t>& b, size_t off) {
  return off + 4 <= b.size() ? load_le<uint32_t>(b.data() + off) : 0;
}

std::string fmt_hex(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

struct Independent {
  size_t events = 0, ioctls = 0;
  std::map<std::string, uint64_t> by_path, by_sys;
  std::map<uint32_t, uint64_t> controls, classes;
  uint64_t status_failures = 0, errno_failures = 0;
  uint64_t allocated = 0, freed = 0, frees_of_unknown = 0;
  int64_t first_channel_seq = -1;
  uint64_t first_channel_since_first_ns = 0;
  std::set<int64_t> tids;
  std::map<uint64_t, json> by_seq;
};

// Counts a capture from its own lines (format: tests/data/captures/README.md).
Independent count(const std::vector<json>& lines) {
  Independent c;
  // Live objects: (client, handle) -> (parent handle); children found by scanning (small).
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> live;
  uint64_t first_t = 0;
  for (const json& j : lines) {
    uint64_t t = t_ns_of(j);
    if (c.events++ == 0) first_t = t;
    c.by_seq[j["seq"].get<uint64_t>()] = j;
    c.tids.insert(j["tid"].get<int64_t>());
    std::string sys = j["sys"];
    ++c.by_sys[sys];
    if (j.contains("path")) ++c.by_path[j["path"].get<std::string>()];
    if (j["ret"].is_number_integer() && j["ret"].get<int64_t>() < 0) ++c.errno_failures;
    if (sys != "ioctl") continue;
    ++c.ioctls;
    uint32_t req = static_cast<uint32_t>(std::stoul(j["req"].get<std::string>(), nullptr, 16));
    if (((req >> 8) & 0xff) != 'F') continue;
    uint32_t nr = req & 0xff, size = (req >> 16) & 0x3fff;
    auto post = parse_hex_bytes(j["post"].get<std::string>()).value_or(std::vector<uint8_t>{});
    uint32_t status = 0;
    if (nr == kControl) {
      ++c.controls[u32_at(post, 8)];
      status = u32_at(post, 28);
    } else if (nr == kAlloc || nr == kAllocMemory) {
      ++c.classes[u32_at(post, 12)];
      status = u32_at(post, nr == kAlloc && size == 32 ? 28 : 40);
      if (status == 0) {
        uint32_t root = u32_at(post, 0), parent = u32_at(post, 4), handle = u32_at(post, 8);
        if (root == 0 && parent == 0) root = handle;  // a new client
        live[{root, handle}] = parent;
        ++c.allocated;
        if ((u32_at(post, 12) & 0xff) == 0x6f && c.first_channel_seq < 0) {
          c.first_channel_seq = j["seq"].get<int64_t>();
          c.first_channel_since_first_ns = t - first_t;
        }
      }
    } else if (nr == kFree) {
      status = u32_at(post, 12);
      uint32_t root = u32_at(post, 0), handle = u32_at(post, 8);
      if (status == 0) {
        if (live.count({root, handle}) == 0) {
          ++c.frees_of_unknown;
        } else {
          // The object and everything below it (all of a client's objects when it is freed).
          std::set<uint32_t> gone{handle};
          bool grew = true;
          while (grew) {
            grew = false;
            for (const auto& [k, parent] : live) {
              if (k.first == root && gone.count(parent) && !gone.count(k.second) &&
                  k.second != root) {
                gone.insert(k.second);
                grew = true;
              }
            }
          }
          if (handle == root) {
            for (const auto& [k, parent] : live) {
              if (k.first == root) gone.insert(k.second);
            }
          }
          for (uint32_t h : gone) c.freed += live.erase({root, h});
        }
      }
    }
    if (status != 0) ++c.status_failures;
  }
  return c;
}

class Decode : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    lines_ = capture_lines(GetParam());
    ASSERT_FALSE(lines_.empty());
    version_ = capture_driver_version();
    ASSERT_FALSE(version_.empty()) << "no driver version in the captures' README";
    trace_ = temp_dir() + "/decode-" + GetParam() + ".jsonl";
    RunResult r = run({cudatool_bin(), "import", captures_dir() + "/" + GetParam(), "-o", trace_,
                       "--driver-version", version_});
    ASSERT_EQ(r.status, 0) << r.err;
  }
  std::vector<json> lines_;
  std::string version_;
  std::string trace_;
};

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> v;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) v.push_back(json::parse(line));
  return v;
}

TEST_P(Decode, EveryEventDecodesWithoutError) {
  RunResult r = run({cudatool_bin(), "decode", "--json", trace_});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto out = json_lines(r.out);
  ASSERT_EQ(out.size(), lines_.size() + 2);  // header, events, summary
  EXPECT_EQ(out.front()["schema"], "cudatool.decode/1");
  EXPECT_EQ(out.front()["driver_version"], version_);
  EXPECT_EQ(out.front()["branch"]["chosen_by"], "driver");
  EXPECT_EQ(rm::choose_branch(version_).tables->info().id,
            out.front()["branch"]["id"].get<std::string>());
  size_t escapes = 0;
  for (size_t i = 0; i < lines_.size(); ++i) {
    const json& e = out[i + 1];
    const json& c = lines_[i];
    ASSERT_EQ(e["seq"], c["seq"]);
    EXPECT_EQ(e["t"].get<uint64_t>(), t_ns_of(c));
    EXPECT_EQ(e["tid"], c["tid"]);
    EXPECT_EQ(e["sys"], c["sys"]);
    EXPECT_TRUE(e["known"].get<bool>()) << e.dump();
    EXPECT_FALSE(e["call"].is_null()) << e.dump();
    EXPECT_TRUE(e["notes"].empty()) << e.dump();
    if (c["sys"] == "ioctl") {
      EXPECT_EQ(e["request"], c["req"]);
      if (e["call"].get<std::string>().rfind("NV_ESC_", 0) == 0) ++escapes;
    }
  }
  EXPECT_GT(escapes, 0u);
  const json& s = out.back()["summary"];
  EXPECT_EQ(s["events"], lines_.size());
  EXPECT_EQ(s["bad_lines"], 0);
}

TEST_P(Decode, StatsAgreeWithAnIndependentCount) {
  Independent c = count(lines_);
  RunResult r = run({cudatool_bin(), "stats", "--json", trace_});
  ASSERT_EQ(r.status, 0) << r.err;
  json s = json::parse(r.out);
  EXPECT_EQ(s["schema"], "cudatool.stats/1");
  EXPECT_EQ(s["events"], c.events);
  EXPECT_EQ(s["ioctls"], c.ioctls);
  EXPECT_EQ(s["with_duration"], 0);  // captures record no durations
  std::map<std::string, uint64_t> devices, calls;
  for (const json& d : s["devices"]) devices[d["name"]] = d["count"];
  for (const json& d : s["calls"]) calls[d["name"]] = d["count"];
  EXPECT_EQ(devices, c.by_path);
  EXPECT_EQ(calls["open"], c.by_sys["open"]);
  EXPECT_EQ(calls["mmap"], c.by_sys["mmap"]);
  std::map<uint32_t, uint64_t> controls, classes;
  for (const json& d : s["controls"]) {
    controls[static_cast<uint32_t>(std::stoul(d["cmd"].get<std::string>(), nullptr, 16))] =
        d["count"];
  }
  for (const json& d : s["classes"]) {
    classes[static_cast<uint32_t>(std::stoul(d["class"].get<std::string>(), nullptr, 16))] =
        d["count"];
  }
  EXPECT_EQ(controls, c.controls);
  EXPECT_EQ(classes, c.classes);
  uint64_t status_failures = 0, errno_failures = 0;
  for (const json& d : s["failures"]["by_status"]) status_failures += d["count"].get<uint64_t>();
  for (const json& d : s["failures"]["by_errno"]) errno_failures += d["count"].get<uint64_t>();
  EXPECT_EQ(status_failures, c.status_failures);
  EXPECT_EQ(errno_failures, c.errno_failures);
  const json& o = s["objects"];
  EXPECT_EQ(o["allocated"], c.allocated);
  EXPECT_EQ(o["freed"], c.freed);
  EXPECT_EQ(o["never_freed"], c.allocated - c.freed);
  EXPECT_EQ(o["frees_of_unknown"], c.frees_of_unknown);
  EXPECT_EQ(o["tree"].size(), c.allocated);
  // Every object of the tree sits under the object its allocation named (or is a client).
  for (const json& x : o["tree"]) {
    const json& line = c.by_seq.at(x["alloc"]["seq"].get<uint64_t>());
    auto post = *parse_hex_bytes(line["post"].get<std::string>());
    EXPECT_EQ(x["handle"], fmt_hex(u32_at(post, 8)));
    if (!x["parent"].is_null()) {
      EXPECT_EQ(x["parent"], fmt_hex(u32_at(post, 4)));
    }
  }
  ASSERT_GE(c.first_channel_seq, 0);
  ASSERT_FALSE(s["first_context"].is_null());
  EXPECT_EQ(s["first_context"]["seq"], c.first_channel_seq);
  EXPECT_EQ(s["first_context"]["since_first_event_ns"], c.first_channel_since_first_ns);
  std::cout << GetParam() << ": " << c.events << " events, " << c.controls.size()
            << " control commands, " << c.classes.size() << " classes, " << c.allocated
            << " objects (" << c.freed << " freed), first channel at seq " << c.first_channel_seq
            << " (" << c.first_channel_since_first_ns << " ns after the first event)\n";
}

TEST_P(Decode, AtLeast98PercentOfControlCommandsNamed) {
  const rm::Tables& t = *rm::choose_branch(version_).tables;
  RunResult r = run({cudatool_bin(), "stats", "--json", trace_});
  ASSERT_EQ(r.status, 0) << r.err;
  json s = json::parse(r.out);
  size_t named = 0, unpublished = 0;
  std::string unnamed;
  for (const json& d : s["controls"]) {
    auto cmd = static_cast<uint32_t>(std::stoul(d["cmd"].get<std::string>(), nullptr, 16));
    std::string name = d["name"];
    ControlNaming n = control_naming(t, cmd);  // the rule rm_capture_test.cpp uses
    // What stats prints agrees with the tables: a name, or "0x…?" with the interface.
    EXPECT_EQ(n == ControlNaming::kNamed, name.find('?') == std::string::npos) << name;
    if (n == ControlNaming::kNamed) {
      ++named;
    } else {
      unnamed += " " + name;
      EXPECT_EQ(n, ControlNaming::kUnpublished) << name << ": its interface is published";
      ++unpublished;
    }
  }
  size_t all = s["controls"].size();
  std::cout << GetParam() << ": " << named << " of " << all << " distinct control commands named ("
            << 100.0 * named / all << "% raw, " << 100.0 * named / (all - unpublished)
            << "% of the published); unnamed:" << unnamed << "\n";
  EXPECT_GE(named * 100, (all - unpublished) * 98);
  EXPECT_GT(all, 0u);
}

TEST_P(Decode, PerfettoExportIsTraceEventJson) {
  std::string out = temp_dir() + "/" + GetParam() + ".perfetto.json";
  RunResult r = run({cudatool_bin(), "export", trace_, "--format", "perfetto", "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(read_file(out));
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["traceEvents"].is_array());
  EXPECT_EQ(j["displayTimeUnit"], "ns");
  Independent c = count(lines_);
  std::set<int64_t> named_threads;
  std::set<uint64_t> seqs;
  for (const json& e : j["traceEvents"]) {
    ASSERT_TRUE(e.is_object());
    ASSERT_TRUE(e["ph"].is_string());
    ASSERT_TRUE(e["pid"].is_number_integer());
    ASSERT_TRUE(e["tid"].is_number_integer());
    ASSERT_TRUE(e["name"].is_string());
    if (e["ph"] == "M") {
      ASSERT_TRUE(e["args"]["name"].is_string());
      if (e["name"] == "thread_name") named_threads.insert(e["tid"].get<int64_t>());
      continue;
    }
    ASSERT_EQ(e["ph"], "X") << e.dump();
    ASSERT_TRUE(e["ts"].is_number());
    ASSERT_TRUE(e["dur"].is_number());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_FALSE(e["name"].get<std::string>().empty());
    uint64_t seq = e["args"]["seq"];
    EXPECT_TRUE(seqs.insert(seq).second) << "seq " << seq << " twice";
    const json& line = c.by_seq.at(seq);
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), static_cast<double>(t_ns_of(line)) / 1000.0) << seq;
    EXPECT_EQ(e["tid"], line["tid"]);
  }
  EXPECT_EQ(seqs.size(), c.events);
  EXPECT_EQ(named_threads, c.tids);
  EXPECT_EQ(j["metadata"]["events"], c.events);
}

INSTANTIATE_TEST_SUITE_P(Captures, Decode,
                         ::testing::Values("trace_a.jsonl.xz", "trace_b.jsonl.xz"),
                         [](const auto& info) { return info.param.substr(0, 7); });

}  // namespace
}  // namespace cudatool::test
