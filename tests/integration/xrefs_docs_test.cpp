// The example queries of docs/xrefs.md run on a real build's SQLite index, and give what
// `cudatool xrefs` says about the same questions: the page's SQL is read from the page itself.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "frames_helpers.hpp"
#include "harness.hpp"
#include "xrefs_support.hpp"

namespace cudatool::test {
namespace {

// The ```sql block after "<!-- query: NAME -->".
std::string doc_query(const std::string& name) {
  std::string page = read_file(source_dir() + "/docs/xrefs.md");
  size_t at = page.find("<!-- query: " + name + " -->");
  if (at == std::string::npos) return {};
  size_t open = page.find("```sql\n", at);
  size_t close = page.find("```", open + 7);
  if (open == std::string::npos || close == std::string::npos) return {};
  return page.substr(open + 7, close - open - 7);
}

class XrefsDocs : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = driver_lib("550.163.01");
    ASSERT_FALSE(lib_.empty()) << "550.163.01 is not in tools/drivers.list";
    ASSERT_EQ(access(lib_.c_str(), R_OK), 0) << lib_ << ": run tools/fetch-drivers.sh";
    db_ = build_index(lib_, "docs-550");
  }
  std::string lib_, db_;
};

std::set<std::string> source_functions(const nlohmann::json& refs) {
  std::set<std::string> s;
  for (const auto& r : refs)
    if (!r["function"].is_null()) s.insert(r["function"].get<std::string>());
  return s;
}

TEST_F(XrefsDocs, IoctlCallersThatUseAnRmString) {
  std::string sql = doc_query("ioctl_and_rm_string");
  ASSERT_FALSE(sql.empty()) << "docs/xrefs.md lost the query";
  std::set<std::string> from_sql;
  for (const auto& r : sqlite_rows(db_, sql)) from_sql.insert(r[0]);

  JsonRun ioctl = cudatool_json_run({"xrefs", lib_, "ioctl", "--json"});
  ASSERT_EQ(ioctl.status, 0) << ioctl.err;
  JsonRun rm = cudatool_json_run({"xrefs", lib_, "--string", "RM", "--json"});
  ASSERT_EQ(rm.status, 0) << rm.err;
  std::set<std::string> callers = source_functions(ioctl.json["targets"][0]["references"]);
  std::set<std::string> users;
  for (const auto& s : rm.json["strings"]) {
    for (const auto& f : source_functions(s["references"])) users.insert(f);
  }
  std::set<std::string> both;
  for (const auto& f : callers)
    if (users.count(f) != 0) both.insert(f);
  EXPECT_FALSE(both.empty());
  EXPECT_EQ(from_sql, both);
}

// The head line counts references from functions, from code outside every function and from data
// apart (the implementation behind a dispatch slot is reached only through the slot: a pointer in
// .data, no function; __cxa_finalize's GOT slot is read by code in no FDE, the .init/.fini-time
// helpers), the JSON says how many of each, and an address no section holds is a TARGET that
// names nothing.
TEST_F(XrefsDocs, HeadLineTellsCodeFromDataAndBadAddressesAreRefused) {
  for (const char* target : {"cuCtxCreate_v2.impl", "__cxa_finalize"}) {
    SCOPED_TRACE(target);
    JsonRun j = cudatool_json_run({"xrefs", lib_, target, "--json"});
    ASSERT_EQ(j.status, 0) << j.err;
    const auto& t = j.json["targets"][0];
    size_t data = 0, outside = 0, in_functions = 0;
    for (const auto& r : t["references"]) {
      if (r["kind"] == "pointer")
        ++data;
      else if (r["function"].is_null())
        ++outside;
      else
        ++in_functions;
    }
    EXPECT_EQ(t["from_data"], data);
    EXPECT_EQ(t["outside_functions"], outside);
    RunResult text = run({cudatool_bin(), "xrefs", lib_, target}, 120);
    const size_t count = t["count"].get<size_t>();
    if (data == count) {
      EXPECT_NE(text.out.find(", all from data (pointers)"), std::string::npos) << text.out;
    }
    if (outside == count) {
      EXPECT_NE(text.out.find(", all from code outside any function"), std::string::npos);
    } else if (outside != 0) {
      EXPECT_NE(text.out.find(fmt::format("{} from code outside any function", outside)),
                std::string::npos)
          << text.out;
    }
    EXPECT_EQ(text.out.find("from 0 functions"), std::string::npos) << text.out;
    if (std::string(target) == "cuCtxCreate_v2.impl") {
      EXPECT_EQ(t["functions"], 0);
      EXPECT_EQ(data, count);
    } else {
      EXPECT_EQ(data, 0u) << "code reads a GOT slot: no pointer in data";
      EXPECT_GT(outside + in_functions, 0u);
    }
  }
  RunResult bad = run({cudatool_bin(), "xrefs", lib_, "0x1"}, 120);
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.err.find("no section of the library holds that address"), std::string::npos)
      << bad.err;
}

TEST_F(XrefsDocs, CallersOfTheImplementationBehindCuCtxCreate) {
  std::string sql = doc_query("callers_of_cuCtxCreate_v2_impl");
  ASSERT_FALSE(sql.empty()) << "docs/xrefs.md lost the query";
  std::set<std::pair<std::string, std::string>> from_sql;
  for (const auto& r : sqlite_rows(db_, sql)) from_sql.emplace(r[0], r[2]);

  std::set<std::pair<std::string, std::string>> from_cli;
  JsonRun impl = cudatool_json_run({"xrefs", lib_, "cuCtxCreate_v2.impl", "--json"});
  ASSERT_EQ(impl.status, 0) << impl.err;
  std::string slot;
  for (const auto& r : impl.json["targets"][0]["references"]) {
    std::string k = r["kind"].get<std::string>();
    if (k == "call" || k == "tail_jump") from_cli.emplace("calls the implementation", r["site"]);
    if (k == "pointer" && r["slot_name"] == "dispatch slot of cuCtxCreate_v2") slot = r["site"];
  }
  ASSERT_FALSE(slot.empty()) << impl.json.dump();
  JsonRun s = cudatool_json_run({"xrefs", lib_, slot, "--json"});
  ASSERT_EQ(s.status, 0) << s.err;
  for (const auto& r : s.json["targets"][0]["references"]) {
    if (r["kind"] == "load") from_cli.emplace("jumps through its dispatch slot", r["site"]);
  }
  JsonRun w = cudatool_json_run({"xrefs", lib_, "cuCtxCreate_v2", "--json"});
  ASSERT_LE(w.status, 1) << w.err;
  for (const auto& r : w.json["targets"][0]["references"]) {
    std::string k = r["kind"].get<std::string>();
    if (k == "call" || k == "tail_jump") from_cli.emplace("calls the exported wrapper", r["site"]);
    if (k == "pointer" && r["slot_name"].get<std::string>().rfind("cuGetProcAddress row", 0) == 0)
      from_cli.emplace("cuGetProcAddress returns the wrapper", r["site"]);
  }
  EXPECT_EQ(from_sql, from_cli);
  // The exported wrapper itself is among those that jump through the slot.
  const uint64_t lo = hex_field(w.json["targets"][0]["address"]);
  const uint64_t hi = hex_field(w.json["targets"][0]["end"]);
  size_t in_wrapper = 0;
  for (const auto& [how, site] : from_sql) {
    uint64_t a = hex_field(nlohmann::json(site));
    in_wrapper += how == "jumps through its dispatch slot" && a >= lo && a < hi;
  }
  EXPECT_EQ(in_wrapper, 1u);
}

}  // namespace
}  // namespace cudatool::test
