#include "ab/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>

#include "base/glob_match.h"
#include "trace/capture_import.hpp"

namespace cudatool::ab {
namespace {

// Events of one trace that the other's recording could not have held are left out of the
// comparison (the header notes say how many), not reported as missing calls:
//   - exits of threads and child processes, when the other was recorded in preload mode or is a
//     replayed run: those record the traced command's exit only, ptrace mode every thread's and
//     process's (docs/trace-format.md);
//   - environment events on paths the other's `env` globs do not cover (a replayed run, an import
//     or a recording with --env none has none);
//   - calls of a kind an imported capture does not hold, when the other is one: the capture
//     format records open, mmap and ioctl (docs/trace-format.md), so the closes, dups, munmaps,
//     execs, forks and exits of a recorded or replayed run have nothing to meet there. The kinds
//     an import holds are the ones it has.
bool command_exit_only(const NormalizedTrace& t) {
  return t.header.mode == "preload" || t.header.mode == "replay";
}

// An exit other than the traced command's: of another thread, or of a child process. The traced
// command is the first process (role 0's); a trace without pids (pid 0) knows only role 0.
bool other_exit(const NormalizedTrace& t, const NormEvent& e) {
  if (e.sys != trace::Sys::kExit || e.thread >= t.thread_pids.size()) return false;
  int32_t pid = t.thread_pids[e.thread];
  if (pid == 0) return e.thread != 0;
  return pid != t.thread_pids[0] || t.thread_tids[e.thread] != pid;
}

// What of `t` the recording of `other` could not hold.
class OutOfReach {
 public:
  OutOfReach(const NormalizedTrace& t, const NormalizedTrace& other)
      : t_(t), exits_(command_exit_only(other) && !command_exit_only(t)) {
    if (other.header.mode == "import" && t.header.mode != "import") {
      kinds_.emplace();
      for (const NormEvent& e : other.events) (*kinds_)[static_cast<size_t>(e.sys)] = true;
    }
    // The other's globs say which paths it recorded. Without globs it recorded none — unless it
    // holds environment events all the same (a trace written by hand or by another tool): then
    // every path counts as covered.
    const std::string& globs = other.header.env;
    bool none = globs.empty() && other.env_paths.empty();
    env_.reserve(t.env_paths.size());
    for (const std::string& p : t.env_paths) {
      env_.push_back(none ||
                     (!globs.empty() && nvtr_glob_list_match(globs.c_str(), p.c_str()) == 0));
    }
  }
  [[nodiscard]] bool exit(const NormEvent& e) const { return exits_ && other_exit(t_, e); }
  [[nodiscard]] bool environment(const NormEvent& e) const {
    return e.env_path != 0 && e.env_path <= env_.size() && env_[e.env_path - 1];
  }
  // A device call of a kind the other, an imported capture, holds none of.
  [[nodiscard]] bool kind(const NormEvent& e) const {
    return kinds_ && e.env_path == 0 && !trace::is_environment(e.sys) &&
           !(*kinds_)[static_cast<size_t>(e.sys)];
  }
  [[nodiscard]] bool operator()(const NormEvent& e) const {
    return exit(e) || environment(e) || kind(e);
  }
  // The names of the kinds left out by kind(), in the order of trace::Sys: "close, dup, munmap".
  [[nodiscard]] std::string kind_names() const {
    std::vector<bool> seen(static_cast<size_t>(trace::Sys::kUnknown) + 1);
    for (const NormEvent& e : t_.events) {
      if (kind(e)) seen[static_cast<size_t>(e.sys)] = true;
    }
    std::string s;
    for (size_t k = 0; k < seen.size(); ++k) {
      if (!seen[k]) continue;
      if (!s.empty()) s += ", ";
      s += trace::sys_name(static_cast<trace::Sys>(k));
    }
    return s;
  }

 private:
  const NormalizedTrace& t_;
  bool exits_;
  std::optional<std::array<bool, static_cast<size_t>(trace::Sys::kUnknown) + 1>> kinds_;
  std::vector<bool> env_;
};

std::string pci_text(const std::optional<uint32_t>& id) {
  if (!id) return {};
  char buf[16];
  snprintf(buf, sizeof buf, "%04x:%04x", *id >> 16, *id & 0xffff);
  return buf;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) {
    if (!s.empty()) s += ' ';
    s += x;
  }
  return s;
}

void note(std::vector<HeaderNote>& out, std::string what, std::string a, std::string b,
          bool serious, std::string message) {
  out.push_back(
      HeaderNote{std::move(what), std::move(a), std::move(b), serious, std::move(message)});
}

}  // namespace

