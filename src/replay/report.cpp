// The report of a replay (session_parts.hpp): from the shims' log and the shared state, what was
// answered, every deviation, and — for a program that stopped making progress — where it waits.
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <dirent.h>
#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "analysis/function_names.hpp"
#include "replay/generated/gpu_methods.h"
#include "replay/session_parts.hpp"
#include "replay/trace_convert.hpp"
#include "trace/decode.hpp"

namespace cudatool::replay {
namespace {

struct MapEntry {
  uint64_t lo, hi, off;
  bool exec;
  std::string path;
};

std::vector<MapEntry> read_maps(pid_t pid) {
  std::vector<MapEntry> out;
  std::ifstream in(fmt::format("/proc/{}/maps", pid));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string range, perms, off, dev, inode, path;
    ls >> range >> perms >> off >> dev >> inode;
    std::getline(ls, path);
    path.erase(0, path.find_first_not_of(' '));
    auto dash = range.find('-');
    if (dash == std::string::npos || perms.size() < 3) continue;
    MapEntry m{};
    m.lo = std::stoull(range.substr(0, dash), nullptr, 16);
    m.hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    m.off = std::stoull(off, nullptr, 16);
    m.exec = perms[2] == 'x';
    m.path = path;
    out.push_back(m);
  }
  return out;
}

const MapEntry* map_of(const std::vector<MapEntry>& maps, uint64_t a) {
  for (const MapEntry& m : maps) {
    if (a >= m.lo && a < m.hi) return &m;
  }
  return nullptr;
}

bool is_libcuda(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  return base.rfind("libcuda.so", 0) == 0;
}

// The load base of the object mapped from `path`: its lowest mapping (file offset 0).
uint64_t load_base(const std::vector<MapEntry>& maps, const std::string& path) {
  uint64_t base = ~uint64_t{0};
  for (const MapEntry& m : maps) {
    if (m.path == path && m.lo - m.off < base) base = m.lo - m.off;
  }
  return base;
}

// Whether a mapped file is part of the plumbing a waiting program sits in, not its own code:
// the C library, the dynamic loader, the replay shim.
bool is_plumbing(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  for (const char* p : {"libc.so", "libc-", "ld-linux", "libpthread", "libcudatool_replay"}) {
    if (base.rfind(p, 0) == 0) return true;
  }
  return path.empty() || path[0] != '/';
}

// The frame to name: libcuda's when there is one, else the program's own code (the first module
// that is not plumbing). From the pc, else the innermost return address into such a module found
// on the stack (a scan: libcuda has no frame pointers; the first such word is its caller's).
void sample(pid_t tid, const std::vector<MapEntry>& maps, ThreadStop& t) {
  t.tid = tid;
  // EPERM: traced already, by this thread (the launcher's crash reports): interrupt it as is.
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0 && errno != EPERM) return;
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) return;
  int st = 0;
  if (waitpid(tid, &st, __WALL) != tid) return;
  user_regs_struct regs{};
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) return;
  t.pc = regs.rip;
  std::vector<uint64_t> words(4096);
  iovec local{words.data(), words.size() * 8};
  iovec remote{reinterpret_cast<void*>(regs.rsp), words.size() * 8};
  ssize_t n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
  std::vector<uint64_t> frames{t.pc};
  for (ssize_t i = 0; n > 0 && i < n / 8; ++i) frames.push_back(words[static_cast<size_t>(i)]);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < frames.size(); ++i) {
      const MapEntry* m = map_of(maps, frames[i]);
      if (m == nullptr || !m->exec) continue;
      bool want = pass == 0 ? is_libcuda(m->path) : !is_plumbing(m->path);
      if (!want) continue;
      t.module = m->path;
      t.offset = frames[i] - load_base(maps, m->path);
      t.from_stack = i != 0;
      return;
    }
  }
  if (const MapEntry* m = map_of(maps, t.pc)) {
    t.module = m->path;
    t.offset = t.pc - load_base(maps, m->path);
  }
}

std::string short_module(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  if (is_libcuda(path)) return "libcuda";
  return base.empty() ? "?" : base;
}

}  // namespace

