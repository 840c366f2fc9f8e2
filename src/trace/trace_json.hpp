// One line of a trace file <-> Header / Event / Trailer (docs/trace-format.md).
//
// The writer side appends compact JSON (one line, with its '\n'); the reader side parses one line
// with the pull reader (no tree), keeps members it does not know as raw JSON (ExtraField), and
// reuses the storage of the Event it fills so that reading a trace allocates little.
#pragma once

#include <string>
#include <string_view>

#include "base/error.hpp"
#include "trace/event.hpp"

namespace cudatool::trace {

void append_header_line(std::string& out, const Header& h);
// stack_ref > 0: the event's stack is written as "stack_ref":stack_ref (v3; its record written
// before), not inline.
void append_event_line(std::string& out, const Event& e, uint64_t stack_ref = 0);
void append_trailer_line(std::string& out, const Trailer& t);
void append_module_line(std::string& out, const Module& m);
void append_stack_record_line(std::string& out, const StackRecord& s);
void append_function_table_line(std::string& out, const FunctionTable& t);  // v4
void append_function_block_line(std::string& out, const FunctionBlock& b);  // v4

enum class LineKind {
  kHeader,
  kEvent,
  kTrailer,
  kModule,
  kStackRecord,
  kFunctionTable,
  kFunctionBlock
};

// What a line is, from its first member: {"cudatool_trace": …} header, {"end": …} trailer,
// {"module": …} module record (v2), {"stack_record": …} stack record (v3), {"fn_table": …} and
// {"fn_block": …} function records (v4), anything else an event.
// Does not validate the rest.
LineKind classify_line(std::string_view line);
// How every event line the recorders write starts.
inline constexpr std::string_view kEventLineStart = "{\"seq\":";

// Parse one line (without its '\n'). `offset` is the file offset of the line's first byte, used
// in errors ("offset 1234: …" names the byte where the line went wrong).
Status parse_header_line(std::string_view line, uint64_t offset, Header& out);
Status parse_event_line(std::string_view line, uint64_t offset, Event& out);
// The event line at the start of `text` (more lines may follow), when it parses and ends in a
// '\n': its length (without the '\n') in `length`. False otherwise, with no report: the caller
// then finds the line's end and calls parse_event_line, which says what is wrong. For the trace
// reader, which so reads each byte of a good line once instead of first scanning for its end.
bool parse_first_event_line(std::string_view text, uint64_t offset, Event& out, size_t& length);
Status parse_trailer_line(std::string_view line, uint64_t offset, Trailer& out);
Status parse_module_line(std::string_view line, uint64_t offset, Module& out);
Status parse_stack_record_line(std::string_view line, uint64_t offset, StackRecord& out);
Status parse_function_table_line(std::string_view line, uint64_t offset, FunctionTable& out);
Status parse_function_block_line(std::string_view line, uint64_t offset, FunctionBlock& out);

// Whether `key` is a member parse_event_line reads into an Event field (the rest it keeps as
// ExtraField). Whoever fills Event::extra from outside (import) must keep such keys out of it, or
// the line written would not read back as the same event.
bool is_event_member(std::string_view key);

}  // namespace cudatool::trace
