// `cudatool abi`: the kernel-ABI surface of the fixture (tests/fixtures/abi/abi_lib.c) is exactly
// what its source passes toward ioctl, with the functions objdump names; every other entry is a
// small value that objdump shows as an immediate of the function named. On real builds: the
// branch decode would choose, a surface that is a small part of the branch's commands, every
// request of the 580 capture in the 580 surface, and the OLD NEW comparison.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "frames_helpers.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

std::string abi_fixture_lib() {
  return fixtures_dir() + "/abi/stripped/libabi.so";
}
std::string fixture_unstripped() {
  return fixtures_dir() + "/abi/unstripped/libabi.so";
}

using Key = std::pair<std::string, std::string>;  // kind, name

std::map<Key, nlohmann::json> by_name(const nlohmann::json& j) {
  std::map<Key, nlohmann::json> out;
  for (const auto& r : j["requests"]) {
    std::string name =
        r["name"].is_null() ? r["value"].get<std::string>() : r["name"].get<std::string>();
    out[{r["kind"].get<std::string>(), name}] = r;
  }
  return out;
}

std::set<std::string> functions_of(const nlohmann::json& r) {
  std::set<std::string> out;
  for (const auto& f : r["functions"]) out.insert(f.get<std::string>());
  return out;
}

// objdump -d of the unstripped fixture: the immediates ($0x…) of each function's instructions.
std::map<std::string, std::set<uint64_t>> objdump_immediates() {
  RunResult r = sh("objdump -d --no-show-raw-insn '" + fixture_unstripped() + "'");
  EXPECT_EQ(r.status, 0) << r.err;
  std::map<std::string, std::set<uint64_t>> out;
  std::regex fn(R"(^[0-9a-f]+ <([^>@]+)>:$)");
  std::regex imm(R"(\$0x([0-9a-f]+))");
  std::string cur;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, fn)) {
      cur = m[1];
      continue;
    }
    for (auto it = std::sregex_iterator(line.begin(), line.end(), imm);
         it != std::sregex_iterator(); ++it) {
      out[cur].insert(std::stoull((*it)[1].str(), nullptr, 16));
    }
  }
  return out;
}