std::string_view acquire_op_name(uint32_t op) {
  switch (op) {
    case RPG_NVC86F_SEM_EXECUTE_OPERATION_ACQUIRE:
      return "ACQUIRE";
    case RPG_NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ:
      return "ACQ_STRICT_GEQ";
    case RPG_NVC86F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ:
      return "ACQ_CIRC_GEQ";
    case RPG_NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND:
      return "ACQ_AND";
    case RPG_NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR:
      return "ACQ_NOR";
    default:
      return "?";
  }
}

namespace {

// What a channel's unfinished work means, in one sentence.
std::string unfinished_message(const rp_channel_state& c) {
  std::string why;
  switch (c.stop) {
    case RP_CH_ACQUIRE:
      why = fmt::format(
          "the first waits at a semaphore acquire ({}): 0x{:x} is to reach 0x{:x} and holds "
          "0x{:x} (nothing the fake GPU carried out released it)",
          acquire_op_name(c.acq_op), c.sem_va, c.want, c.value);
      break;
    case RP_CH_LAUNCH:
      why =
          "the first is a compute launch the fake GPU stopped at (--execute stop, or a QMD it "
          "cannot read)";
      break;
    case RP_CH_COMPUTE:
      why = fmt::format(
          "the first waits at a compute-class semaphore acquire (REPORT_SEMAPHORE_EXECUTE): "
          "0x{:x} is to reach 0x{:x} and holds 0x{:x}",
          c.sem_va, c.want, c.value);
      break;
    case RP_CH_UNMAPPED:
      why = "the first's pushbuffer lies in memory the replay cannot see";
      break;
    default:
      why = "not yet taken up when the run ended";
      break;
  }
  std::string launches =
      c.launches == 0
          ? ""
          : fmt::format(
                "; {} compute launch{} among them not executed (replay does not execute "
                "compute work)",
                c.launches, c.launches == 1 ? "" : "es");
  return fmt::format("channel 0x{:x} (class 0x{:x}): {} GPFIFO entr{} not carried out; {}{}",
                     c.handle, c.cls, c.pending, c.pending == 1 ? "y" : "ies", why, launches);
}

}  // namespace

void inspect_stall(pid_t pid, const Recording& rec, const rp_state& state, Stall& out) {
  uint32_t nw = std::min<uint32_t>(__atomic_load_n(&state.n_waits, __ATOMIC_ACQUIRE), RP_MAX_WAITS);
  out.waits.assign(state.waits, state.waits + nw);
  std::vector<MapEntry> maps = read_maps(pid);
  std::vector<int> tids;
  if (DIR* d = opendir(fmt::format("/proc/{}/task", pid).c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(std::atoi(e->d_name));
    }
    closedir(d);
  }
  std::sort(tids.begin(), tids.end());
  for (int tid : tids) {
    ThreadStop t;
    sample(tid, maps, t);
    out.threads.push_back(t);
  }
  // Names for the frames (the function map of the static side: symbols, unwind tables, and for
  // libcuda the dispatch names).
  std::map<std::string, std::unique_ptr<DriverImage>> images;
  for (ThreadStop& t : out.threads) {
    if (t.module.empty() || is_plumbing(t.module)) continue;
    auto& img = images[t.module];
    if (!img) {
      auto opened = DriverImage::open(t.module);
      if (!opened) continue;
      img = std::move(*opened);
      if (is_libcuda(t.module)) add_driver_table_names(*img, img->facet<FunctionMap>());
      add_symtab_names(*img, img->facet<FunctionMap>());
    }
    FunctionMap& map = img->facet<FunctionMap>();
    if (const Function* f = map.find(t.offset)) t.function = map.display_name(*f);
  }
  const ThreadStop* main = nullptr;
  for (const ThreadStop& t : out.threads) {
    bool good = !t.module.empty() && !is_plumbing(t.module);
    bool better = main == nullptr || (is_libcuda(t.module) && !is_libcuda(main->module)) ||
                  (t.tid == pid && is_libcuda(t.module) == is_libcuda(main->module));
    if (good && better) main = &t;
  }
  std::string who = main == nullptr ? "the program" : short_module(main->module);
  std::string where = main == nullptr
                          ? std::string("an unknown place (no frame of the program found)")
                          : fmt::format("{}+0x{:x}{}", short_module(main->module), main->offset,
                                        main->function.empty() ? "" : " (" + main->function + ")");
  if (!out.waits.empty()) {
    const rp_wait& w = out.waits.back();
    out.message = fmt::format(
        "{} waits at {} for the semaphore at 0x{:x} = 0x{:x} (released after compute work on "
        "channel 0x{:x}); replay does not execute compute work",
        who, where, w.gpu_va, w.payload, w.channel_handle);
  } else {
    const rp_channel_state* held = nullptr;
    for (uint32_t k = 0; k < std::min<uint32_t>(state.n_channels, RP_MAX_CHANNELS); ++k) {
      const rp_channel_state& c = state.channels[k];
      if (held == nullptr && c.handle != 0 && c.stop != RP_CH_IDLE) held = &c;
    }
    out.message =
        held != nullptr
            ? fmt::format(
                  "the program made no progress for {:.1f} s; {} is at {}, and the fake "
                  "GPU's {}",
                  out.idle_s, who, where, unfinished_message(*held))
            : fmt::format(
                  "the program made no progress for {:.1f} s; {} is at {} (no GPU work "
                  "was left undone: it waits for something the recording does not answer)",
                  out.idle_s, who, where);
  }
  (void)rec;
}

