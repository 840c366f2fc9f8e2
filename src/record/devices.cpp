#include "record/devices.hpp"

#include "base/glob_check.hpp"
#include "base/glob_match.h"

namespace cudatool::record {

DeviceMatcher::DeviceMatcher(std::string_view globs) : spec_(globs) {
  for (std::string_view g : glob_list_entries(globs)) globs_.emplace_back(g);
}

bool DeviceMatcher::matches(const std::string& path) const {
  for (const auto& g : globs_) {
    if (nvtr_glob_match(g.c_str(), path.c_str()) != 0) return true;
  }
  return false;
}

uint32_t PathTable::intern(const std::string& path) {
  auto it = ids_.find(path);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<uint32_t>(paths_.size());
  paths_.push_back(path);
  ids_.emplace(path, id);
  return id;
}

int64_t unmap_range(MappingTable& maps, uint64_t addr, uint64_t len) {
  if (len == 0 || maps.empty()) return -1;
  uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
  int64_t first = -1;
  auto it = maps.upper_bound(addr);
  if (it != maps.begin()) --it;
  while (it != maps.end() && it->first < end) {
    uint64_t s = it->first, e = s + it->second.len;
    if (e <= addr) {
      ++it;
      continue;
    }
    DeviceMapping m = it->second;
    if (first < 0) first = m.path_id;
    it = maps.erase(it);
    if (s < addr) maps.emplace(s, DeviceMapping{addr - s, m.path_id});
    if (e > end) maps.emplace(end, DeviceMapping{e - end, m.path_id});
  }
  return first;
}

bool overlaps(const MappingTable& maps, uint64_t addr, uint64_t len) {
  if (len == 0 || maps.empty()) return false;
  uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
  auto it = maps.upper_bound(addr);
  if (it != maps.begin()) --it;
  for (; it != maps.end() && it->first < end; ++it) {
    if (it->first + it->second.len > addr) return true;
  }
  return false;
}

std::string absolute_path(std::string_view base_dir, std::string_view path) {
  std::string joined;
  if (!path.empty() && path[0] == '/') {
    joined = path;
  } else {
    joined = std::string(base_dir) + "/" + std::string(path);
  }
  std::vector<std::string_view> parts;
  std::string_view j = joined;
  size_t i = 0;
  while (i < j.size()) {
    size_t slash = j.find('/', i);
    if (slash == std::string_view::npos) slash = j.size();
    std::string_view part = j.substr(i, slash - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = slash + 1;
  }
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

}  // namespace cudatool::record