TEST(AbiFixture, SurfaceIsExact) {
  JsonRun r = cudatool_json_run({"abi", abi_fixture_lib(), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.json["schema"], "cudatool.abi/1");
  auto req = by_name(r.json);
  // What the source passes toward ioctl, with high or medium confidence, and nothing else.
  std::map<Key, std::pair<std::string, std::set<std::string>>> expected = {
      {{"escape", "NV_ESC_RM_CONTROL"}, {"high", {"fx_control"}}},
      {{"escape", "NV_ESC_RM_ALLOC"}, {"high", {"fx_alloc_device", "fx_alloc_channel"}}},
      {{"control", "NV2080_CTRL_CMD_GPU_GET_INFO_V2"}, {"high", {"fx_control"}}},
      {{"class", "HOPPER_COMPUTE_A"}, {"medium", {"fx_alloc_channel"}}},
      {{"class", "HOPPER_DMA_COPY_A"}, {"medium", {"fx_alloc_channel"}}},
      {{"class", "HOPPER_CHANNEL_GPFIFO_A"}, {"medium", {"fx_alloc_channel"}}},
      {{"uvm", "UVM_INITIALIZE"}, {"high", {"fx_uvm_initialize"}}},
      {{"uvm", "UVM_REGISTER_GPU"}, {"high", {"fx_uvm_register_gpu"}}},
  };
  std::set<Key> confident;
  for (const auto& [k, v] : req) {
    if (v["confidence"] != "low") confident.insert(k);
  }
  std::set<Key> want;
  for (const auto& [k, v] : expected) want.insert(k);
  EXPECT_EQ(confident, want);
  for (const auto& [k, v] : expected) {
    if (!req.contains(k)) continue;
    EXPECT_EQ(req[k]["confidence"], v.first) << k.second;
    EXPECT_EQ(functions_of(req[k]), v.second) << k.second;
  }
  // The UVM requests were moved into ioctl's request argument; the classes came from a
  // vector constant in read-only data.
  const Key uvm_gpu{"uvm", "UVM_REGISTER_GPU"}, dma{"class", "HOPPER_DMA_COPY_A"};
  const Key control{"escape", "NV_ESC_RM_CONTROL"};
  EXPECT_TRUE(req[uvm_gpu]["sites"][0]["request_arg"].get<bool>());
  EXPECT_TRUE(req[dma]["sites"][0]["table"].get<bool>());
  EXPECT_EQ(req[control]["request_codes"], nlohmann::json::array({"0xc020462a"}));

  // Constants that reach no ioctl: kept, with their reason.
  for (auto [name, fn] :
       {std::pair{"NV2080_CTRL_CMD_GPU_GET_GID_INFO", "fx_not_passed"},
        std::pair{"NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION", "fx_store_only"}}) {
    Key k{"control", name};
    ASSERT_TRUE(req.contains(k)) << name;
    EXPECT_EQ(req[k]["confidence"], "low");
    EXPECT_EQ(req[k]["reason"], "no call path to an ioctl");
    EXPECT_EQ(functions_of(req[k]), std::set<std::string>{fn});
  }
  Key dev{"class", "NV01_DEVICE_0"};
  ASSERT_TRUE(req.contains(dev));
  EXPECT_EQ(req[dev]["confidence"], "low");
  EXPECT_EQ(functions_of(req[dev]), std::set<std::string>{"fx_alloc_device"});

  // Every other entry is a small value that objdump shows as an immediate of its function.
  auto imms = objdump_immediates();
  std::map<uint64_t, std::string> fn_names;  // stripped names of hidden functions: fn_<hex>
  for (const auto& s : readelf_symbols(fixture_unstripped(), false)) {
    if (s.type == "FUNC" && s.ndx != "UND") fn_names[s.value] = s.name;
  }
  for (const auto& [k, v] : req) {
    if (want.contains(k) || k == dev || k.second == "NV2080_CTRL_CMD_GPU_GET_GID_INFO" ||
        k.second == "NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION") {
      continue;
    }
    EXPECT_EQ(v["confidence"], "low") << k.second;
    uint64_t value = hex_field(v["value"]);
    EXPECT_LT(value, 0x1000u) << k.second;
    for (const auto& f : v["functions"]) {
      std::string name = f.get<std::string>();
      if (name.rfind("fn_", 0) == 0) name = fn_names[std::stoull(name.substr(3), nullptr, 16)];
      EXPECT_TRUE(imms[name].contains(value)) << k.second << " in " << name;
    }
  }
  // fx_no_request's constant is no request of any kind, and zero (every cleared member) is none.
  for (const auto& [k, v] : req) {
    EXPECT_NE(hex_field(v["value"]), 0x12345678u);
    EXPECT_NE(hex_field(v["value"]), 0u) << k.second;
  }
}

TEST(AbiFixture, LayoutsComeFromTheBranch) {
  JsonRun r = cudatool_json_run({"abi", abi_fixture_lib(), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto req = by_name(r.json);
  const Key control{"escape", "NV_ESC_RM_CONTROL"}, uvm_gpu{"uvm", "UVM_REGISTER_GPU"};
  const auto& ctl = req[control];
  EXPECT_EQ(ctl["params"], "NVOS54_PARAMETERS");
  EXPECT_EQ(ctl["size"], 32);
  EXPECT_FALSE(ctl["simple"].get<bool>());
  std::set<std::string> handles, pointers;
  for (const auto& m : ctl["handles"]) handles.insert(m["name"].get<std::string>());
  for (const auto& m : ctl["pointers"]) pointers.insert(m["name"].get<std::string>());
  EXPECT_EQ(handles, (std::set<std::string>{"hClient", "hObject"}));
  EXPECT_EQ(pointers, std::set<std::string>{"params"});
  const auto& gpu = req[uvm_gpu];
  ASSERT_EQ(gpu["fds"].size(), 1u);
  EXPECT_EQ(gpu["fds"][0]["name"], "rmCtrlFd");
}

TEST(AbiFixture, TextMarkdownAndErrors) {
  RunResult t = run({cudatool_bin(), "abi", abi_fixture_lib()});
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("nvidia — escapes (2)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("nvidia-uvm — UVM ioctls (2)"), std::string::npos) << t.out;
  RunResult md = run({cudatool_bin(), "abi", abi_fixture_lib(), "--markdown"});
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_NE(md.out.find("## nvidia — RM control commands"), std::string::npos);
  EXPECT_NE(md.out.find("| NV2080_CTRL_CMD_GPU_GET_INFO_V2 |"), std::string::npos) << md.out;
  EXPECT_EQ(run({cudatool_bin(), "abi", abi_fixture_lib(), "--json", "--markdown"}).status, 2);
  std::string junk = write_temp("not-elf.so", "not an ELF file at all");
  RunResult bad = run({cudatool_bin(), "abi", junk});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("error"), std::string::npos) << bad.err;
  EXPECT_EQ(
      run({cudatool_bin(), "abi", abi_fixture_lib(), abi_fixture_lib(), "--trace", junk}).status,
      2);
  // One library or two: a third is refused with the rule, and the usage line says "LIB...".
  const std::string lib = abi_fixture_lib();
  RunResult three = run({cudatool_bin(), "abi", lib, lib, lib});
  EXPECT_EQ(three.status, 2);
  EXPECT_NE(three.err.find("3 libraries given: one (LIB), or two (OLD NEW)"), std::string::npos)
      << three.err;
  RunResult help = run({cudatool_bin(), "abi", "--help"});
  EXPECT_NE(help.out.find("Usage: cudatool abi [OPTIONS] LIB..."), std::string::npos) << help.out;
  // The same build twice: nothing new, nothing gone, no layout change.
  JsonRun d = cudatool_json_run({"abi", abi_fixture_lib(), abi_fixture_lib(), "--json"});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(d.json["mode"], "diff");
  EXPECT_TRUE(d.json["added"].empty());
  EXPECT_TRUE(d.json["removed"].empty());
  EXPECT_TRUE(d.json["changed"].empty());
  JsonRun one = cudatool_json_run({"abi", abi_fixture_lib(), "--json"});
  EXPECT_EQ(d.json["common"].get<size_t>(), one.json["requests"].size());
}

// The branch decode would choose for the build's version, a surface far smaller than the branch's
// commands, and every confident request named by that branch.
class AbiReal : public ::testing::TestWithParam<DriverBuild> {};

// "r580" for 580.159.04: the branch of the same major, else the nearest (ties to the newer), as
// the committed branch directories list them (src/rm/generated/r*/).
std::string expected_branch(const std::string& version) {
  RunResult ls = sh("ls -d '" + source_dir() + "/src/rm/generated/'r*/");
  int major = std::stoi(version);
  int best = -1;
  std::regex re(R"(/r(\d+)/)");
  for (auto it = std::sregex_iterator(ls.out.begin(), ls.out.end(), re);
       it != std::sregex_iterator(); ++it) {
    int b = std::stoi((*it)[1].str());
    if (best < 0 || std::abs(b - major) < std::abs(best - major) ||
        (std::abs(b - major) == std::abs(best - major) && b > best)) {
      best = b;
    }
  }
  return "r" + std::to_string(best);
}

size_t branch_controls(const std::string& branch) {
  std::string text = read_file(source_dir() + "/src/rm/generated/" + branch + "/ctrl.inc");
  std::smatch m;
  std::regex re(R"(// RM control commands: (\d+) entries)");
  EXPECT_TRUE(std::regex_search(text, m, re)) << branch;
  return std::stoul(m[1].str());
}

TEST_P(AbiReal, SurfaceOfTheBuild) {
  const DriverBuild& b = GetParam();
  CUDATOOL_REQUIRE_BUILD(b);
  JsonRun r = cudatool_json_run({"abi", b.lib_path, "--json"}, 300);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.json["driver_version"], b.version);
  std::string branch = expected_branch(b.version);
  EXPECT_EQ(r.json["branch"]["id"], branch);
  // objdump's count of direct ioctl calls is what the surface started from.
  RunResult od = sh("objdump -d --no-show-raw-insn '" + b.lib_path +
                        "' | grep -cE '(call|jmp) +[0-9a-f]+ <ioctl@plt>'",
                    600);
  EXPECT_EQ(r.json["stats"]["ioctl_call_sites"].get<uint64_t>(), std::stoull(od.out)) << od.err;
  size_t controls = 0, escapes = 0, uvm = 0;
  for (const auto& q : r.json["requests"]) {
    if (q["confidence"] == "low") continue;
    // Named by the branch, but for controls only their interface names (docs/abi.md).
    if (q["name"].is_null()) {
      EXPECT_EQ(q["kind"], "control") << q.dump();
      EXPECT_EQ(q["reason"], "not in the branch's tables; its interface is") << q.dump();
    }
    controls += q["kind"] == "control";
    escapes += q["kind"] == "escape";
    uvm += q["kind"] == "uvm";
  }
  EXPECT_GT(escapes, 5u);
  EXPECT_GT(uvm, 5u);
  EXPECT_GT(controls, 20u);
  EXPECT_LT(controls * 4, branch_controls(branch)) << "the surface is a small part of the branch";
}

std::vector<DriverBuild> all_builds() {
  std::vector<DriverBuild> v = driver_builds();
  for (auto& s : shared_builds()) v.push_back(s);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Builds, AbiReal, ::testing::ValuesIn(all_builds()), driver_test_name);

// Every request of the real 580.159.04 capture is in the static surface of that build (recall).
TEST(AbiReal580, CaptureRequestsAreInTheSurface) {
  auto shared = shared_builds();
  ASSERT_FALSE(shared.empty());
  CUDATOOL_REQUIRE_BUILD(shared[0]);
  std::string trace = temp_dir() + "/abi-a.jsonl";
  RunResult imp = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", trace,
                       "--driver-version", "580.159.04"});
  ASSERT_EQ(imp.status, 0) << imp.err;
  JsonRun r = cudatool_json_run({"abi", shared[0].lib_path, "--json", "--trace", trace}, 300);
  ASSERT_EQ(r.status, 0) << r.err << r.json["trace"].dump();
  EXPECT_TRUE(r.json["trace"]["missed"].empty()) << r.json["trace"]["missed"].dump();
  EXPECT_GT(r.json["trace"]["requests"].get<size_t>(), 50u);
  // The fixture's surface misses them: each is a finding (exit 1).
  JsonRun f = cudatool_json_run({"abi", abi_fixture_lib(), "--json", "--trace", trace});
  EXPECT_EQ(f.status, 1);
  EXPECT_FALSE(f.json["trace"]["missed"].empty());
}

}  // namespace
}  // namespace cudatool::test