std::vector<std::string> gpu_lines(const NormalizedTrace& t) {
  uint32_t n = 0;
  for (const IdentitySeen& s : t.identities) n = std::max(n, s.ordinal + 1);
  std::vector<std::string> out;
  for (uint32_t k = 0; k < n; ++k) {
    auto value = [&](IdentityKind kind) -> const std::string* {
      for (const IdentitySeen& s : t.identities) {
        if (s.kind == kind && s.ordinal == k) return &s.text;
      }
      return nullptr;
    };
    const std::string* u = value(IdentityKind::kUuid);
    const std::string* p = value(IdentityKind::kPciLocation);
    std::string what = u && p ? *u + " at " + *p : u ? *u : p ? *p : std::string();
    for (auto [kind, word] :
         {std::pair{IdentityKind::kGpuId, "id "}, std::pair{IdentityKind::kBoardId, "board "},
          std::pair{IdentityKind::kSerial, "serial "}}) {
      if (const std::string* v = value(kind))
        what += std::string(what.empty() ? "" : ", ") + word + *v;
    }
    if (k == 0 && !t.gpu.name.empty()) what += std::string(what.empty() ? "" : ", ") + t.gpu.name;
    std::string line = "gpu#" + std::to_string(k) + ": " + what;
    out.push_back(std::move(line));
  }
  return out;
}

