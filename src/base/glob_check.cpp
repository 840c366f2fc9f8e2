#include "base/glob_check.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace cudatool {
namespace {

// The set that starts after the '[' at `open`: the index just past its ']', or the problem.
std::optional<std::string> check_set(std::string_view p, size_t open, size_t& end) {
  size_t i = open + 1;
  if (i < p.size() && (p[i] == '!' || p[i] == '^')) ++i;
  size_t first = i;
  while (i < p.size() && (p[i] != ']' || i == first)) {
    unsigned char lo = static_cast<unsigned char>(p[i]);
    if (p[i] == '\\' && i + 1 < p.size()) lo = static_cast<unsigned char>(p[++i]);
    if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
      auto hi = static_cast<unsigned char>(p[i + 2]);
      if (hi < lo) {
        return fmt::format("the range '{}-{}' at character {} runs backwards", p[i], p[i + 2],
                           i + 1);
      }
      i += 2;
    }
    ++i;
  }
  if (i >= p.size()) {
    return fmt::format(
        "the '[' at character {} opens a set that is never closed (write '\\[' for a literal "
        "'[')",
        open + 1);
  }
  end = i + 1;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> glob_problem(std::string_view p) {
  if (p.empty()) return "an empty pattern";
  for (size_t i = 0; i < p.size();) {
    if (p[i] == '\\') {
      if (i + 1 == p.size()) return fmt::format("the '\\' at character {} quotes nothing", i + 1);
      i += 2;
    } else if (p[i] == '[') {
      size_t end = 0;
      if (auto why = check_set(p, i, end)) return why;
      i = end;
    } else {
      ++i;
    }
  }
  return std::nullopt;
}

std::vector<std::string_view> glob_list_entries(std::string_view list) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::optional<std::string> glob_list_problem(std::string_view list) {
  for (std::string_view one : glob_list_entries(list)) {
    if (auto why = glob_problem(one)) return fmt::format("'{}': {}", one, *why);
  }
  return std::nullopt;
}

std::string absolute_glob_list(std::string_view list, const std::string& cwd) {
  std::string out;
  for (std::string_view one : glob_list_entries(list)) {
    if (!out.empty()) out += ',';
    if (one[0] == '/' || one[0] == '*' || one[0] == '?' || one[0] == '[') {
      out += one;
    } else {
      out += (std::filesystem::path(cwd) / std::string(one)).lexically_normal().string();
    }
  }
  return out;
}

}  // namespace cudatool
