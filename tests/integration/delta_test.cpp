// delta and history over the Debian series 470 → 525 → 535 → 550 → 555, and from the newest
// Debian build to libcuda 580.159.04 of the shared test data (the first with a fwd-compat note and
// ABI v2 cubins): every count in the report must agree with the single-version commands' JSON for
// the same files; delta(X, X) is empty; delta(A, B) mirrors delta(B, A).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "harness.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

json run_json(const std::vector<std::string>& args, std::initializer_list<int> ok_status = {0}) {
  std::vector<std::string> argv{cudatool_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv, 600);
  bool ok = false;
  for (int s : ok_status) ok |= r.status == s;
  EXPECT_TRUE(ok) << "status " << r.status << ": " << r.err;
  return json::parse(r.out);
}

std::set<std::string> export_names(const std::string& lib) {
  std::set<std::string> s;
  json j = run_json({"exports", "--json", lib});  // keep the document alive while iterating
  for (const auto& e : j["exports"]) s.insert(e["name"].get<std::string>());
  return s;
}

// The names readelf --dyn-syms gives to defined OBJECT symbols (an independent reader).
std::set<std::string> readelf_objects(const std::string& lib) {
  RunResult r = run({"readelf", "--dyn-syms", "-W", lib}, 120);
  std::set<std::string> s;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (f >> num >> value >> size >> type >> bind >> vis >> ndx >> name && type == "OBJECT" &&
        ndx != "UND") {
      s.insert(name.substr(0, name.find('@')));
    }
  }
  return s;
}

std::set<std::string> strings(const json& a) {
  std::set<std::string> s;
  for (const auto& x : a) s.insert(x.get<std::string>());
  return s;
}

// history's line for a build: "- 580.159.04: 54 new APIs, and 5 new exported data (not APIs): …".
std::string fmt_line(const std::string& version, size_t apis, size_t data) {
  std::string l = "- " + version + ": " + std::to_string(apis) + " new APIs";
  if (data > 0) l += ", and " + std::to_string(data) + " new exported data (not APIs): ";
  return l;
}

// The newest Debian build (drivers.list is in version order) and the shared 580.159.04.
std::pair<DriverBuild, DriverBuild> debian_to_shared() {
  return {driver_builds().back(), shared_builds().front()};
}

void expect_pair_agrees_with_single_version_facts(const DriverBuild& old_b,
                                                  const DriverBuild& new_b) {
  const std::string& a = old_b.lib_path;
  const std::string& b = new_b.lib_path;
  SCOPED_TRACE(old_b.version + " -> " + new_b.version);
  {
    json d = run_json({"delta", "--json", a, b}, {0, 1});
    auto ea = export_names(a), eb = export_names(b);
    std::set<std::string> added, removed;
    for (const auto& n : eb)
      if (!ea.count(n)) added.insert(n);
    for (const auto& n : ea)
      if (!eb.count(n)) removed.insert(n);
    EXPECT_EQ(strings(d["exports"]["added"]), added);
    EXPECT_EQ(strings(d["exports"]["removed"]), removed);
    // Every added name is in exactly one group (new API, new version, new variant, exported
    // data), and exported data is what readelf calls OBJECT.
    std::multiset<std::string> grouped;
    for (const char* g : {"apis_added", "new_api_versions", "new_variants"}) {
      for (const auto& x : d["exports"][g])
        for (const auto& n : x["names"]) grouped.insert(n.get<std::string>());
    }
    std::set<std::string> objects = readelf_objects(b);
    for (const auto& n : d["exports"]["objects_added"]) {
      grouped.insert(n.get<std::string>());
      EXPECT_TRUE(objects.count(n.get<std::string>())) << n << " is not an OBJECT";
    }
    for (const auto& x : d["exports"]["apis_added"]) {
      bool all_data = true;
      for (const auto& n : x["names"]) all_data = all_data && objects.count(n.get<std::string>());
      EXPECT_FALSE(all_data) << x["base"] << ": exported data counted as an API";
    }
    EXPECT_EQ(std::set<std::string>(grouped.begin(), grouped.end()), added);
    EXPECT_EQ(grouped.size(), added.size());
    // Sizes and counts equal what info reports for each file.
    json ia = run_json({"info", "--json", a}), ib = run_json({"info", "--json", b});
    for (const auto& s : d["sizes"]) {
      std::string what = s["what"];
      if (what == "exports") {
        EXPECT_EQ(s["old"], ia["exports"]["total"]);
        EXPECT_EQ(s["new"], ib["exports"]["total"]);
      } else if (what == "imports") {
        EXPECT_EQ(s["old"], ia["imports"]["total"]);
        EXPECT_EQ(s["new"], ib["imports"]["total"]);
      } else if (what == "file") {
        EXPECT_EQ(s["old"], ia["file"]["size"]);
        EXPECT_EQ(s["new"], ib["file"]["size"]);
      } else if (what[0] == '.') {
        EXPECT_EQ(s["old"], ia["sections_of_interest"][what]["size"]) << what;
        EXPECT_EQ(s["new"], ib["sections_of_interest"][what]["size"]) << what;
      }
    }
    // Imports added/removed agree with the imports command.
    auto imports = [&](const std::string& lib) {
      std::set<std::string> s;
      json j = run_json({"imports", "--json", lib});
      for (const auto& x : j["imports"]) {
        s.insert(x["name"].get<std::string>() + "@" +
                 (x["version"].is_null() ? "" : x["version"].get<std::string>()));
      }
      return s;
    };
    auto im_a = imports(a), im_b = imports(b);
    std::set<std::string> im_added;
    for (const auto& n : im_b)
      if (!im_a.count(n)) im_added.insert(n);
    std::set<std::string> got;
    for (const auto& x : d["imports"]["added"]) {
      got.insert(x["name"].get<std::string>() + "@" +
                 (x["version"].is_null() ? "" : x["version"].get<std::string>()));
    }
    EXPECT_EQ(got, im_added);
  }
}

