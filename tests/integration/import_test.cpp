// `cudatool import` on the two real captures of tests/data/captures (H200, driver 580.159.04):
// every line becomes one event and every field survives. The expected values are the capture's own
// lines, decompressed by xz(1) and parsed by nlohmann/json at test time.
#include <unistd.h>

#include <gtest/gtest.h>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "harness.hpp"
#include "hex_text.hpp"
#include "rm/tables.hpp"
#include "trace/trace_file.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

uint64_t num(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) return static_cast<uint64_t>(v.get<int64_t>());
  std::string s = v.get<std::string>();
  bool neg = !s.empty() && s[0] == '-';
  uint64_t x = std::stoull(neg ? s.substr(1) : s, nullptr, 0);
  return neg ? 0 - x : x;
}

class Import : public ::testing::TestWithParam<std::string> {};

TEST_P(Import, RealCaptureImportsWithoutLoss) {
  std::string capture = captures_dir() + "/" + GetParam();
  ASSERT_EQ(access(capture.c_str(), R_OK), 0)
      << capture << " is missing: the real captures ship in tests/data/captures (or set "
      << "CUDATOOL_CAPTURES)";
  RunResult xz = run({"xz", "-dc", capture});
  ASSERT_EQ(xz.status, 0) << xz.err;
  std::vector<json> lines;
  std::istringstream in(xz.out);
  std::string l;
  while (std::getline(in, l)) lines.push_back(json::parse(l));
  ASSERT_FALSE(lines.empty());

  std::string out = temp_dir() + "/import-" + GetParam() + ".jsonl";
  RunResult r = run(
      {cudatool_bin(), "import", capture, "-o", out, "--driver-version", "580.159.04", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json summary = json::parse(r.out);
  EXPECT_EQ(summary["schema"], "cudatool.import/1");
  EXPECT_EQ(summary["events"], lines.size());
  EXPECT_EQ(summary["compression"], "xz");
  EXPECT_EQ(summary["driver_version"], "580.159.04");
  EXPECT_EQ(r.err, "") << "a version was given: no note";
  std::map<std::string, uint64_t> by_sys;
  for (const auto& c : lines) ++by_sys[c["sys"]];
  for (const auto& [k, n] : by_sys) EXPECT_EQ(summary["by_sys"][k], n) << k;

  TraceFile t = load_trace(out);
  EXPECT_TRUE(t.bad_lines.empty());
  EXPECT_EQ(t.header["mode"], "import");
  EXPECT_EQ(t.header["driver_version"], "580.159.04");
  ASSERT_EQ(t.events.size(), lines.size());
  EXPECT_EQ(t.trailer["events"], lines.size());
  // The capture holds no exit status of the program: none is invented (issue 32).
  EXPECT_EQ(t.trailer["reason"], "import");
  ASSERT_TRUE(t.trailer.contains("exit_status"));
  EXPECT_TRUE(t.trailer["exit_status"].is_null()) << t.trailer.dump();
  EXPECT_TRUE(summary["exit_status"].is_null());
  for (size_t i = 0; i < lines.size(); ++i) {
    const json& c = lines[i];
    const json& e = t.events[i];
    SCOPED_TRACE("capture line " + std::to_string(i + 1) + ": " + c.dump().substr(0, 200));
    EXPECT_EQ(e["seq"], c["seq"]);
    EXPECT_EQ(e["t"].get<uint64_t>(), std::llround(c["t_us"].get<double>() * 1000));
    EXPECT_EQ(e["tid"], c["tid"]);
    EXPECT_EQ(e["sys"], c["sys"]);
    EXPECT_EQ(e["path"], c["path"]);
    for (const char* k : {"fd", "len", "prot"}) {
      if (c.contains(k)) {
        EXPECT_EQ(num(e[k]), num(c[k])) << k;
      }
    }
    for (const char* k : {"flags", "addr", "off", "req"}) {
      if (c.contains(k)) {
        EXPECT_EQ(num(e[k]), num(c[k])) << k;
      }
    }
    // ret: -errno in the capture, -1 with errno in the trace.
    auto ret = static_cast<int64_t>(num(c["ret"]));
    if (ret < 0 && ret >= -4095) {
      EXPECT_EQ(e["ret"], -1);
      EXPECT_EQ(e["errno"], -ret);
    } else {
      EXPECT_EQ(static_cast<int64_t>(num(e["ret"])), ret);
    }
    if (c.contains("pre")) {
      EXPECT_EQ(e["arg"]["pre"], c["pre"]);
      EXPECT_EQ(e["arg"]["post"], c["post"]);
    }
    if (c.contains("nptr")) {
      ASSERT_EQ(e["nested"].size(), 1u);
      EXPECT_EQ(num(e["nested"][0]["addr"]), num(c["nptr"]));
      EXPECT_EQ(e["nested"][0]["pre"], c["npre"]);
      EXPECT_EQ(e["nested"][0]["post"], c["npost"]);
    } else {
      EXPECT_FALSE(e.contains("nested"));
    }
    // Nothing else in the capture line went unaccounted for.
    for (const auto& [k, v] : c.items()) {
      static const std::set<std::string> kMapped = {
          "seq",  "t_us", "tid", "sys", "path", "fd",   "len",  "prot", "flags",
          "addr", "off",  "req", "ret", "pre",  "post", "nptr", "npre", "npost"};
      EXPECT_TRUE(kMapped.count(k) != 0 || e.contains(k)) << "field " << k << " was dropped";
    }
  }
  // What the capture format lacks is said, call by call: computed here from the capture's own
  // bytes and the decoder's tables (NVOS64 hClass at 12, pAllocParms at 16, paramsSize at 32;
  // NVOS54 cmd at 8, paramsSize at 24, nvos.h), independently of the importer's planner.
  const rm::Tables& tables = rm::tables_for_driver("580.159.04");
  size_t class_sized = 0, pointees = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const json& c = lines[i];
    const json& e = t.events[i];
    std::multiset<std::string> want;
    if (c["sys"] == "ioctl" && c.contains("pre")) {
      uint64_t req = num(c["req"]);
      std::string pre = c["pre"];
      // Little-endian values of the hex text (0 past its end).
      auto le = [](const std::string& hex, size_t off, size_t n) {
        uint64_t v = 0;
        for (size_t k = 0; k < n && 2 * (off + k) + 2 <= hex.size(); ++k) {
          v |= uint64_t{std::stoul(hex.substr(2 * (off + k), 2), nullptr, 16)} << (8 * k);
        }
        return v;
      };
      auto le32 = [&](const std::string& hex, size_t off) {
        return static_cast<uint32_t>(le(hex, off, 4));
      };
      auto le64 = [&](const std::string& hex, size_t off) { return le(hex, off, 8); };
      if (req == 0xc030462b && le32(pre, 32) == 0 && le64(pre, 16) != 0) {
        const rm::ClassEntry* cls = tables.find_class(le32(pre, 12));
        if (cls != nullptr && cls->rm_class && cls->alloc_params_size > 0) {
          want.insert("params");
          ++class_sized;
        }
      }
      if (req == 0xc020462a && c.contains("npre")) {
        std::string params = c["npre"];
        for (const rm::PointerRule& r :
             tables.find_pointer_rules(rm::PointerKind::kControl, le32(pre, 8))) {
          if (r.params_size != le32(pre, 24) || params.size() != 2 * r.params_size) continue;
          ASSERT_EQ(r.array_off, rm::kNoMember);  // none of the captured commands has one
          uint64_t count = 1;
          for (uint32_t off : {r.count_off0, r.count_off1}) {
            if (off != rm::kNoMember) count *= le32(params, off);  // 4-byte counts here
          }
          if (le64(params, r.ptr_off) != 0 && count * r.elem_size != 0) {
            want.insert(std::string(r.role));
            ++pointees;
          }
        }
      }
    }
    std::multiset<std::string> got;
    for (const json& u : e.value("unrecorded", json::array())) {
      got.insert(u["what"]);
      std::string why = u["why"];
      if (u["what"] == "params") {
        EXPECT_EQ(why.find("alloc parameters not recorded: capture format"), 0u) << why;
      } else {
        EXPECT_EQ(why, "capture format");
      }
    }
    EXPECT_EQ(got, want) << "line " << i + 1 << ": " << e.dump().substr(0, 300);
  }
  std::cout << GetParam() << ": unrecorded: " << class_sized << " allocation parameters, "
            << pointees << " buffers behind pointers\n";
  EXPECT_EQ(class_sized, 116u);  // every alloc with a parameter pointer
  EXPECT_GT(pointees, 3u);       // at least the build-version strings and the GR info list
  // cudatool's own reader reads it back without a complaint.
  auto rd = trace::TraceReader::open(out);
  ASSERT_TRUE(rd) << rd.error().message();
  trace::Event ev;
  size_t n = 0;
  while ((*rd)->next(ev)) ++n;
  EXPECT_EQ(n, lines.size());
  EXPECT_TRUE((*rd)->diagnostics().empty());
}

INSTANTIATE_TEST_SUITE_P(SharedData, Import,
                         ::testing::Values("trace_a.jsonl.xz", "trace_b.jsonl.xz"),
                         [](const auto& info) { return info.param.substr(0, 7); });

TEST(ImportBadInput, DamagedLinesAreReportedOneEachAndSkipped) {
  std::string cap = write_temp(
      "bad-capture.jsonl",
      "{\"seq\":0,\"t_us\":1.5,\"tid\":7,\"sys\":\"open\",\"path\":\"/dev/nvidiactl\","
      "\"flags\":\"0x2\",\"ret\":3}\n"
      "{\"seq\":1,\"t_us\":2.0,\"tid\":7,\"sys\":\"ioctl\",\"fd\":3,\"pre\":\"zz\"}\n"
      "not json at all\n"
      "{\"seq\":3,\"t_us\":3.0,\"tid\":7,\"sys\":\"ioctl\",\"fd\":3,\"path\":\"/dev/nvidiactl\","
      "\"req\":\"0xc020462a\",\"ret\":-25,\"pre\":\"00\",\"post\":\"00\",\"extra_field\":[1,2],"
      "\"t\":7}\n"
      "{\"seq\":4,\"t_us\":4.0,\"tid\":7,\"sys\":\"op");
  std::string out = temp_dir() + "/bad-capture-out.jsonl";
  RunResult r = run({cudatool_bin(), "import", cap, "-o", out});
  EXPECT_EQ(r.status, 2);
  // One message per damaged line, naming the line and the offset.
  EXPECT_NE(r.err.find("line 2: pre: expected hex digits in pairs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 5"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cut short"), std::string::npos) << r.err;
  TraceFile t = load_trace(out);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[1]["errno"], 25);
  EXPECT_EQ(t.events[1]["extra_field"], json::array({1, 2}));  // kept
  EXPECT_EQ(t.events[1]["capture.t"], 7);  // kept, renamed: "t" is the trace's own time
  EXPECT_EQ(t.events[1]["t"], 3000);       // t_us 3.0
}

// --exit-status states what the capture cannot: the trailer says it, and ab's verdict with it.
TEST(Import, ExitStatusIsWrittenOnlyWhenStated) {
  std::string capture = captures_dir() + "/trace_b.jsonl.xz";
  std::string out = temp_dir() + "/import-exit-status.jsonl";
  RunResult r = run({cudatool_bin(), "import", capture, "-o", out, "--driver-version", "580.159.04",
                     "--exit-status", "1", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["exit_status"], 1);
  TraceFile t = load_trace(out);
  EXPECT_EQ(t.trailer["exit_status"], 1);
  EXPECT_EQ(t.trailer["reason"], "import");
  RunResult bad = run({cudatool_bin(), "import", capture, "-o", out, "--exit-status", "x"});
  EXPECT_EQ(bad.status, 2) << bad.err;
}

TEST(ImportBadInput, MissingFileIsOneLineError) {
  RunResult r =
      run({cudatool_bin(), "import", "/nonexistent.jsonl", "-o", temp_dir() + "/never.jsonl"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("/nonexistent.jsonl"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace cudatool::test

namespace cudatool::test {
namespace {

// The lines of a capture as tests/data/captures/README.md describes them: an open of nvidiactl,
// then `calls`.
std::string capture_of(const std::vector<std::string>& calls) {
  std::string s =
      "{\"seq\":0,\"t_us\":1.0,\"tid\":7,\"sys\":\"open\",\"path\":\"/dev/nvidiactl\","
      "\"flags\":\"0x2\",\"ret\":3}\n";
  for (size_t i = 0; i < calls.size(); ++i) {
    s += "{\"seq\":" + std::to_string(i + 1) +
         ",\"t_us\":2.0,\"tid\":7,\"sys\":\"ioctl\","
         "\"fd\":3,\"path\":\"/dev/nvidiactl\"," +
         calls[i] + "}\n";
  }
  return s;
}

// `text` NUL-padded to n bytes.
std::string padded(const std::string& text, size_t n) {
  std::string s = text;
  s.resize(n, '\0');
  return s;
}

// nv_ioctl_rm_api_version_t (nv-ioctl.h: NvU32 cmd; NvU32 reply; char versionString[64]), the
// argument of NV_ESC_CHECK_VERSION_STR: _IOWR('F', NV_IOCTL_BASE + 10, 72).
std::string check_version_call(const std::string& pre_version, const std::string& post_version,
                               int ret) {
  std::string pre = std::string(8, '\0') + padded(pre_version, 64);
  std::string post = std::string("\0\0\0\0\x01\0\0\0", 8) + padded(post_version, 64);
  return "\"req\":\"0xc04846d2\",\"ret\":" + std::to_string(ret) + ",\"pre\":\"" + hex_of(pre) +
         "\",\"post\":\"" + hex_of(post) + "\"";
}

RunResult run_import(const std::string& capture, const std::string& out,
                     std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{cudatool_bin(), "import", capture, "-o", out};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run(argv);
}

TEST(ImportDriverVersion, TakenFromTheVersionCheckAndSaid) {
  std::string cap = write_temp("version-check.jsonl",
                               capture_of({check_version_call("580.159.04", "580.159.04", 0)}));
  std::string out = temp_dir() + "/version-check.trace";
  RunResult r = run_import(cap, out, {"--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["driver_version"], "580.159.04");
  EXPECT_EQ(j["driver_version_source"], "NV_ESC_CHECK_VERSION_STR versionString, line 2");
  EXPECT_EQ(load_trace(out).header["driver_version"], "580.159.04");
  r = run_import(cap, out);
  EXPECT_NE(r.err.find("driver version 580.159.04, from NV_ESC_CHECK_VERSION_STR versionString, "
                       "line 2"),
            std::string::npos)
      << r.err;
  // decode then takes that branch's tables.
  RunResult d = run({cudatool_bin(), "decode", out});
  EXPECT_EQ(d.status, 0) << d.err;
  EXPECT_NE(d.out.find("NV_ESC_CHECK_VERSION_STR"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("the trace names no driver version"), std::string::npos) << d.out;
}

// A mismatch: the client asked for its own version, the kernel answered with its own (and
// EINVAL): the kernel's is the driver's.
TEST(ImportDriverVersion, TheKernelsAnswerWinsOverTheClientsQuestion) {
  std::string cap = write_temp("version-mismatch.jsonl",
                               capture_of({check_version_call("999.1.2", "550.163.01", -22)}));
  RunResult r = run_import(cap, temp_dir() + "/mismatch.trace", {"--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["driver_version"], "550.163.01");
}

// NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2 (ctrl0000system.h, 0x13e): its parameters hold the
// strings inline (driverVersionBuffer[256] first; 1032 bytes in 580's headers).
TEST(ImportDriverVersion, TakenFromTheBuildVersionControl) {
  std::string nvos54 = std::string("\x01\0\0\xc1\x01\0\0\xc1\x3e\x01\0\0\0\0\0\0", 16) +
                       std::string("\0\x10\0\0\0\0\0\0", 8) +
                       std::string("\x08\x04\0\0\0\0\0\0", 8);
  std::string params = padded("575.57.08", 1032);
  std::string call = "\"req\":\"0xc020462a\",\"ret\":0,\"pre\":\"" + hex_of(nvos54) +
                     "\",\"post\":\"" + hex_of(nvos54) + "\",\"nptr\":\"0x1000\",\"npre\":\"" +
                     hex_of(std::string(1032, '\0')) + "\",\"npost\":\"" + hex_of(params) + "\"";
  std::string cap = write_temp("build-version.jsonl", capture_of({call}));
  RunResult r = run_import(cap, temp_dir() + "/build-version.trace", {"--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["driver_version"], "575.57.08");
  EXPECT_EQ(j["driver_version_source"],
            "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2 driverVersionBuffer, line 2");
}

// The real captures name no version (no version check, and the build-version control's strings
// are behind pointers the capture format does not follow): import says so; the option wins.
TEST(ImportDriverVersion, OptionIsCheckedAndWins) {
  std::string capture = captures_dir() + "/trace_a.jsonl.xz";
  std::string out = temp_dir() + "/opt.trace";
  RunResult r = run_import(capture, out);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no call of the capture names its driver version"), std::string::npos)
      << r.err;
  for (const char* bad : {"banana", "580", "580.159.04x", "v580.159.04"}) {
    r = run_import(capture, temp_dir() + "/never-" + std::string(bad) + ".trace",
                   {"--driver-version", bad});
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("not a driver version"), std::string::npos) << r.err;
  }
  std::string cap = write_temp("version-check-2.jsonl",
                               capture_of({check_version_call("580.159.04", "580.159.04", 0)}));
  r = run_import(cap, out, {"--driver-version", "575.57.08", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["driver_version"], "575.57.08");
  EXPECT_EQ(json::parse(r.out)["driver_version_source"], "--driver-version");
}

// What is plainly not a capture is refused at its first line, and nothing is written.
TEST(ImportBadInput, NotACaptureIsRefusedAtItsFirstBytes) {
  std::string lib = fixtures_dir() + "/libcuda_fixture.so.999.88.77";
  std::string xz_lib = temp_dir() + "/lib.so.xz";
  ASSERT_EQ(sh("xz -c " + lib + " > " + xz_lib).status, 0);
  struct Case {
    std::string path, says;
  };
  std::vector<Case> cases = {
      {lib, "an ELF file"},
      {xz_lib, "an ELF file"},
      {write_temp("array.json", "[{\"seq\":0}]\n"), "a JSON array"},
      {write_temp("text.txt", "hello world\n"), "\"hello world\""},
      {write_temp("empty.jsonl", ""), "empty: no capture records"},
      {write_temp("blank.jsonl", "\n  \n\n"), "empty: no capture records"},
  };
  std::string empty_xz = temp_dir() + "/empty.jsonl.xz";
  ASSERT_EQ(sh("printf '' | xz -c > " + empty_xz).status, 0);
  cases.push_back({empty_xz, "empty: no capture records (after xz decompression)"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    std::string out = temp_dir() + "/refused.trace";
    RunResult r = run_import(c.path, out);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_NE(access(out.c_str(), F_OK), 0) << "nothing written";
  }
}

// JSON lines none of which is a capture record: each is reported, and no empty trace is left.
TEST(ImportBadInput, NoCaptureRecordAtAllWritesNothing) {
  std::string cap = write_temp("other.jsonl", "{\"a\":1}\n{\"b\":2}\n");
  std::string out = temp_dir() + "/other.trace";
  RunResult r = run_import(cap, out);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("none of its 2 lines is a capture record"), std::string::npos) << r.err;
  EXPECT_NE(access(out.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace cudatool::test
