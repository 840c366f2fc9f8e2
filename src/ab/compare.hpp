// A/B comparison of two normalised traces (docs/ab.md): threads matched by role, each thread's
// events aligned (ab/align.hpp), the alignments merged into one order, and every step that is
// not a match classified as a divergence — missing call, extra call, different status,
// different parameters (with the members that differ), different return.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ab/align.hpp"
#include "ab/known.hpp"
#include "ab/normalize.hpp"

namespace cudatool::ab {

enum class Kind : uint8_t { kMissing, kExtra, kStatus, kParameters, kReturn };
// "missing_call", "extra_call", "different_status", "different_parameters", "different_return"
std::string_view kind_name(Kind k);
// "missing call", … for people.
std::string_view kind_title(Kind k);

// One member that differs between the two events of a changed call.
struct FieldDiff {
  std::string field;  // "status", "params.numClasses", "params.gpuIds[2]", "arg+0x1c", "ret"
  std::string side;   // "in" (before the call), "out" (after), "" for ret, errno, fd
  std::string a, b;   // values as text: symbols, names of statuses/classes/controls, hex
};

// A step of the merged alignment.
struct Entry {
  Op op;
  uint32_t a;  // event index in A (kNone when absent)
  uint32_t b;  // event index in B (kNone when absent)
};

struct Divergence {
  Kind kind;
  uint32_t entry;  // index into Comparison::entries
  uint32_t a, b;   // as in the entry
  std::vector<FieldDiff> fields;
  // Only what came back differs: different parameters, every member that differs an output
  // ("out"). Such an answer difference has a consequence only where the runs part (ab/verdict.hpp).
  bool answer = false;
};

// A difference of the recordings themselves, reported before any divergence.
struct HeaderNote {
  // "driver", "gpu", "driver_branch", "command", "mode", "environment", "host", "kernel"
  std::string what;
  std::string a, b;
  bool serious;  // different drivers or GPUs: the comparison itself is in question
  std::string message;
};

struct CompareOptions {
  AlignOptions align;
  // Known differences to hide once the comparison is made (--ignore, --expect: ab/known.hpp).
  std::vector<KnownDifference> known;
};

// Correspondence of names between A and B, learned along the merged alignment: the names two
// aligned calls hold at the same place correspond, unless one of them already corresponds to
// another name. So an object created by a pair of aligned calls keeps its correspondence even
// when the two traces named it differently (an earlier missing or extra creation shifted an
// ordinal), and a later call on another object is still a divergence.
class SymbolMap {
 public:
  // Whether A's `a` and B's `b` are the same name; learns the pair when neither is known yet.
  bool same(uint64_t a, uint64_t b);
  // A's name for B's `b`, if they correspond.
  [[nodiscard]] const uint64_t* a_of(uint64_t b) const;

 private:
  std::unordered_map<uint64_t, uint64_t> ab_, ba_;
};

// Display names: A's names as they are; B's names as A calls the corresponding name, and
// "B:<name>" for names with no counterpart in A.
struct Namer {
  const NormalizedTrace& t;
  const NormalizedTrace* a = nullptr;  // set for B
  const SymbolMap* map = nullptr;      // set for B
  [[nodiscard]] std::string operator()(uint64_t sym) const;
  [[nodiscard]] std::string describe(const Subst& s) const;
};

struct Comparison {
  const NormalizedTrace* a = nullptr;
  const NormalizedTrace* b = nullptr;
  SymbolMap symbols;
  std::vector<HeaderNote> notes;
  std::vector<Entry> entries;           // merged order
  std::vector<Divergence> divergences;  // in merged order
  uint32_t threads_a = 0, threads_b = 0;
  // Events left out because the other trace's recording could not hold them (the notes say
  // which): exits only ptrace mode records, environment events outside the other's env globs.
  uint32_t left_out_a = 0, left_out_b = 0;
  uint64_t left_out_bytes_a = 0;  // the bytes of A's left-out events (not compared)
  AlignStats stats;
  // CompareOptions::known, with what each hid (a "known" note says it).
  std::vector<KnownDifference> known;

  [[nodiscard]] bool equivalent() const { return divergences.empty(); }
  [[nodiscard]] Namer namer_a() const { return Namer{*a}; }
  [[nodiscard]] Namer namer_b() const { return Namer{*b, a, &symbols}; }
};

Comparison compare(const NormalizedTrace& a, const NormalizedTrace& b,
                   const CompareOptions& options = {});

// A call that releases what a program set up (RM frees and unmaps, NV_ESC_FREE_OS_EVENT,
// UVM_DEINITIALIZE, UVM_FREE and the other UVM unregistrations and releases, closes, munmaps,
// exits): a program that makes only these is tearing down.
bool is_teardown_call(const NormEvent& e);

// Divergence::answer for a divergence of this kind with these members.
bool answer_only(Kind kind, const std::vector<FieldDiff>& fields);

// Hides the divergences, and the members of divergences, that `known` names (known.cpp); each
// entry counts what it hid, and a "known" note says it. compare() calls it with
// CompareOptions::known.
void apply_known(Comparison& c, std::vector<KnownDifference> known);

// Whether two events of the same call are equal under the correspondence of names (learning
// pairs met for the first time).
bool same_event(const NormalizedTrace& ta, const NormEvent& a, const NormalizedTrace& tb,
                const NormEvent& b, SymbolMap& map);

// The members that differ between two events of the same call (describe.cpp); names compared
// through `map`.
std::vector<FieldDiff> diff_events(const NormalizedTrace& ta, const NormEvent& a,
                                   const NormalizedTrace& tb, const NormEvent& b, SymbolMap& map);

// The GPUs a trace names, one line each: "gpu#0: GPU-5b57e3bf-3ef8-9827-e2df-30d462191363 at
// 0000:00:06.0, id 0x6, board 0x6, NVIDIA H200" (ordinals per kind of value: ab/identity.hpp).
std::vector<std::string> gpu_lines(const NormalizedTrace& t);

// One line for people: "NV_ESC_RM_CONTROL NV2080_CTRL_CMD_GPU_GET_INFO_V2 c0/80#0/2080#0 on
// /dev/nvidiactl#0 → NV_OK".
// `ascii`: "->" for the arrow (JSON output writes bytes outside ASCII as \u00XX).
std::string summarize(const Namer& names, const NormEvent& e, bool ascii = false);
// Names from the trace's driver tables: "" when the value has none.
std::string_view control_name(const NormEvent& e);
std::string_view class_name(const NormEvent& e);
std::string_view status_name(const NormEvent& e);

}  // namespace cudatool::ab