TEST(Delta, NeighbourPairsAgreeWithSingleVersionFacts) {
  auto builds = driver_builds();
  ASSERT_GE(builds.size(), 4u);
  for (size_t i = 0; i + 1 < builds.size(); ++i)
    expect_pair_agrees_with_single_version_facts(builds[i], builds[i + 1]);
}

TEST(Delta, DebianTo580AgreesWithSingleVersionFacts) {
  auto [a, b] = debian_to_shared();
  CUDATOOL_REQUIRE_BUILD(b);
  expect_pair_agrees_with_single_version_facts(a, b);
}

void expect_table_changes_agree(const DriverBuild& old_b, const DriverBuild& new_b) {
  SCOPED_TRACE(old_b.version + " -> " + new_b.version);
  {
    json d = run_json({"delta", "--json", old_b.lib_path, new_b.lib_path}, {0, 1});
    json ta = run_json({"tables", "--json", old_b.lib_path});
    json tb = run_json({"tables", "--json", new_b.lib_path});
    auto rows = [](const json& t) {
      std::set<std::string> s;
      for (const auto& r : t["procaddress"]["rows"]) {
        s.insert(r["api"].get<std::string>() + " @ " +
                 std::to_string(r["cuda_version"].get<int>()));
      }
      return s;
    };
    auto ra = rows(ta), rb = rows(tb);
    std::set<std::string> added, removed;
    for (const auto& r : rb)
      if (!ra.count(r)) added.insert(r);
    for (const auto& r : ra)
      if (!rb.count(r)) removed.insert(r);
    EXPECT_EQ(strings(d["tables"]["procaddress_added"]), added);
    EXPECT_EQ(strings(d["tables"]["procaddress_removed"]), removed);
    auto uuids = [](const json& t) {
      std::set<std::string> s;
      for (const auto& e : t["exporttables"]["tables"]) s.insert(e["uuid"].get<std::string>());
      return s;
    };
    auto ua = uuids(ta), ub = uuids(tb);
    size_t uadded = 0;
    for (const auto& u : ub) uadded += !ua.count(u);
    EXPECT_EQ(d["tables"]["export_tables_added"].size(), uadded);
    auto codes = [](const json& t) {
      std::set<int64_t> s;
      for (const auto& e : t["errors"]["entries"]) s.insert(e["code"].get<int64_t>());
      return s;
    };
    auto ca = codes(ta), cb = codes(tb);
    size_t cadded = 0;
    for (auto c : cb) cadded += !ca.count(c);
    EXPECT_EQ(d["tables"]["errors_added"].size(), cadded);
  }
}

