#include "record/crash.hpp"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include <fmt/format.h>
#include <fstream>
#include <string>

#include "record/ptrace_stacks.hpp"
#include "record/recorder.hpp"
#include "rm/tables.hpp"
#include "trace/decode.hpp"
#include "trace/function_calls.hpp"
#include "trace/function_namer.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::record {
namespace {

// One line of /proc/ID/status ("SigCgt:\t0000000000004a02"), its value after the tab.
std::string status_field(int id, std::string_view field) {
  std::ifstream f(fmt::format("/proc/{}/status", id));
  std::string line;
  while (std::getline(f, line)) {
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':') {
      size_t v = line.find_first_not_of(" \t", field.size() + 1);
      return v == std::string::npos ? std::string() : line.substr(v);
    }
  }
  return {};
}

// Whether process `pid` has a handler for `sig`: bit sig-1 of SigCgt (proc(5)).
bool has_handler(int pid, int sig) {
  std::string cgt = status_field(pid, "SigCgt");
  if (cgt.empty() || sig < 1 || sig > 64) return false;
  uint64_t mask = std::stoull(cgt, nullptr, 16);
  return ((mask >> (sig - 1)) & 1) != 0;
}

std::string file_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

// Faults that set si_addr (sigaction(2)): the address of the fault or of the instruction.
bool has_fault_addr(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

}  // namespace

bool is_crash_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT;
}

std::string signal_name(int sig) {
  if (const char* n = sigabbrev_np(sig); n != nullptr) return fmt::format("SIG{}", n);
  return fmt::format("signal {}", sig);
}

std::string_view si_code_name(int sig, int code) {
  switch (code) {
    case SI_USER:
      return "SI_USER";
    case SI_TKILL:
      return "SI_TKILL";
    case SI_QUEUE:
      return "SI_QUEUE";
    case SI_KERNEL:
      return "SI_KERNEL";
    default:
      break;
  }
  if (sig == SIGSEGV) {
    if (code == SEGV_MAPERR) return "SEGV_MAPERR";
    if (code == SEGV_ACCERR) return "SEGV_ACCERR";
  } else if (sig == SIGBUS) {
    if (code == BUS_ADRALN) return "BUS_ADRALN";
    if (code == BUS_ADRERR) return "BUS_ADRERR";
    if (code == BUS_OBJERR) return "BUS_OBJERR";
  } else if (sig == SIGFPE) {
    if (code == FPE_INTDIV) return "FPE_INTDIV";
    if (code == FPE_INTOVF) return "FPE_INTOVF";
  } else if (sig == SIGILL) {
    if (code == ILL_ILLOPC) return "ILL_ILLOPC";
    if (code == ILL_ILLOPN) return "ILL_ILLOPN";
    if (code == ILL_PRVOPC) return "ILL_PRVOPC";
  }
  return "";
}

std::string CrashFrame::where() const {
  if (module.empty()) return fmt::format("0x{:x}", addr);
  return fmt::format("{}+0x{:x}", module, offset);
}

std::string CrashFrame::name() const {
  if (function.empty()) return where();
  return fmt::format("{}+0x{:x}", function, function_offset);
}

std::string CrashReport::function() const {
  if (!frames.empty()) return frames[0].function.empty() ? frames[0].where() : frames[0].function;
  return fmt::format("0x{:x}", pc);
}

std::string CrashReport::signature() const {
  return fmt::format("{} in {}", signal_name(signal), function());
}

CrashReport capture_crash(int tid, int sig) {
  CrashReport c;
  c.signal = sig;
  c.tid = c.pid = tid;
  siginfo_t si{};
  if (ptrace(PTRACE_GETSIGINFO, tid, nullptr, &si) == 0) {
    c.si_code = si.si_code;
    c.sent = si.si_code <= 0;
    if (c.sent) c.sender_pid = si.si_pid;
    if (!c.sent && has_fault_addr(sig)) c.fault_addr = reinterpret_cast<uint64_t>(si.si_addr);
  }
  user_regs_struct regs{};
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) == 0) {
    c.pc = regs.rip;
    c.sp = regs.rsp;
  }
  if (std::string tgid = status_field(tid, "Tgid"); !tgid.empty()) c.pid = std::stoi(tgid);
  c.thread_name = status_field(tid, "Name");
  c.handler = has_handler(c.pid, sig);
  // The unwinder of ptrace mode's call stacks, on a session of its own.
  ProcessStacks ps;
  StackRecorder sr;
  trace::Event ev;
  sr.capture(ps, c.pid, tid, ev, c.modules);
  c.stack = std::move(ev.stack);
  c.stack_error = std::move(ev.stack_error);
  if (c.stack.empty() || c.stack[0] != c.pc) c.stack.insert(c.stack.begin(), c.pc);
  return c;
}

