#include "fwd_compat_check.hpp"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

namespace cudatool::test {

using nlohmann::json;

json expand_note_list(const json& list) {
  json out = json::array();
  auto text = [&](const std::string& s) {
    std::stringstream items(s);
    std::string item;
    while (std::getline(items, item, ',')) {
      auto dots = item.find("..");
      if (dots == std::string::npos) {
        out.push_back(std::stoll(item));
      } else {
        for (long long v = std::stoll(item.substr(0, dots)); v <= std::stoll(item.substr(dots + 2));
             ++v)
          out.push_back(v);
      }
    }
  };
  if (list.is_string()) {
    text(list.get<std::string>());
    return out;
  }
  for (const auto& e : list) {
    if (e.is_string())
      text(e.get<std::string>());
    else
      out.push_back(e);
  }
  return out;
}

void expect_note_matches_readelf(const std::string& lib) {
  SCOPED_TRACE(lib);
  ReadelfNote rn = readelf_note(lib, ".note.cuda.fwd_compatibility");
  RunResult r = run({cudatool_bin(), "info", "--json", lib});
  ASSERT_EQ(r.status, 0) << r.err;
  json note = json::parse(r.out)["fwd_compat_note"];
  if (!rn.found) {
    EXPECT_EQ(note["status"], "absent") << note.dump();
    return;
  }
  ASSERT_EQ(note["status"], "present") << note.dump();
  EXPECT_EQ(note["owner"], rn.owner);
  EXPECT_EQ(note["note_type"].get<int64_t>(), rn.type);
  ASSERT_EQ(rn.desc.size(), rn.data_size) << "readelf dumped fewer bytes than its Data size";
  std::string text = rn.desc;
  while (!text.empty() && text.back() == '\0') text.pop_back();
  EXPECT_EQ(note["raw"], text);
  json d = json::parse(text);
  const char* keys[] = {"format", "CUDA version", "driver", "device"};
  std::set<std::string> other, missing;
  for (auto& [k, v] : d.items()) other.insert(k);
  for (const char* k : keys) {
    if (other.erase(k) == 0) missing.insert(k);
  }
  EXPECT_EQ(note["format"], d.contains("format") ? d["format"] : json());
  if (d.contains("CUDA version")) {
    const json& v = d["CUDA version"];
    EXPECT_EQ(note["cuda_version"], v.is_string() ? v.get<std::string>() : v.dump());
  } else {
    EXPECT_TRUE(note["cuda_version"].is_null());
  }
  json driver = d.contains("driver") ? expand_note_list(d["driver"]) : json::array();
  json device = d.contains("device") ? expand_note_list(d["device"]) : json::array();
  EXPECT_EQ(note["driver_branches"], driver);
  EXPECT_EQ(note["device_generations"], device);
  EXPECT_EQ(note["other_keys"].get<std::set<std::string>>(), other);
  EXPECT_EQ(note["missing_keys"].get<std::set<std::string>>(), missing);
  // The text says the same.
  RunResult t = run({cudatool_bin(), "info", lib});
  ASSERT_EQ(t.status, 0) << t.err;
  auto joined = [](const json& list) {
    std::string s;
    for (const auto& v : list) s += (s.empty() ? "" : " ") + v.dump();
    return s.empty() ? std::string("none") : s;
  };
  EXPECT_NE(t.out.find("kernel-driver branches: " + joined(driver) + "\n"), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("device generations: " + joined(device) + "\n"), std::string::npos) << t.out;
  std::string cuda =
      note["cuda_version"].is_string() ? note["cuda_version"].get<std::string>() : "?";
  EXPECT_NE(t.out.find("CUDA " + cuda + " (owner \"" + rn.owner + "\", note type " +
                       std::to_string(rn.type) + ")"),
            std::string::npos)
      << t.out;
  EXPECT_EQ(t.out.find("other keys:") != std::string::npos, !other.empty()) << t.out;
}

}  // namespace cudatool::test