TEST(Delta, TableChangesAgreeWithTablesCommand) {
  auto builds = driver_builds();
  for (size_t i = 0; i + 1 < builds.size(); ++i)
    expect_table_changes_agree(builds[i], builds[i + 1]);
}

TEST(Delta, DebianTo580TableChangesAgreeWithTablesCommand) {
  auto [a, b] = debian_to_shared();
  CUDATOOL_REQUIRE_BUILD(b);
  expect_table_changes_agree(a, b);
}

void expect_function_and_device_code_facts_agree(const DriverBuild& old_b,
                                                 const DriverBuild& new_b) {
  SCOPED_TRACE(old_b.version + " -> " + new_b.version);
  const std::string a = old_b.lib_path, b = new_b.lib_path;
  json d = run_json({"delta", "--json", a, b}, {0, 1});
  json fa = run_json({"functions", "--json", a}), fb = run_json({"functions", "--json", b});
  ASSERT_FALSE(d["functions"].is_null());
  EXPECT_EQ(d["functions"]["old"], fa["count"]);
  EXPECT_EQ(d["functions"]["new"], fb["count"]);
  // Every function is accounted for exactly once on each side.
  const json& f = d["functions"];
  EXPECT_EQ(
      f["unchanged"].get<uint64_t>() + f["changed"].get<uint64_t>() + f["removed"].get<uint64_t>(),
      f["old"].get<uint64_t>());
  EXPECT_EQ(
      f["unchanged"].get<uint64_t>() + f["changed"].get<uint64_t>() + f["added"].get<uint64_t>(),
      f["new"].get<uint64_t>());
  // Changed named functions carry names the functions command shows on both sides.
  auto names = [](const json& fj) {
    std::set<std::string> s;
    for (const auto& fn : fj["functions"]) {
      for (const auto& n : fn["names"]) s.insert(n["name"].get<std::string>());
    }
    return s;
  };
  auto na = names(fa), nb = names(fb);
  for (const auto& m : f["largest_movers"]) {
    EXPECT_TRUE(na.count(m["name"].get<std::string>()) && nb.count(m["name"].get<std::string>()))
        << m;
  }
  // Image counts per architecture: the cubins command on each file.
  auto per_arch = [](const json& c) {
    std::map<std::string, uint64_t> m;
    for (const auto& im : c["images"]) {
      if (im["kind"] == "fatbin") continue;
      ++m[im["arch"].get<std::string>()];
    }
    return m;
  };
  auto ca = per_arch(run_json({"cubins", "--json", a})),
       cb = per_arch(run_json({"cubins", "--json", b}));
  std::map<std::string, std::pair<uint64_t, uint64_t>> changed;
  for (const auto& [arch, n] : ca) {
    uint64_t nb2 = cb.count(arch) ? cb[arch] : 0;
    if (nb2 != n) changed[arch] = {n, nb2};
  }
  for (const auto& [arch, n] : cb) {
    if (!ca.count(arch) && n != 0) changed[arch] = {0, n};
  }
  EXPECT_EQ(d["cubins"]["images_per_arch"].size(), changed.size());
  for (const auto& e : d["cubins"]["images_per_arch"]) {
    auto it = changed.find(e["arch"].get<std::string>());
    ASSERT_NE(it, changed.end());
    EXPECT_EQ(e["old"], it->second.first);
    EXPECT_EQ(e["new"], it->second.second);
  }
  // Architectures added and dropped: those with images on one side only.
  std::vector<std::string> added, dropped;
  for (const auto& [arch, n] : cb)
    if (!ca.count(arch)) added.push_back(arch);
  for (const auto& [arch, n] : ca)
    if (!cb.count(arch)) dropped.push_back(arch);
  auto sorted = [](const json& v) {
    auto x = v.get<std::vector<std::string>>();
    std::sort(x.begin(), x.end());
    return x;
  };
  EXPECT_EQ(sorted(d["cubins"]["archs_added"]), added);
  EXPECT_EQ(sorted(d["cubins"]["archs_removed"]), dropped);
  // Listed in numeric order: sm_90a before sm_100.
  auto number = [](const std::string& arch) { return std::stoi(arch.substr(arch.find('_') + 1)); };
  for (const char* list : {"archs_added", "archs_removed"}) {
    const json& v = d["cubins"][list];
    for (size_t i = 1; i < v.size(); ++i)
      EXPECT_LE(number(v[i - 1]), number(v[i])) << list << ": " << v.dump();
  }
}