// The crash report's last device call of the faulting thread: the last the shims answered.
void set_crash_last_call(const Recording& rec, const AnswerTable& table, const ReplayLog& log,
                         record::CrashReport& c) {
  const LogRecord* last = nullptr;
  for (const LogRecord& r : log.records) {
    if (r.tid == c.tid && r.sys >= RP_OPEN && r.sys <= RP_MUNMAP) last = &r;
  }
  if (last == nullptr) return;
  c.last_call_seq = last->seq;
  c.last_call = describe(rec, event_of(*last, table)).line;
  bool has_event = last->answered >= 0 && static_cast<size_t>(last->answered) < table.calls.size();
  if (has_event) {
    c.last_call += fmt::format(" (answered as recorded seq {})",
                               table.calls[static_cast<size_t>(last->answered)].seq);
  }
}

namespace {

// A call the program made that was not answered as recorded, in order.
Deviation live_deviation(const Recording& rec, const AnswerTable& table, const LogRecord& r,
                         Outcome oc) {
  Deviation d;
  d.kind = oc == Outcome::kOutOfOrder ? DeviationKind::kOutOfOrder : DeviationKind::kUnrecorded;
  d.outcome = oc;
  d.replay_seq = r.seq;
  bool has_event = r.answered >= 0 && static_cast<size_t>(r.answered) < table.calls.size();
  if (has_event) d.recorded_seq = table.calls[static_cast<size_t>(r.answered)].seq;
  trace::Event ev = event_of(r, table);
  CallText t = describe(rec, ev);
  d.what = std::move(t.line);
  d.call = std::move(t.name);
  switch (oc) {
    case Outcome::kOutOfOrder:
      d.answer = fmt::format("as recorded (seq {})", d.recorded_seq.value_or(0));
      break;
    case Outcome::kTwin:
      d.answer = fmt::format("like its nearest recorded twin (seq {})", d.recorded_seq.value_or(0));
      break;
    case Outcome::kFreelike:
      d.answer = "succeeded (unrecorded free, unmap or close)";
      break;
    case Outcome::kNotSupported:
      d.answer = r.ret == -1 ? "failed with EOPNOTSUPP (no status member)" : "NV_ERR_NOT_SUPPORTED";
      break;
    case Outcome::kNoDevice:
      d.answer = "ENOENT (the recording never opened it)";
      break;
    case Outcome::kPassed:
      d.answer = "carried out by the replay";
      break;
    default:
      break;
  }
  return d;
}

// The replayed calls of the log: counts by outcome, the refusal, and each deviation.
void add_log(const Recording& rec, const AnswerTable& table, const ReplayLog& log,
             ReplayReport& rep) {
  rep.log_lost = log.lost;
  for (const LogRecord& r : log.records) {
    if (r.sys == RP_LOG_ENV) {
      ++rep.env_calls;
      continue;
    }
    if (r.sys == RP_LOG_REFUSED) {
      rep.refusal = r.text;
      rep.end = ReplayEnd::kRefused;
      continue;
    }
    if (r.sys < RP_OPEN || r.sys > RP_MUNMAP) continue;
    ++rep.replayed_calls;
    if (r.outcome < RP_OUT_ANSWERED || r.outcome > RP_OUT_PASSED) continue;
    auto oc = static_cast<Outcome>(r.outcome - RP_OUT_ANSWERED);
    ++rep.by_outcome[static_cast<int>(oc)];
    if (oc == Outcome::kAnswered) continue;
    rep.deviations.push_back(live_deviation(rec, table, r, oc));
  }
}

// Recorded calls never asked, as runs in each role: in the middle of what the program did
// ("skipped") or after the last call it made in that role ("not_reached").
void add_unasked(const Recording& rec, const AnswerTable& table, const uint8_t* answered,
                 ReplayReport& rep) {
  for (size_t k = 0; k < table.calls.size();) {
    if (answered[k] != 0) {
      ++k;
      continue;
    }
    size_t j = k;
    while (j < table.calls.size() && answered[j] == 0 && table.calls[j].role == table.calls[k].role)
      ++j;
    bool trailing = j == table.calls.size() || table.calls[j].role != table.calls[k].role;
    Deviation d;
    d.kind = trailing ? DeviationKind::kNotReached : DeviationKind::kSkipped;
    d.recorded_seq = table.calls[k].seq;
    d.count = j - k;
    if (table.calls[k].trace_index < rec.events.size()) {
      CallText t = describe(rec, rec.events[table.calls[k].trace_index]);
      d.what = std::move(t.line);
      d.call = std::move(t.name);
    }
    rep.deviations.push_back(std::move(d));
    k = j;
  }
}

// 0: as recorded; 1: findings; 2: refused.
void set_verdict(ReplayReport& rep) {
  if (!rep.refusal.empty()) {
    rep.verdict = 2;
    return;
  }
  // GPU work left undone (a launch stopped at above all) is a finding even when the program
  // ended. Launches completed without execution (--execute none) are not: that is the replay's
  // stated model, and the report says that their results are not the GPU's.
  bool finding = rep.end != ReplayEnd::kExit || !rep.unfinished.empty() || rep.compute.stopped != 0;
  for (const Deviation& d : rep.deviations) {
    if (d.kind != DeviationKind::kUnrecorded || d.outcome == Outcome::kTwin ||
        d.outcome == Outcome::kNotSupported || d.outcome == Outcome::kNoDevice) {
      finding = true;
    }
  }
  rep.verdict = finding ? 1 : 0;
}

}  // namespace

