// `cudatool ab` as a command: bad inputs exit 2 with a one-line reason, --all groups every
// divergence by kind, --context bounds the context, the text and JSON say the same, --help
// teaches with examples.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "ab_support.hpp"
#include "base/bytes.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

size_t count_lines_with(const std::string& text, const std::string& needle) {
  size_t n = 0;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) n += l.find(needle) != std::string::npos;
  return n;
}

TEST(AbCli, BadInputsExit2WithAReason) {
  const AbTrace& a = ab_capture("trace_a.jsonl.xz");
  ASSERT_FALSE(a.events.empty());
  std::string missing = temp_dir() + "/no-such.trace";
  RunResult r = run({cudatool_bin(), "ab", a.path, missing});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cudatool: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());

  std::string not_trace = write_temp("ab-not-a-trace.txt", "hello, this is not a trace\n");
  r = run({cudatool_bin(), "ab", not_trace, a.path});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(not_trace), std::string::npos) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "cudatool: error:"), 1u) << r.err;

  std::string empty = write_temp("ab-empty.trace", "");
  r = run({cudatool_bin(), "ab", a.path, empty});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(empty), std::string::npos) << r.err;

  // A trace cut in the middle of a line (the recorder was killed): what was read is compared,
  // the cut line is reported, and the status is 2.
  std::string whole = read_file(a.path);
  size_t cut = whole.find('\n', whole.size() / 2) + 40;
  std::string truncated = write_temp("ab-truncated.trace", whole.substr(0, cut));
  r = run({cudatool_bin(), "ab", a.path, truncated});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("first divergence: missing call"), std::string::npos) << r.out;

  // Usage errors.
  EXPECT_EQ(run({cudatool_bin(), "ab", a.path}).status, 2);
  EXPECT_EQ(run({cudatool_bin(), "ab", a.path, a.path, "--context", "-3"}).status, 2);
}

TEST(AbCli, AllGroupsEveryDivergenceByKind) {
  const AbTrace& a = ab_capture("trace_a.jsonl.xz");
  std::vector<trace::Event> m = a.events;
  ASSERT_GT(m.size(), 600u);
  // One change of each kind: a status (the first RM control after 100), a dropped call (400),
  // an extra call (a copy of event 500 at 600).
  uint32_t k = 100;
  while ((m[k].request & 0xffff) != 0x462a) ++k;
  store_le<uint32_t>(m[k].arg->after.data() + nvos54_status_offset(), 0x1f);
  trace::Event extra = m[500];
  m.insert(m.begin() + 600, extra);
  m.erase(m.begin() + 400);
  std::string path = ab_write("ab-all.trace", a.header, m);

  RunResult r = run({cudatool_bin(), "ab", a.path, path, "--all", "--json"});
  ASSERT_EQ(r.status, 1) << r.err;
  json j = json::parse(r.out);
  ASSERT_TRUE(j["divergences"].is_array());
  size_t total = 0;
  for (auto& [kind, n] : j["counts"].items()) total += n.get<size_t>();
  EXPECT_EQ(j["divergences"].size(), total);
  EXPECT_GE(j["counts"]["different_status"].get<int>(), 1);
  EXPECT_GE(j["counts"]["missing_call"].get<int>(), 1);
  EXPECT_GE(j["counts"]["extra_call"].get<int>(), 1);
  EXPECT_EQ(j["first"]["divergence"]["kind"], "different_status");
  EXPECT_EQ(j["first"]["divergence"]["a"]["index"], k);
  bool missing400 = false;
  for (const json& d : j["divergences"]) {
    if (d["kind"] == "missing_call" && d["a"]["index"] == 400) missing400 = true;
  }
  EXPECT_TRUE(missing400) << r.out;

  // Without --all: no list, the counts only.
  json j2 = json::parse(run({cudatool_bin(), "ab", a.path, path, "--json"}).out);
  EXPECT_TRUE(j2["divergences"].is_null());
  EXPECT_EQ(j2["counts"], j["counts"]);

  // The text says the same, grouped under one heading per kind.
  RunResult t = run({cudatool_bin(), "ab", a.path, path, "--all", "--context", "1"});
  EXPECT_EQ(t.status, 1);
  EXPECT_NE(t.out.find("\ndifferent status ("), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("\nmissing call (in A, not in B) ("), std::string::npos);
  EXPECT_NE(t.out.find("\nextra call (in B, not in A) ("), std::string::npos);
  EXPECT_NE(t.out.find(std::to_string(total) + " divergence"), std::string::npos);
  EXPECT_NE(t.out.find("\n  A #400\n"), std::string::npos)
      << t.out;  // seq only where it is not the index
  EXPECT_NE(t.out.find("context (1 before, 1 after)"), std::string::npos);
}

TEST(AbCli, HelpTeaches) {
  RunResult r = run({cudatool_bin(), "ab", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  EXPECT_NE(r.out.find("cudatool ab"), std::string::npos);
  EXPECT_NE(r.out.find("Exit status: 0 equivalent (known differences hidden), 1 divergent"),
            std::string::npos);
  EXPECT_NE(r.out.find("--ignore"), std::string::npos);
  EXPECT_NE(r.out.find("--expect"), std::string::npos);
  EXPECT_NE(r.out.find("--context"), std::string::npos);
  EXPECT_NE(r.out.find("--all"), std::string::npos);
}

}  // namespace
}  // namespace cudatool::test
