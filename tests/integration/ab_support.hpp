// Shared by the `cudatool ab` integration tests: the real captures of tests/data/captures imported
// to traces (by the cudatool binary), read back as events, and mutated copies written with the
// trace writer.
#pragma once

#include <string>
#include <vector>

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

// Writes header + events with trace::TraceWriter to a fresh file under the test's temporary
// directory; returns its path.
std::string ab_write(const std::string& name, const trace::Header& header,
                     const std::vector<trace::Event>& events);

// NV_STATUS member of an RM control (NVOS54_PARAMETERS.status) at this offset, from the driver
// tables (rm/tables.hpp), not from ab/.
uint32_t nvos54_status_offset();

}  // namespace cudatool::test