namespace {

// The names (gpu#0, gpu#0.pci …) under which the two traces hold other GPU identity values, in
// A's order of first appearance (a name only one of them holds was not asked in the other).
std::vector<std::string> differing_identities(const NormalizedTrace& a, const NormalizedTrace& b) {
  std::vector<std::string> out;
  for (const IdentitySeen& s : a.identities) {
    for (const IdentitySeen& x : b.identities) {
      if (x.kind == s.kind && x.ordinal == s.ordinal && x.text != s.text) {
        out.push_back(identity_name(s.kind, s.ordinal));
      }
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : std::string(sep)) + x;
  return s;
}

// The drivers of the two recordings, and the tables they are read with.
void driver_notes(const NormalizedTrace& a, const NormalizedTrace& b,
                  std::vector<HeaderNote>& out) {
  const trace::Header& ha = a.header;
  const trace::Header& hb = b.header;
  std::string da = ha.driver_version.value_or(""), db = hb.driver_version.value_or("");
  if (!da.empty() && !db.empty() && da != db) {
    note(out, "driver", da, db, true,
         "the traces come from different drivers: A " + da + ", B " + db +
             "; calls and structures may differ for that reason alone");
  }
  for (const NormalizedTrace* t : {&a, &b}) {
    if (t->header.driver_version && !t->header.driver_version->empty()) continue;
    note(out, "driver", da, db, false,
         std::string("the driver version of ") + (t == &a ? "A" : "B") +
             " is not recorded; it is read with the tables of " +
             std::string(t->tables->info().id) + " (" + std::string(t->tables->info().version) +
             ")" +
             (t->libcuda_version.empty()
                  ? std::string()
                  : ", for the libcuda its module records name: " + t->libcuda_version));
  }
}

// The GPUs: their names, PCI ids and identities.
void gpu_notes(const NormalizedTrace& a, const NormalizedTrace& b, std::vector<HeaderNote>& out) {
  const trace::Header& ha = a.header;
  const trace::Header& hb = b.header;
  std::string ga = ha.gpu, gb = hb.gpu;
  std::string pa = pci_text(a.gpu.pci_id), pb = pci_text(b.gpu.pci_id);
  if (!ga.empty() && !gb.empty() && ga != gb) {
    note(out, "gpu", ga, gb, true, "the traces come from different GPUs: A " + ga + ", B " + gb);
  } else if (!pa.empty() && !pb.empty() && pa != pb) {
    note(
        out, "gpu", pa, pb, true,
        "the traces come from different GPUs (PCI ids in NV_ESC_CARD_INFO): A " + pa + ", B " + pb);
  } else if (!a.gpu.name.empty() && !b.gpu.name.empty() && a.gpu.name != b.gpu.name) {
    note(out, "gpu", a.gpu.name, b.gpu.name, true,
         "the traces come from different GPUs: A " + a.gpu.name + ", B " + b.gpu.name);
  }
  if (std::vector<std::string> d = differing_identities(a, b); !d.empty()) {
    note(out, "gpu_identity", joined(gpu_lines(a), "; "), joined(gpu_lines(b), "; "), false,
         "the GPUs differ (" + joined(d, ", ") +
             ": the lines above); their UUIDs, PCI locations, gpuIds, board ids and serials are "
             "compared as these names, so a GPU used consistently is no divergence");
  }
}

// How each was recorded: tables, command, mode (and the exits the other mode cannot see).
void recording_notes(const NormalizedTrace& a, const NormalizedTrace& b, const OutOfReach& reach_a,
                     const OutOfReach& reach_b, std::vector<HeaderNote>& out) {
  const trace::Header& ha = a.header;
  const trace::Header& hb = b.header;
  if (a.tables != b.tables) {
    note(out, "driver_branch", std::string(a.tables->info().id), std::string(b.tables->info().id),
         false,
         "decoded with different driver tables: A " + std::string(a.tables->info().id) + ", B " +
             std::string(b.tables->info().id));
  }
  if (!ha.argv.empty() && !hb.argv.empty() && ha.argv != hb.argv) {
    note(out, "command", join(ha.argv), join(hb.argv), false,
         "different commands were traced: A `" + join(ha.argv) + "`, B `" + join(hb.argv) + "`");
  }
  if (ha.mode != hb.mode) {
    std::string text = "recorded differently: A " + ha.mode + ", B " + hb.mode;
    for (const auto* t : {&a, &b}) {
      const NormalizedTrace& other = t == &a ? b : a;
      const OutOfReach& reach = t == &a ? reach_a : reach_b;
      size_t n = static_cast<size_t>(std::count_if(
          t->events.begin(), t->events.end(), [&](const NormEvent& e) { return reach.exit(e); }));
      if (n == 0) continue;
      text += fmt::format(
          "; {}'s {} exit{} of threads and child processes, which {} mode does not "
          "record, {} not compared",
          t == &a ? "A" : "B", n, n == 1 ? "" : "s", other.header.mode, n == 1 ? "is" : "are");
    }
    note(out, "mode", ha.mode, hb.mode, false, text);
  }
}

// What of each the other's recording could not hold: call kinds, captured bytes, environment.
void reach_notes(const NormalizedTrace& a, const NormalizedTrace& b, const OutOfReach& reach_a,
                 const OutOfReach& reach_b, std::vector<HeaderNote>& out) {
  const trace::Header& ha = a.header;
  const trace::Header& hb = b.header;
  for (const auto* t : {&a, &b}) {
    const OutOfReach& reach = t == &a ? reach_a : reach_b;
    size_t n = static_cast<size_t>(std::count_if(
        t->events.begin(), t->events.end(), [&](const NormEvent& e) { return reach.kind(e); }));
    if (n == 0) continue;
    std::string self = t == &a ? "A" : "B", them = t == &a ? "B" : "A";
    note(out, "kinds", ha.mode, hb.mode, false,
         fmt::format("{}'s {} {} call{} {} not compared: {} is an imported capture, whose format "
                     "records open, mmap and ioctl (it holds none of these)",
                     self, n, reach.kind_names(), n == 1 ? "" : "s", n == 1 ? "is" : "are", them));
  }
  for (const auto* t : {&a, &b}) {
    const MaskCounts& m = t->masks;
    std::vector<std::string> parts;
    if (m.capture_params != 0) {
      parts.push_back(fmt::format("the parameters of {} allocation{} with paramsSize 0",
                                  m.capture_params, m.capture_params == 1 ? "" : "s"));
    }
    if (m.capture_pointers != 0) {
      parts.push_back(fmt::format("{} buffer{} behind pointer members", m.capture_pointers,
                                  m.capture_pointers == 1 ? "" : "s"));
    }
    if (m.capture_uvm != 0) {
      parts.push_back(fmt::format("the bytes past {} of {} UVM argument{}", trace::kCaptureUvmBytes,
                                  m.capture_uvm, m.capture_uvm == 1 ? "" : "s"));
    }
    if (parts.empty()) continue;
    std::string list = parts[0];
    for (size_t k = 1; k < parts.size(); ++k) {
      list += k + 1 == parts.size() ? " and " : ", ";
      list += parts[k];
    }
    note(out, "capture", ha.mode, hb.mode, false,
         fmt::format("not compared in {}: {} ({} is an imported capture, whose format holds "
                     "none of them)",
                     t == &a ? "A" : "B", list, t == &a ? "B" : "A"));
  }
  for (const auto* t : {&a, &b}) {
    const NormalizedTrace& other = t == &a ? b : a;
    const OutOfReach& reach = t == &a ? reach_a : reach_b;
    size_t n = static_cast<size_t>(
        std::count_if(t->events.begin(), t->events.end(),
                      [&](const NormEvent& e) { return reach.environment(e); }));
    if (n == 0) continue;
    std::string self = t == &a ? "A" : "B", them = t == &a ? "B" : "A";
    note(out, "environment", ha.env, hb.env, false,
         fmt::format("{}'s {} environment event{} {} not compared: {}", self, n, n == 1 ? "" : "s",
                     n == 1 ? "is" : "are",
                     other.header.env.empty()
                         ? them + " records no environment (its header has no env globs: " +
                               (other.header.mode == "replay" ? "a replayed run"
                                                              : "--env none, or an older format") +
                               ")"
                         : "on paths outside " + them + "'s env globs (" + other.header.env + ")"));
  }
}

// What the two recordings are, before what they say: drivers and GPUs first.
// `reach_a`, `reach_b`: what of A (of B) the other's recording could not hold.
std::vector<HeaderNote> header_notes(const NormalizedTrace& a, const NormalizedTrace& b,
                                     const OutOfReach& reach_a, const OutOfReach& reach_b) {
  std::vector<HeaderNote> out;
  const trace::Header& ha = a.header;
  const trace::Header& hb = b.header;
  driver_notes(a, b, out);
  gpu_notes(a, b, out);
  recording_notes(a, b, reach_a, reach_b, out);
  reach_notes(a, b, reach_a, reach_b, out);
  if (!ha.host.empty() && !hb.host.empty() && ha.host != hb.host) {
    note(out, "host", ha.host, hb.host, false, "different hosts: A " + ha.host + ", B " + hb.host);
  }
  if (!ha.kernel.empty() && !hb.kernel.empty() && ha.kernel != hb.kernel) {
    note(out, "kernel", ha.kernel, hb.kernel, false,
         "different kernels: A " + ha.kernel + ", B " + hb.kernel);
  }
  return out;
}

// Per-thread alignments, as steps with trace-wide event indices.
std::vector<Entry> align_threads(const NormalizedTrace& a, const NormalizedTrace& b,
                                 const OutOfReach& skip_a, const OutOfReach& skip_b,
                                 const CompareOptions& o, Comparison& c) {
  AlignStats& st = c.stats;
  size_t threads = std::max(a.thread_tids.size(), b.thread_tids.size());
  std::vector<std::vector<uint32_t>> ia(threads), ib(threads);
  for (const NormEvent& e : a.events) {
    if (skip_a(e)) {
      ++c.left_out_a;
      for (uint64_t k = e.buffer; k < e.buffer + e.buffer_count && k < a.buffers.size(); ++k) {
        c.left_out_bytes_a += a.buffers[k].compared;
      }
    } else {
      ia[e.thread].push_back(e.index);
    }
  }
  for (const NormEvent& e : b.events) {
    if (skip_b(e)) {
      ++c.left_out_b;
    } else {
      ib[e.thread].push_back(e.index);
    }
  }
  std::vector<Entry> out;
  out.reserve(std::max(a.events.size(), b.events.size()) + 16);
  std::vector<uint64_t> ak, as, af, ai, bk, bs, bf, bi;
  std::vector<uint8_t> at, bt;  // teardown calls
  for (size_t t = 0; t < threads; ++t) {
    ak.clear(), as.clear(), af.clear(), ai.clear(), bk.clear(), bs.clear(), bf.clear(), bi.clear();
    at.clear(), bt.clear();
    for (uint32_t i : ia[t]) {
      const NormEvent& e = a.events[i];
      ak.push_back(e.key), as.push_back(e.shape), af.push_back(e.full), ai.push_back(e.input);
      at.push_back(is_teardown_call(e));
    }
    for (uint32_t j : ib[t]) {
      const NormEvent& e = b.events[j];
      bk.push_back(e.key), bs.push_back(e.shape), bf.push_back(e.full), bi.push_back(e.input);
      bt.push_back(is_teardown_call(e));
    }
    for (const Step& s :
         align(Hashes{ak, as, af, ai, at}, Hashes{bk, bs, bf, bi, bt}, o.align, &st)) {
      out.push_back(
          Entry{s.op, s.a == kNone ? kNone : ia[t][s.a], s.b == kNone ? kNone : ib[t][s.b]});
    }
  }
  return out;
}

// One order for all threads: A's order, B's extra calls where B made them.
std::vector<Entry> merge(std::vector<Entry> steps, size_t na, size_t nb) {
  std::vector<uint32_t> of_a(na, kNone), of_b(nb, kNone);
  for (uint32_t k = 0; k < steps.size(); ++k) {
    if (steps[k].a != kNone) of_a[steps[k].a] = k;
    if (steps[k].b != kNone) of_b[steps[k].b] = k;
  }
  std::vector<uint8_t> done(steps.size(), 0);
  std::vector<Entry> out;
  out.reserve(steps.size());
  size_t i = 0, j = 0;
  auto emit = [&](uint32_t k) {
    done[k] = 1;
    out.push_back(steps[k]);
  };
  while (true) {
    while (i < na && (of_a[i] == kNone || done[of_a[i]])) ++i;
    while (j < nb && (of_b[j] == kNone || done[of_b[j]])) ++j;
    if (i >= na && j >= nb) break;
    if (i < na && steps[of_a[i]].op == Op::kMissing) {
      emit(of_a[i]);
    } else if (j < nb && steps[of_b[j]].op == Op::kExtra) {
      emit(of_b[j]);
    } else if (i < na) {
      emit(of_a[i]);
    } else {
      emit(of_b[j]);
    }
  }
  return out;
}

}  // namespace

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::kMissing:
      return "missing_call";
    case Kind::kExtra:
      return "extra_call";
    case Kind::kStatus:
      return "different_status";
    case Kind::kParameters:
      return "different_parameters";
    case Kind::kReturn:
      return "different_return";
  }
  return "?";
}

