#include "cli/common.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "analysis/find_library.hpp"
#include "base/json_writer.hpp"

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
        print_hint(
            fmt::format("{} is a cudatool trace; read it with decode, stats, export or ab", p));
      } else if (h.starts_with("{")) {
        print_hint(
            fmt::format("{} looks like JSON lines; a capture is converted with "
                        "`cudatool import`, then read with decode, stats, export or ab",
                        p));
      }
    }
    return nullptr;
  }
  return std::move(*img);
}

namespace {

// What --json keeps of the errors, hints and warnings printed (keep_json_errors).
struct JsonErrors {
  bool on = false;
  std::string command;
  std::vector<std::pair<std::string, Error>> errors;  // as printed, and its parts
  std::vector<std::string> hints, warnings;
};
JsonErrors& json_errors() {
  static JsonErrors j;
  return j;
}
bool stdout_written = false;

}  // namespace

DriverImage* open_library_until_exit(const std::string& path) {
  // Reachable from here until exit, so a leak checker does not count them.
  static auto* kept = new std::vector<std::unique_ptr<DriverImage>>();
  auto img = open_library(path);
  if (!img) return nullptr;
  kept->push_back(std::move(img));
  return kept->back().get();
}

int report_diagnostics(const Diagnostics& diag) {
  for (const auto& e : diag.items()) {
    fmt::print(stderr, "cudatool: warning: {}\n", e.message());
    if (json_errors().on) json_errors().warnings.push_back(e.message());
  }
  if (diag.count() > diag.items().size()) {
    fmt::print(stderr, "cudatool: warning: … and {} more problems\n",
               diag.count() - diag.items().size());
  }
  return diag.empty() ? kExitOk : kExitBadInput;
}

void print_error(const Error& e) {
  fmt::print(stderr, "cudatool: error: {}\n", e.message());
  if (json_errors().on) json_errors().errors.emplace_back(e.message(), e);
}

void print_error(std::string_view message) {
  fmt::print(stderr, "cudatool: error: {}\n", message);
  if (json_errors().on) {
    json_errors().errors.emplace_back(std::string(message),
                                      make_error("", "", std::nullopt, std::string(message)));
  }
}

void print_hint(std::string_view message) {
  fmt::print(stderr, "cudatool: hint: {}\n", message);
  if (json_errors().on) json_errors().hints.emplace_back(message);
}

void keep_json_errors(std::string_view command) {
  json_errors().on = true;
  json_errors().command = command;
}

int json_error_exit(int exit_status) {
  const JsonErrors& j = json_errors();
  if (!j.on || exit_status == 0 || j.errors.empty() || stdout_written) return exit_status;
  const auto& [message, e] = j.errors.front();
  std::string out;
  JsonWriter w(out);
  w.begin_object().key("error").begin_object();
  w.kv("command", j.command).kv("exit_status", exit_status).kv("message", message);
  w.kv_or_null("structure", e.structure).kv_or_null("field", e.field);
  w.key("offset");
  if (e.offset) {
    w.value(*e.offset);
  } else {
    w.null();
  }
  w.kv("reason", e.reason);
  auto list = [&w](std::string_view key, auto first, auto last, auto text) {
    w.key(key).begin_array();
    for (auto it = first; it != last; ++it) w.value(text(*it));
    w.end_array();
  };
  list("more", j.errors.begin() + 1, j.errors.end(), [](const auto& x) { return x.first; });
  auto same = [](const std::string& s) { return s; };
  list("hints", j.hints.begin(), j.hints.end(), same);
  list("warnings", j.warnings.begin(), j.warnings.end(), same);
  w.end_object().end_object();
  w.finish();
  emit(out);
  return exit_status;
}

void note_stdout_written() {
  stdout_written = true;
}

void emit(std::string_view text) {
  if (!text.empty()) stdout_written = true;
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

std::string human_size(uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < 1024ULL * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
}

}  // namespace cudatool::cli
