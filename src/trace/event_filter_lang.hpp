// Internal to the --filter language (event_filter*.cpp): its fields, flags and name helpers.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace cudatool::trace::filter_detail {

// What a field holds and how its values are written.
enum class Type : uint8_t {
  kName,          // compared with globs (sys, call, device, path)
  kNameOrNumber,  // a named number: a name, a glob over names, or the number (status, class…)
  kNumber,        // unsigned, decimal or 0x… (tid, seq, handles, request)
  kSigned,        // ret
  kTime,          // ns, or with a unit: 1.5ms, 20us, 2s
};

enum FieldId : uint8_t {
  kSys,
  kCall,
  kCtrl,
  kClass,
  kStatus,
  kErrno,
  kDevice,
  kPath,
  kTid,
  kPid,
  kSeq,
  kFd,
  kT,
  kDur,
  kClient,
  kParent,
  kObject,
  kHandle,
  kRequest,
  kRet,
  kApi,  // the CUDA API call in progress (from the event's stack; given by the caller)
  kOp,   // environment events: the call as the program made it ("stat", "__xstat", "fopen", …)
};

struct FieldDef {
  std::string_view name;
  FieldId id;
  Type type;
};
inline constexpr std::array kFields{
    FieldDef{"sys", kSys, Type::kName},
    FieldDef{"call", kCall, Type::kName},
    FieldDef{"escape", kCall, Type::kName},
    FieldDef{"ctrl", kCtrl, Type::kNameOrNumber},
    FieldDef{"control", kCtrl, Type::kNameOrNumber},
    FieldDef{"cmd", kCtrl, Type::kNameOrNumber},
    FieldDef{"class", kClass, Type::kNameOrNumber},
    FieldDef{"status", kStatus, Type::kNameOrNumber},
    FieldDef{"errno", kErrno, Type::kNameOrNumber},
    FieldDef{"device", kDevice, Type::kName},
    FieldDef{"path", kPath, Type::kName},
    FieldDef{"tid", kTid, Type::kNumber},
    FieldDef{"pid", kPid, Type::kNumber},
    FieldDef{"seq", kSeq, Type::kNumber},
    FieldDef{"fd", kFd, Type::kNumber},
    FieldDef{"t", kT, Type::kTime},
    FieldDef{"dur", kDur, Type::kTime},
    FieldDef{"client", kClient, Type::kNumber},
    FieldDef{"parent", kParent, Type::kNumber},
    FieldDef{"object", kObject, Type::kNumber},
    FieldDef{"handle", kHandle, Type::kNumber},
    FieldDef{"request", kRequest, Type::kNumber},
    FieldDef{"req", kRequest, Type::kNumber},
    FieldDef{"ret", kRet, Type::kSigned},
    FieldDef{"api", kApi, Type::kName},
    FieldDef{"op", kOp, Type::kName},
};

enum FlagId : uint8_t { kFailed, kUnknown, kNotes, kPartial };
struct FlagDef {
  std::string_view name;
  FlagId id;
};
inline constexpr std::array kFlags{FlagDef{"failed", kFailed}, FlagDef{"unknown", kUnknown},
                                   FlagDef{"notes", kNotes}, FlagDef{"partial", kPartial}};

inline constexpr std::string_view kFieldList =
    "sys, call (escape), ctrl (control, cmd), class, status, errno, device, path, tid, pid, seq, "
    "fd, t, dur, client, parent, object, handle, request (req), ret, api, op";
inline constexpr std::string_view kFlagList = "failed, unknown, notes, partial";
inline constexpr std::array<std::string_view, 8> kDeviceNames{
    "nvidiactl", "gpu", "uvm", "uvm-tools", "modeset", "caps", "nvidia-other", "unknown"};
inline constexpr int kMaxDepth = 64;

inline char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
inline std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}
inline bool equal_ci(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}
inline bool is_glob(std::string_view s) {
  return s.find_first_of("*?[") != std::string_view::npos;
}

}  // namespace cudatool::trace::filter_detail
