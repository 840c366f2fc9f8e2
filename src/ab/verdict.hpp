// The verdict of an A/B comparison (docs/ab.md): the first divergence, what each program did after
// it (a teardown, how it ended), whether one run stopped early — the few lines a person reads
// before any list — and the CUDA API call in progress on each side when the traces can name it
// (NormalizeOptions::api_namer). No printing: the text comes back as lines.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ab/compare.hpp"

namespace cudatool::ab {

// What one run did from the first divergence on (its own diverging call excluded).
struct Aftermath {
  uint32_t events = 0;  // its events after the first divergence
  // Every one of them releases something (RM frees and unmaps, UVM_DEINITIALIZE, UVM_FREE and the
  // other UVM unregistrations, closes, munmaps, exits): the program was tearing down.
  bool teardown = false;
  // Its calls by name, in order of first occurrence ("NV_ESC_RM_FREE" ×3, "UVM_DEINITIALIZE" ×1).
  std::vector<std::pair<std::string, uint32_t>> calls;
  uint32_t total = 0;  // events in the whole run
  // How the recording ended (the trailer); absent when the trace has none.
  std::optional<std::string> end_reason;  // "exit", "signal", "import", …
  std::optional<int> exit_status;         // none: not known (an import without --exit-status)
  std::string api;  // the API call in progress at the first divergence; "" when not known
};

// A run that stopped early: from the first divergence on, more of the other run's calls have no
// partner in it than it made calls itself — or, later than the first divergence, the alignment
// ends with calls of the other run only (a program that stopped after context creation against
// a whole run). Its not-made calls are one finding, not one divergence each.
struct EarlyEnd {
  bool b_stopped = true;  // B stopped (A's calls were not made); false: A stopped
  bool later = false;     // it stopped after the first divergence: the alignment's tail
  // Index, in the run that went on, of its last event before the calls that were not made: the
  // first divergence's own event there, or the one before it (later: the last event with a
  // partner); kNone when there is none.
  uint32_t after = kNone;
  uint32_t remaining = 0;   // that run's events after `after`
  uint32_t not_made = 0;    // of them, those with no partner in the run that stopped
  uint32_t from_entry = 0;  // the entry (Comparison::entries) the not-made calls start at
};

struct Verdict {
  // The first divergence with consequences (below); null when none has any: the runs are
  // equivalent, or only answers differed.
  const Divergence* first = nullptr;
  // Answer differences without visible consequence before `first` (every divergence when it is
  // null): listed under it, not the verdict.
  std::vector<const Divergence*> quiet;
  // Per divergence (Comparison::divergences' order): whether it has consequences — a call made
  // in one run only, another status or return, a call the program asked differently — or is an
  // answer difference that the runs part at (no call matched between it and the next such
  // divergence). The other answer differences (configuration: floorsweeping masks, clocks,
  // memory sizes) have no visible consequence.
  std::vector<uint8_t> consequence;
  Aftermath a, b;
  std::optional<EarlyEnd> early_end;
  std::array<size_t, 5> counts{};  // every divergence, by Kind
  std::array<size_t, 5> shown{};   // the same without the early end's not-made calls
};

Verdict make_verdict(const Comparison& c);

// Whether divergence `d` is one of the not-made calls of the early end.
bool not_made(const Verdict& v, const Divergence& d);

// "A #44 / B #44" (", thread 1" with several threads; "(seq N)" where seq is not the index).
std::string divergence_place(const Comparison& c, const Divergence& d);

// The verdict for people, one string per line:
//   first divergence: different status: A #44 / B #44
//     NV_ESC_RM_CONTROL NV2080_CTRL_CMD_FB_GET_INFO_V2 c1/80#0/2080#0 … → A: NV_OK  B: NV_ERR_…
//       arg.status (out): NV_OK → NV_ERR_NOT_SUPPORTED
//     during cuDevicePrimaryCtxRetain
//   then B tore down (3 frees, UVM_DEINITIALIZE) and ended after 49 events (exit status 1);
//   A made 708 more calls.
//   B ends after A #44: A's remaining 708 calls were not made
// `ascii`: "->" for arrows (JSON output writes bytes outside ASCII as \u00XX).
std::vector<std::string> verdict_lines(const Comparison& c, const Verdict& v, bool ascii = false);

// Whether divergence `d` (one of c.divergences) has consequences (Verdict::consequence).
bool has_consequence(const Comparison& c, const Verdict& v, const Divergence& d);

// "A #68 / B #68 NV_ESC_RM_CONTROL NV2080_CTRL_CMD_GR_GET_TPC_MASK c1/80#0/2080#0 on
// /dev/nvidiactl#1: params.tpcMask (out) 0x1ff → 0x1bf": a divergence in one line.
std::string divergence_line(const Comparison& c, const Divergence& d, bool ascii = false);

// "5 divergences (1 different_status, 4 different_parameters); B ended early: 704 of A's calls
// not made".
std::string count_line(const Verdict& v);

// A count of calls of one name, as the verdict lists them: "3 frees" (NV_ESC_RM_FREE), "2 closes",
// "1 dup", "UVM_DEINITIALIZE" (one), "2 NV_ESC_RM_UNMAP_MEMORY".
std::string counted(std::string_view call, uint64_t n);

}  // namespace cudatool::ab
