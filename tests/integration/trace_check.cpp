#include "trace_check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "harness.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

std::string str(const json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}

std::string check_side(const json& e, const json& r, const char* side) {
  std::string expect = e["expect"];
  std::string err_key = std::string(side) + "_error";
  bool has_bytes = r.contains(side);
  bool has_error = r.contains(err_key);
  std::string got = has_bytes ? r[side].get<std::string>() : "";
  std::string want = e.contains(side) ? e[side].get<std::string>() : "";
  if (expect == "exact") {
    if (has_error) return std::string(side) + " has an error: " + r[err_key].dump();
    if (got != want) return std::string(side) + " bytes differ: got " + got + " want " + want;
  } else if (expect == "prefix") {
    if (has_error) return std::string(side) + " has an error: " + r[err_key].dump();
    if (got.compare(0, want.size(), want) != 0 || got.size() < want.size()) {
      return std::string(side) + " does not start with " + want + ": " + got;
    }
  } else if (expect == "partial" || expect == "partial_bound") {
    if (got != want) return std::string(side) + " prefix differs: got " + got + " want " + want;
    if ((expect == "partial") != has_error) {
      return std::string(side) + (has_error ? " has an unexpected error" : " lacks its error");
    }
  } else if (expect == "unreadable") {
    if (has_bytes && !got.empty()) return std::string(side) + " should be unreadable: " + got;
    if (!has_error) return std::string(side) + " lacks an error";
  } else if (expect == "over_cap") {
    if (has_bytes) return std::string(side) + " should not be read";
    if (!has_error || r[err_key].get<std::string>().find("over cap") == std::string::npos) {
      return std::string(side) + " lacks the over-cap error";
    }
  } else if (expect == "none") {
    if (has_bytes || has_error) return std::string(side) + " should be absent for size 0";
  }
  return "";
}

std::string check_buffer(const json& e, const json& r) {
  if (str(r, "role") != str(e, "role")) return "role " + str(r, "role") + " != " + str(e, "role");
  if (json_uint(r["addr"]) != json_uint(e["addr"])) return "addr " + r["addr"].dump();
  if (r["size"] != e["size"]) return "size " + r["size"].dump() + " != " + e["size"].dump();
  if (r.value("bounded", false) != e["bounded"].get<bool>()) return "bounded flag";
  if (r.value("sized_by", "") != e.value("sized_by", "")) return "sized_by " + r.dump();
  for (const char* side : {"pre", "post"}) {
    std::string m = check_side(e, r, side);
    if (!m.empty()) return str(e, "role") + ": " + m;
  }
  return "";
}

}  // namespace

bool take_stack_record(const json& j, std::map<uint64_t, json>& records,
                       std::vector<std::string>& bad) {
  if (!j.contains("stack_record")) return false;
  const json& r = j["stack_record"];
  if (!r.is_object() || !r["id"].is_number_unsigned() || !r["stack"].is_array() ||
      r["stack"].empty() || !records.emplace(r["id"].get<uint64_t>(), r).second) {
    bad.push_back("bad or repeated stack record: " + j.dump());
  }
  return true;
}

void resolve_stack_ref(json& ev, const std::map<uint64_t, json>& records,
                       std::vector<std::string>& bad) {
  if (!ev.contains("stack_ref")) return;
  auto it = ev["stack_ref"].is_number_unsigned() ? records.find(ev["stack_ref"].get<uint64_t>())
                                                 : records.end();
  if (it == records.end() || ev.contains("stack")) {
    bad.push_back("stack_ref without a record before it (or with a stack): " + ev.dump());
    return;
  }
  ev["stack"] = it->second["stack"];
}

TraceFile load_trace(const std::string& path) {
  TraceFile t;
  std::string text = read_file(path);
  size_t end = text.find_last_not_of('\0');
  end = end == std::string::npos ? 0 : end + 1;
  t.nul_padding = text.size() - end;
  text.resize(end);
  std::istringstream in(text);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      t.bad_lines.push_back(line);
      continue;
    }
    if (first) {
      t.header = j;
      first = false;
    } else if (j.contains("end")) {
      t.trailer = j["end"];
    } else if (j.contains("module")) {
      t.modules.push_back(j["module"]);  // v2 module records: not events
    } else if (!take_stack_record(j, t.stack_records, t.bad_lines)) {
      resolve_stack_ref(j, t.stack_records, t.bad_lines);
      t.events.push_back(j);
    }
  }
  return t;
}

std::vector<json> load_printed(const std::string& out) {
  std::vector<json> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("sys")) v.push_back(j);
  }
  return v;
}

