// Sequence alignment of two event streams given as hashes (ab/normalize.hpp): `full` says two
// events are the same, `shape` that they are the same but for the names of handles, pointers and
// fds, `input` that they are the same request (the same call on the same objects with the same
// input bytes: only what came back differs), `key` that they are the same call (so a pair with
// equal keys and unequal full hashes is one changed call, not a missing and an extra one).
//
// Not quadratic for mostly-equal streams: the common prefix and suffix are matched first; the
// rest is split at anchors — events whose shape (else full hash, else key) occurs exactly once in
// each side, longest increasing subsequence of them, as in patience diff; gaps small enough
// (rows × columns ≤ max_dp_cells) get an exact minimum-cost alignment (match 0, same shape 1,
// same request 10, changed call 100, missing or extra call 100: names shifted by an earlier
// missing creation do not outweigh one missing call, and a call whose inputs agree is a better
// partner than one with other inputs), and larger gaps without anchors a greedy walk with bounded
// look-ahead. Of alignments of equal cost the exact one takes the one that pairs calls earliest:
// a changed call is paired with its partner at the same place in the conversation, not with a
// later call of the same kind.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cudatool::ab {

enum class Op : uint8_t {
  kMatch,    // same event in A and B
  kChange,   // same call, something compared differs
  kMissing,  // in A only
  kExtra,    // in B only
};

inline constexpr uint32_t kNone = UINT32_MAX;

struct Step {
  Op op;
  uint32_t a;  // index into A's sequence, kNone for kExtra
  uint32_t b;  // index into B's sequence, kNone for kMissing
};

struct AlignOptions {
  uint64_t max_dp_cells = uint64_t{1} << 22;  // exact alignment of a gap up to this many cells
  int max_depth = 48;                         // anchor recursion depth before the greedy walk
  uint32_t lookahead = 64;                    // greedy walk: how far to look for a match
};

struct AlignStats {
  uint64_t matched_ends = 0;   // events matched as common prefix or suffix
  uint64_t anchors = 0;        // unique events used to split gaps
  uint64_t dp_cells = 0;       // cells of exact alignments
  uint64_t greedy_events = 0;  // events placed by the greedy walk
};

// The hashes of one sequence; the spans have the same length (`input` may be empty: then no pair
// counts as the same request).
struct Hashes {
  std::span<const uint64_t> key, shape, full;
  std::span<const uint64_t> input = {};
  // Per event, whether it is a teardown call (ab::is_teardown_call); empty: not known. A run's
  // teardown after it stopped early is not paired with the other run's calls far on.
  std::span<const uint8_t> teardown = {};
};

// Steps in order of both sequences.
std::vector<Step> align(const Hashes& a, const Hashes& b, const AlignOptions& options = {},
                        AlignStats* stats = nullptr);

}  // namespace cudatool::ab
