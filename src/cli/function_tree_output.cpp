#include "cli/function_tree_output.hpp"

#include <fmt/format.h>

#include <map>
#include <vector>

#include "analysis/patch_plan.hpp"
#include "base/json_writer.hpp"
#include "cli/common.hpp"
#include "cli/function_summary_output.hpp"
#include "trace/function_calls.hpp"
#include "trace/function_namer.hpp"

namespace cudatool::cli {
namespace {

using trace::FunctionCall;
using trace::ThreadCalls;

struct DeviceLine {
  trace::Event ev;
  std::string line;  // decoded, as decode prints the call
};

// A return value as people read it: small numbers (statuses, counts, fds) in decimal, the rest
// (pointers, handles) in hex.
std::string ret_text(const FunctionCall& c) {
  if (c.end != FunctionCall::End::kReturned) return fmt::format("({})", call_end_name(c.end));
  auto v = static_cast<int64_t>(c.ret);
  if (v >= -4096 && v <= 0xffff) return std::to_string(v);
  auto low = static_cast<int32_t>(c.ret);  // an int in eax: the upper half is left over
  if ((c.ret >> 32) != 0 && low >= -4096 && low <= 0xffff) {
    return fmt::format("{:#x} (eax {})", c.ret, low);
  }
  return fmt::format("{:#x}", c.ret);
}

std::string device_text(const DeviceLine& d) {
  std::string s = fmt::format("#{} {}", d.ev.seq, d.line);
  if (d.ev.err != 0) {
    const char* n = strerrorname_np(d.ev.err);
    s += fmt::format(" = {} {}", d.ev.ret, n != nullptr ? n : std::to_string(d.ev.err));
  } else if (d.ev.sys != trace::Sys::kMmap) {
    s += fmt::format(" = {}", d.ev.ret);
  }
  return s;
}

// Which calls of a thread are shown: those a glob selects, with the path down to them and their
// subtrees, under an outermost call the filter keeps.
std::vector<bool> shown_calls(const ThreadCalls& t, const std::vector<std::string>& names,
                              const std::string& globs, const std::vector<bool>& root_kept) {
  const size_t n = t.calls.size();
  std::vector<size_t> root(n);
  std::vector<bool> in(n, false), below(n, false), out(n, false);
  const FunctionGlobs match(globs);
  for (size_t i = 0; i < n; ++i) {
    const int64_t p = t.calls[i].parent;
    root[i] = p < 0 ? i : root[static_cast<size_t>(p)];
    in[i] = match.match(names[i]) || (p >= 0 && in[static_cast<size_t>(p)]);
  }
  for (size_t i = n; i-- > 0;) {
    if ((in[i] || below[i]) && t.calls[i].parent >= 0) below[t.calls[i].parent] = true;
  }
  for (size_t i = 0; i < n; ++i) out[i] = (in[i] || below[i]) && root_kept[root[i]];
  return out;
}

class TreePrinter {
 public:
  TreePrinter(const FunctionTreeOptions& o, std::string& out) : o_(o), out_(out), w_(out, false) {}

  void thread(const ThreadCalls& t, trace::FunctionNamer& namer,
              const std::map<uint64_t, DeviceLine>& devices, const trace::EventFilter& filter) {
    std::vector<std::string> names(t.calls.size());
    for (size_t i = 0; i < t.calls.size(); ++i)
      names[i] = namer.name(t.table_ptr, t.calls[i].function);
    std::vector<size_t> root(t.calls.size());
    for (size_t i = 0; i < t.calls.size(); ++i) {
      const int64_t p = t.calls[i].parent;
      root[i] = p < 0 ? i : root[static_cast<size_t>(p)];
    }
    // An outermost call is kept when a device call inside it matches --filter (api=: its name).
    std::vector<bool> root_kept(t.calls.size(), filter.empty());
    std::vector<bool> device_kept(t.devices.size(), true);
    if (!filter.empty()) {
      for (size_t k = 0; k < t.devices.size(); ++k) {
        const auto& m = t.devices[k];
        auto d = devices.find(m.seq);
        if (d == devices.end()) continue;
        std::string_view api = m.call >= 0 ? std::string_view(names[root[m.call]]) : "";
        device_kept[k] = filter.matches(d->second.ev, decoded_.at(m.seq), api);
        if (device_kept[k] && m.call >= 0) root_kept[root[m.call]] = true;
      }
    }
    std::vector<bool> shown = shown_calls(t, names, o_.globs, root_kept);
    begin_thread(t);
    // Calls and device marks in the order they happened (a mark after the calls entered before
    // it, at the same time: before them).
    size_t k = 0;
    for (size_t i = 0; i <= t.calls.size(); ++i) {
      const uint64_t t_enter = i < t.calls.size() ? t.calls[i].t_enter : ~uint64_t{0};
      for (; k < t.devices.size() && t.devices[k].t_ns < t_enter; ++k) {
        const auto& m = t.devices[k];
        const bool visible =
            m.call >= 0 ? shown[m.call] && device_kept[k] : o_.globs == "*" && filter.empty();
        if (!visible) continue;
        auto d = devices.find(m.seq);
        uint32_t depth = m.call >= 0 ? t.calls[m.call].depth + 1 : 0;
        device(d == devices.end() ? nullptr : &d->second, m.seq, depth);
      }
      if (i < t.calls.size() && shown[i]) call(t.calls[i], names[i]);
    }
  }

