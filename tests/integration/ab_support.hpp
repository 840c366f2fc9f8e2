// Shared by the `cudatool ab` integration tests: the real captures of tests/data/captures imported
// to traces (by the cudatool binary), read back as events, and mutated copies written with the
// trace writer.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ab/compare.hpp"
#include "trace/event.hpp"

namespace cudatool::test {

struct AbTrace {
  std::string path;  // the imported trace
  trace::Header header;
  std::vector<trace::Event> events;
};

// tests/data/captures (or $CUDATOOL_CAPTURES) / name, imported once per test process with
// `cudatool import --driver-version 580.159.04` (the capture's README gives the version); fails
// the calling test (ADD_FAILURE) when the capture is missing.
const AbTrace& ab_capture(const std::string& name);

// Of a comparison made without ab's rules (NormalizeOptions::rules false): fails the calling
// test for each divergence that is not of parameters and each differing member no rule of
// ab/rules.cpp names; returns "STRUCTURE.member" of each rule that named one.
std::set<std::string> members_named_by_rules(const ab::Comparison& c);

// Writes header + events with trace::TraceWriter to a fresh file under the test's temporary
// directory, and a trailer (`trailer`, else reason "exit", status 0); returns its path.
std::string ab_write(const std::string& name, const trace::Header& header,
                     const std::vector<trace::Event>& events,
                     const std::optional<trace::Trailer>& trailer = std::nullopt);

// B's calls after A's first calls, in a run that fails and stops: frees of the objects created so
// far (latest first, made from A's own last NV_ESC_RM_FREE), UVM_DEINITIALIZE on B's UVM fd,
// closes of its fds (latest first), an exit event.
struct TeardownPlan {
  uint32_t frees = 0;   // at most the objects alive
  bool deinit = false;  // only when a UVM fd is open
  uint32_t closes = 0;  // at most the fds open
  bool exit = false;
};
struct Teardown {
  std::vector<trace::Event> events;
  uint32_t frees = 0, closes = 0;
  bool deinit = false, exit = false;
  uint32_t live_objects = 0, open_fds = 0;  // what could have been torn down
};
// The teardown of a run that made A's first `n` calls (events of A), as far as `plan` asks and the
// run holds objects and fds. Handles come from the decoder (trace::decode_event), layouts from the
// driver tables.
Teardown teardown_after(const AbTrace& a, uint32_t n, const TeardownPlan& plan);

// NV_STATUS member of an RM control (NVOS54_PARAMETERS.status) at this offset, from the driver
// tables (rm/tables.hpp), not from ab/.
uint32_t nvos54_status_offset();

}  // namespace cudatool::test
