// Internal to replay/: the pieces of a replay session (session.cpp) that work on its results.
#pragma once

#include <sys/types.h>

#include "replay/environment.hpp"
#include "replay/session.hpp"

namespace cudatool::replay {

// What a program that stopped making progress is doing: each thread's pc (and the libcuda frame
// nearest the top of its stack), and the semaphores the fake GPU could not release. report.cpp.
void inspect_stall(pid_t pid, const Recording& rec, const rp_state& state, Stall& out);

// Fills the report from the log and the shared state (`answered`: one byte per table event).
void build_report(const Recording& rec, const AnswerTable& table, const ReplayLog& log,
                  const rp_state& state, const uint8_t* answered, const Environment& env,
                  ReplayReport& rep);

// The compute launches the fake GPU logged, their kernels named among the CUDA images the program
// opened and their parameters cut by the kernel's layout. launch_report.cpp.
void add_launches(const ReplayLog& log, ReplayReport& rep);

}  // namespace cudatool::replay