  void set_decoded(std::map<uint64_t, trace::Decoded>&& d) { decoded_ = std::move(d); }
  uint64_t calls_shown = 0, devices_shown = 0;

 private:
  void begin_thread(const ThreadCalls& t) {
    if (o_.json) {
      w_.begin_object().kv("thread", t.tid).kv("pid", t.pid).kv("calls", t.calls.size());
      w_.kv("max_depth", t.max_depth).kv("lost", t.lost);
      w_.key("notes").begin_array();
      for (const auto& n : t.notes) w_.value(n);
      w_.end_array().end_object();
      w_.finish();
      return;
    }
    out_ += fmt::format("# pid {} tid {}: {} calls, deepest {}{}\n", t.pid, t.tid, t.calls.size(),
                        t.max_depth, t.lost ? fmt::format(", {} not recorded", t.lost) : "");
    for (const auto& n : t.notes) out_ += fmt::format("#   {}\n", n);
  }
  void call(const FunctionCall& c, const std::string& name) {
    ++calls_shown;
    if (o_.json) {
      w_.begin_object().kv("depth", c.depth).kv("function", name).kv("end", call_end_name(c.end));
      if (c.end == FunctionCall::End::kReturned) {
        w_.kv("ret", fmt::format("{:#x}", c.ret));
      } else {
        w_.key("ret").null();
      }
      w_.kv("t_ns", c.t_enter).kv("dur_ns", c.t_exit - c.t_enter).kv("tail", c.tail);
      w_.end_object();
      w_.finish();
      return;
    }
    out_.append(2 * c.depth, ' ');
    out_ += fmt::format("{} = {}{}\n", name, ret_text(c), c.tail ? " (tail call)" : "");
  }
  void device(const DeviceLine* d, uint64_t seq, uint32_t depth) {
    ++devices_shown;
    if (o_.json) {
      w_.begin_object().kv("depth", depth).kv("seq", seq);
      if (d != nullptr) {
        w_.kv("device_call", d->line).kv("ret", d->ev.ret).kv("errno", d->ev.err);
      } else {
        w_.key("device_call").null();
      }
      w_.end_object();
      w_.finish();
      return;
    }
    out_.append(2 * depth, ' ');
    out_ += d != nullptr ? device_text(*d) : fmt::format("#{} (no such event in the trace)", seq);
    out_ += '\n';
  }

  const FunctionTreeOptions& o_;
  std::string& out_;
  JsonWriter w_;
  std::map<uint64_t, trace::Decoded> decoded_;
};

}  // namespace

int print_function_trees(TraceInput& in, const trace::EventFilter& filter,
                         const FunctionTreeOptions& o) {
  trace::TraceReader& r = *in.reader;
  DiagnosticStream diag;
  std::map<uint64_t, DeviceLine> devices;
  std::map<uint64_t, trace::Decoded> decoded;
  trace::Event ev;
  while (r.next(ev)) {
    trace::Decoded d = trace::decode_event(*in.tables, ev);
    devices[ev.seq] = DeviceLine{ev, trace::format_line(d)};
    decoded.emplace(ev.seq, std::move(d));
    if (r.diagnostics().count() != 0) diag.flush(r.diagnostics());
  }
  diag.flush(r.diagnostics());
  OutBuffer out;
  if (o.json) {
    JsonWriter w(out.str(), false);
    w.begin_object().kv("schema", "cudatool.decode-functions/1").kv("trace", in.path);
    w.kv("functions", o.globs).kv_or_null("filter", o.filter).end_object();
    w.finish();
  } else {
    out.str() += fmt::format("# {}: function calls (--functions={}{})\n", in.path, o.globs,
                             o.filter.empty() ? "" : " --filter " + o.filter);
  }
  trace::FunctionNamer namer(o.lib);
  auto threads = trace::build_function_calls(r.function_tables(), r.function_blocks());
  TreePrinter p(o, out.str());
  p.set_decoded(std::move(decoded));
  for (const auto& t : threads) {
    p.thread(t, namer, devices, filter);
    out.maybe_flush();
  }
  if (o.json) {
    JsonWriter w(out.str(), false);
    w.begin_object().key("summary").begin_object();
    w.kv("threads", threads.size()).kv("calls_shown", p.calls_shown);
    w.kv("device_calls_shown", p.devices_shown);
    w.key("notes").begin_array();
    for (const auto& n : namer.notes()) w.value(n);
    w.end_array();
    write_function_summary_json(w, r);
    w.end_object().end_object();
    w.finish();
  } else {
    for (const auto& n : namer.notes()) out.str() += "# " + n + "\n";
    if (threads.empty()) {
      out.str() += "# no function events: record with trace --functions or replay --functions\n";
    }
    out.str() +=
        fmt::format("# {} calls and {} device calls shown\n", p.calls_shown, p.devices_shown);
    out.str() += function_summary_text(r, "# ");
  }
  out.flush();
  return r.diagnostics().count() == 0 ? kExitOk : kExitBadInput;
}

}  // namespace cudatool::cli
