// `cudatool ab --html` in a real browser (Debian's chromium, headless, driven by
// tests/browser/ab_html_check.py over the DevTools protocol): the page of a run that fails and
// stops (built from the real capture as in ab_early_end_test) renders, needs no network, shows
// the first divergence without scrolling, expands a call to its decoded members with the members
// that differ, and its filter box hides calls — by an expression of the decode filter language
// and by text. What the page must show is computed here from the traces: the decoder's members
// (trace::decode_event), the comparison's rows (ab::compare) and the same events' summaries.
//
// Chromium missing is a failure, not a skip: tools/install-deps.sh installs it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "ab/compare.hpp"
#include "ab_support.hpp"
#include "base/bytes.hpp"
#include "harness.hpp"
#include "trace/decode.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

std::string chromium() {
  const char* env = std::getenv("CUDATOOL_CHROMIUM");
  return env ? env : "/usr/bin/chromium";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

struct Pair {
  std::string a, b;  // trace files
  uint32_t n = 0;    // the failing control
  std::string status_name;
  std::vector<trace::Event> b_events;
};

// B fails at the first RM control after event 40 with NV_ERR_NOT_SUPPORTED, frees three objects,
// deinitialises UVM, closes two fds and exits 1.
Pair failing_pair(const AbTrace& a) {
  Pair p;
  p.a = a.path;
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  uint32_t n = 40;
  while (n < a.events.size() && trace::decode_event(t, a.events[n]).call != "NV_ESC_RM_CONTROL")
    ++n;
  p.n = n;
  uint32_t status = 0;
  for (const rm::StatusEntry& s : t.statuses()) {
    if (s.name == "NV_ERR_NOT_SUPPORTED") status = s.value;
  }
  EXPECT_NE(status, 0u);
  p.status_name = "NV_ERR_NOT_SUPPORTED";
  p.b_events.assign(a.events.begin(), a.events.begin() + n + 1);
  store_le<uint32_t>(p.b_events[n].arg->after.data() + nvos54_status_offset(), status);
  TeardownPlan plan{3, true, 2, true};
  Teardown td = teardown_after(a, n + 1, plan);
  EXPECT_EQ(td.frees, 3u);
  p.b_events.insert(p.b_events.end(), td.events.begin(), td.events.end());
  for (size_t k = 0; k < p.b_events.size(); ++k) p.b_events[k].seq = k;
  trace::Trailer tr;
  tr.reason = "exit";
  tr.exit_status = 1;
  p.b = ab_write("ab-html-b.trace", a.header, p.b_events, tr);
  return p;
}

TEST(AbHtml, PageIsSelfContainedAndSmall) {
  const AbTrace& a = ab_capture("trace_a.jsonl.xz");
  ASSERT_FALSE(a.events.empty());
  Pair p = failing_pair(a);
  std::string page = temp_dir() + "/ab-small.html";
  RunResult r = run({cudatool_bin(), "ab", p.a, p.b, "--html", page});
  EXPECT_EQ(r.status, 1) << r.err;  // the exit status says "divergent", --html or not
  EXPECT_NE(r.err.find("wrote " + page), std::string::npos) << r.err;
  std::string html = read_file(page);
  ASSERT_FALSE(html.empty());
  EXPECT_LT(html.size(), 2u << 20) << "a 753-event pair must make a page under 2 MB";
  // Nothing is fetched: no external scripts, styles, images or links.
  for (const char* s : {"<link", "src=", "http://", "https://", "@import", "url("}) {
    EXPECT_EQ(html.find(s), std::string::npos) << s;
  }
  // Both traces' events are in it, decoded: every event of A and B, in blocks of 1024.
  EXPECT_NE(html.find("<script type=\"application/json\" id=\"a0\">"), std::string::npos);
  EXPECT_NE(html.find("<script type=\"application/json\" id=\"b0\">"), std::string::npos);
  EXPECT_NE(html.find("NV_ERR_NOT_SUPPORTED"), std::string::npos);

  // An equivalent pair makes a page too; a page that cannot be written is bad input.
  const AbTrace& b = ab_capture("trace_b.jsonl.xz");
  RunResult eq = run({cudatool_bin(), "ab", a.path, b.path, "--html", temp_dir() + "/ab-eq.html"});
  EXPECT_EQ(eq.status, 0) << eq.err;
  RunResult bad = run({cudatool_bin(), "ab", a.path, b.path, "--html", "/nonexistent/dir/x.html"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("/nonexistent/dir/x.html"), std::string::npos) << bad.err;
  // The JSON twin says which page was written, its size and how many events it decodes (and
  // nothing goes to stderr then).
  RunResult j = run({cudatool_bin(), "ab", p.a, p.b, "--html", page, "--json"});
  EXPECT_EQ(j.status, 1) << j.err;
  nlohmann::json v = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_TRUE(v.is_object()) << j.out.substr(0, 300);
  ASSERT_TRUE(v["html"].is_object()) << v["html"];
  EXPECT_EQ(v["html"]["path"], page);
  EXPECT_EQ(v["html"]["bytes"], read_file(page).size());
  EXPECT_GT(v["html"]["events"].get<uint64_t>(), 753u);
  EXPECT_EQ(j.err.find("wrote"), std::string::npos) << j.err;
  RunResult none = run({cudatool_bin(), "ab", p.a, p.b, "--json"});
  EXPECT_TRUE(nlohmann::json::parse(none.out)["html"].is_null());
}

TEST(AbHtml, InAHeadlessBrowser) {
  ASSERT_EQ(access(chromium().c_str(), X_OK), 0)
      << chromium() << " is missing: the page is tested in Debian's chromium; install it with "
      << "tools/install-deps.sh (or apt-get install chromium), or point CUDATOOL_CHROMIUM at one";
  const AbTrace& a = ab_capture("trace_a.jsonl.xz");
  ASSERT_FALSE(a.events.empty());
  Pair p = failing_pair(a);
  std::string page = temp_dir() + "/ab-browser.html";
  RunResult r = run({cudatool_bin(), "ab", p.a, p.b, "--html", page});
  ASSERT_EQ(r.status, 1) << r.err;

  // What the page must show, from the traces.
  auto na = ab::normalize_file(p.a);
  auto nb = ab::normalize_file(p.b);
  ASSERT_TRUE(na && nb);
  ab::Comparison c = ab::compare(**na, **nb);
  ASSERT_FALSE(c.divergences.empty());
  ASSERT_EQ(c.divergences.front().a, p.n);
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  auto decoded = [&](char side, uint32_t i) {
    return trace::decode_event(t, side == 'a' ? a.events[i] : p.b_events[i]);
  };
  const uint32_t rows = static_cast<uint32_t>(c.entries.size());
  uint32_t frees = 0, failed = 0, by_text = 0;
  trace::Decoded fail = decoded('b', p.n);
  const rm::CtrlEntry* ctrl = t.find_control(*fail.cmd);
  ASSERT_NE(ctrl, nullptr);
  std::string text = lower(std::string(ctrl->name)).substr(0, 14);  // part of the name, any case
  for (const ab::Entry& e : c.entries) {
    bool free = false, fails = false, has = false;
    if (e.a != ab::kNone) {
      trace::Decoded d = decoded('a', e.a);
      free |= d.call == "NV_ESC_RM_FREE";
      fails |= d.status && *d.status != 0;
      has |= lower(ab::summarize(c.namer_a(), (*na)->events[e.a])).find(text) != std::string::npos;
    }
    if (e.b != ab::kNone) {
      trace::Decoded d = decoded('b', e.b);
      free |= d.call == "NV_ESC_RM_FREE";
      fails |= d.status && *d.status != 0;
      has |= lower(ab::summarize(c.namer_b(), (*nb)->events[e.b])).find(text) != std::string::npos;
    }
    frees += free, failed += fails, by_text += has;
  }
  ASSERT_GT(frees, 0u);
  ASSERT_LT(frees, rows);

  RunResult br = run({"python3", source_dir() + "/tests/browser/ab_html_check.py", page,
                      "--chromium", chromium(), "--filter", "call=NV_ESC_RM_FREE", "--filter",
                      "status!=NV_OK", "--filter", text, "--filter", ""},
                     180);
  ASSERT_EQ(br.status, 0) << br.err;
  json j = json::parse(br.out);
  EXPECT_TRUE(j["ready"].get<bool>());
  EXPECT_TRUE(j["requests"].empty()) << j["requests"].dump();
  EXPECT_TRUE(j["errors"].empty()) << j["errors"].dump();
  EXPECT_EQ(j["rows"], rows);
  EXPECT_GT(j["rows_in_dom"].get<int>(), 10);
  EXPECT_LT(j["rows_in_dom"].get<uint32_t>(), rows) << "the list is virtual: rows in view only";
  std::string verdict = j["verdict"];
  EXPECT_NE(verdict.find("first divergence: different status: A #" + std::to_string(p.n) +
                         " / B #" + std::to_string(p.n)),
            std::string::npos)
      << verdict;
  EXPECT_NE(verdict.find("B ends after A #" + std::to_string(p.n)), std::string::npos) << verdict;

  // The first divergence is on the screen, in the list's visible part, without scrolling the page.
  ASSERT_TRUE(j["first"].is_object()) << "the first divergence's row is not rendered";
  EXPECT_EQ(j["scroll_y"], 0);
  double top = j["first"]["top"], bottom = j["first"]["bottom"];
  double list_top = j["list"]["top"], list_bottom = j["list"]["bottom"];
  double height = j["viewport"]["height"];
  EXPECT_GE(top, list_top);
  EXPECT_LE(bottom, std::min(list_bottom, height));
  EXPECT_EQ(j["first_row"], c.divergences.front().entry);

  // Clicking it shows the decoded members of both calls, and the member that differs.
  const json& x = j["expanded"];
  ASSERT_TRUE(x.is_object()) << "clicking the first divergence expanded nothing: "
                             << j.value("problems", json::array()).dump();
  EXPECT_EQ(x["row"], c.divergences.front().entry);
  trace::Decoded da = decoded('a', p.n);
  for (const rm::Field& f : da.args) {
    std::string name(f.name);
    auto has = [&](const json& list) {
      return std::find(list.begin(), list.end(), name) != list.end();
    };
    EXPECT_TRUE(has(x["a_members"])) << name << " not shown for A: " << x.dump();
    EXPECT_TRUE(has(x["b_members"])) << name << " not shown for B";
  }
  for (const rm::Field& f : da.params) {
    std::string name(f.name);
    if (name.empty()) continue;
    EXPECT_NE(std::find(x["a_members"].begin(), x["a_members"].end(), name), x["a_members"].end())
        << "parameter " << name;
  }
  auto contains = [](const json& list, const std::string& v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  EXPECT_TRUE(contains(x["a_values"], "NV_OK")) << x.dump();
  EXPECT_TRUE(contains(x["b_values"], p.status_name)) << x.dump();
  EXPECT_TRUE(contains(x["diff_fields"], "arg.status (out)")) << x.dump();
  EXPECT_TRUE(contains(x["highlighted"], "status")) << x.dump();

  // The filter hides calls: an expression, another expression, text, and nothing.
  const json& fl = j["filters"];
  ASSERT_EQ(fl.size(), 4u);
  EXPECT_EQ(fl[0]["mode"], "expression");
  EXPECT_EQ(fl[0]["shown"], frees);
  EXPECT_EQ(fl[0]["count_text"], std::to_string(frees) + " of " + std::to_string(rows) + " rows");
  ASSERT_FALSE(fl[0]["visible"].empty());
  for (const json& v : fl[0]["visible"]) {
    std::string both = v["a"].get<std::string>() + v["b"].get<std::string>();
    EXPECT_NE(both.find("NV_ESC_RM_FREE"), std::string::npos) << v.dump();
  }
  EXPECT_EQ(fl[1]["mode"], "expression");
  EXPECT_EQ(fl[1]["shown"], failed);
  EXPECT_GE(failed, 1u);
  EXPECT_EQ(fl[2]["mode"], "text");
  EXPECT_EQ(fl[2]["shown"], by_text);
  EXPECT_GE(by_text, 1u);
  EXPECT_LT(by_text, rows);
  for (const json& v : fl[2]["visible"]) {
    EXPECT_NE(lower(v["a"].get<std::string>() + " " + v["b"].get<std::string>()).find(text),
              std::string::npos)
        << v.dump();
  }
  EXPECT_EQ(fl[3]["shown"], rows);
  std::printf(
      "ab --html in chromium: %u rows, page loaded in %.3f s; filters: %u frees, %u "
      "failed, %u by text '%s'\n",
      rows, j["load_seconds"].get<double>(), frees, failed, by_text, text.c_str());
}

}  // namespace
}  // namespace cudatool::test