void resolve_crash(CrashReport& c, trace::ResolverOptions options) {
  trace::StackResolver res(std::move(options));
  trace::Event ev;
  ev.pid = ev.tid = c.pid;
  ev.stack = c.stack;
  // The resolver looks a return address up at addr - 1 (the call before it); the pc is the
  // faulting instruction itself, so it is handed over one byte on.
  if (!ev.stack.empty()) ++ev.stack[0];
  for (trace::Module& m : c.modules) m.pid = c.pid;
  res.follow(c.modules, ev);
  std::vector<trace::ResolvedFrame> frames;
  res.frames(ev, frames);
  c.frames.clear();
  for (size_t i = 0; i < frames.size(); ++i) {
    const trace::ResolvedFrame& f = frames[i];
    CrashFrame cf;
    uint64_t back = i == 0 ? 1 : 0;
    cf.addr = f.addr - back;
    if (f.module != nullptr) {
      cf.module = file_name(f.module->path);
      cf.offset = f.offset - back;
    }
    if (!f.function.empty()) {
      cf.function = std::string(f.function);
      cf.function_offset = f.function_offset - back;
    }
    c.frames.push_back(std::move(cf));
  }
  if (auto api = res.api_of(ev)) c.api = std::string(*api);
  c.libraries_unnamed.clear();
  for (const auto& lib : res.libraries()) {
    if (!lib->named()) c.libraries_unnamed.push_back(fmt::format("{}: {}", lib->path, lib->why));
  }
}

namespace {

// The reader has been read to its end (its function blocks are all in).
void functions_since(CrashReport& c, const trace::TraceReader& r) {
  if (r.function_blocks().empty()) return;
  c.functions_recorded = true;
  c.functions_since.clear();
  auto threads = trace::build_function_calls(r.function_tables(), r.function_blocks());
  for (const trace::ThreadCalls& t : threads) {
    if (t.tid != c.tid) continue;
    uint64_t from = 0;
    for (const trace::DeviceMark& d : t.devices) {
      if (c.last_call_seq && d.seq == *c.last_call_seq) from = d.t_ns;
    }
    trace::FunctionNamer namer;
    std::vector<const trace::FunctionCall*> since;
    for (const trace::FunctionCall& call : t.calls) {
      if (call.t_enter >= from) since.push_back(&call);
    }
    // The API call in progress, where the stack did not say: the thread's outermost call still
    // open when the signal came.
    for (const trace::FunctionCall& call : t.calls) {
      if (!c.api.empty()) break;
      if (call.parent < 0 && call.end != trace::FunctionCall::End::kReturned) {
        c.api = namer.name(t.table_ptr, call.function);
      }
    }
    size_t skip = since.size() > kMaxFunctionsSince ? since.size() - kMaxFunctionsSince : 0;
    if (skip > 0) c.functions_since.push_back(fmt::format("… {} calls before these", skip));
    for (size_t i = skip; i < since.size(); ++i) {
      const trace::FunctionCall& call = *since[i];
      std::string name = namer.name(t.table_ptr, call.function);
      c.functions_since.push_back(
          call.end == trace::FunctionCall::End::kReturned
              ? fmt::format("{} = {}", name, static_cast<int64_t>(call.ret))
              : fmt::format("{} ({})", name, trace::call_end_name(call.end)));
    }
  }
}

}  // namespace

void set_functions_since(CrashReport& c, const std::string& path) {
  auto r = trace::TraceReader::open(path);
  if (!r) return;
  trace::Event ev;
  while ((*r)->next(ev)) {
  }
  functions_since(c, **r);
}

void set_last_call(CrashReport& c, const std::string& path) {
  auto r = trace::TraceReader::open(path);
  if (!r) return;
  const rm::Tables& tables = rm::tables_for_driver((*r)->header().driver_version.value_or(""));
  trace::Event ev, last;
  bool found = false;
  while ((*r)->next(ev)) {
    if (ev.tid != c.tid || trace::is_environment(ev.sys) || ev.sys == trace::Sys::kExit ||
        ev.sys == trace::Sys::kExecve || ev.sys == trace::Sys::kFork ||
        ev.sys == trace::Sys::kUnknown) {
      continue;
    }
    last = ev;
    found = true;
  }
  if (found) {
    c.last_call_seq = last.seq;
    c.last_call = trace::format_line(trace::decode_event(tables, last));
  }
  functions_since(c, **r);
}

trace::CrashSummary crash_summary(const CrashReport& c) {
  trace::CrashSummary s;
  s.signal = c.signal;
  s.function = c.function();
  s.where = c.frames.empty() ? fmt::format("0x{:x}", c.pc) : c.frames[0].where();
  s.fault_addr = c.fault_addr;
  s.tid = c.tid;
  s.api = c.api;
  return s;
}

void keep_crash(std::optional<CrashReport> crash, RecordSummary& sum) {
  if (!crash || !crash->fatal()) return;
  resolve_crash(*crash);
  sum.trailer.crash = crash_summary(*crash);
  sum.crash = std::move(crash);
}

}  // namespace cudatool::record
