// What the real libcuda looks at on a machine without the NVIDIA kernel module, recorded by
// `cudatool trace` in both modes: every real build (the five Debian ones and 580.159.04 from the
// shared data) loaded by cuda_probe, cuInit called. The trace must hold what the kernel really
// answered, checked against this machine read independently: the listing of
// /sys/bus/pci/devices and the bytes of every device's config space, the missing
// /proc/driver/nvidia/params, the failed stat of /dev/nvidiactl, libcuda's mknod of it
// (char 195:255 0666, as root) and the opens that then fail (no driver behind the node); every
// device call is attributed to cuInit through the real library's exports; and the two modes'
// recordings compare equivalent with `ab`.
//
// libcuda mknods /dev/nvidiactl when it runs as root and the node is missing, so the program runs
// in a private mount namespace whose /dev is a fresh tmpfs (tools/private-dev.sh): nothing is
// created in the host's /dev, which the test checks. Where no such namespace can be made (not root,
// no CAP_SYS_ADMIN), or the machine has the NVIDIA module (/proc/driver/nvidia), it says SKIPPED
// and why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "harness.hpp"
#include "hex_text.hpp"
#include "replay_support.hpp"
#include "rm/tables.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The command with a private /dev (a tmpfs holding copies of the usual nodes, /dev/shm bound
// in), as README.md and docs/tracing.md tell users to record: tools/private-dev.sh.
std::vector<std::string> with_private_dev(std::vector<std::string> argv) {
  argv.insert(argv.begin(), source_dir() + "/tools/private-dev.sh");
  return argv;
}

// Why this machine cannot run the test, or "".
std::string cannot_run() {
  if (geteuid() != 0) return "needs root (a private mount namespace; libcuda's mknod as root)";
  if (fs::exists("/proc/driver/nvidia")) {
    return "this machine has the NVIDIA kernel module (/proc/driver/nvidia): the test is of a "
           "machine without it";
  }
  if (fs::exists("/dev/nvidiactl")) return "/dev/nvidiactl exists on this machine";
  RunResult r = run(with_private_dev({"true"}), 30);
  if (r.status != 0) return "cannot make a private mount namespace with a tmpfs /dev: " + r.err;
  return "";
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

class EnvReal : public ::testing::TestWithParam<DriverBuild> {
 protected:
  // Records cuda_probe's cuInit in `mode`; returns the trace path and fills `probe_out`.
  std::string record(const std::string& mode, std::string& probe_out) {
    const DriverBuild& b = GetParam();
    std::string out = temp_dir() + "/env-real-" + b.version + "-" + mode + ".jsonl";
    RunResult r = run(with_private_dev({cudatool_bin(), "trace", "--mode", mode, "-q", "-o", out,
                                        "--", cuda_probe_bin(), b.lib_path, "init"}),
                      180);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.status, 1) << "cuda_probe exits 1 when cuInit fails\n" << r.out << r.err;
    probe_out = r.out;
    return out;
  }
};

std::vector<DriverBuild> all_builds() {
  std::vector<DriverBuild> v = driver_builds();
  for (DriverBuild& b : shared_builds()) v.push_back(std::move(b));
  return v;
}

