// How the CUDA driver API names its entry points: `cu<Domain><Verb…>[_vN][_ptsz|_ptds]`.
//
// `_vN`: a revised ABI of the same call (cuCtxCreate_v2 → _v3 …), kept side by side.
// `_ptsz` / `_ptds`: the per-thread default-stream variants selected by
// CUDA_API_PER_THREAD_DEFAULT_STREAM (ptsz: calls taking a stream; ptds: calls without one).
// Both are named in cuda.h's `#define cuXxx cuXxx_v2` and `__CUDA_API_PTDS/PTSZ` macros.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cudatool::cuda {

enum class StreamVariant : uint8_t { kNone, kPtsz, kPtds };
std::string_view variant_name(StreamVariant v);  // "", "ptsz", "ptds"

struct ApiName {
  std::string_view base;  // "cuMemcpyHtoDAsync"
  uint32_t version = 0;   // N of _vN; 0 when absent (the original ABI)
  StreamVariant variant = StreamVariant::kNone;
  std::string_view domain;     // "Memcpy", "Ctx", "Graph", … (see api_name.cpp for the rules)
  bool is_driver_api = false;  // cu<Upper>… (not cudbg*, not other symbols)
};

ApiName parse_api_name(std::string_view symbol);

}  // namespace cudatool::cuda
