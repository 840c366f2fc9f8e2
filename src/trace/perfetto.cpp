// Trace-event JSON of a decoded trace (perfetto.hpp). Reference: the "Trace Event Format"
// document (Chromium): complete events "X" with ts/dur in µs, metadata events "M" named
// process_name / thread_name with args.name.
#include "trace/perfetto.hpp"

#include <fmt/format.h>

#include <cstring>

#include "base/json_writer.hpp"

namespace cudatool::trace {

using rm::ClassEntry;
using rm::CtrlEntry;
using rm::device_name;
using rm::Tables;
namespace {

// µs with three decimals: exact for ns.
void append_us(std::string& out, uint64_t ns) {
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

}  // namespace

PerfettoWriter::PerfettoWriter(const Tables& tables, const Header& header, std::string_view source)
    : t_(tables), h_(header), source_(source) {}

void PerfettoWriter::begin(std::string& out) {
  out += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
}

void PerfettoWriter::append_name(std::string& out, const Tables& t, const Event& ev,
                                 const Decoded& d) {
  if (d.call.empty()) {
    fmt::format_to(std::back_inserter(out), "ioctl {:#x}?", ev.request);
    return;
  }
  out += d.call;
  if (d.cmd) {
    out += ' ';
    if (const CtrlEntry* c = t.find_control(*d.cmd)) {
      out += c->name;
    } else {
      fmt::format_to(std::back_inserter(out), "{:#010x}?", *d.cmd);
    }
  } else if (d.h_class && d.call != "NV_ESC_RM_FREE") {
    out += ' ';
    if (const ClassEntry* c = t.find_class(*d.h_class)) {
      out += c->name;
    } else {
      fmt::format_to(std::back_inserter(out), "{:#x}?", *d.h_class);
    }
  } else if (ev.sys != Sys::kIoctl && !ev.path.empty()) {
    out += ' ';
    out += ev.path;
  }
}

void PerfettoWriter::metadata(std::string& out, const Event& ev) {
  auto emit = [&](std::string_view name, int32_t tid, const std::string& label) {
    if (!first_) out += ',';
    first_ = false;
    JsonWriter w(out, false);
    w.begin_object().kv("ph", "M").kv("name", name).kv("pid", ev.pid).kv("tid", tid);
    w.key("args").begin_object().kv("name", label).end_object().end_object();
  };
  if (pids_.insert(ev.pid).second) {
    std::string label;
    if (ev.pid == 0) {
      label = "process (pid not recorded: " + source_ + ")";
    } else if (pids_.size() == 1 && !h_.argv.empty()) {
      label = fmt::format("{} (pid {})", h_.argv.front(), ev.pid);
    } else {
      label = fmt::format("pid {}", ev.pid);
    }
    emit("process_name", ev.pid, label);
  }
  if (threads_.insert({ev.pid, ev.tid}).second) {
    emit("thread_name", ev.tid, fmt::format("tid {}", ev.tid));
  }
}

void PerfettoWriter::add(std::string& out, const Event& ev, const Decoded& d,
                         std::string_view api) {
  metadata(out, ev);
  if (!first_) out += ',';
  first_ = false;
  out += "{\"ph\":\"X\",\"name\":";
  scratch_.clear();
  append_name(scratch_, t_, ev, d);
  json_escape_to(out, scratch_);
  out += ",\"cat\":\"";
  if (is_environment(ev.sys)) {
    out += "environment";
  } else if (ev.sys == Sys::kExecve || ev.sys == Sys::kFork || ev.sys == Sys::kExit) {
    out += "process";
  } else {
    out += device_name(d.device);
  }
  out += "\",\"ts\":";
  append_us(out, ev.t_ns);
  out += ",\"dur\":";
  append_us(out, ev.has_duration ? ev.dur_ns : 0);
  fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"tid\":{},\"args\":", ev.pid, ev.tid);
  args_.clear();
  JsonWriter& w = args_writer_;
  w.begin_object().kv("seq", ev.seq);
  if (!ev.path.empty()) w.kv("path", ev.path);
  if (ev.sys == Sys::kIoctl) w.kv_hex("request", ev.request);
  w.kv("ret", ev.ret);
  if (ev.err != 0) {
    const char* n = strerrorname_np(ev.err);
    w.kv("errno", n != nullptr ? std::string_view(n) : std::string_view("?"));
  }
  if (d.status) {
    w.kv_hex("status", *d.status);
    if (!d.status_name.empty()) w.kv("status_name", d.status_name);
  }
  if (d.h_client) w.kv_hex("hClient", *d.h_client);
  if (d.h_parent) w.kv_hex("hParent", *d.h_parent);
  if (d.h_object) w.kv_hex("hObject", *d.h_object);
  if (!ev.has_duration) w.kv("duration", "not recorded");
  if (!api.empty()) w.kv("api", api);
  scratch_.clear();
  append_line(scratch_, d);
  w.kv("decoded", scratch_);
  if (!d.notes.empty()) {
    w.key("notes").begin_array();
    for (const std::string& n : d.notes) w.value(n);
    w.end_array();
  }
  w.end_object();
  out += args_;
  out += '}';
}

void PerfettoWriter::add_function(std::string& out, int32_t pid, int32_t tid, std::string_view name,
                                  const FunctionCall& c) {
  Event where;
  where.pid = pid;
  where.tid = tid;
  metadata(out, where);
  if (!first_) out += ',';
  first_ = false;
  out += "{\"ph\":\"X\",\"name\":";
  json_escape_to(out, name);
  out += ",\"cat\":\"function\",\"ts\":";
  append_us(out, c.t_enter);
  out += ",\"dur\":";
  append_us(out, c.t_exit >= c.t_enter ? c.t_exit - c.t_enter : 0);
  fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"tid\":{},\"args\":", pid, tid);
  args_.clear();
  JsonWriter& w = args_writer_;
  w.begin_object().kv("end", call_end_name(c.end));
  if (c.end == FunctionCall::End::kReturned) w.kv_hex("ret", c.ret);
  w.kv("depth", c.depth);
  if (c.tail) w.kv("tail_call", true);
  w.end_object();
  out += args_;
  out += '}';
}

void PerfettoWriter::finish(std::string& out, uint64_t events, uint64_t bad_lines) {
  out += "],\"metadata\":";
  JsonWriter w(out, false);
  w.begin_object().kv("exporter", "cudatool export --format perfetto").kv("source", source_);
  w.kv("events", events).kv("bad_lines", bad_lines).kv("decoder_branch", t_.info().id);
  w.key("driver_version");
  if (h_.driver_version) {
    w.value(*h_.driver_version);
  } else {
    w.null();
  }
  w.kv("mode", h_.mode).end_object();
  out += "}\n";
}

}  // namespace cudatool::trace