TEST_P(EnvReal, LibcudaLooksAtTheMachineAndTheTraceHoldsWhatItGot) {
  const DriverBuild& b = GetParam();
  CUDATOOL_REQUIRE_BUILD(b);
  if (std::string why = cannot_run(); !why.empty()) GTEST_SKIP() << why;

  // This machine, read here: the PCI functions and their config bytes.
  std::vector<std::string> pci;
  for (const auto& e : fs::directory_iterator("/sys/bus/pci/devices")) {
    pci.push_back(e.path().filename().string());
  }
  std::sort(pci.begin(), pci.end());
  ASSERT_FALSE(pci.empty());

  std::map<std::string, std::string> traces;
  for (std::string mode : {"ptrace", "preload"}) {
    SCOPED_TRACE(b.version + " " + mode);
    std::string probe_out;
    std::string path = record(mode, probe_out);
    traces[mode] = path;
    ASSERT_EQ(json_lines(probe_out).size(), 1u) << probe_out;
    EXPECT_EQ(json_lines(probe_out)[0], json({{"call", "cuInit"}, {"ret", 100}}))
        << "CUDA_ERROR_NO_DEVICE";
    EXPECT_FALSE(fs::exists("/dev/nvidiactl")) << "created on the host";
    TraceFile t = load_trace(path);
    EXPECT_TRUE(t.bad_lines.empty());
    ASSERT_TRUE(t.trailer.is_object());
    EXPECT_EQ(t.trailer["exit_status"], 1);

    size_t listings = 0, opens = 0, mknods = 0, params = 0, ctl_missing = 0, ctl_char = 0;
    std::set<std::string> configs;
    bool after_mknod = false;
    for (const json& e : t.events) {
      std::string sys = e["sys"], p = e.value("path", std::string());
      if (sys == "file" && p == "/sys/bus/pci/devices") {
        ++listings;
        std::vector<std::string> names = e["entries"];
        std::sort(names.begin(), names.end());
        EXPECT_EQ(names, pci) << e.dump();
      } else if (sys == "file" && p.rfind("/sys/bus/pci/devices/", 0) == 0 && p.size() > 7 &&
                 p.substr(p.size() - 7) == "/config") {
        ASSERT_TRUE(e.contains("content")) << e.dump();
        std::string post = e["content"]["post"];
        std::string real = file_bytes(p);
        EXPECT_EQ(post, hex_of(real.substr(0, post.size() / 2))) << p;
        EXPECT_GE(post.size(), 128u) << p << ": at least the header and capabilities";
        configs.insert(p.substr(21, p.size() - 21 - 7));
      } else if (sys == "file" && p == "/proc/driver/nvidia/params") {
        ++params;
        EXPECT_EQ(e["ret"], -1);
        EXPECT_EQ(e["errno"], ENOENT);
      } else if (sys == "stat" && p == "/dev/nvidiactl") {
        if (e["ret"] == 0) {
          ++ctl_char;
          EXPECT_TRUE(after_mknod) << "the node exists only once libcuda made it: " << e.dump();
          if (e.contains("rdev")) {
            EXPECT_EQ(e["rdev"], "0xc3ff") << e.dump();
          }
        } else {
          ++ctl_missing;
          EXPECT_EQ(e["errno"], ENOENT) << e.dump();
          EXPECT_FALSE(after_mknod) << e.dump();
        }
      } else if (sys == "mknod" && p == "/dev/nvidiactl") {
        ++mknods;
        after_mknod = true;
        EXPECT_EQ(e["mode"], "0x21b6") << "S_IFCHR | 0666: " << e.dump();
        EXPECT_EQ(e["rdev"], "0xc3ff") << "195:255: " << e.dump();
        EXPECT_EQ(e["ret"], 0) << e.dump();
      } else if (sys == "open" && p == "/dev/nvidiactl") {
        ++opens;
        EXPECT_TRUE(after_mknod);
        EXPECT_EQ(e["ret"], -1) << e.dump();
        EXPECT_EQ(e["errno"], ENXIO) << "no driver behind major 195: " << e.dump();
        EXPECT_TRUE(e.contains("stack") && !e["stack"].empty()) << e.dump();
      }
      EXPECT_NE(sys, "ioctl") << "no device could be opened: " << e.dump();
      if (sys != "open") {
        EXPECT_FALSE(e.contains("stack")) << "stacks are the device calls': " << e.dump();
      }
    }
    EXPECT_GE(listings, 1u);
    EXPECT_EQ(configs, std::set<std::string>(pci.begin(), pci.end()))
        << "every PCI function's config was read";
    EXPECT_GE(params, 1u);
    EXPECT_GE(ctl_missing, 1u);
    EXPECT_EQ(mknods, 1u);
    EXPECT_GE(ctl_char, 1u);
    EXPECT_GE(opens, 1u);

    // Every device call was made during cuInit: the stack's outermost libcuda export.
    RunResult s = run({cudatool_bin(), "stats", path, "--json"}, 120);
    ASSERT_EQ(s.status, 0) << s.err;
    json stats = json::parse(s.out);
    // Recorded without the module, the trace names no kernel driver version; the tables are
    // those of the libcuda its module records name (this build), not the newest branch.
    EXPECT_TRUE(stats["driver_version"].is_null()) << stats["driver_version"];
    EXPECT_EQ(stats["branch"]["chosen_by"], "libcuda") << stats["branch"];
    EXPECT_EQ(stats["branch"]["id"], rm::choose_branch(b.version).tables->info().id)
        << b.version << " " << stats["branch"];
    json api = stats["api_calls"];
    EXPECT_EQ(api["device_calls"], opens);
    EXPECT_EQ(api["attributed"], opens) << api.dump();
    ASSERT_EQ(api["rows"].size(), 1u) << api.dump();
    EXPECT_EQ(api["rows"][0]["api"], "cuInit");
  }

  // The two recordings of one run are equivalent (ptrace's exits of libcuda's threads, which
  // preload mode does not record, aside).
  RunResult ab = run({cudatool_bin(), "ab", traces["ptrace"], traces["preload"]}, 120);
  EXPECT_EQ(ab.status, 0) << ab.out << ab.err;

  // Replayed from the ptrace recording — its environment (this machine's PCI functions, the
  // missing module) answered from the trace — libcuda makes the same calls and cuInit fails the
  // same way; the replayed run compares equivalent with the recording (its environment events,
  // which a replayed run does not write, left out). Nothing is created on the host.
  std::string replayed = temp_dir() + "/env-real-" + b.version + "-replayed.jsonl";
  ReplayRun r =
      replay(traces["ptrace"], {"-o", replayed}, {cuda_probe_bin(), b.lib_path, "init"}, 180);
  EXPECT_EQ(r.run.status, 0) << "a faithful replay\n" << r.run.err;
  ASSERT_EQ(json_lines(r.run.out).size(), 1u) << r.run.out;
  EXPECT_EQ(json_lines(r.run.out)[0], json({{"call", "cuInit"}, {"ret", 100}}));
  EXPECT_TRUE(host_nvidia_nodes().empty());
  ab = run({cudatool_bin(), "ab", traces["ptrace"], replayed}, 120);
  EXPECT_EQ(ab.status, 0) << ab.out << ab.err;

  // The trace names no driver version, but its module records name this build's libcuda: the
  // replay takes that version, so another build's libcuda is refused, both versions named.
  for (const DriverBuild& other : all_builds()) {
    if (other.version == b.version || !std::filesystem::exists(other.lib_path)) continue;
    ReplayRun x = replay(traces["ptrace"], {}, {cuda_probe_bin(), other.lib_path, "init"}, 180);
    ASSERT_TRUE(x.report.is_object()) << x.run.err;
    EXPECT_EQ(x.run.status, 2) << x.run.err;
    EXPECT_EQ(x.report["end"], "refused") << x.report.dump(1);
    std::string why = x.report["refusal"].is_string() ? x.report["refusal"] : "";
    EXPECT_NE(why.find("(driver " + other.version), std::string::npos) << why;
    EXPECT_NE(why.find("recorded with driver " + b.version), std::string::npos) << why;
    EXPECT_TRUE(host_nvidia_nodes().empty());
    break;
  }
}

INSTANTIATE_TEST_SUITE_P(RealBuilds, EnvReal, ::testing::ValuesIn(all_builds()), driver_test_name);

}  // namespace
}  // namespace cudatool::test
