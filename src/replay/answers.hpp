// The answer table of a replay (replay_abi.h): what the replay shim answers a program's device
// calls with, built from a recorded trace by the same normalisation `ab` uses (thread roles, call
// identity, handles), with the injections of --inject applied. docs/replay.md explains it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ab/normalize.hpp"
#include "base/error.hpp"
#include "replay/inject.hpp"
#include "rm/tables.hpp"
#include "trace/event.hpp"

namespace cudatool::replay {

// A recorded trace, read whole and normalised.
struct Recording {
  std::string path;
  trace::Header header;
  std::optional<trace::Trailer> trailer;
  std::vector<trace::Event> events;
  std::unique_ptr<ab::NormalizedTrace> norm;  // events[i] ↔ norm->events[i]
  const rm::Tables* tables = nullptr;
  Diagnostics diagnostics;
  bool truncated = false;
};

// Errors: unreadable, not a trace, newer format, no device calls at all.
Result<Recording> load_recording(const std::string& path);
Result<Recording> recording_from_memory(std::string bytes, std::string name);

// A device node the shim answers stat for (recorded, or documented defaults).
struct DeviceNode {
  std::string path;
  uint32_t mode = 0;  // st_mode
  uint64_t rdev = 0;
};

// Another recording's answer to one recorded call (bisect: BAD's answer to GOOD's call).
struct AnswerOverride {
  uint32_t trace_index = 0;            // in the recording the table is built from
  const trace::Event* with = nullptr;  // the same call in the other recording
  std::string label;                   // for the report ("BAD's answer (seq 274)")
};

struct TableOptions {
  std::vector<Injection> injections;
  std::vector<AnswerOverride> overrides;
  std::string root;       // the private environment tree
  std::string env_globs;  // paths redirected into it
  std::vector<DeviceNode> devices;
};

// One recorded call of the table, for the report (describe_event(rec, trace_index) says what it
// is: decoded when a report needs it, not for every call of every table a bisection builds).
struct TableCall {
  uint32_t trace_index = 0;  // in Recording::events
  uint64_t seq = 0;
  uint32_t role = 0;
  bool injected = false;
  bool synthesized = false;
};

struct AnswerTable {
  std::vector<uint8_t> bytes;      // the file
  std::vector<TableCall> calls;    // by table index
  std::vector<std::string> paths;  // device paths by index
  uint32_t roles = 0;
  // Outputs the recording lacks that the table supplies, one line each ("seq 12
  // NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION: build-version strings from the header's driver
  // version 580.159.04 (the trace holds no buffers behind its pointers)").
  std::vector<std::string> synthesized;
  // What the recording could not give that the replay cannot make up (alloc parameters of
  // paramsSize 0, buffers behind pointers), one line per kind with a count.
  std::vector<std::string> gaps;
  // The injections as applied: "seq 44 NV2080_CTRL_CMD_FB_GET_INFO_V2: status NV_OK →
  // NV_ERR_NOT_SUPPORTED".
  std::vector<std::string> injected;
};

Result<AnswerTable> build_answer_table(const Recording& rec, const TableOptions& options);

// A call as the report shows it: the decoded one-line description, and the call's name, which
// groups like calls ("close", "NV_ESC_RM_CONTROL NV2080_CTRL_CMD_MC_SERVICE_INTERRUPTS",
// "NV_ESC_RM_ALLOC NV01_MEMORY_SYSTEM").
struct CallText {
  std::string line;
  std::string name;
};
CallText describe(const Recording& rec, const trace::Event& ev);
// describe(rec, rec.events[trace_index]).line; "?" for an index out of range.
std::string describe_event(const Recording& rec, uint32_t trace_index);

}  // namespace cudatool::replay