std::string_view kind_title(Kind k) {
  switch (k) {
    case Kind::kMissing:
      return "missing call (in A, not in B)";
    case Kind::kExtra:
      return "extra call (in B, not in A)";
    case Kind::kStatus:
      return "different status";
    case Kind::kParameters:
      return "different parameters";
    case Kind::kReturn:
      return "different return";
  }
  return "?";
}

bool SymbolMap::same(uint64_t a, uint64_t b) {
  auto x = ab_.find(a);
  if (x != ab_.end()) return x->second == b;
  if (ba_.count(b) != 0) return false;
  ab_.emplace(a, b);
  ba_.emplace(b, a);
  return true;
}

const uint64_t* SymbolMap::a_of(uint64_t b) const {
  auto it = ba_.find(b);
  return it == ba_.end() ? nullptr : &it->second;
}

std::string Namer::operator()(uint64_t sym) const {
  if (a == nullptr || map == nullptr) return t.name(sym);
  if (const uint64_t* x = map->a_of(sym)) return a->name(*x);
  return "B:" + t.name(sym);
}

std::string Namer::describe(const Subst& s) const {
  std::string n = (*this)(s.base);
  if (s.kind == SymKind::kPointer && s.delta != 0) {
    char buf[24];
    snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(s.delta));
    n += buf;
  }
  return n;
}