void build_report(const Recording& rec, const AnswerTable& table, const ReplayLog& log,
                  const rp_state& state, const uint8_t* answered, const Environment& env,
                  ReplayReport& rep) {
  if (rep.crash) set_crash_last_call(rec, table, log, *rep.crash);
  rep.driver_version = rec.header.driver_version.value_or("");
  if (rec.norm != nullptr) rep.libcuda_version = rec.norm->libcuda_version;
  rep.recorded_calls = table.calls.size();
  for (size_t k = 0; k < table.calls.size(); ++k) {
    rep.answered += answered[k] != 0;
    if (answered[k] == 0) rep.unanswered.push_back(table.calls[k].trace_index);
  }
  rep.synthesized = env.synthesized;
  rep.synthesized.insert(rep.synthesized.end(), table.synthesized.begin(), table.synthesized.end());
  rep.gaps = table.gaps;
  rep.injected = table.injected;
  rep.environment = env.recorded
                        ? "recorded (the trace's environment events)"
                        : fmt::format("defaults from the header: GPU {} {:04x}:{:04x}, driver {}",
                                      env.gpu_bdf, env.gpu_pci_id >> 16, env.gpu_pci_id & 0xffff,
                                      rep.driver_version.empty() ? "?" : rep.driver_version);
  rep.processes = state.processes;
  rep.gpu_entries = state.gpu_entries;
  rep.gpu_releases = state.gpu_releases;
  rep.gpu_maps = state.gpu_maps;
  rep.gpu_maps_known = state.gpu_maps_known;
  rep.gpu_launches = state.gpu_launches;
  rep.compute = state.compute;
  rep.vidmem = state.vidmem;
  add_launches(log, rep);
  uint32_t nch = std::min<uint32_t>(state.n_channels, RP_MAX_CHANNELS);
  for (uint32_t k = 0; k < nch; ++k) {
    const rp_channel_state& c = state.channels[k];
    if (c.handle == 0 || (c.stop == RP_CH_IDLE && c.pending == 0)) continue;
    rep.unfinished.push_back({c, unfinished_message(c)});
  }
  add_log(rec, table, log, rep);
  add_unasked(rec, table, answered, rep);
  set_verdict(rep);
}

}  // namespace cudatool::replay
