// Printing the kernel-ABI surface (`cudatool abi`): text grouped by device and kind, JSON
// (cudatool.abi/1) and Markdown; shared by `abi OLD NEW` and the summary `delta` folds in.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/abi_layout.hpp"
#include "analysis/abi_surface.hpp"
#include "analysis/function_map.hpp"

namespace cudatool {
class JsonWriter;
}

namespace cudatool::cli {

// What traces say about a surface: the requests they hold (kind, value) with their counts.
struct AbiTraceFacts {
  std::vector<std::string> files;
  std::map<std::pair<AbiKind, uint32_t>, uint64_t> requests;
  [[nodiscard]] bool seen(AbiKind k, uint32_t v) const { return requests.contains({k, v}); }
};

// "nvidia" (RM and frontend escapes, controls, classes: /dev/nvidiactl and /dev/nvidiaN) or
// "nvidia-uvm".
std::string_view abi_device_name(AbiKind k);

std::string abi_text(const AbiSurface& s, const FunctionMap& map, const std::string& path,
                     const AbiTraceFacts* trace);
std::string abi_markdown(const AbiSurface& s, const FunctionMap& map, const std::string& path,
                         const AbiTraceFacts* trace);
void write_abi_json(JsonWriter& w, const AbiSurface& s, const FunctionMap& map,
                    const std::string& path, const AbiTraceFacts* trace);

// `abi OLD NEW`.
std::string abi_diff_text(const AbiDiff& d, const AbiSurface& a, const AbiSurface& b,
                          const std::string& old_path, const std::string& new_path);
std::string abi_diff_markdown(const AbiDiff& d, const AbiSurface& a, const AbiSurface& b,
                              const std::string& old_path, const std::string& new_path);
void write_abi_diff_json(JsonWriter& w, const AbiDiff& d, const AbiSurface& a, const AbiSurface& b);
// One line: "12 requests new (9 high), 3 gone, 4 layout changes (NV_CHANNEL_ALLOC_PARAMS …)".
std::string abi_diff_summary(const AbiDiff& d);

}  // namespace cudatool::cli