bool same_event(const NormalizedTrace& ta, const NormEvent& a, const NormalizedTrace& tb,
                const NormEvent& b, SymbolMap& map) {
  auto sym = [&](uint64_t x, uint64_t y) { return (x == 0 || y == 0) ? x == y : map.same(x, y); };
  // Every name pair is visited (no early return), so that what is learned does not depend on
  // where the first difference is.
  bool eq = a.key == b.key && a.ret == b.ret && a.err == b.err && a.buffer_count == b.buffer_count;
  eq &= sym(a.fd, b.fd);
  eq &= sym(a.ret_sym, b.ret_sym);
  for (uint32_t i = 0; i < std::min(a.buffer_count, b.buffer_count); ++i) {
    const NormBuffer& x = ta.buffers[a.buffer + i];
    const NormBuffer& y = tb.buffers[b.buffer + i];
    if (x.role != y.role || x.after != y.after || x.unreadable != y.unreadable ||
        x.compared != y.compared || x.subst_count != y.subst_count) {
      eq = false;
      continue;
    }
    if (std::memcmp(ta.bytes.data() + x.bytes, tb.bytes.data() + y.bytes, x.compared) != 0) {
      eq = false;
    }
    for (uint32_t k = 0; k < x.subst_count; ++k) {
      const Subst& p = ta.substs[x.subst + k];
      const Subst& q = tb.substs[y.subst + k];
      if (p.offset != q.offset || p.width != q.width || p.kind != q.kind || p.delta != q.delta) {
        eq = false;
        continue;
      }
      eq &= map.same(p.base, q.base);
    }
  }
  return eq;
}

