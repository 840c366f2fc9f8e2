#include "cli/replay_output.hpp"

#include <fmt/format.h>
#include <map>

#include "ab/verdict.hpp"
#include "base/hex.hpp"
#include "base/json_writer.hpp"
#include "cli/crash_output.hpp"
#include "cli/function_summary_output.hpp"

namespace cudatool::cli {
namespace {

using replay::Deviation;
using replay::Outcome;

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string end_line(const replay::ReplayReport& r) {
  if (r.end == replay::ReplayEnd::kRefused) return "refused: " + r.refusal;
  if (r.end == replay::ReplayEnd::kDeadline) {
    return fmt::format("stopped after {:.1f} s without progress: {}",
                       r.stall ? r.stall->idle_s : 0.0, r.stall ? r.stall->message : "");
  }
  if (r.end == replay::ReplayEnd::kSignal) {
    return fmt::format("the program was killed by signal {} ({})", -r.exit_status,
                       record::signal_name(-r.exit_status));
  }
  return fmt::format("the program exited with status {}", r.exit_status);
}

constexpr size_t kMaxListed = 40;
constexpr size_t kMaxSeqs = 6;

// Unrecorded frees, unmaps and closes answered with success (captures record no close) and
// opens, dups and mmaps of replay devices carried out: they do not make the verdict, so the text
// counts them by call instead of listing each (--json does).
bool routine(const Deviation& d) {
  return d.kind == replay::DeviationKind::kUnrecorded &&
         (d.outcome == Outcome::kFreelike || d.outcome == Outcome::kPassed);
}

// The deviations that matter, each with the later ones like it (same kind, call and answer:
// a polling control answered the same way nine times is one line); then the routine ones counted.
std::string deviation_lines(const std::vector<Deviation>& all) {
  struct Group {
    const Deviation* first;
    std::vector<uint64_t> more;  // replay seqs of the later alike
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> group_of;
  std::map<std::pair<Outcome, std::string>, uint64_t> counted;  // routine: (outcome, call) → n
  for (const Deviation& d : all) {
    if (routine(d)) {
      ++counted[{d.outcome, d.call.empty() ? d.what : d.call}];
      continue;
    }
    bool groupable = d.kind == replay::DeviationKind::kUnrecorded && !d.call.empty();
    std::string key = fmt::format("{}\x1f{}\x1f{}", static_cast<int>(d.outcome), d.call, d.answer);
    if (groupable) {
      auto it = group_of.find(key);
      if (it != group_of.end()) {
        groups[it->second].more.push_back(d.replay_seq.value_or(0));
        continue;
      }
      group_of.emplace(key, groups.size());
    }
    groups.push_back({&d, {}});
  }
  std::string out;
  size_t n = 0;
  for (const Group& g : groups) {
    if (++n > kMaxListed) {
      out += fmt::format("  … {} more (--json lists them all)\n", groups.size() - kMaxListed);
      break;
    }
    const Deviation& d = *g.first;
    if (d.kind == replay::DeviationKind::kSkipped || d.kind == replay::DeviationKind::kNotReached) {
      out += fmt::format("  {} recorded seq {}{}: {}\n",
                         d.kind == replay::DeviationKind::kSkipped ? "skipped" : "not reached",
                         d.recorded_seq.value_or(0),
                         d.count > 1 ? fmt::format(" and {} more", d.count - 1) : "", d.what);
      continue;
    }
    out += fmt::format("  #{} {}: {} → {}", d.replay_seq.value_or(0),
                       d.kind == replay::DeviationKind::kOutOfOrder ? "out of order" : "unrecorded",
                       d.what, d.answer);
    if (!g.more.empty()) {
      std::string seqs;
      for (size_t i = 0; i < g.more.size() && i < kMaxSeqs; ++i) {
        seqs += fmt::format("{}#{}", i == 0 ? "" : ", ", g.more[i]);
      }
      if (g.more.size() > kMaxSeqs) seqs += ", …";
      out += fmt::format(" (and {} more like it: {})", g.more.size(), seqs);
    }
    out += "\n";
  }
  for (Outcome o : {Outcome::kFreelike, Outcome::kPassed}) {
    std::string calls;
    for (const auto& [k, c] : counted) {
      if (k.first != o) continue;
      // As ab's verdict counts calls: "4 closes", "8 dups", "3 frees".
      calls += (calls.empty() ? "" : ", ") + ab::counted(k.second, c);
    }
    if (calls.empty()) continue;
    out += fmt::format("  {}: {}\n", calls,
                       o == Outcome::kFreelike ? "succeeded (unrecorded frees, unmaps and closes)"
                                               : "carried out by the replay");
  }
  return out;
}

}  // namespace

namespace {

// The compute launches (completed without execution, or stopped at) and video memory.
std::string fake_gpu_compute_lines(const replay::ReplayReport& r) {
  std::string out;
  const rp_compute_stats& c = r.compute;
  if (!r.launches.empty() || c.launches != 0 || c.null_grids != 0) {
    out += fmt::format(
        "fake GPU: {} compute launch{} completed, not executed (--execute {}: no kernel ran; "
        "what the kernels compute is not in the program's results), {} QMD and report "
        "semaphore releases\n",
        c.launches, c.launches == 1 ? "" : "es", r.execute, c.releases);
  }
  for (const auto& l : r.launches) out += "  launch: " + replay::launch_line(l) + "\n";
  if (c.stopped != 0) {
    out += fmt::format("fake GPU: stopped at {} compute launch{}{}\n", c.stopped,
                       c.stopped == 1 ? "" : "es",
                       r.execute == "stop" ? " (--execute stop)" : " (a QMD it cannot read)");
  }
  const rp_vidmem_stats& v = r.vidmem;
  if (v.ranges != 0) {
    out += fmt::format("fake GPU: video memory: {} GPU ranges backed, {} KiB written{}\n", v.ranges,
                       v.backed_bytes / 1024,
                       v.dropped_bytes == 0
                           ? std::string()
                           : fmt::format("; the {} MiB cap was hit: {} bytes of {} writes dropped",
                                         v.cap_bytes >> 20, v.dropped_bytes, v.dropped_writes));
  }
  return out;
}

}  // namespace

std::string render_replay_text(const replay::ReplayReport& r) {
  std::string out;
  out += fmt::format("replay: {} — driver {}, {} recorded device calls\n", r.trace,
                     !r.driver_version.empty()    ? r.driver_version
                     : !r.libcuda_version.empty() ? r.libcuda_version +
                                                        " (of the libcuda its "
                                                        "module records name)"
                                                  : "?",
                     r.recorded_calls);
  out += fmt::format("  command: {}\n", command_line(r.argv));
  out +=
      fmt::format("  environment: {}; {} environment calls answered\n", r.environment, r.env_calls);
  for (const auto& s : r.synthesized) out += "  synthesized: " + s + "\n";
  for (const auto& g : r.gaps) out += "  not in the recording: " + g + "\n";
  for (const auto& i : r.injected) out += "  injected: " + i + "\n";
  out +=
      fmt::format("answered {} of {} recorded calls; the program made {} device calls:", r.answered,
                  r.recorded_calls, r.replayed_calls);
  for (int k = 0; k < 7; ++k) {
    if (r.by_outcome[k] != 0) {
      out += fmt::format(" {} {}", replay::outcome_name(static_cast<Outcome>(k)), r.by_outcome[k]);
    }
  }
  out += "\n";
  if (r.gpu_entries != 0 || r.gpu_releases != 0 || r.gpu_maps != 0) {
    out += fmt::format(
        "fake GPU: {} GPFIFO entries carried out, {} semaphore releases; {} of {} device "
        "mappings tied to a memory object\n",
        r.gpu_entries, r.gpu_releases, r.gpu_maps_known, r.gpu_maps);
  }
  out += fake_gpu_compute_lines(r);
  for (const auto& u : r.unfinished) out += "  unfinished: " + u.message + "\n";
  if (!r.deviations.empty()) {
    out +=
        fmt::format("{} deviation{}:\n", r.deviations.size(), r.deviations.size() == 1 ? "" : "s");
    out += deviation_lines(r.deviations);
  }
  if (r.stall) {
    for (const auto& t : r.stall->threads) {
      out +=
          fmt::format("  thread {}: pc 0x{:x}{}\n", t.tid, t.pc,
                      t.module.empty() ? ""
                                       : fmt::format(" — {}+0x{:x}{}{}", t.module, t.offset,
                                                     t.function.empty() ? "" : " " + t.function,
                                                     t.from_stack ? " (caller on the stack)" : ""));
    }
  }
  out += end_line(r) + "\n";
  if (r.crash) out += crash_text(*r.crash, "answered");
  if (!r.crash_note.empty()) out += r.crash_note + "\n";
  if (!r.output.empty()) out += "replayed trace: " + r.output + "\n";
  out += function_outcome_text(r.functions, "");
  if (r.log_lost != 0)
    out += fmt::format("warning: {} replayed calls did not fit the log\n", r.log_lost);
  out += fmt::format("verdict: {}\n", r.verdict == 0   ? "faithful (0)"
                                      : r.verdict == 1 ? "deviations or stopped (1)"
                                                       : "refused (2)");
  return out;
}

namespace {

void launches_json(JsonWriter& w, const replay::ReplayReport& r) {
  w.key("launches").begin_array();
  for (const auto& l : r.launches) {
    const rp_log_launch& x = l.launch;
    w.begin_object().kv("seq", l.seq).kv_hex("channel", x.channel).kv_hex("class", x.cls);
    w.kv_or_null("kernel", l.kernel ? l.kernel->name : std::string());
    w.kv_or_null("image", l.kernel ? l.kernel->image : std::string());
    w.kv_hex("program", x.program).kv_hex("qmd", x.qmd_va);
    w.kv("qmd_version", fmt::format("{:02}_{:02}", x.qmd_major, x.qmd_minor));
    w.key("grid").begin_array().value(x.grid[0]).value(x.grid[1]).value(x.grid[2]).end_array();
    w.key("block").begin_array().value(x.block[0]).value(x.block[1]).value(x.block[2]).end_array();
    w.kv("shared_bytes", x.shared_bytes).kv("registers", x.registers);
    w.kv_hex("cb0", x.cb0_va).kv("cb0_size", x.cb0_size);
    w.key("params");
    if (l.kernel) {
      w.begin_array();
      for (const auto& p : l.params) {
        w.begin_object().kv("ordinal", p.ordinal).kv_hex("offset", p.offset).kv("size", p.size);
        w.kv("bytes", to_hex(ByteView(p.bytes.data(), p.bytes.size())));
        w.key("value");
        p.value ? w.value(*p.value) : w.null();
        w.end_object();
      }
      w.end_array();
    } else {
      w.null();
    }
    w.end_object();
  }
  w.end_array();
  w.kv("executed", false).kv("execute", r.execute);
  const rp_compute_stats& c = r.compute;
  w.key("compute").begin_object().kv("launches", c.launches).kv("null_grids", c.null_grids);
  w.kv("releases", c.releases).kv("lost", c.lost).kv("inline_bytes", c.i2m_bytes);
  w.kv("dependents_unread", c.deps_unread).kv("block_linear_bytes", c.block_linear);
  w.kv("stopped", c.stopped).end_object();
  const rp_vidmem_stats& v = r.vidmem;
  w.key("vidmem").begin_object().kv("cap_bytes", v.cap_bytes).kv("backed_bytes", v.backed_bytes);
  w.kv("ranges", v.ranges).kv("dropped_bytes", v.dropped_bytes);
  w.kv("dropped_writes", v.dropped_writes).kv("ranges_refused", v.ranges_refused).end_object();
  w.key("images").begin_array();
  for (const auto& i : r.images) w.value(i);
  w.end_array();
}

}  // namespace

std::string render_replay_json(const replay::ReplayReport& r) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.kv("schema", "cudatool.replay/1")
      .kv("trace", r.trace)
      .kv_or_null("driver_version", r.driver_version)
      .kv_or_null("libcuda_version", r.libcuda_version);
  w.key("argv").begin_array();
  for (const auto& a : r.argv) w.value(a);
  w.end_array();
  w.kv("environment", r.environment).kv("environment_calls", r.env_calls);
  auto list = [&](std::string_view k, const std::vector<std::string>& v) {
    w.key(k).begin_array();
    for (const auto& s : v) w.value(s);
    w.end_array();
  };
  list("synthesized", r.synthesized);
  list("gaps", r.gaps);
  list("injected", r.injected);
  w.kv("recorded_calls", r.recorded_calls)
      .kv("answered", r.answered)
      .kv("replayed_calls", r.replayed_calls);
  w.key("by_outcome").begin_object();
  for (int k = 0; k < 7; ++k) w.kv(replay::outcome_name(static_cast<Outcome>(k)), r.by_outcome[k]);
  w.end_object();
  w.key("deviations").begin_array();
  for (const Deviation& d : r.deviations) {
    w.begin_object().kv("kind", replay::deviation_kind_name(d.kind));
    if (d.kind == replay::DeviationKind::kUnrecorded ||
        d.kind == replay::DeviationKind::kOutOfOrder) {
      w.kv("outcome", replay::outcome_name(d.outcome));
    } else {
      w.key("outcome").null();
    }
    w.key("replay_seq");
    d.replay_seq ? w.value(*d.replay_seq) : w.null();
    w.key("recorded_seq");
    d.recorded_seq ? w.value(*d.recorded_seq) : w.null();
    w.kv("count", d.count).kv("what", d.what).kv_or_null("call", d.call);
    w.kv_or_null("answer", d.answer);
    w.end_object();
  }
  w.end_array();
  w.kv("end", replay::replay_end_name(r.end))
      .kv("exit_status", r.exit_status)
      .kv_or_null("refusal", r.refusal);
  write_crash_json(w, r.crash, r.crash_note);
  w.key("stall");
  if (r.stall) {
    w.begin_object().kv("idle_s", r.stall->idle_s).kv("message", r.stall->message);
    w.key("threads").begin_array();
    for (const auto& t : r.stall->threads) {
      w.begin_object().kv("tid", t.tid).kv_hex("pc", t.pc).kv_or_null("module", t.module);
      w.kv_hex("offset", t.offset)
          .kv_or_null("function", t.function)
          .kv("from_stack", t.from_stack);
      w.end_object();
    }
    w.end_array();
    w.key("waits").begin_array();
    for (const auto& x : r.stall->waits) {
      w.begin_object().kv_hex("gpu_va", x.gpu_va).kv_hex("payload", x.payload);
      w.kv_hex("channel", x.channel_handle).kv_hex("engine_class", x.engine_class).end_object();
    }
    w.end_array();
    w.end_object();
  } else {
    w.null();
  }
  w.key("fake_gpu").begin_object().kv("gpfifo_entries", r.gpu_entries);
  w.kv("semaphore_releases", r.gpu_releases);
  w.kv("mappings", r.gpu_maps).kv("mappings_known", r.gpu_maps_known);
  w.kv("launches_reached", r.gpu_launches);
  launches_json(w, r);
  w.key("unfinished").begin_array();
  static constexpr const char* kStops[] = {"idle", "acquire", "launch", "unmapped", "compute"};
  for (const auto& u : r.unfinished) {
    const rp_channel_state& c = u.channel;
    w.begin_object().kv_hex("channel", c.handle).kv_hex("class", c.cls);
    w.kv("stop", c.stop < 5 ? kStops[c.stop] : "?").kv("pending_entries", c.pending);
    w.kv("launches", c.launches);
    w.key("acquire");
    if (c.stop == RP_CH_ACQUIRE || c.stop == RP_CH_COMPUTE) {
      w.begin_object().kv_hex("gpu_va", c.sem_va).kv_hex("want", c.want).kv_hex("value", c.value);
      w.kv("operation", replay::acquire_op_name(c.acq_op)).end_object();
    } else {
      w.null();
    }
    w.kv("message", u.message).end_object();
  }
  w.end_array().end_object();
  w.kv("processes", r.processes).kv("log_lost", r.log_lost).kv_or_null("output", r.output);
  write_function_outcome_json(w, r.functions);
  w.kv("wall_s", r.wall_s).kv("verdict", r.verdict);
  w.end_object();
  w.finish();
  return out;
}

std::string render_bisect_text(const replay::BisectReport& r) {
  std::string out = fmt::format("bisect: GOOD {} / BAD {}\n  command: {}\n  fails as BAD: {}\n",
                                r.good, r.bad, command_line(r.argv), r.criterion);
  out += fmt::format("{} of BAD's answers differ from GOOD's:\n", r.diffs.size());
  for (size_t i = 0; i < r.diffs.size() && i < kMaxListed; ++i) {
    const auto& d = r.diffs[i];
    out += fmt::format("  [{}] GOOD #{} / BAD #{} {}: {}\n", i, d.good_seq, d.bad_seq, d.what,
                       d.change.empty() ? d.kind : d.change);
  }
  if (r.diffs.size() > kMaxListed) out += fmt::format("  … {} more\n", r.diffs.size() - kMaxListed);
  out += fmt::format("{} tries:\n", r.tries.size());
  for (const auto& t : r.tries) {
    std::string set;
    if (t.subset.size() == r.diffs.size() && !t.subset.empty()) {
      set = "all";
    } else if (t.subset.empty()) {
      set = "none";
    } else {
      for (uint32_t k : t.subset) set += fmt::format("{}{}", set.empty() ? "" : ",", k);
    }
    out += fmt::format("  {:>5} BAD's answers [{}] → {} {}{} ({:.2f} s)\n",
                       t.failed ? "fails" : "ok", set, replay::replay_end_name(t.end),
                       t.exit_status, t.crash.empty() ? "" : ", " + t.crash, t.wall_s);
  }
  out += (r.found ? "culprit: " : "no culprit: ") + r.message + "\n";
  return out;
}

std::string render_bisect_json(const replay::BisectReport& r) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().kv("schema", "cudatool.replay-bisect/1").kv("good", r.good).kv("bad", r.bad);
  w.key("argv").begin_array();
  for (const auto& a : r.argv) w.value(a);
  w.end_array();
  w.kv("criterion", r.criterion).kv("criterion_kind", r.criterion_kind);
  if (r.departure) {
    w.kv("departure", *r.departure);
  } else {
    w.key("departure").null();
  }
  w.key("bad_crash");
  if (r.bad_crash) {
    w.begin_object().kv("signal", r.bad_crash->signal).kv("function", r.bad_crash->function);
    w.kv("where", r.bad_crash->where).end_object();
  } else {
    w.null();
  }
  w.key("diffs").begin_array();
  for (const auto& d : r.diffs) {
    w.begin_object().kv("good_seq", d.good_seq).kv("bad_seq", d.bad_seq).kv("kind", d.kind);
    w.kv("what", d.what).kv_or_null("change", d.change).end_object();
  }
  w.end_array();
  w.key("tries").begin_array();
  for (const auto& t : r.tries) {
    w.begin_object().key("subset").begin_array();
    for (uint32_t k : t.subset) w.value(k);
    w.end_array()
        .kv("failed", t.failed)
        .kv("end", replay::replay_end_name(t.end))
        .kv("exit_status", t.exit_status);
    w.kv_or_null("crash", t.crash);
    w.kv("wall_s", t.wall_s).end_object();
  }
  w.end_array();
  w.key("culprit").begin_array();
  for (uint32_t k : r.culprit) w.value(k);
  w.end_array();
  w.kv("found", r.found).kv("message", r.message).kv("wall_s", r.wall_s);
  w.end_object();
  w.finish();
  return out;
}

}  // namespace cudatool::cli
