// Helpers of the call-stack tests (stacks_test.cpp): the fixture of tests/fixtures/stacks, a
// recording of it in either mode, the trace read with nlohmann/json (independently of cudatool's
// reader), and what `nm` and `readelf` say about the fixture's files — the names a frame must get.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cudatool::test {

// tests/fixtures/stacks, as built.
struct StackFixture {
  std::string client;    // stack_client
  std::string lib;       // the unstripped library
  std::string stripped;  // strip --strip-all copy
  std::string other;     // the same source, another build id
};
StackFixture stack_fixture();

// A function of `nm -S --defined-only FILE`: start, size, name, global (T) or local (t).
struct NmFunction {
  uint64_t start = 0, size = 0;
  std::string name;
  bool global = false;
};
std::vector<NmFunction> nm_functions(const std::string& file);
// The function holding `addr` (an ELF virtual address), or null.
const NmFunction* nm_find(const std::vector<NmFunction>& fns, uint64_t addr);
// The build id `readelf -n FILE` prints ("" when none).
std::string readelf_build_id(const std::string& file);

// A trace read line by line with nlohmann: header, events (in seq order), module records,
// trailer; events and records carry "_line", their line number in the file.
struct StackTrace {
  nlohmann::json header;
  std::vector<nlohmann::json> events;
  std::vector<nlohmann::json> modules;
  std::map<uint64_t, nlohmann::json> stack_records;  // v3, with "_line"; events get their frames
  nlohmann::json trailer;
  std::vector<std::string> bad_lines;
};
StackTrace load_stack_trace(const std::string& path);

// What stack_client printed: its API calls and the device calls the library reported.
struct ClientOutput {
  std::vector<nlohmann::json> api_calls;     // {"api","pid","tid","device_calls"}
  std::vector<nlohmann::json> device_calls;  // {"device_call":{…},"api","in_signal_handler"}
};
ClientOutput parse_client_output(const std::string& out);

// Records `stack_client LIB CTL full` with `cudatool trace --mode MODE` (plus `extra` options)
// into `trace`; returns the client's stdout (fails the test on a bad exit status).
std::string record_client(const std::string& mode, const std::string& lib,
                          const std::string& devdir, const std::string& trace,
                          const std::vector<std::string>& extra = {});

// Pairs the library's reported device calls with the trace's ioctl events: per (pid, tid), in
// order. Returns seq → index into device_calls; a message for each one left without a partner.
std::map<uint64_t, size_t> pair_device_calls(const ClientOutput& printed, const StackTrace& t,
                                             std::vector<std::string>& problems);

// `cudatool decode TRACE --json --stacks --api-lib 'libstackfix*' [extra]`: the event objects by
// seq, and the summary.
struct DecodedStacks {
  std::map<uint64_t, nlohmann::json> events;
  nlohmann::json summary;
  std::string err;
  int status = -1;
};
DecodedStacks decode_stacks(const std::string& trace, const std::vector<std::string>& extra = {});

}  // namespace cudatool::test
