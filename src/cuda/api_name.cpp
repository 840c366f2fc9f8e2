#include "cuda/api_name.hpp"

#include <array>
#include <cctype>
#include <utility>

namespace cudatool::cuda {
namespace {

bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Names whose first CamelCase word is a verb or otherwise not the subject: one list, longest
// prefix first wins. Everything else takes its first CamelCase word after "cu" as the domain
// (digits and a following 'D' stay with the word: cuMemcpy3DAsync → Memcpy, cuArray3DCreate →
// Array), which matches the module grouping of the CUDA Driver API reference.
constexpr std::array<std::pair<std::string_view, std::string_view>, 19> kDomainOverrides{{
    {"cuDevicePrimaryCtx", "PrimaryCtx"},
    {"cuGetProcAddress", "EntryPoint"},
    {"cuGetExportTable", "EntryPoint"},
    {"cuGetErrorName", "Error"},
    {"cuGetErrorString", "Error"},
    {"cuWaitExternalSemaphores", "External"},
    {"cuSignalExternalSemaphores", "External"},
    {"cuImportExternal", "External"},
    {"cuDestroyExternal", "External"},
    {"cuExternal", "External"},
    {"cuDevSm", "Green"},
    {"cuDevResource", "Green"},
    {"cuGreenCtx", "Green"},
    {"cuDriverGetVersion", "Version"},
    {"cuCtxFromGreenCtx", "Green"},
    {"cuMemAddress", "VirtualMemory"},
    {"cuMemGetAllocationGranularity", "VirtualMemory"},
    {"cuFlushGPUDirectRDMAWrites", "Flush"},
    {"cuStreamGetGreenCtx", "Green"},
}};

std::string_view first_word_domain(std::string_view rest) {
  // rest starts with an upper-case letter. An acronym (a run of capitals) is one word, ending
  // before the capital that starts the next word: cuGLMapBufferObject → GL, cuEGLStream… → EGL,
  // cuVDPAUGetDevice → VDPAU, cuIpcOpenMemHandle → Ipc.
  size_t i = 1;
  if (rest.size() > 1 && is_upper(rest[1])) {
    while (i < rest.size() && is_upper(rest[i])) ++i;
    if (i < rest.size() && rest[i] >= 'a' && rest[i] <= 'z') --i;
    return rest.substr(0, i);
  }
  while (i < rest.size() && !is_upper(rest[i]) && !is_digit(rest[i]) && rest[i] != '_') ++i;
  // Digits (and a dimension 'D') that follow stay out of the domain: cuMemcpy3DAsync → Memcpy.
  return rest.substr(0, i);
}

}  // namespace

std::string_view variant_name(StreamVariant v) {
  switch (v) {
    case StreamVariant::kPtsz:
      return "ptsz";
    case StreamVariant::kPtds:
      return "ptds";
    default:
      return "";
  }
}

ApiName parse_api_name(std::string_view sym) {
  ApiName a;
  std::string_view s = sym;
  if (s.size() > 5 && s.substr(s.size() - 5) == "_ptsz") {
    a.variant = StreamVariant::kPtsz;
    s.remove_suffix(5);
  } else if (s.size() > 5 && s.substr(s.size() - 5) == "_ptds") {
    a.variant = StreamVariant::kPtds;
    s.remove_suffix(5);
  }
  // _vN: digits after the last "_v".
  size_t us = s.rfind("_v");
  if (us != std::string_view::npos && us > 0 && us + 2 < s.size()) {
    bool digits = true;
    uint64_t n = 0;
    for (size_t i = us + 2; i < s.size(); ++i) {
      if (!is_digit(s[i])) {
        digits = false;
        break;
      }
      n = n * 10 + static_cast<uint64_t>(s[i] - '0');
      if (n > 0xffffffffULL) {
        digits = false;
        break;
      }
    }
    if (digits) {
      a.version = static_cast<uint32_t>(n);
      s = s.substr(0, us);
    }
  }
  a.base = s;
  if (s.size() >= 3 && s[0] == 'c' && s[1] == 'u' && is_upper(s[2])) {
    a.is_driver_api = true;
    for (const auto& [prefix, domain] : kDomainOverrides) {
      if (s.substr(0, prefix.size()) == prefix) {
        a.domain = domain;
        return a;
      }
    }
    a.domain = first_word_domain(s.substr(2));
  } else if (s.substr(0, 5) == "cudbg") {
    a.domain = "cudbg";
  } else {
    a.domain = "other";
  }
  return a;
}

}  // namespace cudatool::cuda
