// tools/device_report.py, the report of the device check (docs/DEVELOPING.md, "The device
// check"), on two traces whose facts are known here without cudatool's decoder:
// - nv_params (tests/fixtures/nvparams) recorded in preload mode with its fake kernel: the
//   program prints every call with the buffers it passed, so the allocations with class-sized
//   parameters and the lengths of the grInfoList buffers are the printed ones;
// - the committed capture trace_a, imported: its RM allocs are read here from the capture's own
//   bytes (NVOS21 / NVOS64 of nvos.h), and the capture format holds none of their parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

json device_report(const std::string& trace) {
  RunResult r = run({"python3", source_dir() + "/tools/device_report.py", "--cudatool",
                     cudatool_bin(), "--json", trace},
                    300);
  EXPECT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out.substr(0, 400);
  EXPECT_EQ(j.value("schema", ""), "cudatool.device-report/1");
  return j["traces"].at(0);
}

uint64_t le(const std::string& hex, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= std::stoull(hex.substr(2 * (at + i), 2), nullptr, 16) << 8 * i;
  return v;
}

TEST(DeviceReport, FixtureAllocationsAndListsAreThePrintedOnes) {
  std::string dev = make_fake_devices("device-report");
  std::string trace = temp_dir() + "/device-report-params.jsonl";
  RunResult rec = run({cudatool_bin(), "trace", "--mode", "preload", "-q", "-o", trace, "--devices",
                       dev + "/*", "--", fixtures_dir() + "/nv_params", dev, "answered"});
  ASSERT_EQ(rec.status, 0) << rec.err;
  // What the program says: its allocs that passed class-sized parameters, and the element count
  // (8-byte NV2080_CTRL_GR_INFO) of every grInfoList it passed, in order.
  size_t class_sized = 0, unreadable = 0;
  std::vector<uint64_t> lists;
  for (const json& c : load_printed(rec.out)) {
    if (c.value("sys", "") != "ioctl" || !c.contains("nested")) continue;
    uint64_t req = std::stoull(c["req"].get<std::string>(), nullptr, 16);
    for (const json& n : c["nested"]) {
      if ((req & 0xff) == 0x2b && n["role"] == "params" && n["size"] == "class_table") {
        ++class_sized;
      }
      if (n["role"] == "params.grInfoList" && n["size"].is_number()) {
        // A list the recorder can read only in part counts the elements it read; one it cannot
        // read at all, none (nv_params.c unreadable_lists).
        std::string expect = n.value("expect", "");
        if (expect == "partial") {
          lists.push_back(n["pre"].get<std::string>().size() / 2 / 8);
        } else if (expect == "unreadable") {
          ++unreadable;
          lists.push_back(0);
        } else {
          lists.push_back(n["size"].get<uint64_t>() / 8);
        }
      }
    }
  }
  ASSERT_GT(class_sized, 0u);
  ASSERT_GT(lists.size(), 1u);

  json r = device_report(trace);
  EXPECT_EQ(r["allocs"]["params_size_0_with_pointer"], class_sized);
  EXPECT_EQ(r["allocs"]["recorded"], class_sized);
  EXPECT_TRUE(r["allocs"]["not_recorded_because"].empty()) << r["allocs"].dump();
  // Every list the program passed is a call of the report (the XFER-wrapped one too); those the
  // recorder kept have their element count, the one over --max-buffer none. The program's threads
  // print in their own order: compared as sorted counts.
  const json& gr = r["gr_get_info"];
  ASSERT_EQ(gr.size(), lists.size()) << gr.dump();
  std::vector<uint64_t> kept, want;
  for (uint64_t n : lists) {
    if (n != 0 && n * 8 <= (16u << 20)) want.push_back(n);
  }
  for (const json& c : gr) {
    if (c["pointees"].empty()) {
      EXPECT_FALSE(c["unrecorded"].empty()) << c.dump();
      continue;
    }
    EXPECT_EQ(c["pointees"][0]["role"], "params.grInfoList");
    kept.push_back(c["pointees"][0]["elements"].get<uint64_t>());
  }
  std::sort(kept.begin(), kept.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(kept, want);
  EXPECT_EQ(unreadable, 1u);
  EXPECT_EQ(want.size() + 1 + unreadable, lists.size()) << "one list over the cap";
  // The fixture's strings, as its fake kernel wrote them (nv_params.c).
  bool strings = false;
  for (const json& c : r["build_version"]) {
    for (const json& p : c["pointees"]) {
      if (p["role"] == "params.pDriverVersionBuffer") strings = p["value"] == "580.159.04";
    }
  }
  EXPECT_TRUE(strings) << r["build_version"].dump();
  // Stacks: every device call has one; the fixture has no API library.
  EXPECT_EQ(r["api_calls"]["with_stack"], r["api_calls"]["device_calls"]);
}

TEST(DeviceReport, TheCaptureLacksWhatOurRecorderRecords) {
  std::string capture = captures_dir() + "/trace_a.jsonl.xz";
  // The capture's RM allocs, from its bytes: NVOS21 (32 bytes: pAllocParms at 16, paramsSize at
  // 24) or NVOS64 (48 bytes: paramsSize at 32).
  RunResult raw = sh("xz -dc '" + capture + "'");
  ASSERT_EQ(raw.status, 0) << raw.err;
  size_t allocs = 0, with_pointer = 0;
  std::istringstream lines(raw.out);
  for (std::string line; std::getline(lines, line);) {
    json e = json::parse(line, nullptr, false);
    if (e.is_discarded() || e.value("sys", "") != "ioctl") continue;
    uint64_t req = std::stoull(e["req"].get<std::string>(), nullptr, 16);
    uint64_t size = (req >> 16) & 0x3fff;
    if ((req & 0xff) != 0x2b || (size != 32 && size != 48)) continue;
    std::string pre = e["pre"];
    ++allocs;
    if (le(pre, size == 32 ? 24 : 32, 4) == 0 && le(pre, 16, 8) != 0) ++with_pointer;
  }
  ASSERT_GT(with_pointer, 0u);
  std::string trace = temp_dir() + "/device-report-trace_a.jsonl";
  RunResult imp =
      run({cudatool_bin(), "import", capture, "-o", trace, "--driver-version", "580.159.04"});
  ASSERT_EQ(imp.status, 0) << imp.err;

  json r = device_report(trace);
  EXPECT_EQ(r["allocs"]["all"], allocs);
  EXPECT_EQ(r["allocs"]["params_size_0_with_pointer"], with_pointer);
  EXPECT_EQ(r["allocs"]["recorded"], 0);
  EXPECT_EQ(r["allocs"]["not_recorded_because"],
            json({{"alloc parameters not recorded: capture format", with_pointer}}));
  // The controls are there, what their pointers point at is not.
  ASSERT_FALSE(r["gr_get_info"].empty());
  ASSERT_FALSE(r["build_version"].empty());
  for (const char* k : {"gr_get_info", "build_version"}) {
    for (const json& c : r[k]) {
      EXPECT_TRUE(c["pointees"].empty()) << c.dump();
      EXPECT_FALSE(c["unrecorded"].empty()) << c.dump();
    }
  }
  EXPECT_TRUE(r["api_calls"].is_null());
  EXPECT_EQ(r["environment"]["events"], 0);
}

}  // namespace
}  // namespace cudatool::test
