// Checking a trace against what nv_client (tests/fixtures/nvtrace) says it did. The trace is read
// with nlohmann/json, independently of cudatool's own reader.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cudatool::test {

struct TraceFile {
  nlohmann::json header;
  std::vector<nlohmann::json> events;
  nlohmann::json trailer;               // null when absent
  std::vector<nlohmann::json> modules;  // v2 module records ({"module": …} lines)
  // v3 stack records ({"stack_record": …} lines) by id. Events that name one ("stack_ref") get
  // its frames as "stack" (keeping "stack_ref"); one naming a record not read before it is a bad
  // line.
  std::map<uint64_t, nlohmann::json> stack_records;
  std::vector<std::string> bad_lines;
  uint64_t nul_padding = 0;  // trailing NUL bytes: space reserved by a writer that was killed
};

// Reads a plain JSON-lines trace with nlohmann (each line must parse).
TraceFile load_trace(const std::string& path);
// What load_trace does with a v3 line: a stack record goes into `records` (true); an event's
// "stack_ref" is replaced by the record's frames, or said wrong in `bad` (false: not a record).
// A second record of one id is a bad line.
bool take_stack_record(const nlohmann::json& j, std::map<uint64_t, nlohmann::json>& records,
                       std::vector<std::string>& bad);
void resolve_stack_ref(nlohmann::json& ev, const std::map<uint64_t, nlohmann::json>& records,
                       std::vector<std::string>& bad);
// nv_client's stdout: one object per line (lines that are not JSON objects are ignored).
std::vector<nlohmann::json> load_printed(const std::string& out);

// Why recorded event `r` is not the call nv_client printed as `e` ("" when it is).
std::string mismatch(const nlohmann::json& e, const nlohmann::json& r);

// Pairs every printed call with one recorded device event and the other way round; returns one
// message per call left without a partner (empty: the trace holds exactly the calls made).
std::vector<std::string> match_exactly(const std::vector<nlohmann::json>& printed,
                                       const std::vector<nlohmann::json>& recorded);

// nv_client prints "size":"uvm_table" for UVM arguments whose size depends on the driver branch
// (it cannot know it): sets it to the parameter size in `uvm_sizes` (request -> size, from the
// decoder's table of the branch the recording used) and cuts the printed bytes to it. Returns how
// many buffers it resolved; a request missing from `uvm_sizes` is left as it is (and then fails
// to match).
size_t resolve_uvm_table_sizes(std::vector<nlohmann::json>& printed,
                               const std::map<uint64_t, uint64_t>& uvm_sizes);

// nv_params prints "size":"class_table" (and "class") for RM allocation parameters that RM sizes
// by the class: sets the size from `class_sizes` (class -> allocation-parameter size, from the
// decoder's table of the recording's branch) and cuts the printed bytes to it. Returns how many
// buffers it resolved.
size_t resolve_class_table_sizes(std::vector<nlohmann::json>& printed,
                                 const std::map<uint64_t, uint64_t>& class_sizes);

// The fake device directory: nvidiactl and nvidia0 (8 KiB files), nvidia-uvm (a FIFO).
std::string make_fake_devices(const std::string& name);

}  // namespace cudatool::test
