// Capstone's decoding of one instruction as a StubInsn (stub_insn.hpp): the reference the fast
// decoder is held to, for code that already has Capstone's answer (the whole-text test).
#pragma once

#include <capstone/capstone.h>

#include "cuda/stub_insn.hpp"

namespace cudatool::cuda {

// `insn` decoded by `handle` with CS_OPT_DETAIL on.
StubInsn stub_insn_from_capstone(csh handle, const cs_insn& insn);

}  // namespace cudatool::cuda
