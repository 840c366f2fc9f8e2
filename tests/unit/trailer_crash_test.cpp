// The trailer's `crash` member (docs/trace-format.md, "Last line"): written and read back, and
// hostile values rejected with an error that names the line's offset, never a crash.
#include <gtest/gtest.h>

#include "trace/trace_json.hpp"

namespace cudatool::trace {
namespace {

TEST(TrailerCrash, RoundTrips) {
  Trailer t;
  t.events = 7;
  t.reason = "signal";
  t.exit_status = -11;
  t.crash = CrashSummary{11, "fn_2a3b00", "libcuda.so.1+0x2a3b47", 0x10, 4242, "cuInit"};
  std::string line;
  append_trailer_line(line, t);
  Trailer back;
  ASSERT_TRUE(parse_trailer_line(line, 0, back).ok()) << line;
  ASSERT_TRUE(back.crash) << line;
  EXPECT_EQ(back.crash->signal, 11);
  EXPECT_EQ(back.crash->function, "fn_2a3b00");
  EXPECT_EQ(back.crash->where, "libcuda.so.1+0x2a3b47");
  EXPECT_EQ(back.crash->fault_addr, 0x10u);
  EXPECT_EQ(back.crash->tid, 4242);
  EXPECT_EQ(back.crash->api, "cuInit");
  // No fault address (a signal sent): null, read back as none.
  t.crash->fault_addr.reset();
  line.clear();
  append_trailer_line(line, t);
  EXPECT_NE(line.find("\"fault_addr\":null"), std::string::npos) << line;
  ASSERT_TRUE(parse_trailer_line(line, 0, back).ok());
  EXPECT_FALSE(back.crash->fault_addr);
  // Without the member: no crash.
  ASSERT_TRUE(
      parse_trailer_line(R"({"end":{"events":1,"reason":"exit","exit_status":0}})", 0, back).ok());
  EXPECT_FALSE(back.crash);
}

TEST(TrailerCrash, HostileValuesAreErrorsNotCrashes) {
  Trailer t;
  for (const char* bad : {
           R"({"end":{"events":1,"crash":{"signal":"x"}}})",
           R"({"end":{"events":1,"crash":{"signal":99999999999}}})",
           R"({"end":{"events":1,"crash":[1,2]}})",
           R"({"end":{"events":1,"crash":{"fault_addr":"0xzz"}}})",
           R"({"end":{"events":1,"crash":{"function":{"a":1}}}})",
           R"({"end":{"events":1,"crash":{"tid":1)",
       }) {
    Status st = parse_trailer_line(bad, 40, t);
    EXPECT_FALSE(st.ok()) << bad;
  }
  // Unknown members of the crash object are skipped (a newer recorder's).
  ASSERT_TRUE(
      parse_trailer_line(R"({"end":{"events":1,"crash":{"signal":6,"later":[1,{"b":2}]}}})", 0, t)
          .ok());
  EXPECT_EQ(t.crash->signal, 6);
}

}  // namespace
}  // namespace cudatool::trace