std::string mismatch(const json& e, const json& r) {
  if (r["sys"] != e["sys"]) return "sys";
  if (r["pid"] != e["pid"] || r["tid"] != e["tid"]) return "pid/tid";
  if (r.value("ret", int64_t{0}) != e["ret"].get<int64_t>()) return "ret " + r["ret"].dump();
  if (r.value("errno", 0) != e.value("errno", 0)) return "errno";
  std::string sys = e["sys"];
  for (const char* k : {"path", "fd", "child", "len", "prot"}) {
    if (e.contains(k) && r[k] != e[k]) return std::string(k) + " " + r[k].dump();
  }
  for (const char* k : {"flags", "req", "addr", "off"}) {
    if (e.contains(k) && (!r.contains(k) || json_uint(r[k]) != json_uint(e[k]))) {
      return std::string(k) + " " + (r.contains(k) ? r[k].dump() : "absent");
    }
  }
  if (sys == "ioctl") {
    if (!r.contains("arg")) return "no arg buffer";
    if (std::string m = check_buffer(e["arg"], r["arg"]); !m.empty()) return "arg: " + m;
    json rn = r.value("nested", json::array());
    if (rn.size() != e["nested"].size()) {
      return "nested count " + std::to_string(rn.size()) +
             " != " + std::to_string(e["nested"].size());
    }
    for (size_t i = 0; i < rn.size(); ++i) {
      if (std::string m = check_buffer(e["nested"][i], rn[i]); !m.empty()) return "nested: " + m;
    }
    // What the recorder says it could not record: the same members as the program expects.
    std::set<std::string> want, got;
    for (const json& u : e.value("unrecorded", json::array())) want.insert(u["what"]);
    for (const json& u : r.value("unrecorded", json::array())) {
      if (str(u, "why").empty()) return "unrecorded without a reason";
      got.insert(u["what"]);
    }
    if (want != got) return "unrecorded " + r.value("unrecorded", json::array()).dump();
  }
  return "";
}

std::vector<std::string> match_exactly(const std::vector<json>& printed,
                                       const std::vector<json>& recorded) {
  static const std::set<std::string> kCompared = {"open", "close",  "dup",    "ioctl",
                                                  "mmap", "munmap", "execve", "fork"};
  std::vector<json> rec;
  for (const auto& r : recorded) {
    if (kCompared.count(r["sys"].get<std::string>()) != 0) rec.push_back(r);
  }
  std::vector<bool> used(rec.size(), false);
  std::vector<std::string> problems;
  for (const auto& e : printed) {
    std::string closest;
    bool found = false;
    for (size_t i = 0; i < rec.size() && !found; ++i) {
      if (used[i]) continue;
      std::string m = mismatch(e, rec[i]);
      if (m.empty()) {
        used[i] = true;
        found = true;
      } else if (m != "sys" && m != "pid/tid" && closest.empty()) {
        closest = m + " in " + rec[i].dump().substr(0, 600);
      }
    }
    if (!found) {
      problems.push_back("not recorded: " + e.dump().substr(0, 600) +
                         (closest.empty() ? "" : "\n   closest: " + closest));
    }
  }
  for (size_t i = 0; i < rec.size(); ++i) {
    if (!used[i]) problems.push_back("recorded but not made: " + rec[i].dump().substr(0, 600));
  }
  return problems;
}

size_t resolve_uvm_table_sizes(std::vector<json>& printed,
                               const std::map<uint64_t, uint64_t>& uvm_sizes) {
  size_t n = 0;
  for (json& e : printed) {
    if (e["sys"] != "ioctl" || !e.contains("arg") || e["arg"]["size"] != "uvm_table") continue;
    auto it = uvm_sizes.find(json_uint(e["req"]));
    if (it == uvm_sizes.end()) continue;
    json& a = e["arg"];
    a["size"] = it->second;
    for (const char* side : {"pre", "post"}) {
      if (a.contains(side)) a[side] = a[side].get<std::string>().substr(0, 2 * it->second);
    }
    ++n;
  }
  return n;
}

size_t resolve_class_table_sizes(std::vector<json>& printed,
                                 const std::map<uint64_t, uint64_t>& class_sizes) {
  size_t n = 0;
  for (json& e : printed) {
    if (e["sys"] != "ioctl" || !e.contains("nested")) continue;
    for (json& b : e["nested"]) {
      if (b["size"] != "class_table") continue;
      auto it = class_sizes.find(b["class"].get<uint64_t>());
      if (it == class_sizes.end()) continue;
      b["size"] = it->second;
      for (const char* side : {"pre", "post"}) {
        if (b.contains(side)) b[side] = b[side].get<std::string>().substr(0, 2 * it->second);
      }
      b.erase("class");
      ++n;
    }
  }
  return n;
}

std::string make_fake_devices(const std::string& name) {
  std::string dir = temp_dir() + "/" + name;
  mkdir(dir.c_str(), 0755);
  for (const char* f : {"nvidiactl", "nvidia0"}) {
    std::string p = dir + "/" + f;
    std::ofstream(p, std::ios::binary) << std::string(8192, '\0');
  }
  std::string fifo = dir + "/nvidia-uvm";
  unlink(fifo.c_str());
  if (mkfifo(fifo.c_str(), 0644) != 0) throw std::runtime_error("mkfifo " + fifo);
  return dir;
}

}  // namespace cudatool::test
