#include "stacks_support.hpp"

#include <gtest/gtest.h>
#include <algorithm>
#include <sstream>

#include "harness.hpp"
#include "trace_check.hpp"

namespace cudatool::test {

using nlohmann::json;

StackFixture stack_fixture() {
  std::string d = fixtures_dir() + "/stacks";
  return {d + "/stack_client", d + "/stackfix/libstackfix.so", d + "/stripped/libstackfix.so",
          d + "/stackfix_other/libstackfix.so"};
}

std::vector<NmFunction> nm_functions(const std::string& file) {
  RunResult r = run({"nm", "-S", "--defined-only", file});
  EXPECT_EQ(r.status, 0) << "nm " << file << ": " << r.err;
  std::vector<NmFunction> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string addr, size, type, name;
    if (!(f >> addr >> size >> type >> name)) continue;  // symbols without a size
    if (type != "t" && type != "T") continue;
    out.push_back(
        {std::stoull(addr, nullptr, 16), std::stoull(size, nullptr, 16), name, type == "T"});
  }
  std::sort(out.begin(), out.end(),
            [](const NmFunction& a, const NmFunction& b) { return a.start < b.start; });
  return out;
}

const NmFunction* nm_find(const std::vector<NmFunction>& fns, uint64_t addr) {
  for (const NmFunction& f : fns) {
    if (addr >= f.start && addr < f.start + f.size) return &f;
  }
  return nullptr;
}

std::string readelf_build_id(const std::string& file) {
  RunResult r = run({"readelf", "-n", file});
  auto at = r.out.find("Build ID: ");
  if (at == std::string::npos) return "";
  auto end = r.out.find_first_of(" \n", at + 10);
  return r.out.substr(at + 10, end - at - 10);
}

StackTrace load_stack_trace(const std::string& path) {
  StackTrace t;
  std::string text = read_file(path);
  std::istringstream in(text);
  std::string line;
  bool first = true;
  uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      t.bad_lines.push_back(line);
    } else if (first) {
      t.header = j;
    } else if (j.contains("module")) {
      t.modules.push_back(j["module"]);
      t.modules.back()["_line"] = line_no;
    } else if (j.contains("end")) {
      t.trailer = j["end"];
    } else if (j.contains("stack_record")) {
      j["stack_record"]["_line"] = line_no;
      take_stack_record(j, t.stack_records, t.bad_lines);
    } else {
      resolve_stack_ref(j, t.stack_records, t.bad_lines);
      t.events.push_back(j);
      t.events.back()["_line"] = line_no;
    }
    first = false;
  }
  std::stable_sort(t.events.begin(), t.events.end(), [](const json& a, const json& b) {
    return a["seq"].get<uint64_t>() < b["seq"].get<uint64_t>();
  });
  return t;
}

ClientOutput parse_client_output(const std::string& out) {
  ClientOutput c;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (j.contains("device_call")) {
      c.device_calls.push_back(j);
    } else if (j.contains("api")) {
      c.api_calls.push_back(j);
    }
  }
  return c;
}

std::string record_client(const std::string& mode, const std::string& lib,
                          const std::string& devdir, const std::string& trace,
                          const std::vector<std::string>& extra) {
  std::vector<std::string> argv{cudatool_bin(), "trace", "-q",        "--mode",     mode,
                                "-o",           trace,   "--devices", devdir + "/*"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  for (const std::string& a : {std::string("--"), stack_fixture().client, lib,
                               devdir + "/nvidiactl", std::string("full")}) {
    argv.push_back(a);
  }
  RunResult r = run(argv, 120);
  EXPECT_EQ(r.status, 0) << "cudatool trace " << mode << ": " << r.err;
  EXPECT_FALSE(r.timed_out);
  return r.out;
}

std::map<uint64_t, size_t> pair_device_calls(const ClientOutput& printed, const StackTrace& t,
                                             std::vector<std::string>& problems) {
  std::map<std::pair<int, int>, std::vector<size_t>> want;
  for (size_t i = 0; i < printed.device_calls.size(); ++i) {
    const json& d = printed.device_calls[i]["device_call"];
    want[{d["pid"].get<int>(), d["tid"].get<int>()}].push_back(i);
  }
  std::map<std::pair<int, int>, size_t> next;
  std::map<uint64_t, size_t> out;
  for (const json& e : t.events) {
    if (e["sys"] != "ioctl") continue;
    std::pair<int, int> key{e["pid"].get<int>(), e["tid"].get<int>()};
    size_t& k = next[key];
    auto it = want.find(key);
    if (it == want.end() || k >= it->second.size()) {
      problems.push_back("recorded ioctl seq " + e["seq"].dump() + " was not reported");
      continue;
    }
    size_t idx = it->second[k++];
    const json& d = printed.device_calls[idx]["device_call"];
    if (std::stoull(e["req"].get<std::string>(), nullptr, 16) !=
        std::stoull(d["req"].get<std::string>(), nullptr, 16)) {
      problems.push_back("seq " + e["seq"].dump() + ": request differs from the report");
    }
    out[e["seq"].get<uint64_t>()] = idx;
  }
  for (const auto& [key, v] : want) {
    if (next[key] < v.size()) {
      problems.push_back("thread " + std::to_string(key.second) + ": " +
                         std::to_string(v.size() - next[key]) + " reported calls not recorded");
    }
  }
  return out;
}

DecodedStacks decode_stacks(const std::string& trace, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{cudatool_bin(), "decode",    trace,         "--json",
                                "--stacks",     "--api-lib", "libstackfix*"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult r = run(argv, 120);
  DecodedStacks d;
  d.status = r.status;
  d.err = r.err;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (j.contains("summary")) {
      d.summary = j["summary"];
    } else if (j.contains("seq")) {
      d.events[j["seq"].get<uint64_t>()] = j;
    }
  }
  return d;
}

}  // namespace cudatool::test