namespace {

void find_divergences(Comparison& c) {
  const NormalizedTrace& a = *c.a;
  const NormalizedTrace& b = *c.b;
  // Along the merged order: learn the correspondence of names from aligned calls; a changed
  // call that is equal under it is a match after all.
  for (uint32_t k = 0; k < c.entries.size(); ++k) {
    Entry& e = c.entries[k];
    if (e.op == Op::kMatch) {
      same_event(a, a.events[e.a], b, b.events[e.b], c.symbols);
      continue;
    }
    if (e.op == Op::kChange && same_event(a, a.events[e.a], b, b.events[e.b], c.symbols)) {
      e.op = Op::kMatch;
      continue;
    }
    Divergence d{Kind::kParameters, k, e.a, e.b, {}};
    if (e.op == Op::kMissing) {
      d.kind = Kind::kMissing;
    } else if (e.op == Op::kExtra) {
      d.kind = Kind::kExtra;
    } else {
      const NormEvent& x = a.events[e.a];
      const NormEvent& y = b.events[e.b];
      if (x.ret != y.ret || x.err != y.err || (x.ret_sym == 0) != (y.ret_sym == 0)) {
        d.kind = Kind::kReturn;
      } else if (x.status != y.status) {
        d.kind = Kind::kStatus;
      }
      d.fields = diff_events(a, x, b, y, c.symbols);
      d.answer = answer_only(d.kind, d.fields);
    }
    c.divergences.push_back(std::move(d));
  }
}

}  // namespace

Comparison compare(const NormalizedTrace& a, const NormalizedTrace& b,
                   const CompareOptions& options) {
  Comparison c;
  c.a = &a;
  c.b = &b;
  OutOfReach reach_a(a, b), reach_b(b, a);
  c.notes = header_notes(a, b, reach_a, reach_b);
  c.threads_a = static_cast<uint32_t>(a.thread_tids.size());
  c.threads_b = static_cast<uint32_t>(b.thread_tids.size());
  c.entries =
      merge(align_threads(a, b, reach_a, reach_b, options, c), a.events.size(), b.events.size());
  bool divergent = std::any_of(c.entries.begin(), c.entries.end(),
                               [](const Entry& e) { return e.op != Op::kMatch; });
  if (divergent) find_divergences(c);
  apply_known(c, options.known);
  return c;
}

bool is_teardown_call(const NormEvent& e) {
  switch (e.sys) {
    case trace::Sys::kClose:
    case trace::Sys::kMunmap:
    case trace::Sys::kExit:
      return true;
    case trace::Sys::kIoctl:
      break;
    default:
      return false;
  }
  // nv_escape.h, uvm_ioctl.h: the calls that release what a program set up.
  static constexpr std::string_view kReleases[] = {
      "NV_ESC_RM_FREE",          "NV_ESC_RM_UNMAP_MEMORY",     "NV_ESC_RM_UNMAP_MEMORY_DMA",
      "NV_ESC_FREE_OS_EVENT",    "UVM_DEINITIALIZE",           "UVM_FREE",
      "UVM_UNREGISTER_GPU",      "UVM_UNREGISTER_GPU_VASPACE", "UVM_UNREGISTER_CHANNEL",
      "UVM_DESTROY_RANGE_GROUP", "UVM_UNMAP_EXTERNAL",         "UVM_RELEASE_VA",
      "UVM_REMOVE_SESSION",      "UVM_REMOVE_EVENT_QUEUE",     "UVM_REGION_DECOMMIT",
  };
  return std::find(std::begin(kReleases), std::end(kReleases), e.call) != std::end(kReleases);
}

bool answer_only(Kind kind, const std::vector<FieldDiff>& fields) {
  return kind == Kind::kParameters && !fields.empty() &&
         std::all_of(fields.begin(), fields.end(),
                     [](const FieldDiff& f) { return f.side == "out"; });
}

}  // namespace cudatool::ab
