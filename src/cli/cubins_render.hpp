// Printing for `cudatool cubins`: the JSON document (schema cudatool.cubins/1, also the index
// that --extract writes), the summary, and the text tables.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/embedded_images.hpp"

namespace cudatool::cli {

struct CubinsView {
  std::string path;
  uint64_t file_size = 0;
  const EmbeddedImages* scan = nullptr;
  std::vector<const EmbeddedImage*> shown;  // after --arch
  std::string arch_filter;
  std::map<uint32_t, std::string> files;  // image index -> extracted file name (--extract)
  const Diagnostics* diag = nullptr;
};

// One row of --summary: images of one architecture and kind.
struct SummaryRow {
  std::string arch;
  std::string kind;
  uint64_t images = 0;
  uint64_t bytes = 0;    // stored bytes in the file
  uint64_t kernels = 0;  // functions of the decoded ELF images
};
std::vector<SummaryRow> summarize(const std::vector<const EmbeddedImage*>& images);

std::string render_cubins_json(const CubinsView& v);
std::string render_summary_json(const CubinsView& v);
std::string render_cubins_text(const CubinsView& v, bool kernels, bool sections, bool rejected);
std::string render_summary_text(const CubinsView& v);

}  // namespace cudatool::cli