TEST(Delta, FunctionAndDeviceCodeFactsAgreeWithTheirCommands) {
  auto builds = driver_builds();
  expect_function_and_device_code_facts_agree(builds[2], builds[3]);
}

TEST(Delta, DebianTo580FunctionAndDeviceCodeFactsAgreeWithTheirCommands) {
  auto [a, b] = debian_to_shared();
  CUDATOOL_REQUIRE_BUILD(b);
  expect_function_and_device_code_facts_agree(a, b);
}

// The note appears in 580: the delta reports what info (checked against readelf -n in
// RealDriver.FwdCompatNoteMatchesReadelf) reads on each side, in JSON and in the text.
TEST(Delta, DebianTo580NoteAppears) {
  auto [a, b] = debian_to_shared();
  CUDATOOL_REQUIRE_BUILD(b);
  json d = run_json({"delta", "--json", a.lib_path, b.lib_path}, {0, 1});
  json na = run_json({"info", "--json", a.lib_path})["fwd_compat_note"];
  json nb = run_json({"info", "--json", b.lib_path})["fwd_compat_note"];
  ASSERT_EQ(nb["status"], "present") << nb.dump();
  const json& note = d["note"];
  EXPECT_TRUE(note["changed"].get<bool>());
  EXPECT_FALSE(d["interface_unchanged"].get<bool>());
  EXPECT_EQ(note["old"]["status"], na["status"]);
  EXPECT_EQ(note["new"]["status"], "present");
  for (const char* k : {"format", "cuda_version", "driver_branches", "device_generations"})
    EXPECT_EQ(note["new"][k], nb[k]) << k;
  auto sorted_set = [](const json& v) {
    std::set<int64_t> s;
    for (const auto& x : v) s.insert(x.get<int64_t>());
    return s;
  };
  if (na["status"] == "absent") {
    EXPECT_EQ(sorted_set(note["branches_added"]), sorted_set(nb["driver_branches"]));
    EXPECT_EQ(sorted_set(note["devices_added"]), sorted_set(nb["device_generations"]));
    EXPECT_TRUE(note["branches_removed"].empty());
  }
  RunResult t = run({cudatool_bin(), "delta", "--fast", a.lib_path, b.lib_path}, 600);
  EXPECT_EQ(t.status, 1) << t.err;
  std::string branches;
  for (const auto& x : nb["driver_branches"]) branches += (branches.empty() ? "" : " ") + x.dump();
  EXPECT_NE(t.out.find("- fwd-compat note: " + na["status"].get<std::string>() + " → CUDA " +
                       nb["cuda_version"].get<std::string>() + ", kernel-driver branches " +
                       branches + ", device generations "),
            std::string::npos)
      << t.out.substr(0, 2000);
  EXPECT_NE(t.out.find("kernel-driver branches added: " + branches), std::string::npos)
      << t.out.substr(0, 2000);
}

TEST(Delta, SameFileHasNoChange) {
  const std::string lib = driver_builds().at(2).lib_path;
  json d = run_json({"delta", "--json", lib, lib});
  EXPECT_TRUE(d["interface_unchanged"].get<bool>());
  EXPECT_TRUE(d["same_build"].get<bool>());
  EXPECT_TRUE(d["exports"]["added"].empty());
  EXPECT_TRUE(d["exports"]["removed"].empty());
  for (const auto& s : d["sizes"]) EXPECT_EQ(s["change"], 0);
  if (!d["functions"].is_null()) {
    EXPECT_EQ(d["functions"]["unchanged"], d["functions"]["old"]);
    EXPECT_EQ(d["functions"]["added"], 0);
  }
}

