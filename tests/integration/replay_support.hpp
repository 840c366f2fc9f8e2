// Helpers of the replay tests: run `cudatool replay` with a JSON report, and check that nothing
// named /dev/nvidia* appeared on the host while it ran.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "harness.hpp"

namespace cudatool::test {

struct ReplayRun {
  RunResult run;          // the program's stdout and cudatool's stderr
  nlohmann::json report;  // cudatool.replay/1 (null when none was written)
};

// cudatool replay TRACE [extra...] --json --report FILE -- command...
ReplayRun replay(const std::string& trace, const std::vector<std::string>& extra,
                 const std::vector<std::string>& command, int timeout_s = 120);

// build/cuda_probe (tools/cuda_probe): the driver-API program README.md and docs/ run.
std::string cuda_probe_bin();

// The names under /dev that begin with "nvidia" (and /dev/char entries for major 195).
std::set<std::string> host_nvidia_nodes();

// Every line of a program's output that is a JSON object (load_printed keeps only "sys" lines).
std::vector<nlohmann::json> json_lines(const std::string& out);

// Deviations of a report with the given kind ("unrecorded", "skipped", …).
std::vector<nlohmann::json> deviations(const nlohmann::json& report, const std::string& kind);

}  // namespace cudatool::test
