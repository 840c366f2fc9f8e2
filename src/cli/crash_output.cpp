#include "cli/crash_output.hpp"

#include <fmt/format.h>

#include "cli/stack_output.hpp"

namespace cudatool::cli {
namespace {

std::string how_it_ended(int status) {
  if (status < 0) return "was killed by " + record::signal_name(-status);
  return fmt::format("exited with status {}", status);
}

std::string signal_line(const record::CrashReport& c) {
  std::string code(record::si_code_name(c.signal, c.si_code));
  std::string s = record::signal_name(c.signal);
  if (!code.empty()) s += " (" + code + ")";
  if (c.fault_addr) s += fmt::format(" at address 0x{:x}", *c.fault_addr);
  if (c.sent) s += fmt::format(", sent by process {}", c.sender_pid);
  return fmt::format("{} in thread {} ({}) of process {}", s, c.tid, c.thread_name, c.pid);
}

void frame_json(JsonWriter& w, const record::CrashFrame& f) {
  w.begin_object().kv_hex("addr", f.addr).kv_or_null("module", f.module);
  if (f.module.empty()) {
    w.key("offset").null();
  } else {
    w.kv_hex("offset", f.offset);
  }
  write_function_json(w, f.function, f.function_offset);
  w.end_object();
}

}  // namespace

std::string crash_text(const record::CrashReport& c, std::string_view device_call) {
  std::string out = "crash: " + signal_line(c) + "\n";
  std::string pc = c.frames.empty() ? fmt::format("0x{:x}", c.pc) : c.frames[0].where();
  std::string fn =
      c.frames.empty() || c.frames[0].function.empty() ? "(no function known)" : c.frames[0].name();
  out += fmt::format("  pc {} in {}\n", pc, fn);
  out += fmt::format("  API call in progress: {}\n", c.api.empty() ? "none known" : c.api);
  if (c.last_call_seq) {
    out += fmt::format("  last device call {} on thread {}: seq {} {}\n", device_call, c.tid,
                       *c.last_call_seq, c.last_call);
  } else {
    out += fmt::format("  last device call {} on thread {}: none\n", device_call, c.tid);
  }
  if (!c.functions_recorded) {
    out += "  functions entered since: not known (the run has no function events)\n";
  } else {
    out += fmt::format("  functions entered since, on thread {}: {}\n", c.tid,
                       c.functions_since.empty() ? "none" : "");
    for (const auto& f : c.functions_since) out += "    " + f + "\n";
  }
  if (c.handler) {
    out += fmt::format(
        "  the program's own {} handler ran after this was read (libcuda installs some); the "
        "program then {}\n",
        record::signal_name(c.signal), how_it_ended(c.exit_status));
  }
  out += "  backtrace:\n";
  for (size_t i = 0; i < c.frames.size(); ++i) {
    const record::CrashFrame& f = c.frames[i];
    out +=
        fmt::format("    #{:<2} {}{}\n", i, f.where(), f.function.empty() ? "" : "  " + f.name());
  }
  if (!c.stack_error.empty()) out += "    (the unwinding stopped: " + c.stack_error + ")\n";
  for (const auto& u : c.libraries_unnamed) out += "  no names for " + u + "\n";
  return out;
}

void write_crash_json(JsonWriter& w, const std::optional<record::CrashReport>& c,
                      std::string_view note) {
  w.kv_or_null("crash_note", note);
  w.key("crash");
  if (!c) {
    w.null();
    return;
  }
  w.begin_object().kv("signal", c->signal).kv("signal_name", record::signal_name(c->signal));
  w.kv("si_code", c->si_code)
      .kv_or_null("si_code_name", record::si_code_name(c->signal, c->si_code));
  w.kv("sent", c->sent);
  w.key("fault_addr");
  c->fault_addr ? w.hex(*c->fault_addr) : w.null();
  w.kv("pid", c->pid).kv("tid", c->tid).kv("thread_name", c->thread_name);
  w.kv_hex("pc", c->pc).kv_hex("sp", c->sp);
  w.kv("function", c->function()).kv("signature", c->signature());
  w.kv_or_null("api", c->api).kv("handler_ran", c->handler).kv("exit_status", c->exit_status);
  w.key("last_device_call");
  if (c->last_call_seq) {
    w.begin_object().kv("seq", *c->last_call_seq).kv("call", c->last_call).end_object();
  } else {
    w.null();
  }
  // null: not known (the run has no function events), [] none entered.
  w.key("functions_since_last_device_call");
  if (c->functions_recorded) {
    w.begin_array();
    for (const auto& f : c->functions_since) w.value(f);
    w.end_array();
  } else {
    w.null();
  }
  w.key("frames").begin_array();
  for (const auto& f : c->frames) frame_json(w, f);
  w.end_array();
  w.kv_or_null("stack_error", c->stack_error);
  w.key("unnamed_libraries").begin_array();
  for (const auto& u : c->libraries_unnamed) w.value(u);
  w.end_array();
  w.end_object();
}

}  // namespace cudatool::cli