// Swaps every added/removed pair and old/new value of a delta, recursively.
std::string mirror_key(const std::string& k) {
  static const std::map<std::string, std::string> kPairs = {
      {"old", "new"},
      {"new", "old"},
      {"old_size", "new_size"},
      {"new_size", "old_size"},
      {"new_api_versions", "removed_api_versions"},
      {"removed_api_versions", "new_api_versions"},
      {"new_variants", "removed_variants"},
      {"removed_variants", "new_variants"}};
  if (auto it = kPairs.find(k); it != kPairs.end()) return it->second;
  auto swap_suffix = [&](const std::string& from, const std::string& to) -> std::string {
    if (k.size() >= from.size() && k.compare(k.size() - from.size(), from.size(), from) == 0) {
      return k.substr(0, k.size() - from.size()) + to;
    }
    return "";
  };
  if (auto m = swap_suffix("added", "removed"); !m.empty()) return m;
  if (auto m = swap_suffix("removed", "added"); !m.empty()) return m;
  return k;
}

json mirror(const json& j) {
  if (j.is_object()) {
    json out = json::object();
    for (auto& [k, v] : j.items()) out[mirror_key(k)] = mirror(v);
    if (out.contains("change") && out["change"].is_number())
      out["change"] = -out["change"].get<int64_t>();
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const auto& v : j) out.push_back(mirror(v));
    return out;
  }
  return j;
}

void expect_mirror(const DriverBuild& x, const DriverBuild& y) {
  const auto& a = x.lib_path;
  const auto& b = y.lib_path;
  json ab = run_json({"delta", "--json", a, b}, {0, 1});
  json ba = run_json({"delta", "--json", b, a}, {0, 1});
  json m = mirror(ba);
  for (const char* section : {"exports", "imports", "note", "sizes", "tables", "cubins"}) {
    EXPECT_EQ(ab[section], m[section]) << section << " " << x.version << " vs " << y.version;
  }
  if (!ab["functions"].is_null()) {
    for (const char* f : {"unchanged", "changed", "added", "removed", "old", "new"}) {
      EXPECT_EQ(ab["functions"][f], m["functions"][f]) << f;
    }
  }
}

TEST(Delta, MirrorProperty) {
  auto builds = driver_builds();
  for (auto [i, k] : {std::pair{0, 1}, std::pair{2, 3}, std::pair{0, 3}})
    expect_mirror(builds.at(i), builds.at(k));
}

TEST(Delta, DebianTo580MirrorProperty) {
  auto [a, b] = debian_to_shared();
  CUDATOOL_REQUIRE_BUILD(b);
  expect_mirror(a, b);
}

void expect_series_agrees(const std::vector<DriverBuild>& builds) {
  std::vector<std::string> args = {"history", "--json"};
  // Reverse order on purpose: history sorts by driver version.
  for (auto it = builds.rbegin(); it != builds.rend(); ++it) args.push_back(it->lib_path);
  json h = run_json(args);
  ASSERT_EQ(h["builds"].size(), builds.size());
  for (size_t i = 0; i < builds.size(); ++i) {
    const json& row = h["builds"][i];
    EXPECT_EQ(row["driver_version"], builds[i].version);
    json info = run_json({"info", "--json", builds[i].lib_path});
    EXPECT_EQ(row["exports"], info["exports"]["total"]);
    EXPECT_EQ(row["imports"], info["imports"]["total"]);
    EXPECT_EQ(row["build_id"], info["build_id"]);
    const json& note = info["fwd_compat_note"];
    EXPECT_EQ(row["note"]["status"], note["status"]);
    if (note["status"] == "present") {
      for (const char* k : {"format", "cuda_version", "driver_branches", "device_generations"})
        EXPECT_EQ(row["note"][k], note[k]) << k;
    }
  }
  // "since": a name is attributed to the first build that exports it, checked per build.
  std::vector<std::set<std::string>> names;
  for (const auto& b : builds) names.push_back(export_names(b.lib_path));
  for (auto& [name, since] : h["export_since"].items()) {
    size_t first = 0;
    while (first < names.size() && !names[first].count(name)) ++first;
    ASSERT_LT(first, names.size()) << name;
    EXPECT_EQ(since, builds[first].version) << name;
  }
}

TEST(History, SeriesAgreesWithSingleVersionFacts) {
  auto builds = driver_builds();
  expect_series_agrees(builds);
  RunResult csv = run({cudatool_bin(), "history", "--csv", builds[0].lib_path, builds[1].lib_path});
  EXPECT_EQ(csv.status, 0);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3);
}

