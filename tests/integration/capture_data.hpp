// The real captures of tests/data/captures (H200, driver 580.159.04), read independently of
// cudatool (xz + nlohmann::json; captures_dir() and read_capture() are in harness.hpp), and the
// rule for control commands NVIDIA does not publish. Shared by rm_capture_test.cpp and
// decode_test.cpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rm/tables.hpp"

namespace cudatool::test {

// The driver version the captures' README names ("580.159.04"); "" when it names none.
std::string capture_driver_version();
// Every line of a capture as JSON (a test failure, and nothing, when the file is missing).
std::vector<nlohmann::json> capture_lines(const std::string& name);

// Why a control command id is (or is not) named by a branch's tables.
enum class ControlNaming {
  kNamed,
  // Not in NVIDIA's open sources: a "GSS legacy" command (the RM_GSS_LEGACY_MASK bit 0x8000 of
  // src/nvidia/interface/deprecated/rmapi_deprecated.h; RM forwards it to GSP without knowing
  // it) or one of an interface in which no release defines any command (NV2081_BINAPI).
  kUnpublished,
  kMissing,  // its interface is published: the tables should name it (a defect)
};
ControlNaming control_naming(const rm::Tables& t, uint32_t cmd);

}  // namespace cudatool::test
