#include "cli/common.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "analysis/find_library.hpp"

namespace cudatool::cli {

std::unique_ptr<DriverImage> open_library(const std::string& path) {
  std::string p = path;
  if (p.empty()) {
    auto found = find_system_library("libcuda.so.1");
    if (!found) {
      print_error(
          "no LIB given and no libcuda.so.1 found (LD_LIBRARY_PATH, /etc/ld.so.cache, default "
          "directories); pass the path of a libcuda build, e.g. tools/fetch-drivers.sh then "
          "~/.cache/cudatool/drivers/libcuda.so.550.163.01");
      return nullptr;
    }
    fmt::print(stderr, "cudatool: using {} -> {} (found via {})\n", found->path, found->resolved,
               found->how);
    p = found->path;
  }
  auto img = DriverImage::open(p);
  if (!img) {
    print_error(img.error());
    // A trace or capture given where a library was expected: say which commands read it.
    char head[32] = {};
    if (std::FILE* f = std::fopen(p.c_str(), "rb")) {
      size_t n = std::fread(head, 1, sizeof head - 1, f);
      std::fclose(f);
      std::string_view h(head, n);
      if (h.starts_with("{\"cudatool_trace\"")) {
        fmt::print(stderr,
                   "cudatool: hint: {} is a cudatool trace; read it with decode, stats, export "
                   "or ab\n",
                   p);
      } else if (h.starts_with("{")) {
        fmt::print(stderr,
                   "cudatool: hint: {} looks like JSON lines; a capture is converted with "
                   "`cudatool import`, then read with decode, stats, export or ab\n",
                   p);
      }
    }
    return nullptr;
  }
  return std::move(*img);
}

int report_diagnostics(const Diagnostics& diag) {
  for (const auto& e : diag.items()) fmt::print(stderr, "cudatool: warning: {}\n", e.message());
  if (diag.count() > diag.items().size()) {
    fmt::print(stderr, "cudatool: warning: … and {} more problems\n",
               diag.count() - diag.items().size());
  }
  return diag.empty() ? kExitOk : kExitBadInput;
}

void print_error(const Error& e) {
  print_error(e.message());
}

void print_error(std::string_view message) {
  fmt::print(stderr, "cudatool: error: {}\n", message);
}

void emit(std::string_view text) {
  const char* p = text.data();
  size_t n = text.size();
  while (n > 0) {
    ssize_t w = ::write(STDOUT_FILENO, p, n);
    if (w <= 0) return;  // a closed pipe (| head) ends output quietly
    p += w;
    n -= static_cast<size_t>(w);
  }
}

TextTable::TextTable(std::vector<std::string> headers, std::vector<bool> right_align)
    : headers_(std::move(headers)), right_(std::move(right_align)) {
  right_.resize(headers_.size(), false);
}

void TextTable::add(std::vector<std::string> row) {
  row.resize(headers_.size());
  rows_.push_back(std::move(row));
}

std::string TextTable::render(std::string_view indent) const {
  std::vector<size_t> w(headers_.size(), 0);
  for (size_t i = 0; i < headers_.size(); ++i) w[i] = headers_[i].size();
  for (const auto& r : rows_) {
    for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    out += indent;
    for (size_t i = 0; i < r.size(); ++i) {
      bool last = i + 1 == r.size();
      if (right_[i]) {
        out.append(w[i] - r[i].size(), ' ');
        out += r[i];
      } else {
        out += r[i];
        if (!last) out.append(w[i] - r[i].size(), ' ');
      }
      if (!last) out += "  ";
    }
    out += '\n';
  };
  line(headers_);
  for (const auto& r : rows_) line(r);
  return out;
}

std::string hex(uint64_t v) {
  return fmt::format("{:#x}", v);
}

bool usable_output(std::string_view option, const std::string& output,
                   std::initializer_list<std::string_view> inputs) {
  if (output == "-") return true;
  if (output.empty()) {
    print_error(fmt::format("{}: an empty path", option));
    return false;
  }
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) {
    // Not there yet: its directory must be.
    std::string dir = output.substr(0, output.find_last_of('/') + 1);
    if (dir.empty()) dir = ".";
    struct stat d {};
    if (::stat(dir.c_str(), &d) != 0 || !S_ISDIR(d.st_mode)) {
      print_error(fmt::format("{} {}: cannot write: no directory {}", option, output, dir));
      return false;
    }
    return true;
  }
  if (S_ISDIR(out.st_mode)) {
    print_error(fmt::format("{} {}: is a directory; name a file", option, output));
    return false;
  }
  for (std::string_view in : inputs) {
    struct stat i {};
    if (in.empty() || ::stat(std::string(in).c_str(), &i) != 0) continue;
    if (i.st_dev == out.st_dev && i.st_ino == out.st_ino) {
      print_error(
          fmt::format("{} {}: is the input {} (writing it would destroy it); write "
                      "elsewhere",
                      option, output, in));
      return false;
    }
  }
  return true;
}

std::string human_size(uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < 1024ULL * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
}

}  // namespace cudatool::cli