// The newest Debian build and 580.159.04: the note's columns, and the architecture columns in
// numeric order (580 adds sm_100 … sm_121 after sm_90a).
TEST(History, DebianTo580SeriesAgreesWithSingleVersionFacts) {
  auto [a, b] = debian_to_shared();
  CUDATOOL_REQUIRE_BUILD(b);
  expect_series_agrees({a, b});
  RunResult csv = run({cudatool_bin(), "history", "--csv", b.lib_path, a.lib_path}, 600);
  ASSERT_EQ(csv.status, 0) << csv.err;
  std::istringstream in(csv.out);
  std::string header, row_a, row_b;
  std::getline(in, header);
  std::getline(in, row_a);
  std::getline(in, row_b);
  std::vector<std::string> cols;
  std::stringstream hs(header);
  for (std::string c; std::getline(hs, c, ',');) cols.push_back(c);
  std::vector<int> numbers;
  for (const auto& c : cols)
    if (c.rfind("sm_", 0) == 0) numbers.push_back(std::stoi(c.substr(3)));
  ASSERT_FALSE(numbers.empty()) << header;
  EXPECT_TRUE(std::is_sorted(numbers.begin(), numbers.end())) << header;
  json info = run_json({"info", "--json", b.lib_path});
  EXPECT_NE(row_b.find(",present," + info["fwd_compat_note"]["cuda_version"].get<std::string>()),
            std::string::npos)
      << header << "\n"
      << row_b;
}

// For a pair, history's "new" are delta's: the API base names of apis_added, and the exported
// data (objects_added) apart, each a defined OBJECT symbol as readelf lists them.
void expect_history_counts_as_delta(const DriverBuild& a, const DriverBuild& b) {
  SCOPED_TRACE(a.version + " -> " + b.version);
  json h = run_json({"history", "--json", "--fast", a.lib_path, b.lib_path});
  json d = run_json({"delta", "--json", "--fast", a.lib_path, b.lib_path}, {0, 1});
  std::set<std::string> new_apis, new_data;
  for (auto& [base, since] : h["api_since"].items()) {
    if (since == b.version) new_apis.insert(base);
  }
  for (auto& [base, since] : h["data_since"].items()) {
    if (since == b.version) new_data.insert(base);
  }
  std::set<std::string> delta_apis;
  for (const auto& g : d["exports"]["apis_added"]) delta_apis.insert(g["base"].get<std::string>());
  EXPECT_EQ(new_apis, delta_apis);
  // Data names are their own base names (no _vN / _ptsz form): compare as names.
  std::set<std::string> delta_data = strings(d["exports"]["objects_added"]);
  EXPECT_EQ(new_data, delta_data);
  std::set<std::string> objects = readelf_objects(b.lib_path);
  for (const auto& name : delta_data) EXPECT_TRUE(objects.count(name)) << name;
  for (auto& [base, since] : h["api_since"].items()) EXPECT_FALSE(objects.count(base)) << base;
  // The text says both counts.
  RunResult text = run({cudatool_bin(), "history", "--fast", a.lib_path, b.lib_path}, 600);
  std::string line = fmt_line(b.version, new_apis.size(), new_data.size());
  EXPECT_NE(text.out.find(line), std::string::npos) << line << "\n" << text.out;
}

TEST(History, NewApisAndDataAgreeWithDelta) {
  auto builds = driver_builds();
  expect_history_counts_as_delta(builds[2], builds[3]);
  auto [a, b] = debian_to_shared();
  CUDATOOL_REQUIRE_BUILD(b);
  expect_history_counts_as_delta(builds[2], b);
}

TEST(Delta, DebInputGivesTheSameDelta) {
  auto builds = driver_builds();
  json from_libs =
      run_json({"delta", "--json", "--fast", builds[2].lib_path, builds[3].lib_path}, {0, 1});
  json from_debs =
      run_json({"delta", "--json", "--fast", builds[2].deb_path, builds[3].deb_path}, {0, 1});
  for (json* j : {&from_libs, &from_debs}) {
    (*j)["old"].erase("path");
    (*j)["new"].erase("path");
  }
  EXPECT_EQ(from_libs, from_debs);
}

}  // namespace
}  // namespace cudatool::test
