// The .note.cuda.fwd_compatibility note of a library against readelf -n: what `cudatool info`
// reports must be what the descriptor bytes readelf dumps say, read here with a plain JSON parser
// under the keys libcuda 580.159.04 writes ("format", "CUDA version", "driver", "device").
// Shared by the fixture tests and the per-build tests on real libcuda builds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "harness.hpp"

namespace cudatool::test {

// Checks `cudatool info --json LIB` and the text of `cudatool info LIB` against readelf's view of
// the note (absent when readelf shows none). Test failures name the library.
void expect_note_matches_readelf(const std::string& lib);

// A note list as the descriptor writes it, expanded: integers, strings "N" or "a..b", or one
// string "1, 2, 7..14" (the forms the parser accepts).
nlohmann::json expand_note_list(const nlohmann::json& list);

}  // namespace cudatool::test
